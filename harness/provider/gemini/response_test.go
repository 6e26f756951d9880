package gemini_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

func sseOf(chunks []string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\r\n\r\n")
	}
	return b.String()
}

func arrayOf(chunks []string) string { return "[" + strings.Join(chunks, ",\r\n") + "]" }

// answerCase is one answer as a stream's chunks, with the response every
// way of reading it must give.
type answerCase struct {
	name   string
	chunks []string
	whole  string // the same answer as one JSON object, when Gemini sends one
	want   llm.Response
	calls  int // tool calls whose ids are derived, not Gemini's
}

var answerCases = []answerCase{
	{
		name: "text whose signature comes on the closing empty part",
		chunks: []string{
			`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
			`{"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"}}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
			`{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"c2ln"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
		},
		want: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Signature: "gemini:c2ln"}, llm.TextBlock("Hello")}},
			StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 7, OutputTokens: 2}, Model: "gemini-2.5-flash"},
	},
	{
		name: "thought summary, text and usage with cached, thinking and tool-use tokens",
		chunks: []string{
			`{"candidates":[{"content":{"parts":[{"text":"Weighing ","thought":true}],"role":"model"}}],"responseId":"r2"}`,
			`{"candidates":[{"content":{"parts":[{"text":"options.","thought":true,"thoughtSignature":"dGg="}],"role":"model"}}],"responseId":"r2"}`,
			`{"candidates":[{"content":{"parts":[{"text":"Go left."}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":60,"candidatesTokenCount":10,"thoughtsTokenCount":25,"toolUsePromptTokenCount":5,"totalTokenCount":140},"modelVersion":"gemini-3-flash-preview","responseId":"r2"}`,
		},
		whole: `{"candidates":[{"content":{"parts":[{"text":"Weighing options.","thought":true,"thoughtSignature":"dGg="},{"text":"Go left."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":60,"candidatesTokenCount":10,"thoughtsTokenCount":25,"toolUsePromptTokenCount":5,"totalTokenCount":140},"modelVersion":"gemini-3-flash-preview","responseId":"r2"}`,
		want: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "Weighing options.", Signature: "gemini:dGg="}, llm.TextBlock("Go left.")}},
			StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 45, OutputTokens: 35, CacheReadTokens: 60}, Model: "gemini-3-flash-preview"},
	},
	{
		name: "parallel calls without ids, the first signed; STOP is a tool use",
		chunks: []string{
			`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"Y2FsbA=="}],"role":"model"}}],"responseId":"r3"}`,
			`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Tokyo"}}}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":12,"totalTokenCount":42},"modelVersion":"gemini-3-pro-preview","responseId":"r3"}`,
		},
		want: llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
			Content:   []llm.Block{{Type: llm.BlockThinking, Signature: "gemini-call:@0:Y2FsbA=="}},
			ToolCalls: []llm.ToolCall{{ID: "@0", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}, {ID: "@1", Name: "get_weather", Args: json.RawMessage(`{"city":"Tokyo"}`)}}},
			StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 30, OutputTokens: 12}, Model: "gemini-3-pro-preview"},
		calls: 2,
	},
	{
		name:   "a call with Gemini's own id and no arguments",
		chunks: []string{`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"fc-1","name":"now"}}],"role":"model"},"finishReason":"STOP"}],"responseId":"r4"}`},
		want: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "fc-1", Name: "now", Args: json.RawMessage(`{}`)}}},
			StopReason: llm.StopToolUse},
	},
	{
		name:   "cut at the token limit",
		chunks: []string{`{"candidates":[{"content":{"parts":[{"text":"Once upon"}],"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2,"totalTokenCount":6},"responseId":"r5"}`},
		want: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Once upon")}},
			StopReason: llm.StopMaxTokens, Usage: llm.Usage{InputTokens: 4, OutputTokens: 2}},
	},
	{
		name:   "a safety stop",
		chunks: []string{`{"candidates":[{"finishReason":"SAFETY","index":0}],"usageMetadata":{"promptTokenCount":4,"totalTokenCount":4},"responseId":"r6"}`},
		want:   llm.Response{Message: llm.Message{Role: llm.RoleAssistant}, StopReason: llm.StopContentFilter, Usage: llm.Usage{InputTokens: 4}},
	},
	{
		name:   "a blocked prompt has no candidates",
		chunks: []string{`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"responseId":"r7"}`},
		want:   llm.Response{Message: llm.Message{Role: llm.RoleAssistant}, StopReason: llm.StopContentFilter, Usage: llm.Usage{InputTokens: 9}},
	},
	{
		name:   "another finish reason is kept, lower-cased",
		chunks: []string{`{"candidates":[{"content":{"parts":[{"text":"x"}],"role":"model"},"finishReason":"MALFORMED_FUNCTION_CALL"}],"responseId":"r8"}`},
		want:   llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("x")}}, StopReason: "malformed_function_call"},
	},
}

