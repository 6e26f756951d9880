package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
)

// replayModel builds the adapter against a loopback server in replay mode:
// no key, no retries, no environment.
func replayModel(t *testing.T, baseURL, model string) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New(provider.Config{Model: model, BaseURL: baseURL, Replay: true, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	return m
}

type call struct{ id, name, args string }

type turn struct {
	text       string
	thinking   string // prefix
	signature  string // prefix
	calls      []call
	usage      llm.Usage
	stop       llm.StopReason
	model      string
	streamOnly bool
}

var anthropicRecordings = map[string][]turn{
	"test_anthropic/test_anthropic_model_instructions.yaml": {
		{text: "The capital of France is Paris.", usage: llm.Usage{InputTokens: 20, OutputTokens: 10}, stop: llm.StopEndTurn, model: "claude-3-opus-20240229"},
	},
	"test_anthropic/test_anthropic_model_thinking_part_stream.yaml": {
		{
			thinking:   "This is a straightforward question about pedestrian safety. I should provide clear, helpful advice",
			signature:  "EvMCCkYICxgCKkCHP2cSuEdcJK",
			text:       "Here are the basic steps for safely crossing the street:\n\n**At intersections with traffic lights:**",
			usage:      llm.Usage{InputTokens: 43, OutputTokens: 282},
			stop:       llm.StopEndTurn,
			model:      "claude-sonnet-4-20250514",
			streamOnly: true,
		},
	},
	"test_anthropic/test_anthropic_prompted_output.yaml": {
		{calls: []call{{"toolu_01ArHq5f2wxRpRF2PVQcKExM", "get_user_country", `{}`}}, usage: llm.Usage{InputTokens: 459, OutputTokens: 38}, stop: llm.StopToolUse, model: "claude-sonnet-4-5-20250929"},
		{text: `{"city": "Mexico City", "country": "Mexico"}`, usage: llm.Usage{InputTokens: 510, OutputTokens: 17}, stop: llm.StopEndTurn, model: "claude-sonnet-4-5-20250929"},
	},
	"test_anthropic/test_anthropic_tool_output.yaml": {
		{calls: []call{{"toolu_01X9wcHKKAZD9tBC711xipPa", "get_user_country", `{}`}}, usage: llm.Usage{InputTokens: 445, OutputTokens: 23}, stop: llm.StopToolUse, model: "claude-sonnet-4-5-20250929"},
		{calls: []call{{"toolu_01LZABsgreMefH2Go8D5PQbW", "final_result", `{"city":"Mexico City","country":"Mexico"}`}}, usage: llm.Usage{InputTokens: 497, OutputTokens: 56}, stop: llm.StopToolUse, model: "claude-sonnet-4-5-20250929"},
	},
	"test_anthropic/test_multiple_parallel_tool_calls.yaml": {
		{
			text: "I'll help you find out who is the youngest by retrieving information about each family member. I'll retrieve their entity information to compare their ages.",
			calls: []call{
				{"toolu_0167cfEnoQaPviGdVXA95zcu", "retrieve_entity_info", `{"name":"Alice"}`},
				{"toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "retrieve_entity_info", `{"name":"Bob"}`},
				{"toolu_01XFyAjstT3966qvRynZyVPo", "retrieve_entity_info", `{"name":"Charlie"}`},
				{"toolu_013mnQZbgtK2oe3Mo3XKJsx3", "retrieve_entity_info", `{"name":"Daisy"}`},
			},
			usage: llm.Usage{InputTokens: 423, OutputTokens: 202}, stop: llm.StopToolUse, model: "claude-haiku-4-5-20251001",
		},
		{text: "Based on the retrieved information, we can see the family relationships:\n- Alice and Bob are married", usage: llm.Usage{InputTokens: 771, OutputTokens: 77}, stop: llm.StopEndTurn, model: "claude-haiku-4-5-20251001"},
	},
}

func checkTurn(t *testing.T, label string, want turn, got *llm.Response) {
	t.Helper()
	require.NotNil(t, got, label)
	assert.True(t, strings.HasPrefix(got.Message.Text(), want.text), "%s: text %q", label, got.Message.Text())
	if want.text == "" {
		assert.Empty(t, got.Message.Text(), label)
	}
	var thinking []llm.Block
	for _, b := range got.Message.Content {
		if b.Type == llm.BlockThinking {
			thinking = append(thinking, b)
		}
	}
	if want.thinking != "" {
		require.Len(t, thinking, 1, label)
		assert.True(t, strings.HasPrefix(thinking[0].Thinking, want.thinking), "%s: thinking %q", label, thinking[0].Thinking)
		assert.True(t, strings.HasPrefix(thinking[0].Signature, want.signature), label)
	} else {
		assert.Empty(t, thinking, label)
	}
	require.Len(t, got.Message.ToolCalls, len(want.calls), label)
	for i, c := range want.calls {
		tc := got.Message.ToolCalls[i]
		assert.Equal(t, c.id, tc.ID, label)
		assert.Equal(t, c.name, tc.Name, label)
		assert.JSONEq(t, c.args, string(tc.Args), label)
	}
	assert.Equal(t, want.usage, got.Usage, label)
	assert.Equal(t, want.usage, *got.Message.Usage, label)
	assert.Equal(t, want.stop, got.StopReason, label)
	assert.Equal(t, want.model, got.Model, label)
	assert.Equal(t, llm.RoleAssistant, got.Message.Role, label)
}

// TestEveryAnthropicRecordingParses replays each recorded answer through the
// real adapter: non-streamed ones through Generate, streamed ones through Stream.
func TestEveryAnthropicRecordingParses(t *testing.T) {
	for name, turns := range anthropicRecordings {
		t.Run(name, func(t *testing.T) {
			c := recorded.MustLoad(t, name)
			require.Len(t, c.Interactions, len(turns))
			srv := recorded.Serve(t, c)
			m := replayModel(t, srv.BaseURL(), "claude-sonnet-4-5")
			for i, want := range turns {
				label := fmt.Sprintf("%s #%d", name, i)
				var got *llm.Response
				if c.Interactions[i].Streamed() {
					got = collect(t, m, userRequest("hi")).Final
				} else {
					var err error
					got, err = m.Generate(context.Background(), userRequest("hi"))
					require.NoError(t, err, label)
				}
				checkTurn(t, label, want, got)
			}
			assert.Equal(t, len(turns), srv.Served())
		})
	}
}

func TestThinkingStreamDeltasAddUpToTheFinalResponse(t *testing.T) {
	c := recorded.MustLoad(t, "test_anthropic/test_anthropic_model_thinking_part_stream.yaml")
	srv := recorded.Serve(t, c)
	m := replayModel(t, srv.BaseURL(), "claude-sonnet-4-0")
	s := collect(t, m, &llm.Request{Messages: []llm.Message{llm.User("How do I cross the street?")}, Thinking: &llm.Thinking{BudgetTokens: 1024}})
	require.NoError(t, s.Err)
	require.NotNil(t, s.Final)
	var text, thinking strings.Builder
	for _, ch := range s.Chunks[:len(s.Chunks)-1] {
		assert.Nil(t, ch.Response, "only the last chunk carries the response")
		text.WriteString(ch.TextDelta)
		thinking.WriteString(ch.ThinkingDelta)
	}
	assert.Greater(t, len(s.Chunks), 50, "the recording has 100 deltas")
	assert.Equal(t, s.Final.Message.Text(), text.String())
	assert.Equal(t, s.Final.Message.Content[0].Thinking, thinking.String())
	assert.True(t, strings.HasSuffix(text.String(), "Always prioritize safety over speed when crossing streets."))
	assert.Equal(t, "This is a straightforward question about pedestrian safety. I should provide clear, helpful advice about how to safely cross a street. This is basic safety information that could help prevent accidents.", thinking.String())

	sent := srv.Requests()[0].JSON(t)
	assert.Equal(t, true, sent["stream"])
	assert.Equal(t, map[string]any{"type": "enabled", "budget_tokens": float64(1024)}, sent["thinking"])
}

// TestStreamedAndWholeAnswersAreEqual checks both directions with the real
// recordings: every whole JSON answer re-sent as an SSE stream, and the
// recorded SSE stream re-sent as the whole JSON message the SDK accumulates.
func TestStreamedAndWholeAnswersAreEqual(t *testing.T) {
	for name := range anthropicRecordings {
		c := recorded.MustLoad(t, name)
		for i, in := range c.Interactions {
			label := fmt.Sprintf("%s #%d", name, i)
			var whole, sse []byte
			if in.Streamed() {
				sse, whole = in.Body, accumulate(t, in.Body)
			} else {
				whole, sse = in.Body, toSSE(t, in.Body)
			}
			srv := fixedServer(t, whole, sse)
			m := replayModel(t, srv.URL, "claude-sonnet-4-5")
			g, err := m.Generate(context.Background(), userRequest("hi"))
			require.NoError(t, err, label)
			s := collect(t, m, userRequest("hi"))
			require.NoError(t, s.Err, label)
			assert.Equal(t, g, s.Final, label)
			assert.Greater(t, len(s.Chunks), 1, label)

			// Answered the other way round, each call decodes what arrived:
			// Generate assembles the stream, Stream yields the whole answer
			// as its one final chunk.
			crossed := crossedServer(t, whole, sse)
			cm := replayModel(t, crossed.URL, "claude-sonnet-4-5")
			cg, err := cm.Generate(context.Background(), userRequest("hi"))
			require.NoError(t, err, label)
			assert.Equal(t, g, cg, label)
			cs := collect(t, cm, userRequest("hi"))
			require.NoError(t, cs.Err, label)
			require.Len(t, cs.Chunks, 1, label)
			assert.Equal(t, g, cs.Final, label)
		}
	}
}

// accumulate turns a recorded SSE body into the whole message JSON with the
// SDK's own accumulator, independently of the adapter's streaming code.
func accumulate(t *testing.T, body []byte) []byte {
	t.Helper()
	var msg sdk.Message
	for _, ev := range strings.Split(string(body), "\n\n") {
		var data string
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = d
			}
		}
		if data == "" || strings.Contains(data, `"ping"`) {
			continue
		}
		var e sdk.MessageStreamEventUnion
		require.NoError(t, json.Unmarshal([]byte(data), &e))
		require.NoError(t, msg.Accumulate(e))
	}
	require.NotEmpty(t, msg.RawJSON())
	return []byte(msg.RawJSON())
}

