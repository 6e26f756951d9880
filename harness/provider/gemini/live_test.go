package gemini_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
)

// streaming answers every call through the model's Stream, as an agent
// that streams does.
type streaming struct{ m llm.StreamingModel }

func (s streaming) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	var final *llm.Response
	for c, err := range s.m.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if c.Response != nil {
			final = c.Response
		}
	}
	return final, nil
}

func weatherTool(calls *atomic.Int32) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "get_weather", Description: "Weather now.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		Fn: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			calls.Add(1)
			var in struct{ City string }
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Text("sunny in " + in.City), nil
		},
	}
}

// weatherScript thinks, calls two tools in parallel, then answers.
func weatherScript() *fakes.Scripted {
	return fakes.NewScripted(
		fakes.Respond(llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
			Content:   []llm.Block{{Type: llm.BlockThinking, Thinking: "Two cities, two calls.", Signature: "gemini:c2lnLXRob3VnaHQ="}, llm.TextBlock("Checking both.")},
			ToolCalls: []llm.ToolCall{fakes.Call("get_weather", map[string]string{"city": "Paris"}), fakes.Call("get_weather", map[string]string{"city": "Tokyo"})},
		}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 20, CacheReadTokens: 10}}),
		fakes.Respond(llm.Response{Message: llm.Assistant("Sunny in both."), Usage: llm.Usage{InputTokens: 80, OutputTokens: 5, CacheReadTokens: 30}}),
	)
}

// TestToolLoopAgainstTheLocalServer runs an agent through the adapter
// against the local Gemini server, whole and streamed: for Gemini 3 the
// server refuses a history whose calls lost their thought signatures, so
// the second turn succeeding shows they went back on the right parts.
func TestToolLoopAgainstTheLocalServer(t *testing.T) {
	for _, mode := range []string{"generate", "stream"} {
		t.Run(mode, func(t *testing.T) {
			script := weatherScript()
			srv := llmserver.NewServer(script, llmserver.WithAPIKey("local-key-0123"))
			defer srv.Close()
			m := newModel(t, srv.URL, func(c *provider.Config) { c.Model, c.APIKey = "gemini-3-flash-preview", "local-key-0123" })
			var model llm.ChatModel = m
			if mode == "stream" {
				model = streaming{m}
			}
			var calls atomic.Int32
			a, err := agent.New(agent.Config{Model: model, System: []llm.Block{llm.TextBlock("Use the tools.")}, Tools: []tool.Tool{weatherTool(&calls)}})
			require.NoError(t, err)
			res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("Weather in Paris and Tokyo?")}})
			require.NoError(t, err)
			assert.Equal(t, "Sunny in both.", res.Text())
			assert.Equal(t, int32(2), calls.Load())
			assert.Equal(t, llm.Usage{InputTokens: 120, OutputTokens: 25, CacheReadTokens: 40}, res.Usage, "cached tokens are cache reads, not input")

			served := srv.Requests()
			require.Len(t, served, 2)
			for i, s := range served {
				assert.Equal(t, 200, s.Status, "#%d: %s", i, s.Error)
				assert.Equal(t, mode == "stream", s.Stream)
				assert.Equal(t, "gemini-3-flash-preview", s.Model)
			}
			// What the model saw on the second turn: its own turn back,
			// thought included, and both results.
			second := script.Requests()[1]
			require.Len(t, second.Messages, 4)
			assert.Equal(t, []llm.Block{{Type: llm.BlockThinking, Thinking: "Two cities, two calls.", Signature: "gemini:c2lnLXRob3VnaHQ="}, llm.TextBlock("Checking both.")}, second.Messages[1].Content)
			assert.Equal(t, "sunny in Paris", second.Messages[2].Text())
			assert.Equal(t, "sunny in Tokyo", second.Messages[3].Text())
			assert.Equal(t, "Use the tools.", second.SystemText())
		})
	}
}

// TestWholeAndStreamedAnswersAreEqual: the local server's whole and
// streamed forms of one scripted answer decode to the same response.
func TestWholeAndStreamedAnswersAreEqual(t *testing.T) {
	serve := func() *llmserver.Server { return llmserver.NewServer(weatherScript()) }
	a, b := serve(), serve()
	defer a.Close()
	defer b.Close()
	whole, err := newModel(t, a.URL).Generate(context.Background(), userRequest("Weather?"))
	require.NoError(t, err)
	s := collect(t, newModel(t, b.URL), userRequest("Weather?"))
	require.NoError(t, s.Err)
	assert.Equal(t, untimed(t, whole, false), untimed(t, s.Final, true))
	assert.Greater(t, len(s.Chunks), 4, "text arrives in pieces")
	assert.Equal(t, llm.StopToolUse, whole.StopReason)
	assert.Len(t, whole.Message.ToolCalls, 2)
	assert.Equal(t, llm.Usage{InputTokens: 40, OutputTokens: 20, CacheReadTokens: 10}, whole.Usage)
}

// TestFaultsFromTheLocalServer: Gemini-shaped errors are classified and
// retried under the policy; a stream cut short is an incomplete answer.
func TestFaultsFromTheLocalServer(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("after the retry"), fakes.Reply("one two three four five six")))
	defer srv.Close()
	srv.FailOn(1, llmserver.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}})
	var waits []time.Duration
	m := newModel(t, srv.URL, func(c *provider.Config) {
		c.Retry = provider.RetryPolicy{MaxAttempts: 3, Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	})
	got, err := m.Generate(context.Background(), userRequest("x"))
	require.NoError(t, err)
	assert.Equal(t, "after the retry", got.Message.Text())
	assert.Equal(t, []time.Duration{time.Second}, waits)

	srv.FailOn(3, llmserver.Fault{Truncate: true, TruncateAfter: 2})
	s := collect(t, m, userRequest("x"))
	require.Error(t, s.Err)
	assert.Equal(t, llm.ErrConnection, llm.KindOf(s.Err))
	assert.NotEmpty(t, s.Chunks, "what arrived before the cut was delivered")
}
