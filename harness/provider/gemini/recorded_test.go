package gemini_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/gemini"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
	"github.com/dageval/dageval/harness/tool"
)

// replayModel builds the adapter against a loopback server in replay mode:
// no key, no retries, no environment.
func replayModel(t *testing.T, baseURL, model string) *gemini.Model {
	t.Helper()
	m, err := gemini.New(provider.Config{Model: model, BaseURL: baseURL, Replay: true, Getenv: noEnv, Retry: provider.RetryPolicy{MaxAttempts: 1}})
	require.NoError(t, err)
	return m
}

type recordedCall struct{ id, name, args string } // id "" for a derived one

// recordedTurn is what one recorded Gemini answer holds.
type recordedTurn struct {
	model     string
	stop      llm.StopReason
	text      string // prefix
	thinking  string // prefix
	calls     []recordedCall
	signed    bool // a thought signature is kept in the message
	usage     llm.Usage
	errKind   llm.ErrorKind
	errSubstr string
}

var geminiRecordings = []struct {
	project, name string
	turns         []recordedTurn
}{
	{"llm-gemini", "test_gemini/test_tools_with_gemini_3_thought_signatures.yaml", []recordedTurn{
		{model: "gemini-3-flash-preview", stop: llm.StopToolUse, calls: []recordedCall{{"", "multiply", `{"x":5,"y":3}`}}, signed: true, usage: llm.Usage{InputTokens: 60, OutputTokens: 16 + 32}},
		{model: "gemini-3-flash-preview", stop: llm.StopEndTurn, text: "5 times 3 is 15.", usage: llm.Usage{InputTokens: 121, OutputTokens: 9}},
	}},
	{"llm-gemini", "test_gemini/test_tools.yaml", []recordedTurn{
		{model: "gemini-2.5-flash", stop: llm.StopToolUse, thinking: "**Generating Pelican Names**", calls: []recordedCall{{"", "pelican_name_generator", `{}`}}, signed: true, usage: llm.Usage{InputTokens: 32, OutputTokens: 54}},
		{model: "gemini-2.5-flash", stop: llm.StopToolUse, calls: []recordedCall{{"", "pelican_name_generator", `{}`}}, usage: llm.Usage{InputTokens: 105, OutputTokens: 13}},
		{model: "gemini-2.5-flash", stop: llm.StopEndTurn, text: "How about Charles and Sammy?", usage: llm.Usage{InputTokens: 137, OutputTokens: 6}},
	}},
	{"llm-gemini", "test_gemini/test_stream_events_tool_calls.yaml", []recordedTurn{
		// Gemini 3 gave this call an id of its own.
		{model: "gemini-3-flash-preview", stop: llm.StopToolUse, calls: []recordedCall{{"c9bjmkfz", "pelican_name_generator", `{"type":"funny"}`}}, signed: true, usage: llm.Usage{InputTokens: 28, OutputTokens: 267}},
	}},
	{"llm-gemini", "test_gemini/test_prompt.yaml", []recordedTurn{
		{model: "gemini-1.5-flash-latest", stop: llm.StopEndTurn, text: "Percy", usage: llm.Usage{InputTokens: 9, OutputTokens: 2}},
		{model: "gemini-1.5-flash-latest", stop: llm.StopEndTurn, text: "Percy", usage: llm.Usage{InputTokens: 9, OutputTokens: 2}},
	}},
	{"crewai", "llms/google/test_gemini_tool_returning_float.yaml", []recordedTurn{
		{model: "gemini-2.0-flash-001", stop: llm.StopToolUse, calls: []recordedCall{{"", "sum_numbers", `{"a":10000,"b":20000}`}}, usage: llm.Usage{InputTokens: 127, OutputTokens: 7}},
		// Gemini 2.0 answered the tool result with an empty text part,
		// twice; crewAI re-prompted until it answered.
		{model: "gemini-2.0-flash-001", stop: llm.StopEndTurn, usage: llm.Usage{InputTokens: 171}},
		{model: "gemini-2.0-flash-001", stop: llm.StopEndTurn, usage: llm.Usage{InputTokens: 271}},
		{model: "gemini-2.0-flash-001", stop: llm.StopEndTurn, text: "\n{\"sum_numbers_response\": {\"result\": 30000}}", usage: llm.Usage{InputTokens: 371, OutputTokens: 19}},
	}},
	{"crewai", "llms/google/test_gemini_async_conversation.yaml", []recordedTurn{
		{model: "gemini-3-pro-preview", stop: llm.StopEndTurn, text: "Your name is Alice.", signed: true, usage: llm.Usage{InputTokens: 21, OutputTokens: 5 + 114}},
	}},
	{"crewai", "llms/google/test_gemini_token_usage_tracking.yaml", []recordedTurn{
		{model: "gemini-2.0-flash-001", stop: llm.StopEndTurn, text: "Hi there! How can I help you today?", usage: llm.Usage{InputTokens: 1, OutputTokens: 11}},
	}},
	{"crewai", "llms/google/test_google_async_streaming_returns_usage_metrics.yaml", []recordedTurn{
		// The prompt count of the last chunk counts (the first said 165).
		{model: "gemini-2.0-flash-exp", stop: llm.StopEndTurn, text: "The capital of Canada is Ottawa.\nFinal Answer: Ottawa", usage: llm.Usage{InputTokens: 163, OutputTokens: 13}},
	}},
	{"crewai", "llms/google/test_google_streaming_returns_usage_metrics.yaml", []recordedTurn{
		{errKind: llm.ErrAuthentication, errSubstr: "API key not valid"},
		{errKind: llm.ErrAuthentication, errSubstr: "API key not valid"},
		{errKind: llm.ErrAuthentication, errSubstr: "API key not valid"},
	}},
	{"pydantic-ai", "test_openai/test_multiple_agent_tool_calls.yaml", []recordedTurn{
		{model: "gemini-2.0-flash-exp", stop: llm.StopToolUse, calls: []recordedCall{{"", "get_capital", `{"country":"France"}`}}, usage: llm.Usage{InputTokens: 23, OutputTokens: 5}},
		{model: "gemini-2.0-flash-exp", stop: llm.StopEndTurn, text: "The capital of France is Paris.", usage: llm.Usage{InputTokens: 35, OutputTokens: 8}},
	}},
}

