package replay_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/fakes/replay"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
)

func noEnv(string) string { return "" }

const cityLocation = `{"type":"object","title":"CityLocation","properties":{"city":{"type":"string"},"country":{"type":"string"}},"required":["city","country"]}`

// textTool answers every call with the same text and counts the calls.
func textTool(name, description, answer string, calls *atomic.Int32) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: name, Description: description, Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			calls.Add(1)
			return tool.Text(answer), nil
		},
	}
}

// openImported opens a third-party recording for replay, as the eval
// runner will: the recorder answers in recorded order (the cassette
// declares match: order) and the resolver's models need no key.
func openImported(t *testing.T, name string) (*recorder.Recorder, *provider.Resolver) {
	t.Helper()
	rec, r := replay.OpenTest(t, thirdParty(name), provider.Config{Getenv: noEnv}, recorder.WithGetenv(noEnv))
	require.Equal(t, recorder.ModeReplay, rec.Mode())
	require.Equal(t, cassette.MatchOrder, rec.Match())
	return rec, r
}

// cityAgent is the agent of pydantic-ai's tool_output tests: one tool that
// answers "Mexico" and a structured final answer given as a tool call.
func cityAgent(t *testing.T, m llm.ChatModel, calls *atomic.Int32) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{
		Model: m,
		Tools: []tool.Tool{textTool("get_user_country", "", "Mexico", calls)},
		ResponseFormat: &agent.ResponseFormat{
			Name:        "final_result",
			Description: "The final response which ends this conversation",
			Schema:      json.RawMessage(cityLocation),
			Strategy:    agent.StrategyTool,
		},
		MaxTokens: 4096,
	})
	require.NoError(t, err)
	return a
}

const cityQuestion = "What is the largest city in the user country?"

func TestAgentLoopReplaysAnthropicToolOutputThroughTheRecorder(t *testing.T) {
	rec, r := openImported(t, "test_anthropic/test_anthropic_tool_output.yaml")
	m, err := r.Resolve("anthropic:claude-sonnet-4-5")
	require.NoError(t, err)
	var calls atomic.Int32
	res, err := cityAgent(t, m, &calls).Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User(cityQuestion)}})
	require.NoError(t, err)

	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
	assert.Equal(t, int32(1), calls.Load(), "get_user_country ran once")
	assert.Equal(t, llm.Usage{InputTokens: 445 + 497, OutputTokens: 23 + 56}, res.Usage)
	assert.Empty(t, rec.Unplayed(), "the run used the whole recording")
	msgs := res.State.Messages
	require.Len(t, msgs, 5)
	assert.Equal(t, "toolu_01X9wcHKKAZD9tBC711xipPa", msgs[1].ToolCalls[0].ID)
	assert.Equal(t, "get_user_country", msgs[1].ToolCalls[0].Name)
	assert.Equal(t, "Mexico", msgs[2].Text())
	assert.Equal(t, "toolu_01X9wcHKKAZD9tBC711xipPa", msgs[2].ToolCallID)
	assert.Equal(t, "final_result", msgs[3].ToolCalls[0].Name)
	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(msgs[3].ToolCalls[0].Args))
}

func TestAgentLoopReplaysOpenAIToolOutputThroughTheRecorder(t *testing.T) {
	rec, r := openImported(t, "test_openai/test_openai_tool_output.yaml")
	m, err := r.ResolveWith("openai:gpt-4o", map[string]any{"use_responses_api": false})
	require.NoError(t, err)
	var calls atomic.Int32
	res, err := cityAgent(t, m, &calls).Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User(cityQuestion)}})
	require.NoError(t, err)

	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
	assert.Equal(t, int32(1), calls.Load())
	assert.Equal(t, llm.Usage{InputTokens: 68 + 89, OutputTokens: 12 + 36}, res.Usage)
	assert.Empty(t, rec.Unplayed())
	msgs := res.State.Messages
	require.Len(t, msgs, 5)
	assert.Equal(t, "call_iXFttys57ap0o16JSlC8yhYo", msgs[1].ToolCalls[0].ID)
	assert.Equal(t, "Mexico", msgs[2].Text())
	assert.Equal(t, "call_gmD2oUZUzSoCkmNmp3JPUF7R", msgs[3].ToolCalls[0].ID)
}

func TestAgentLoopReplaysResponsesToolOutputThroughTheRecorder(t *testing.T) {
	rec, r := openImported(t, "test_openai_responses/test_tool_output.yaml")
	m, err := r.Resolve("openai:gpt-4o") // the Responses API is the default for openai:
	require.NoError(t, err)
	var calls atomic.Int32
	res, err := cityAgent(t, m, &calls).Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User(cityQuestion)}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
	assert.Equal(t, int32(1), calls.Load())
	assert.Equal(t, llm.Usage{InputTokens: 62 + 85, OutputTokens: 12 + 20}, res.Usage)
	assert.Empty(t, rec.Unplayed())
}

// TestAgentLoopReplaysParallelToolCallsThroughTheRecorder: four parallel
// calls in one turn, answered in one request.
func TestAgentLoopReplaysParallelToolCallsThroughTheRecorder(t *testing.T) {
	rec, r := openImported(t, "test_anthropic/test_multiple_parallel_tool_calls.yaml")
	m, err := r.Resolve("anthropic:claude-haiku-4-5")
	require.NoError(t, err)
	var lookups atomic.Int32
	info := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "retrieve_entity_info", Description: "Get the knowledge about the given entity.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)},
		Fn: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			lookups.Add(1)
			var in struct{ Name string }
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Text(strings.ToLower(in.Name) + " is family"), nil
		},
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{info}})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("Alice, Bob, Charlie and Daisy are a family. Who is the youngest?")}})
	require.NoError(t, err)
	assert.Equal(t, int32(4), lookups.Load())
	assert.Contains(t, res.Text(), "Daisy is the youngest in the family.")
	var names []string
	for _, msg := range res.State.Messages[2:6] {
		names = append(names, msg.ToolCallID)
	}
	assert.Equal(t, []string{"toolu_0167cfEnoQaPviGdVXA95zcu", "toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "toolu_01XFyAjstT3966qvRynZyVPo", "toolu_013mnQZbgtK2oe3Mo3XKJsx3"}, names)
	assert.Empty(t, rec.Unplayed())
}

// TestReplayedAndShownIDsAgree: Gemini sends tool calls without ids; the
// id a replayed run derives is the one `cassette show` prints.
func TestReplayedAndShownIDsAgree(t *testing.T) {
	name := "test_openai/test_compatible_api_with_tool_calls_without_id.yaml"
	_, r := openImported(t, name)
	m, err := r.Resolve("gemini-openai:gemini-2.5-pro-preview-05-06")
	require.NoError(t, err)
	var calls atomic.Int32
	a, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{textTool("get_current_time", "Get the current time.", "Noon", &calls)}})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is the current time?")}})
	require.NoError(t, err)
	assert.Equal(t, "The current time is Noon.", res.Text())

	c, err := cassette.Read(thirdParty(name))
	require.NoError(t, err)
	shown := replay.Inspect(context.Background(), c)
	id := res.State.Messages[1].ToolCalls[0].ID
	assert.Regexp(t, synthesizedID, id)
	assert.Equal(t, id, shown[0].Response.ToolCalls[0].ID)
}
