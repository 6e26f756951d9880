package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
	"github.com/dageval/dageval/harness/tool"
)

const cityLocation = `{"type":"object","title":"CityLocation","properties":{"city":{"type":"string"},"country":{"type":"string"}},"required":["city","country"]}`

func countryTool(calls *atomic.Int32) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "get_user_country", Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			calls.Add(1)
			return tool.Text("Mexico"), nil
		},
	}
}

// TestAgentLoopReplaysToolOutputRecording runs the whole recorded
// test_anthropic_tool_output conversation through the real adapter and the
// agent runtime: the model calls get_user_country, the tool answers
// "Mexico", and the model answers through the final_result format tool.
func TestAgentLoopReplaysToolOutputRecording(t *testing.T) {
	c := recorded.MustLoad(t, "test_anthropic/test_anthropic_tool_output.yaml")
	srv := recorded.Serve(t, c)
	var toolCalls atomic.Int32
	a, err := agent.New(agent.Config{
		Model: replayModel(t, srv.BaseURL(), "claude-sonnet-4-5"),
		Tools: []tool.Tool{countryTool(&toolCalls)},
		ResponseFormat: &agent.ResponseFormat{
			Name:        "final_result",
			Description: "The final response which ends this conversation",
			Schema:      json.RawMessage(cityLocation),
			Strategy:    agent.StrategyTool,
		},
		MaxTokens: 4096,
	})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is the largest city in the user country?")}})
	require.NoError(t, err)

	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
	assert.Equal(t, int32(1), toolCalls.Load())
	assert.Equal(t, 2, srv.Served())
	assert.Equal(t, llm.Usage{InputTokens: 445 + 497, OutputTokens: 23 + 56}, res.Usage)

	// The transcript: user, call, tool result, final call, its acknowledgement.
	msgs := res.State.Messages
	require.Len(t, msgs, 5)
	assert.Equal(t, "toolu_01X9wcHKKAZD9tBC711xipPa", msgs[1].ToolCalls[0].ID)
	assert.Equal(t, "Mexico", msgs[2].Text())
	assert.Equal(t, "final_result", msgs[3].ToolCalls[0].Name)

	// What the adapter sent on the second turn answers the recorded call.
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	second := reqs[1].JSON(t)
	turns := second["messages"].([]any)
	require.Len(t, turns, 3)
	assistant := turns[1].(map[string]any)
	assert.Equal(t, "assistant", assistant["role"])
	use := assistant["content"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"type": "tool_use", "id": "toolu_01X9wcHKKAZD9tBC711xipPa", "name": "get_user_country", "input": map[string]any{}}, use)
	result := turns[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	assert.Equal(t, "tool_result", result["type"])
	assert.Equal(t, "toolu_01X9wcHKKAZD9tBC711xipPa", result["tool_use_id"])
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "Mexico"}}, result["content"])
	var names []string
	for _, tl := range second["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	assert.Equal(t, []string{"get_user_country", "final_result"}, names)
	for _, r := range reqs {
		assert.Empty(t, r.Header.Get("Authorization"), "replay sends no credentials")
		assert.Empty(t, r.Header.Get("X-Api-Key"))
	}
}

// TestAgentLoopReplaysPromptedOutputRecording uses the provider strategy:
// the final answer is JSON text validated against the schema.
func TestAgentLoopReplaysPromptedOutputRecording(t *testing.T) {
	c := recorded.MustLoad(t, "test_anthropic/test_anthropic_prompted_output.yaml")
	srv := recorded.Serve(t, c)
	var toolCalls atomic.Int32
	a, err := agent.New(agent.Config{
		Model:          replayModel(t, srv.BaseURL(), "claude-sonnet-4-5"),
		Tools:          []tool.Tool{countryTool(&toolCalls)},
		ResponseFormat: &agent.ResponseFormat{Name: "CityLocation", Schema: json.RawMessage(cityLocation), Strategy: agent.StrategyProvider},
	})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is the largest city in the user country? Use the get_user_country tool and then your own world knowledge.")}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
	assert.Equal(t, int32(1), toolCalls.Load())

	// Native structured output was requested, with closed objects.
	first := srv.Requests()[0].JSON(t)
	format := first["output_config"].(map[string]any)["format"].(map[string]any)
	assert.Equal(t, "json_schema", format["type"])
	assert.Equal(t, false, format["schema"].(map[string]any)["additionalProperties"])
}

// TestAgentLoopReplaysParallelToolCalls runs four parallel tool calls and
// checks that their results go back in one user turn, in call order.
func TestAgentLoopReplaysParallelToolCalls(t *testing.T) {
	c := recorded.MustLoad(t, "test_anthropic/test_multiple_parallel_tool_calls.yaml")
	srv := recorded.Serve(t, c)
	facts := map[string]string{
		"Alice": "alice is bob's wife", "Bob": "bob is alice's husband",
		"Charlie": "charlie is alice's son", "Daisy": "daisy is bob's daughter and charlie's younger sister",
	}
	info := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "retrieve_entity_info", Description: "Get the knowledge about the given entity.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)},
		Fn: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Text(facts[in.Name]), nil
		},
	}
	a, err := agent.New(agent.Config{
		Model:  replayModel(t, srv.BaseURL(), "claude-haiku-4-5"),
		System: []llm.Block{llm.TextBlock("Use the `retrieve_entity_info` tool to get information about a specific person.")},
		Tools:  []tool.Tool{info},
	})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("Alice, Bob, Charlie and Daisy are a family. Who is the youngest?")}})
	require.NoError(t, err)
	assert.True(t, strings.Contains(res.Text(), "Daisy is the youngest in the family."), res.Text())

	second := srv.Requests()[1].JSON(t)
	turns := second["messages"].([]any)
	require.Len(t, turns, 3)
	results := turns[2].(map[string]any)["content"].([]any)
	require.Len(t, results, 4)
	for i, id := range []string{"toolu_0167cfEnoQaPviGdVXA95zcu", "toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "toolu_01XFyAjstT3966qvRynZyVPo", "toolu_013mnQZbgtK2oe3Mo3XKJsx3"} {
		assert.Equal(t, id, results[i].(map[string]any)["tool_use_id"])
	}
	assistant := turns[1].(map[string]any)["content"].([]any)
	require.Len(t, assistant, 5, "text then four tool_use blocks")
	assert.Equal(t, "text", assistant[0].(map[string]any)["type"])
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "Use the `retrieve_entity_info` tool to get information about a specific person."}}, second["system"])
}