func checkRecordedTurn(t *testing.T, label string, want recordedTurn, got *llm.Response, err error) {
	t.Helper()
	if want.errKind != "" {
		require.Error(t, err, label)
		assert.Equal(t, want.errKind, llm.KindOf(err), "%s: %v", label, err)
		assert.ErrorContains(t, err, want.errSubstr, label)
		return
	}
	require.NoError(t, err, label)
	assert.Equal(t, want.model, got.Model, label)
	assert.Equal(t, want.stop, got.StopReason, label)
	assert.True(t, strings.HasPrefix(got.Message.Text(), want.text), "%s: text %q", label, got.Message.Text())
	if want.text == "" {
		assert.Empty(t, strings.TrimSpace(got.Message.Text()), label)
	}
	var thinking string
	signed := false
	for _, b := range got.Message.Content {
		thinking += b.Thinking
		if strings.HasPrefix(b.Signature, "gemini") {
			signed = true
		}
	}
	assert.True(t, strings.HasPrefix(thinking, want.thinking), "%s: thinking %q", label, thinking)
	assert.Equal(t, want.signed, signed, "%s: thought signature kept", label)
	assert.Equal(t, want.usage, got.Usage, label)
	require.Len(t, got.Message.ToolCalls, len(want.calls), label)
	for i, c := range want.calls {
		tc := got.Message.ToolCalls[i]
		if c.id == "" {
			assert.Regexp(t, `^gemini_[0-9a-f]{24}$`, tc.ID, label)
		} else {
			assert.Equal(t, c.id, tc.ID, label)
		}
		assert.Equal(t, c.name, tc.Name, label)
		assert.JSONEq(t, c.args, string(tc.Args), label)
	}
}

