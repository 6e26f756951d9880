package openai

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
)

// Decoding only the members fromResponse reads gives what decoding the
// whole answer gives, for every recorded Responses answer and for answers
// shaped to trip a member splitter.
func TestTrimmedAnswerDecodesAsTheWholeAnswer(t *testing.T) {
	var bodies [][]byte
	for _, name := range recorded.Files() {
		c := recorded.MustLoad(t, name)
		for _, it := range c.Interactions {
			if it.URL.Path == "/v1/responses" && !it.Streamed() && it.Status == 200 {
				bodies = append(bodies, it.Body)
			}
		}
	}
	require.NotEmpty(t, bodies, "no recorded Responses answers")
	bodies = append(bodies,
		[]byte(` {"id":"r","tools":[{"type":"function","name":"f","parameters":{"properties":{"a}":{"type":"string","description":"\"{[\\"}}}}],`+
			`"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","id":"m","role":"assistant","status":"completed",`+
			`"content":[{"type":"output_text","text":"}] \"quoted\" {","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":4},"model":"gpt-x"} `),
		[]byte(`{"model":"first","output":[],"model":"second","status":"completed","usage":null,"error":null}`),
		[]byte(`{"mod\u0065l":"escaped","status":"completed","output":[]}`),
		[]byte(`{"status":5,"model":true,"output":{"not":"a list"},"usage":"none"}`),
	)
	m := model(t, "openai", true)
	for _, body := range bodies {
		var whole responses.Response
		require.NoError(t, json.Unmarshal(body, &whole))
		trimmed, err := decodeResponse(bytes.Trim(body, " "))
		require.NoError(t, err)
		want, wantErr := m.fromResponse(&whole)
		got, gotErr := m.fromResponse(trimmed)
		assert.Equal(t, wantErr, gotErr, "%s", body)
		assert.Equal(t, want, got, "%s", body)
	}
}

