package openai

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awkwardChatAnswers are Chat Completions answers shaped to trip a
// hand-written decoder: escapes, surrogates, nulls, odd numbers, tool calls
// with duplicate, folded or extra keys, invalid JSON.
var awkwardChatAnswers = []string{
	`{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 42.","refusal":null,"annotations":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
	`{"id":"c","choices":[{"message":{"content":"a\nb\t\"q\" \\ \/ \b\f\r","refusal":"no"},"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[{"message":{"content":"caf\u00e9 \ud83d\ude00 \ud83d \ude00x \u0000"},"finish_reason":"stop"}]}`,
	"{\"id\":\"c\",\"choices\":[{\"message\":{\"content\":\"bad \xff utf-8\"},\"finish_reason\":\"stop\"}]}",
	"{\"id\":\"c\",\"choices\":[{\"message\":{\"content\":\"ctl \x01\"},\"finish_reason\":\"stop\"}]}",
	`{"id":"c","choices":[{"message":{"content":"é 日本 🙂"},"finish_reason":"stop"}]}`,
	`{"id":null,"model":null,"choices":[{"message":{"content":null,"refusal":null,"reasoning_content":null,"reasoning":null,"extra_content":null,"tool_calls":null},"finish_reason":null}],"usage":{"prompt_tokens":null,"completion_tokens":null,"prompt_tokens_details":{"cached_tokens":null}}}`,
	`{"id":"c","choices":[{"message":null,"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1e3}}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":-0,"completion_tokens":-7}}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1.0}}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":-9223372036854775808}}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":9223372036854775808}}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":"12"}}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":01}}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":2,"cache_write_tokens":3}}}`,
	`{"id":"c","choices":[{"message":{"content":5}}]}`,
	`{"id":"c","choices":[{"message":{"content":[{"type":"text","text":"parts"}]}}]}`,
	`{"id":"c","choices":[{"message":{"content":true}}]}`,
	`{"id":"c","choices":[{"message":{"content":"x","reasoning_content":"think","reasoning":{"a":[1,2]},"extra_content":{"google":{"thought_signature":"bXNn"}}},"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[{"message":{"content":"x","reasoning_content":  "t" },"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[]},"finish_reason":"tool_calls"}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[ ]},"finish_reason":"tool_calls"}]}`,
	`{"id":"c","choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"grade","arguments":"{\"result\":\"satisfied\",\"explanation\":\"ok\",\"criteria\":[{\"name\":\"a\",\"passed\":true}]}"}}]},"finish_reason":"tool_calls"}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","type":"function","index":0,"function":{"name":"f","arguments":"{}","extra":[1,{"x":null}]},"extra_content":{"google":{"thought_signature":"c2ln"}}},{"id":"b","function":{"name":"g","arguments":"not json"}}]},"finish_reason":"tool_calls"}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","id":"b","function":{"name":"f","arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","name":"g","arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","ID":"b","function":{"name":"f","arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","Arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"ıd":"x","id":"a","function":{"name":"f","argumentſ":"[]","arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"\u0069d":"a","function":{"name":"f","arguments":"{}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":null,"extra_content":"text"}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{}},null]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"\u007b}"}}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"},"type":tru}]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},]}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":{"id":"a"}}}]}`,
	`{"id":"c","choices":[{"message":{"tool_calls":"none"}}]}`,
	` { "id" : "c" , "choices" : [ { "message" : { "content" : "spaced" , "tool_calls" : [ { "id" : "a" , "function" : { "name" : "f" , "arguments" : "{}" } } ] } , "finish_reason" : "stop" } ] } `,
	`{"id":"c","choices":[{"message":{"content":"x"}},{"message":{"content":"y"}}]}`,
	`{"id":"c","choices":[],"usage":null}`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1}} x`,
	`{"id":"c","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1}`,
	`{"id":"c","choices":[{"message":{"content":"x}}]}`,
	`{"id":"c" "choices":[]}`,
}

// The trimmed answers of every recorded Chat Completions answer and of the
// awkward ones, as decodeChat hands them to the decoders.
func trimmedChatAnswers(t *testing.T) [][]byte {
	var out [][]byte
	bodies := chatAnswerBodies(t)
	for _, a := range awkwardChatAnswers {
		bodies = append(bodies, []byte(a))
	}
	for _, body := range bodies {
		var whole bool
		if trimmed, ok := appendTrimmed(nil, body, chatMembers, &whole); ok && !whole {
			out = append(out, trimmed)
		}
	}
	return out
}

// scanChatText gives what decodeChatText gives wherever it answers, for
// the recorded answers and the awkward ones, and answers for the plain
// ones the local server writes.
func TestScannedChatTextIsWhatEncodingJSONDecodes(t *testing.T) {
	trimmed := trimmedChatAnswers(t)
	require.GreaterOrEqual(t, len(trimmed), 40)
	scanned := 0
	for _, b := range trimmed {
		got, ok := scanChatText(b)
		want := decodeChatText(b)
		if !ok {
			continue
		}
		scanned++
		require.NotNil(t, want, "scanned what encoding/json rejects: %s", b)
		assert.Equal(t, want, got, "%s", b)
	}
	t.Logf("%d of %d trimmed answers scanned", scanned, len(trimmed))
	for _, i := range []int{0, 1, 5, 6, 7, 9, 11, 15, 19, 20, 21, 22, 23, 24, 32, 39, 40, 41} {
		var whole bool
		b, _ := appendTrimmed(nil, []byte(awkwardChatAnswers[i]), chatMembers, &whole)
		_, ok := scanChatText(b)
		assert.True(t, ok, "not scanned: %s", b)
	}
}

// FuzzScanChatText holds scanChatText to decodeChatText over trimmed
// answers: whatever it accepts, encoding/json decodes, to the same value.
func FuzzScanChatText(f *testing.F) {
	for _, a := range awkwardChatAnswers {
		f.Add([]byte(a))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var whole bool
		for _, b := range [][]byte{body, trimmedOrNil(body, &whole)} {
			if b == nil || whole {
				continue
			}
			got, ok := scanChatText(b)
			if !ok {
				continue
			}
			want := decodeChatText(b)
			if want == nil {
				t.Fatalf("scanned what encoding/json rejects: %q", b)
			}
			assert.Equal(t, want, got, "%q", b)
		}
	})
}

// trimmedOrNil trims a valid answer (decodeChat's input, which trimming
// assumes valid) as decodeChat does.
func trimmedOrNil(body []byte, whole *bool) []byte {
	if !json.Valid(body) {
		return nil
	}
	b, ok := appendTrimmed(nil, bytes.Clone(body), chatMembers, whole)
	if !ok {
		return nil
	}
	return b
}