// TestRecordedGeminiAnswers decodes every recorded Gemini answer of the
// corpus, whole (Generate) and streamed (Stream), whatever shape it was
// recorded in: one JSON object, server-sent events, or one JSON array of
// chunks (streamGenerateContent without alt=sse).
func TestRecordedGeminiAnswers(t *testing.T) {
	for _, rec := range geminiRecordings {
		t.Run(rec.project+"/"+rec.name, func(t *testing.T) {
			c := recorded.MustLoadProject(t, rec.project, rec.name)
			var turns []recorded.Interaction
			for _, in := range c.Interactions {
				if strings.Contains(in.URL.Path, "/v1beta/models/") {
					turns = append(turns, in)
				}
			}
			require.Len(t, turns, len(rec.turns))
			for i, want := range rec.turns {
				one := &recorded.Cassette{Name: rec.name, Interactions: []recorded.Interaction{turns[i], turns[i]}}
				srv := recorded.Serve(t, one)
				m := replayModel(t, srv.BaseURL(), modelOf(turns[i].URL.Path))
				got, err := m.Generate(context.Background(), userRequest("x"))
				checkRecordedTurn(t, fmt.Sprintf("#%d whole", i), want, got, err)
				s := collect(t, m, userRequest("x"))
				checkRecordedTurn(t, fmt.Sprintf("#%d streamed", i), want, s.Final, s.Err)
				if want.errKind == "" {
					assert.Equal(t, got, s.Final, "#%d: both ways give one response", i)
				}

				a := turns[i].Answer()
				d, err := gemini.DecodeAnswer(context.Background(), a, 1)
				checkRecordedTurn(t, fmt.Sprintf("#%d decoded", i), want, d, err)
			}
		})
	}
}

// modelOf reads the model from a Gemini path, as the server checks it.
func modelOf(path string) string {
	_, rest, _ := strings.Cut(path, "/models/")
	model, _, _ := strings.Cut(rest, ":")
	return model
}