func TestTrimObject(t *testing.T) {
	keep := members("a", "b")
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"x":{"a":[2,{"b":3}]},"b":"}"}`, `{"a":1,"b":"}"}`},
		{` { "b" : [ 1 , 2 ] , "a" : "x\"y" } `, `{"a":"x\"y","b":[ 1 , 2 ]}`},
		{`{"a":1,"a":2}`, `{"a":1}`},
		{`{}`, `{}`},
		{`{"x":true}`, `{}`},
	} {
		got, ok := trimObject([]byte(tc.in), keep)
		assert.True(t, ok, tc.in)
		assert.Equal(t, tc.want, string(got), tc.in)
	}
	for _, in := range []string{`[]`, `"a"`, `null`, `{"\u0061":1}`, `{"`, `{"a":1,"`} {
		_, ok := trimObject([]byte(in), keep)
		assert.False(t, ok, in)
	}
	nested := []member{
		{name: []byte("o"), keep: members("k")},
		{name: []byte("l"), first: true, keep: members("k")},
	}
	for _, tc := range []struct{ in, want string }{
		{`{"o":{"x":1,"k":[{"k":2}]},"l":[{"k":1,"x":2},{"k":3}],"z":0}`, `{"o":{"k":[{"k":2}]},"l":[{"k":1}]}`},
		{`{"l":[ {"x":1} , {"k":2} ],"o":{}}`, `{"o":{},"l":[{}]}`},
		// What cannot be trimmed is kept whole.
		{`{"o":"s","l":[]}`, `{"o":"s","l":[]}`},
		{`{"o":{"\u006b":1},"l":[{"\u006b":1}]}`, `{"o":{"\u006b":1},"l":[{"\u006b":1}]}`},
		{`{"l":[{"k":1},"s"]}`, `{"l":[{"k":1},"s"]}`},
		{`{"l":[{"k":1},null]}`, `{"l":[{"k":1},null]}`},
		{`{"l":{"k":1}}`, `{"l":{"k":1}}`},
	} {
		got, ok := trimObject([]byte(tc.in), nested)
		assert.True(t, ok, tc.in)
		assert.Equal(t, tc.want, string(got), tc.in)
	}
}

// chatAnswerBodies returns the Chat Completions answers (JSON, not
// streamed) of every cassette in the module, the imported third-party
// recordings included.
func chatAnswerBodies(t *testing.T) [][]byte {
	t.Helper()
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	var bodies [][]byte
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || !strings.Contains(filepath.ToSlash(p), "cassettes/") {
			return err
		}
		c, err := cassette.Read(p)
		if err != nil {
			return nil // not a go-vcr cassette (an original recording)
		}
		for _, it := range c.Interactions {
			ct := strings.Join(it.Response.Headers.Values("Content-Type"), ",")
			if strings.HasSuffix(it.Request.URL, "/chat/completions") && it.Response.Code == 200 && strings.Contains(ct, "json") {
				bodies = append(bodies, []byte(it.Response.Body))
			}
		}
		return nil
	})
	require.NoError(t, err)
	return bodies
}

// Decoding only the members chatResultOf reads gives what decoding the
// whole answer gives, for every recorded Chat Completions answer, the
// answers the local server writes, and answers shaped to trip the
// trimming: reasoning and signatures in extra fields, several choices,
// duplicate and escaped keys, members of the wrong type.
func TestTrimmedChatAnswerDecodesAsTheWholeAnswer(t *testing.T) {
	bodies := chatAnswerBodies(t)
	require.GreaterOrEqual(t, len(bodies), 10, "too few recorded Chat Completions answers")
	bodies = append(bodies,
		[]byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 42.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":6,"total_tokens":36,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp"}`),
		[]byte(`{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"},"extra_content":{"google":{"thought_signature":"c2ln"}}},{"id":"","type":"function","function":{"name":"g","arguments":"not json"}}],"extra_content":{"google":{"thought_signature":"bXNn"}}},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3,"cache_write_tokens":5}}}`),
		[]byte(`{"id":"c","choices":[{"message":{"content":"a","reasoning":"r","refusal":"no"},"finish_reason":"content_filter"},{"message":{"content":"b"},"finish_reason":"stop"}],"usage":null}`),
		[]byte(`{"id":"c","choices":[{"message":{"content":"a"}},"second"],"usage":{"prompt_tokens":1}}`),
		[]byte(`{"id":"c","choices":[{"message":{"content":"a"}},null]}`),
		[]byte(`{"id":"c","choices":[],"model":"m"}`),
		[]byte(`{"id":"c","choices":"none","usage":"none","model":5}`),
		[]byte(`{"id":"c","choices":[{"message":"text","finish_reason":7}],"usage":{"prompt_tokens":"x","prompt_tokens_details":[1]}}`),
		[]byte(`{"model":"first","id":"c","model":"second","choices":[{"message":{"content":"one","content":"two"},"finish_reason":"length","finish_reason":"stop"}]}`),
		[]byte(`{"id":"c","choices":[{"message":{"cont\u0065nt":"escaped","refusal":"r"},"fin\u0069sh_reason":"length"}],"us\u0061ge":{"prompt_tokens":2}}`),
		[]byte(`{"id":"c","choices":[{"message":{"content":"x","reasoning_content":"","reasoning":"second"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":null}}`),
		[]byte(`{"id":"c","choices":[{"message":{"cont\u0065nt":"a","content":"b","Content":"c","Refusal":"r"},"finish_reason":"stop"}],"Usage":{"prompt_tokens":1},"ID":"d"}`),
		[]byte(`{"id":"c","choices":[{"message":{"content":"a","Content":"b","REASONING":"r"},"Finish_Reason":"length"}]}`),
		[]byte(`{"id":"c","choices":[{"message":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"Prompt_Tokens":2,"prompt_tokens_details":{"cached_tokens":1,"CACHED_TOKENS":5}}}`),
		[]byte(`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","ID":"b","Function":{"name":"x","arguments":"{}"},"function":{"name":"f","Name":"g","arguments":"{}"},"Extra_Content":{"google":{"thought_signature":"eA=="}}}]},"finish_reason":"tool_calls"}]}`),
		[]byte(`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","id":"b","function":{"name":"f","name":"g","arguments":"{}","arguments":"[]"},"extra_content":{"google":{"thought_signature":"YQ=="}},"extra_content":{"google":{"thought_signature":"Yg=="}}}]},"finish_reason":"tool_calls"}]}`),
		[]byte(`{"id":"c","choices":[{"message":{"tool_calls":[{"\u0069d":"a","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"custom","custom":{"name":"c","input":"i"}}]},"finish_reason":"tool_calls"}]}`),
		[]byte(`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"},"extra_content":"text"},{"id":"b","function":null}]},"finish_reason":"tool_calls"}]}`),
		[]byte(` { "id" : "c" , "choices" : [ { "message" : { "content" : "spaced" } , "finish_reason" : "stop" } ] } `),
	)
	for _, body := range bodies {
		body = bytes.TrimSpace(body)
		var whole sdk.ChatCompletion
		require.NoError(t, json.Unmarshal(body, &whole))
		trimmed, err := decodeChat(body)
		require.NoError(t, err)
		for _, n := range []int{0, 3} {
			want, wantErr := chatResultOf(&chatAnswer{whole: &whole})
			got, gotErr := chatResultOf(trimmed)
			assert.Equal(t, wantErr, gotErr, "%s", body)
			if wantErr == nil && gotErr == nil {
				assert.Equal(t, want.response(n), got.response(n), "%s", body)
			}
		}
	}
}

