package replay_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/replay"
)

// imported is where the third-party recordings live as go-vcr cassettes.
var imported = filepath.Join("..", "..", "cassettes", "thirdparty", "pydantic-ai", "imported")

func thirdParty(name string) string { return filepath.Join(imported, filepath.FromSlash(name)) }

type call struct{ id, name, args string }

// turn is what one recorded answer holds. text is a prefix for long answers.
type turn struct {
	api      string
	streamed bool
	model    string
	stop     string
	text     string
	thinking string // prefix
	calls    []call
	usage    replay.Usage
	err      string // part of the error for answers no adapter can read
}

const (
	ant  = cassette.APIAnthropicMessages
	chat = cassette.APIOpenAIChat
	resp = cassette.APIOpenAIResponses
	gem  = cassette.APIGemini
)

var synthesizedID = regexp.MustCompile(`^(call|gemini)_[0-9a-f]{24}$`)

// recordings lists what every third-party recording contains.
var recordings = map[string][]turn{
	"test_anthropic/test_anthropic_model_instructions.yaml": {
		{api: ant, model: "claude-3-opus-20240229", stop: "end_turn", text: "The capital of France is Paris.", usage: replay.Usage{InputTokens: 20, OutputTokens: 10}},
	},
	"test_anthropic/test_anthropic_model_thinking_part_stream.yaml": {
		{api: ant, streamed: true, model: "claude-sonnet-4-20250514", stop: "end_turn", text: "Here are the basic steps for safely crossing the street:", thinking: "This is a straightforward question about pedestrian safety.", usage: replay.Usage{InputTokens: 43, OutputTokens: 282}},
	},
	"test_anthropic/test_anthropic_prompted_output.yaml": {
		{api: ant, model: "claude-sonnet-4-5-20250929", stop: "tool_use", calls: []call{{"toolu_01ArHq5f2wxRpRF2PVQcKExM", "get_user_country", `{}`}}, usage: replay.Usage{InputTokens: 459, OutputTokens: 38}},
		{api: ant, model: "claude-sonnet-4-5-20250929", stop: "end_turn", text: `{"city": "Mexico City", "country": "Mexico"}`, usage: replay.Usage{InputTokens: 510, OutputTokens: 17}},
	},
	"test_anthropic/test_anthropic_tool_output.yaml": {
		{api: ant, model: "claude-sonnet-4-5-20250929", stop: "tool_use", calls: []call{{"toolu_01X9wcHKKAZD9tBC711xipPa", "get_user_country", `{}`}}, usage: replay.Usage{InputTokens: 445, OutputTokens: 23}},
		{api: ant, model: "claude-sonnet-4-5-20250929", stop: "tool_use", calls: []call{{"toolu_01LZABsgreMefH2Go8D5PQbW", "final_result", `{"city":"Mexico City","country":"Mexico"}`}}, usage: replay.Usage{InputTokens: 497, OutputTokens: 56}},
	},
	"test_anthropic/test_multiple_parallel_tool_calls.yaml": {
		{api: ant, model: "claude-haiku-4-5-20251001", stop: "tool_use", text: "I'll help you find out who is the youngest", calls: []call{
			{"toolu_0167cfEnoQaPviGdVXA95zcu", "retrieve_entity_info", `{"name":"Alice"}`},
			{"toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "retrieve_entity_info", `{"name":"Bob"}`},
			{"toolu_01XFyAjstT3966qvRynZyVPo", "retrieve_entity_info", `{"name":"Charlie"}`},
			{"toolu_013mnQZbgtK2oe3Mo3XKJsx3", "retrieve_entity_info", `{"name":"Daisy"}`},
		}, usage: replay.Usage{InputTokens: 423, OutputTokens: 202}},
		{api: ant, model: "claude-haiku-4-5-20251001", stop: "end_turn", text: "Based on the retrieved information, we can see the family relationships:", usage: replay.Usage{InputTokens: 771, OutputTokens: 77}},
	},
	"test_openai/test_compatible_api_with_tool_calls_without_id.yaml": {
		// Gemini's compatible endpoint sends the call without an id.
		{api: chat, model: "gemini-2.5-pro-preview-05-06", stop: "tool_use", calls: []call{{"", "get_current_time", `{}`}}, usage: replay.Usage{InputTokens: 35, OutputTokens: 12}},
		{api: chat, model: "gemini-2.5-pro-preview-05-06", stop: "end_turn", text: "The current time is Noon.", usage: replay.Usage{InputTokens: 66, OutputTokens: 6}},
	},
	"test_openai/test_multiple_agent_tool_calls.yaml": {
		// Gemini's native generateContent API: the call comes without an
		// id and gets the one a replayed run derives.
		{api: gem, model: "gemini-2.0-flash-exp", stop: "tool_use", calls: []call{{"", "get_capital", `{"country":"France"}`}}, usage: replay.Usage{InputTokens: 23, OutputTokens: 5}},
		{api: gem, model: "gemini-2.0-flash-exp", stop: "end_turn", text: "The capital of France is Paris.\n", usage: replay.Usage{InputTokens: 35, OutputTokens: 8}},
		{api: chat, model: "gpt-4o-mini-2024-07-18", stop: "tool_use", calls: []call{{"call_SkEQ3ZGSJC8m6AvaIGNuuKdm", "get_capital", `{"country":"England"}`}}, usage: replay.Usage{InputTokens: 104, OutputTokens: 16}},
		{api: chat, model: "gpt-4o-mini-2024-07-18", stop: "end_turn", text: "The capital of England is London.", usage: replay.Usage{InputTokens: 129, OutputTokens: 9}},
	},
	"test_openai/test_openai_tool_output.yaml": {
		{api: chat, model: "gpt-4o-2024-08-06", stop: "tool_use", calls: []call{{"call_iXFttys57ap0o16JSlC8yhYo", "get_user_country", `{}`}}, usage: replay.Usage{InputTokens: 68, OutputTokens: 12}},
		{api: chat, model: "gpt-4o-2024-08-06", stop: "tool_use", calls: []call{{"call_gmD2oUZUzSoCkmNmp3JPUF7R", "final_result", `{"city":"Mexico City","country":"Mexico"}`}}, usage: replay.Usage{InputTokens: 89, OutputTokens: 36}},
	},
	"test_openai/test_run_stream_sync_streams_real_model.yaml": {
		{api: chat, streamed: true, model: "gpt-4o-mini-2024-07-18", stop: "tool_use", calls: []call{{"call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `{"country":"UK"}`}}, usage: replay.Usage{InputTokens: 53, OutputTokens: 15}},
		{api: chat, streamed: true, model: "gpt-4o-mini-2024-07-18", stop: "end_turn", text: "The capital of the UK is London.", usage: replay.Usage{InputTokens: 78, OutputTokens: 9}},
	},
	"test_openai/test_text_response.yaml": {
		// A demo endpoint that echoes the request as text/plain.
		{api: chat, err: "bad response"},
	},
	"test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml": {
		{api: resp, model: "gpt-4o-2024-08-06", stop: "tool_use", calls: []call{{"call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", `{"country":"PotatoLand"}`}}, usage: replay.Usage{InputTokens: 40, OutputTokens: 18}},
		{api: resp, model: "gpt-4o-2024-08-06", stop: "end_turn", text: "The capital of PotatoLand is Potato City.", usage: replay.Usage{InputTokens: 67, OutputTokens: 11}},
	},
	"test_openai_responses/test_tool_output.yaml": {
		{api: resp, model: "gpt-4o-2024-08-06", stop: "tool_use", calls: []call{{"call_ZWkVhdUjupo528U9dqgFeRkH", "get_user_country", `{}`}}, usage: replay.Usage{InputTokens: 62, OutputTokens: 12}},
		{api: resp, model: "gpt-4o-2024-08-06", stop: "tool_use", calls: []call{{"call_iFBd0zULhSZRR908DfH73VwN", "final_result", `{"city":"Mexico City","country":"Mexico"}`}}, usage: replay.Usage{InputTokens: 85, OutputTokens: 20}},
	},
	"test_openrouter/test_openrouter_tool_calling.yaml": {
		{api: chat, model: "mistralai/mistral-small", stop: "tool_use", calls: []call{{"3sniiMddS", "divide", `{"numerator":123,"denominator":456,"on_inf":"infinity"}`}}, usage: replay.Usage{InputTokens: 134, OutputTokens: 43}},
	},
}

func TestInspectReadsEveryThirdPartyRecording(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(imported, "*", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, len(recordings), "every imported recording is listed here")
	for name, turns := range recordings {
		t.Run(name, func(t *testing.T) {
			c, err := cassette.Read(thirdParty(name))
			require.NoError(t, err)
			got := replay.Inspect(context.Background(), c)
			require.Len(t, got, len(turns))
			for i, want := range turns {
				label := fmt.Sprintf("#%d", i)
				in := got[i]
				assert.Equal(t, i, in.Index, label)
				assert.Equal(t, "POST", in.Method, label)
				assert.Equal(t, c.Interactions[i].Request.URL, in.URL, label)
				assert.Equal(t, 200, in.Status, label)
				assert.Equal(t, want.api, in.API, label)
				assert.Equal(t, want.streamed, in.Streamed, label)
				if want.err != "" {
					assert.Contains(t, in.Error, want.err, label)
					assert.Nil(t, in.Response, label)
					assert.True(t, in.Failed(), label)
					continue
				}
				require.Empty(t, in.Error, label)
				assert.False(t, in.Failed(), label)
				r := in.Response
				require.NotNil(t, r, label)
				assert.Equal(t, want.model, r.Model, label)
				assert.Equal(t, want.stop, r.StopReason, label)
				assert.True(t, strings.HasPrefix(r.Text, want.text), "%s: text %q", label, r.Text)
				if want.text == "" {
					assert.Empty(t, r.Text, label)
				}
				assert.True(t, strings.HasPrefix(r.Thinking, want.thinking), "%s: thinking %q", label, r.Thinking)
				if want.thinking == "" {
					assert.Empty(t, r.Thinking, label)
				}
				assert.Equal(t, want.usage, r.Usage, label)
				assert.Empty(t, r.InvalidToolCalls, label)
				require.Len(t, r.ToolCalls, len(want.calls), label)
				for j, wc := range want.calls {
					tc := r.ToolCalls[j]
					if wc.id == "" {
						assert.Regexp(t, synthesizedID, tc.ID, "%s: the id a replayed run derives", label)
						assert.NotContains(t, c.Interactions[i].Response.Body, tc.ID, "%s: the recording has no id", label)
					} else {
						assert.Equal(t, wc.id, tc.ID, label)
					}
					assert.Equal(t, wc.name, tc.Name, label)
					assert.JSONEq(t, wc.args, string(tc.Args), label)
				}
			}
		})
	}
}

func TestInspectFailures(t *testing.T) {
	c, err := cassette.Parse("errors.yaml", []byte(`---
version: 2
interactions:
  - id: 0
    request:
      method: POST
      url: https://api.anthropic.com/v1/messages?key=not-a-real-key
      body: '{}'
    response:
      headers:
        Content-Type: [application/json]
        Retry-After: ["9"]
      body: '{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}'
      code: 429
  - id: 1
    request:
      method: POST
      url: https://api.openai.com/v1/responses
      body: '{}'
    response:
      headers:
        Content-Type: [text/event-stream]
      body: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"model\":\"gpt-4o\",\"output\":[]}}\n\n"
      code: 200
`))
	require.NoError(t, err)
	got := replay.Inspect(context.Background(), c)
	require.Len(t, got, 2)
	assert.Equal(t, "https://api.anthropic.com/v1/messages?key=REDACTED", got[0].URL)
	assert.Equal(t, 429, got[0].Status)
	assert.Equal(t, "anthropic: rate limit (HTTP 429, rate_limit_error): Number of request tokens has exceeded your per-minute rate limit; retry after 9s", got[0].Error)
	assert.False(t, got[0].Failed(), "a recorded failure is content, not a problem")
	assert.True(t, got[1].Streamed)
	assert.Contains(t, got[1].Error, "the response stream ended before response.completed")
	assert.True(t, got[1].Failed())
}

// TestInspectReadsGeminiRecordings: show decodes Gemini's native answers
// in every recorded shape: a JSON array of chunks (llm-gemini streams
// without alt=sse), server-sent events, a whole answer, and an error
// document sent as an event stream.
func TestInspectReadsGeminiRecordings(t *testing.T) {
	corpus := filepath.Join("..", "..", "cassettes", "thirdparty")
	tests := []struct {
		file  string
		turns []turn
	}{
		{"llm-gemini/imported/test_gemini/test_tools_with_gemini_3_thought_signatures.yaml", []turn{
			{api: gem, streamed: true, model: "gemini-3-flash-preview", stop: "tool_use", calls: []call{{"", "multiply", `{"x":5,"y":3}`}}, usage: replay.Usage{InputTokens: 60, OutputTokens: 48}},
			{api: gem, streamed: true, model: "gemini-3-flash-preview", stop: "end_turn", text: "5 times 3 is 15.", usage: replay.Usage{InputTokens: 121, OutputTokens: 9}},
		}},
		{"llm-gemini/imported/test_gemini/test_stream_events_tool_calls.yaml", []turn{
			{api: gem, streamed: true, model: "gemini-3-flash-preview", stop: "tool_use", calls: []call{{"c9bjmkfz", "pelican_name_generator", `{"type":"funny"}`}}, usage: replay.Usage{InputTokens: 28, OutputTokens: 267}},
		}},
		{"crewai/imported/llms/google/test_google_async_streaming_returns_usage_metrics.yaml", []turn{
			{api: gem, streamed: true, model: "gemini-2.0-flash-exp", stop: "end_turn", text: "The capital of Canada is Ottawa.", usage: replay.Usage{InputTokens: 163, OutputTokens: 13}},
		}},
		{"crewai/imported/llms/google/test_gemini_async_conversation.yaml", []turn{
			{api: gem, model: "gemini-3-pro-preview", stop: "end_turn", text: "Your name is Alice.", usage: replay.Usage{InputTokens: 21, OutputTokens: 119}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := cassette.Read(filepath.Join(corpus, filepath.FromSlash(tt.file)))
			require.NoError(t, err)
			got := replay.Inspect(context.Background(), c)
			require.Len(t, got, len(tt.turns))
			for i, want := range tt.turns {
				in := got[i]
				require.Empty(t, in.Error, "#%d", i)
				assert.Equal(t, want.api, in.API, "#%d", i)
				assert.Equal(t, want.streamed, in.Streamed, "#%d", i)
				assert.Equal(t, want.model, in.Response.Model, "#%d", i)
				assert.Equal(t, want.stop, in.Response.StopReason, "#%d", i)
				assert.True(t, strings.HasPrefix(in.Response.Text, want.text), "#%d: %q", i, in.Response.Text)
				assert.Equal(t, want.usage, in.Response.Usage, "#%d", i)
				require.Len(t, in.Response.ToolCalls, len(want.calls), "#%d", i)
				for j, wc := range want.calls {
					if wc.id == "" {
						assert.Regexp(t, synthesizedID, in.Response.ToolCalls[j].ID)
					} else {
						assert.Equal(t, wc.id, in.Response.ToolCalls[j].ID)
					}
					assert.JSONEq(t, wc.args, string(in.Response.ToolCalls[j].Args))
				}
			}
		})
	}

	// An invalid key, answered with a JSON error document under an event
	// stream's content type: a valid recording of a provider error.
	c, err := cassette.Read(filepath.Join(corpus, "crewai", "imported", "llms", "google", "test_google_streaming_returns_usage_metrics.yaml"))
	require.NoError(t, err)
	for _, in := range replay.Inspect(context.Background(), c) {
		assert.Equal(t, 400, in.Status)
		assert.Contains(t, in.Error, "authentication")
		assert.Contains(t, in.Error, "API_KEY_INVALID")
		assert.False(t, in.Failed(), "an error answer is a correct recording")
	}
}