func intTool(name string, result string, calls *atomic.Int32) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: name, Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}}`)},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			calls.Add(1)
			return tool.Text(result), nil
		},
	}
}

// secondTurnParts returns the parts of the model turn the adapter sent
// back on the recorded conversation's second request.
func secondTurnParts(t *testing.T, srv *recorded.Server) (model, response []any) {
	t.Helper()
	reqs := srv.Requests()
	require.GreaterOrEqual(t, len(reqs), 2)
	contents := reqs[1].JSON(t)["contents"].([]any)
	require.Len(t, contents, 3)
	assert.Equal(t, "model", contents[1].(map[string]any)["role"])
	return contents[1].(map[string]any)["parts"].([]any), contents[2].(map[string]any)["parts"].([]any)
}

// TestAgentLoopSendsRecordedSignaturesBack replays llm-gemini's Gemini 3
// tool loop through the agent, whole and streamed: the thought signature
// Gemini recorded on its function call goes back on that call, as Gemini 3
// requires, and the tool's result answers it.
func TestAgentLoopSendsRecordedSignaturesBack(t *testing.T) {
	const sig = "Et0BCtoBAXLI2nwMB4momyXTj+K3OPELPDi5Mq6bA5ZHuiKVF9m94gyxd+zdlC+s73nWxHx1ImnA9wPRG1sKMAvENS5i0Bef0VxMS31QE4PbbJw81tSto0OCC+AJdHF0i7x3uHqBuj91gBPwmy3rhAQM+8kxmaF4FeJ0rvICgjIIjG7rBgCE8vOD9Glt/sy3WPKo//jOukERM0rVGAPpMogXNtQbJWUQ8469alaZN67hbYJNaL5XSNcsbsu4ub04B2aFPc6NJld2EWK/enYFPnarMNwobDsSstlzuMygTHQ="
	for _, mode := range []string{"generate", "stream"} {
		t.Run(mode, func(t *testing.T) {
			c := recorded.MustLoadProject(t, "llm-gemini", "test_gemini/test_tools_with_gemini_3_thought_signatures.yaml")
			srv := recorded.Serve(t, c)
			var model llm.ChatModel = replayModel(t, srv.BaseURL(), "gemini-3-flash-preview")
			if mode == "stream" {
				model = streaming{model.(*gemini.Model)}
			}
			var calls atomic.Int32
			a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{intTool("multiply", "15", &calls)}})
			require.NoError(t, err)
			res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is 5 times 3?")}})
			require.NoError(t, err)
			assert.Equal(t, "5 times 3 is 15.", res.Text())
			assert.Equal(t, int32(1), calls.Load())
			assert.Equal(t, llm.Usage{InputTokens: 181, OutputTokens: 57}, res.Usage)
			assert.Equal(t, 2, srv.Served())
			for _, r := range srv.Requests() {
				if mode == "stream" {
					assert.True(t, strings.HasSuffix(r.Path, ":streamGenerateContent"))
					assert.Equal(t, "alt=sse", r.Query)
				} else {
					assert.True(t, strings.HasSuffix(r.Path, ":generateContent"), "a whole call reads the recorded stream")
				}
			}

			modelParts, responseParts := secondTurnParts(t, srv)
			require.Len(t, modelParts, 1)
			assert.Equal(t, map[string]any{"functionCall": map[string]any{"name": "multiply", "args": map[string]any{"x": 5.0, "y": 3.0}}, "thoughtSignature": sig}, modelParts[0])
			assert.Equal(t, []any{map[string]any{"functionResponse": map[string]any{"name": "multiply", "response": map[string]any{"output": "15"}}}}, responseParts)
		})
	}
}

// TestAgentLoopReplaysThoughtSummaries replays llm-gemini's Gemini 2.5
// run, which thinks aloud: the tool is called twice, one turn after the
// other, and the first call goes back with its signature while the
// unsigned thought summary stays home, as llm-gemini sent it.
func TestAgentLoopReplaysThoughtSummaries(t *testing.T) {
	c := recorded.MustLoadProject(t, "llm-gemini", "test_gemini/test_tools.yaml")
	srv := recorded.Serve(t, c)
	names := []string{"Charles", "Sammy"}
	var calls atomic.Int32
	pelican := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "pelican_name_generator"},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			return tool.Text(names[calls.Add(1)-1]), nil
		},
	}
	a, err := agent.New(agent.Config{Model: replayModel(t, srv.BaseURL(), "gemini-2.5-flash"), Tools: []tool.Tool{pelican}})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("Two names for a pet pelican")}})
	require.NoError(t, err)
	assert.Equal(t, "How about Charles and Sammy?", res.Text())
	assert.Equal(t, int32(2), calls.Load())
	assert.Equal(t, 3, srv.Served())

	thinking := res.State.Messages[1].Content[0]
	assert.True(t, strings.HasPrefix(thinking.Thinking, "**Generating Pelican Names**"), "the summary is in the transcript")
	assert.Empty(t, thinking.Signature)
	modelParts, _ := secondTurnParts(t, srv)
	require.Len(t, modelParts, 1)
	call := modelParts[0].(map[string]any)
	assert.Equal(t, map[string]any{"name": "pelican_name_generator"}, call["functionCall"], "no made-up id goes back")
	assert.True(t, strings.HasPrefix(call["thoughtSignature"].(string), "ClgBEU0yD8z3"), "the call's signature goes back with it")
}

// TestReplayReportsTheRecordedLatency: a replayed answer reports the
// duration and first event a recorder announces (provider.DurationHeader,
// provider.FirstEventHeader), not the replay's own clock, whichever shape
// it was recorded in and whichever way it is read; an answer recorded
// without a duration has unknown latency.
func TestReplayReportsTheRecordedLatency(t *testing.T) {
	chunks := sseOf([]string{`{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}],"responseId":"r"}`})
	for _, tc := range []struct {
		recorded answer
		want     *llm.Latency
	}{
		{answer{200, "text/event-stream", chunks, http.Header{provider.DurationHeader: {"1.5s"}, provider.FirstEventHeader: {"300ms"}}},
			&llm.Latency{Duration: 1500 * time.Millisecond, FirstEvent: 300 * time.Millisecond, Recorded: true}},
		{answer{200, "application/json", okAnswer, http.Header{provider.DurationHeader: {"800ms"}}},
			&llm.Latency{Duration: 800 * time.Millisecond, Recorded: true}},
	} {
		a := tc.recorded
		srv := newWireServer(t, a, a)
		m := replayModel(t, srv.URL, "gemini-2.5-flash")
		got, err := m.Generate(context.Background(), userRequest("x"))
		require.NoError(t, err, a.contentType)
		assert.Equal(t, tc.want, got.Latency, "Generate, recorded as %s", a.contentType)
		s := collect(t, m, userRequest("x"))
		require.NoError(t, s.Err, a.contentType)
		assert.Equal(t, tc.want, s.Final.Latency, "Stream, recorded as %s", a.contentType)
	}
	srv := newWireServer(t, answer{200, "application/json", okAnswer, http.Header{provider.DurationHeader: {"unknown"}}})
	got, err := replayModel(t, srv.URL, "gemini-2.5-flash").Generate(context.Background(), userRequest("x"))
	require.NoError(t, err)
	assert.Nil(t, got.Latency, "no recorded duration: unknown, not the replay's")
}