// toSSE re-sends a whole Messages API answer as the event stream the API
// would produce for it, splitting text, thinking and tool input into deltas.
func toSSE(t *testing.T, body []byte) []byte {
	t.Helper()
	var msg map[string]any
	require.NoError(t, json.Unmarshal(body, &msg))
	content, _ := msg["content"].([]any)
	usage, _ := msg["usage"].(map[string]any)
	var b strings.Builder
	event := func(name string, data any) {
		raw, err := json.Marshal(data)
		require.NoError(t, err)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, raw)
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	startUsage := map[string]any{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = 1
	start["usage"] = startUsage
	event("message_start", map[string]any{"type": "message_start", "message": start})
	event("ping", map[string]any{"type": "ping"})
	for i, raw := range content {
		block := raw.(map[string]any)
		delta := func(d map[string]any) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		switch block["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, part := range thirds(block["text"].(string)) {
				delta(map[string]any{"type": "text_delta", "text": part})
			}
		case "thinking":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, part := range thirds(block["thinking"].(string)) {
				delta(map[string]any{"type": "thinking_delta", "thinking": part})
			}
			delta(map[string]any{"type": "signature_delta", "signature": block["signature"]})
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			input, err := json.Marshal(block["input"])
			require.NoError(t, err)
			if string(input) != "{}" {
				for _, part := range thirds(string(input)) {
					delta(map[string]any{"type": "input_json_delta", "partial_json": part})
				}
			}
		default:
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": block})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil}, "usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	event("message_stop", map[string]any{"type": "message_stop"})
	return []byte(b.String())
}