// fixIDs fills the derived ids ("@n") of want from got, after checking
// their shape, and sets the message usage the adapter always sets.
func fixIDs(t *testing.T, want llm.Response, got *llm.Response) llm.Response {
	t.Helper()
	want.Message = want.Message.Clone()
	for i := range want.Message.ToolCalls {
		if strings.HasPrefix(want.Message.ToolCalls[i].ID, "@") {
			require.Less(t, i, len(got.Message.ToolCalls))
			id := got.Message.ToolCalls[i].ID
			assert.Regexp(t, `^gemini_[0-9a-f]{24}$`, id)
			for j := range want.Message.Content {
				want.Message.Content[j].Signature = strings.ReplaceAll(want.Message.Content[j].Signature, want.Message.ToolCalls[i].ID+":", id+":")
			}
			want.Message.ToolCalls[i].ID = id
		}
	}
	u := want.Usage
	want.Message.Usage = &u
	return want
}

// TestAnswerShapesDecodeAlike: an answer read whole, streamed as events,
// streamed as one JSON array (no alt=sse), or a recorded stream read whole,
// gives one response; the stream's deltas rebuild its text and calls.
func TestAnswerShapesDecodeAlike(t *testing.T) {
	for _, tc := range answerCases {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			check := func(label string, got *llm.Response, err error) {
				t.Helper()
				require.NoError(t, err, label)
				got = untimed(t, got, strings.HasPrefix(label, "stream"))
				want := fixIDs(t, tc.want, got)
				assert.Equal(t, want, *got, label)
				var gotIDs []string
				for _, c := range got.Message.ToolCalls {
					gotIDs = append(gotIDs, c.ID)
				}
				if ids == nil {
					ids = gotIDs
				}
				assert.Equal(t, ids, gotIDs, "%s: every shape derives the same ids", label)
			}
			if tc.whole != "" {
				srv := newWireServer(t, jsonAnswer(tc.whole))
				got, err := newModel(t, srv.URL).Generate(context.Background(), userRequest("x"))
				check("whole", got, err)
			}
			srv := newWireServer(t, sseAnswer(sseOf(tc.chunks)))
			got, err := newModel(t, srv.URL).Generate(context.Background(), userRequest("x"))
			check("recorded stream read whole", got, err)

			for _, shape := range []answer{sseAnswer(sseOf(tc.chunks)), jsonAnswer(arrayOf(tc.chunks))} {
				srv := newWireServer(t, shape)
				s := collect(t, newModel(t, srv.URL), userRequest("x"))
				check("stream as "+shape.contentType, s.Final, s.Err)
				assert.Equal(t, "alt=sse", srv.requests()[0].Query)
				assert.True(t, strings.HasSuffix(srv.requests()[0].Path, ":streamGenerateContent"))
				var text, thinking strings.Builder
				var calls []llm.ToolCall
				for _, c := range s.Chunks {
					text.WriteString(c.TextDelta)
					thinking.WriteString(c.ThinkingDelta)
					if d := c.ToolCallDelta; d != nil {
						assert.Equal(t, len(calls), d.Index)
						calls = append(calls, llm.ToolCall{ID: d.ID, Name: d.Name, Args: json.RawMessage(d.ArgsDelta)})
					}
				}
				assert.Equal(t, s.Final.Message.Text(), text.String())
				var wantThinking string
				for _, b := range s.Final.Message.Content {
					wantThinking += b.Thinking
				}
				assert.Equal(t, wantThinking, thinking.String())
				assert.Equal(t, s.Final.Message.ToolCalls, calls, "each call arrives whole, with the final id")
			}
		})
	}
}

// TestDerivedIDsDependOnTheConversation: identical calls in different
// turns get different ids; the same turn replayed gets the same ones.
func TestDerivedIDsDependOnTheConversation(t *testing.T) {
	call := `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"now","args":{}}}],"role":"model"},"finishReason":"STOP"}],"responseId":"same"}`
	srv := newWireServer(t, jsonAnswer(call), jsonAnswer(call), jsonAnswer(call))
	m := newModel(t, srv.URL)
	first, err := m.Generate(context.Background(), userRequest("x"))
	require.NoError(t, err)
	again, err := m.Generate(context.Background(), userRequest("x"))
	require.NoError(t, err)
	later, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("x"), first.Message, llm.ToolResult(first.Message.ToolCalls[0].ID, "now", "noon", false)}})
	require.NoError(t, err)
	assert.Equal(t, first.Message.ToolCalls[0].ID, again.Message.ToolCalls[0].ID)
	assert.NotEqual(t, first.Message.ToolCalls[0].ID, later.Message.ToolCalls[0].ID)
}

