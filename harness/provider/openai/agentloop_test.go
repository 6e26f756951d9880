package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
	"github.com/dageval/dageval/harness/tool"
)

const cityLocation = `{"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string"}},"required":["city","country"]}`

func textTool(name, description, answer string, calls *atomic.Int32) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: name, Description: description, Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			calls.Add(1)
			return tool.Text(answer), nil
		},
	}
}

// resolverFor resolves specs the way the harness will: through the built-in
// entries, in replay mode, with options as a profile would give them.
func resolverFor(t *testing.T) *provider.Resolver {
	t.Helper()
	return builtin.NewResolver(provider.Config{Replay: true, HTTPClient: http.DefaultClient, Getenv: func(string) string { return "" }})
}

func runCityAgent(t *testing.T, m llm.ChatModel) (*agent.Result, int32) {
	t.Helper()
	var calls atomic.Int32
	a, err := agent.New(agent.Config{
		Model: m,
		Tools: []tool.Tool{textTool("get_user_country", "", "Mexico", &calls)},
		ResponseFormat: &agent.ResponseFormat{
			Name:        "final_result",
			Description: "The final response which ends this conversation",
			Schema:      json.RawMessage(cityLocation),
		},
	})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is the largest city in the user country?")}})
	require.NoError(t, err)
	return res, calls.Load()
}

// TestAgentLoopReplaysOpenAIToolOutput runs the recorded
// test_openai_tool_output conversation (Chat Completions) through the
// resolver, the real adapter and the agent runtime.
func TestAgentLoopReplaysOpenAIToolOutput(t *testing.T) {
	c := recorded.MustLoad(t, "test_openai/test_openai_tool_output.yaml")
	srv := recorded.Serve(t, c)
	m, err := resolverFor(t).ResolveWith("openai:gpt-4o", map[string]any{"base_url": srv.BaseURL(), "use_responses_api": false})
	require.NoError(t, err)

	res, calls := runCityAgent(t, m)
	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
	assert.Equal(t, int32(1), calls)
	assert.Equal(t, llm.Usage{InputTokens: 68 + 89, OutputTokens: 12 + 36}, res.Usage)
	assert.Equal(t, 2, srv.Served())

	second := srv.Requests()[1].JSON(t)
	assert.Equal(t, "/v1/chat/completions", srv.Requests()[1].Path)
	msgs := second["messages"].([]any)
	require.Len(t, msgs, 3)
	assert.Equal(t, map[string]any{"role": "user", "content": "What is the largest city in the user country?"}, msgs[0])
	assistant := msgs[1].(map[string]any)
	assert.Equal(t, []any{map[string]any{"id": "call_iXFttys57ap0o16JSlC8yhYo", "type": "function", "function": map[string]any{"name": "get_user_country", "arguments": "{}"}}}, assistant["tool_calls"])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_iXFttys57ap0o16JSlC8yhYo", "content": "Mexico"}, msgs[2])
	assert.Len(t, second["tools"], 2)
}

// TestAgentLoopReplaysResponsesToolOutput runs the same task recorded
// against the Responses API, the default for openai: models.
func TestAgentLoopReplaysResponsesToolOutput(t *testing.T) {
	c := recorded.MustLoad(t, "test_openai_responses/test_tool_output.yaml")
	srv := recorded.Serve(t, c)
	m, err := resolverFor(t).ResolveWith("openai:gpt-4o", map[string]any{"base_url": srv.BaseURL()})
	require.NoError(t, err)

	res, calls := runCityAgent(t, m)
	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
	assert.Equal(t, int32(1), calls)
	assert.Equal(t, llm.Usage{InputTokens: 62 + 85, OutputTokens: 12 + 20}, res.Usage)

	second := srv.Requests()[1].JSON(t)
	assert.Equal(t, "/v1/responses", srv.Requests()[1].Path)
	input := second["input"].([]any)
	require.Len(t, input, 3)
	assert.Equal(t, map[string]any{"type": "function_call", "call_id": "call_ZWkVhdUjupo528U9dqgFeRkH", "name": "get_user_country", "arguments": "{}"}, input[1])
	assert.Equal(t, map[string]any{"type": "function_call_output", "call_id": "call_ZWkVhdUjupo528U9dqgFeRkH", "output": "Mexico"}, input[2])
	tools := second["tools"].([]any)
	assert.Equal(t, false, tools[0].(map[string]any)["strict"])
}

// TestAgentLoopWithoutToolCallIDs replays Gemini's compatible endpoint,
// which sends tool calls without ids: the synthesised id pairs the call
// with its result, and Gemini's thought signature goes back with the turn.
func TestAgentLoopWithoutToolCallIDs(t *testing.T) {
	c := recorded.MustLoad(t, "test_openai/test_compatible_api_with_tool_calls_without_id.yaml")
	srv := recorded.Serve(t, c)
	r := resolverFor(t)
	m, err := r.ResolveWith("gemini-openai:gemini-2.5-pro-preview-05-06", map[string]any{"base_url": srv.BaseURL()})
	require.NoError(t, err)
	var calls atomic.Int32
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{textTool("get_current_time", "Get the current time.", "Noon", &calls)}})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is the current time?")}})
	require.NoError(t, err)
	assert.Equal(t, "The current time is Noon.", res.Text())
	assert.Equal(t, int32(1), calls.Load())

	id := res.State.Messages[1].ToolCalls[0].ID
	assert.Regexp(t, synthesized, id)
	second := srv.Requests()[1].JSON(t)
	msgs := second["messages"].([]any)
	assistant := msgs[1].(map[string]any)
	assert.Equal(t, id, assistant["tool_calls"].([]any)[0].(map[string]any)["id"])
	assert.Contains(t, assistant["extra_content"].(map[string]any)["google"].(map[string]any)["thought_signature"], "AVSoXO4AzAXs7GGvOY63")
	assert.Equal(t, id, msgs[2].(map[string]any)["tool_call_id"])

	// A replay of the same run synthesises the same id.
	srv2 := recorded.Serve(t, c)
	m2, err := r.ResolveWith("gemini-openai:gemini-2.5-pro-preview-05-06", map[string]any{"base_url": srv2.BaseURL()})
	require.NoError(t, err)
	a2, err := agent.New(agent.Config{Model: m2, Tools: []tool.Tool{textTool("get_current_time", "Get the current time.", "Noon", &calls)}})
	require.NoError(t, err)
	res2, err := a2.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is the current time?")}})
	require.NoError(t, err)
	assert.Equal(t, id, res2.State.Messages[1].ToolCalls[0].ID)
}