// Answers that encoding/json reads as the SDK would, as an eval's live
// calls get, skip the SDK's decoder; the others go through it (the
// equivalence is TestTrimmedChatAnswerDecodesAsTheWholeAnswer's).
func TestExactlyNamedAnswersSkipTheSDKDecoder(t *testing.T) {
	for _, tc := range []struct {
		body string
		text bool
	}{
		{`{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 42.","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, true},
		{`{"id":"c","choices":[{"message":{"content":"a","tool_calls":[]},"finish_reason":"stop"}]}`, true},
		{`{"id":"c","choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2ln"}}}]},"finish_reason":"tool_calls"}]}`, true},
		{`{"id":"c","choices":[{"message":{"content":"a","Content":"b"}}]}`, true},
		{`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","ID":"b","function":{"name":"f","arguments":"{}"}}]}}]}`, false},
		{`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","name":"g","arguments":"{}"}}]}}]}`, false},
		{`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"n\u0061me":"f","arguments":"{}"}}]}}]}`, false},
		{`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}}]}}]}`, false},
		{`{"id":"c","choices":[{"message":{"content":[{"type":"text","text":"parts"}]}}]}`, false},
		{`{"id":"c","choices":[{"message":{"cont\u0065nt":"escaped"}}]}`, false},
		{`{"id":"c","choices":[],"usage":{"prompt_tokens":1.5}}`, false},
	} {
		a, err := decodeChat([]byte(tc.body))
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.text, a.text != nil, "decoded as text: %s", tc.body)
		assert.Equal(t, !tc.text, a.whole != nil, "decoded by the SDK: %s", tc.body)
	}
}

// BenchmarkDecodeChatAnswer measures decoding the answer a live call gets
// from the local OpenAI-compatible server (fakes/llmserver), as a live eval
// run's calls do for each answer (a replay remembers them).
func BenchmarkDecodeChatAnswer(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-9f0c2a1b7d3e4f5a6b7c8d9e0f1a2","object":"chat.completion","created":1764633600,"model":"model-a","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 42.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":2210,"completion_tokens":5,"total_tokens":2215,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_dageval01"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeChat(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeChatToolCall measures decoding a grader's verdict, which
// comes back as a tool call, as the local server writes it.
func BenchmarkDecodeChatToolCall(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-9f0c2a1b7d3e4f5a6b7c8d9e0f1a3","object":"chat.completion","created":1764633600,"model":"grader","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_9f0c2a1b7d3e4f5a","type":"function","function":{"name":"final_result","arguments":"{\"result\":\"satisfied\",\"explanation\":\"The answer states the capital and cites the tool result.\",\"criteria\":[{\"name\":\"correct\",\"passed\":true},{\"name\":\"cites the source\",\"passed\":true}]}"}}],"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1830,"completion_tokens":48,"total_tokens":1878,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_dageval01"}`)
	b.ReportAllocs()
	for b.Loop() {
		a, err := decodeChat(body)
		if err != nil || a.text == nil || len(a.text.Choices[0].Message.calls) != 1 {
			b.Fatal(err, a)
		}
	}
}

// FuzzTrimObject: trimming reads answers as they come, valid JSON or not,
// and must not panic on any (the SDK then reports what is wrong).
func FuzzTrimObject(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"`, `{"a":[{"k":1}`, `{"o":{"k":"`, `{"l":[`} {
		f.Add([]byte(s))
	}
	nested := []member{{name: []byte("a")}, {name: []byte("o"), keep: members("k")}, {name: []byte("l"), first: true, keep: members("k")}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		trimObject(raw, nested)
		trimObject(raw, chatMembers)
	})
}