func TestErrors(t *testing.T) {
	t.Run("rate limit waits for Gemini's RetryInfo, then succeeds", func(t *testing.T) {
		srv := newWireServer(t,
			answer{429, "application/json", `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}`, nil},
			jsonAnswer(okAnswer))
		var waits []time.Duration
		m := newModel(t, srv.URL, func(c *provider.Config) {
			c.Retry = provider.RetryPolicy{MaxAttempts: 2, Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
		})
		got, err := m.Generate(context.Background(), userRequest("x"))
		require.NoError(t, err)
		assert.Equal(t, "ok", got.Message.Text())
		assert.Equal(t, []time.Duration{2 * time.Second}, waits)
	})
	tests := []struct {
		name   string
		answer answer
		stream bool
		kind   llm.ErrorKind
		code   string
		msg    string
	}{
		{"an invalid key is a 400 that says so", answer{400, "application/json", `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, nil}, false, llm.ErrAuthentication, "API_KEY_INVALID", "API key not valid"},
		{"the same answer to a stream, sent as an event stream", answer{400, "text/event-stream", `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, nil}, true, llm.ErrAuthentication, "API_KEY_INVALID", "API key not valid"},
		{"overloaded", answer{503, "application/json", `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, nil}, false, llm.ErrOverloaded, "UNAVAILABLE", "overloaded"},
		{"context overflow", answer{400, "application/json", `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, nil}, false, llm.ErrContextOverflow, "INVALID_ARGUMENT", "input token count"},
		{"an error event inside a stream", sseAnswer(sseOf([]string{
			`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}`,
			`{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`,
		})), true, llm.ErrServer, "INTERNAL", "internal error"},
		{"the same stream read whole", sseAnswer(sseOf([]string{
			`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}`,
			`{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`,
		})), false, llm.ErrServer, "INTERNAL", "internal error"},
		{"a stream without a finish reason was cut off", sseAnswer(sseOf([]string{`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}`})), true, llm.ErrConnection, "", "finishReason"},
		{"a body that is not JSON", answer{200, "application/json", `<html>proxy error</html>`, nil}, false, llm.ErrBadResponse, "", ""},
		{"an answer without candidates or feedback", jsonAnswer(`{"usageMetadata":{"promptTokenCount":1}}`), false, llm.ErrBadResponse, "", "no candidates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newWireServer(t, tt.answer)
			m := newModel(t, srv.URL)
			var err error
			if tt.stream {
				err = collect(t, m, userRequest("x")).Err
			} else {
				_, err = m.Generate(context.Background(), userRequest("x"))
			}
			require.Error(t, err)
			e, ok := llm.AsError(err)
			require.True(t, ok, "%T: %v", err, err)
			assert.Equal(t, tt.kind, e.Kind, err.Error())
			assert.Equal(t, tt.code, e.Code)
			assert.Contains(t, e.Message, tt.msg)
			assert.Equal(t, "gemini", e.Provider)
			assert.Len(t, srv.requests(), 1, "not retried under MaxAttempts 1")
		})
	}
}

// TestCredentials: the key goes in x-goog-api-key from the config alone;
// a live call without one fails before any request, naming the variable;
// a replay sends none; the SDK never reads the environment.
func TestCredentials(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "env-key-should-not-be-used")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://203.0.113.7")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")

	srv := newWireServer(t, jsonAnswer(okAnswer), jsonAnswer(okAnswer))
	_, err := newModel(t, srv.URL).Generate(context.Background(), userRequest("x"))
	require.NoError(t, err)
	got := srv.requests()[0]
	assert.Equal(t, "test-key-0123456789", got.Header.Get("X-Goog-Api-Key"))
	assert.Empty(t, got.Header.Get("Authorization"))
	assert.NotContains(t, got.Header.Get("User-Agent"), "go1.", "the recording machine's Go version stays out")
	assert.Contains(t, got.Header.Get("X-Goog-Api-Client"), "google-genai-sdk/")

	m := newModel(t, srv.URL, func(c *provider.Config) { c.APIKey, c.APIKeyEnv = "", "GEMINI_API_KEY" })
	_, err = m.Generate(context.Background(), userRequest("x"))
	assert.True(t, llm.IsAuthentication(err))
	assert.ErrorContains(t, err, "set GEMINI_API_KEY")
	assert.Len(t, srv.requests(), 1, "no request without a key")

	m = newModel(t, srv.URL, func(c *provider.Config) { c.APIKey, c.Replay = "", true })
	_, err = m.Generate(context.Background(), userRequest("x"))
	require.NoError(t, err)
	assert.Empty(t, srv.requests()[1].Header.Values("X-Goog-Api-Key"), "a replay sends no key, not even the SDK's placeholder")
}

func TestNewRefusesOtherKinds(t *testing.T) {
	_, err := newModelErr(provider.Config{Model: "m", Kind: provider.KindAnthropic})
	assert.ErrorContains(t, err, "gemini: config is for kind anthropic")
	_, err = newModelErr(provider.Config{Kind: provider.KindGemini})
	assert.ErrorContains(t, err, "model id is empty")
}
