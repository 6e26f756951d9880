package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
	"github.com/dageval/dageval/harness/provider/openai"
)

// modelFor builds the adapter a recording was made with: the Responses API
// for /responses, Chat Completions otherwise (OpenAI itself or a compatible
// server), in replay mode against the loopback server.
func modelFor(t *testing.T, c *recorded.Cassette, baseURL string) *openai.Model {
	t.Helper()
	in := c.Interactions[0]
	cfg := provider.Config{Model: "m", BaseURL: baseURL, Replay: true, Getenv: func(string) string { return "" }}
	responses := strings.HasSuffix(in.URL.Path, "/responses")
	switch {
	case in.URL.Host == "api.openai.com":
		cfg.Provider, cfg.Kind = "openai", provider.KindOpenAI
		cfg.UseResponsesAPI = &responses
	default:
		cfg.Provider, cfg.Kind = strings.Split(in.URL.Host, ".")[0], provider.KindOpenAICompatible
	}
	m, err := openai.New(cfg)
	require.NoError(t, err)
	return m
}

type call struct{ id, name, args string }

type turn struct {
	text      string
	calls     []call
	usage     llm.Usage
	stop      llm.StopReason
	model     string
	signature string // Gemini thought signature prefix
	bad       bool   // not an OpenAI-shaped answer
}

var synthesized = regexp.MustCompile(`^call_[0-9a-f]{24}$`)

var openaiRecordings = map[string][]turn{
	"test_openai/test_compatible_api_with_tool_calls_without_id.yaml": {
		{calls: []call{{"", "get_current_time", `{}`}}, usage: llm.Usage{InputTokens: 35, OutputTokens: 12}, stop: llm.StopToolUse, model: "gemini-2.5-pro-preview-05-06", signature: "AVSoXO4AzAXs7GGvOY63"},
		{text: "The current time is Noon.", usage: llm.Usage{InputTokens: 66, OutputTokens: 6}, stop: llm.StopEndTurn, model: "gemini-2.5-pro-preview-05-06", signature: "AVSoXO4/lu90Bn7IxVcW"},
	},
	"test_openai/test_multiple_agent_tool_calls.yaml": {
		{bad: true}, // Gemini's native generateContent answer, not an OpenAI shape
		{bad: true},
		{calls: []call{{"call_SkEQ3ZGSJC8m6AvaIGNuuKdm", "get_capital", `{"country":"England"}`}}, usage: llm.Usage{InputTokens: 104, OutputTokens: 16}, stop: llm.StopToolUse, model: "gpt-4o-mini-2024-07-18"},
		{text: "The capital of England is London.", usage: llm.Usage{InputTokens: 129, OutputTokens: 9}, stop: llm.StopEndTurn, model: "gpt-4o-mini-2024-07-18"},
	},
	"test_openai/test_openai_tool_output.yaml": {
		{calls: []call{{"call_iXFttys57ap0o16JSlC8yhYo", "get_user_country", `{}`}}, usage: llm.Usage{InputTokens: 68, OutputTokens: 12}, stop: llm.StopToolUse, model: "gpt-4o-2024-08-06"},
		{calls: []call{{"call_gmD2oUZUzSoCkmNmp3JPUF7R", "final_result", `{"city":"Mexico City","country":"Mexico"}`}}, usage: llm.Usage{InputTokens: 89, OutputTokens: 36}, stop: llm.StopToolUse, model: "gpt-4o-2024-08-06"},
	},
	"test_openai/test_run_stream_sync_streams_real_model.yaml": {
		{calls: []call{{"call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `{"country":"UK"}`}}, usage: llm.Usage{InputTokens: 53, OutputTokens: 15}, stop: llm.StopToolUse, model: "gpt-4o-mini-2024-07-18"},
		{text: "The capital of the UK is London.", usage: llm.Usage{InputTokens: 78, OutputTokens: 9}, stop: llm.StopEndTurn, model: "gpt-4o-mini-2024-07-18"},
	},
	"test_openai/test_text_response.yaml": {
		{bad: true}, // the demo endpoint echoes the request as text/plain
	},
	"test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml": {
		{calls: []call{{"call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", `{"country":"PotatoLand"}`}}, usage: llm.Usage{InputTokens: 40, OutputTokens: 18}, stop: llm.StopToolUse, model: "gpt-4o-2024-08-06"},
		{text: "The capital of PotatoLand is Potato City.", usage: llm.Usage{InputTokens: 67, OutputTokens: 11}, stop: llm.StopEndTurn, model: "gpt-4o-2024-08-06"},
	},
	"test_openai_responses/test_tool_output.yaml": {
		{calls: []call{{"call_ZWkVhdUjupo528U9dqgFeRkH", "get_user_country", `{}`}}, usage: llm.Usage{InputTokens: 62, OutputTokens: 12}, stop: llm.StopToolUse, model: "gpt-4o-2024-08-06"},
		{calls: []call{{"call_iFBd0zULhSZRR908DfH73VwN", "final_result", `{"city":"Mexico City","country":"Mexico"}`}}, usage: llm.Usage{InputTokens: 85, OutputTokens: 20}, stop: llm.StopToolUse, model: "gpt-4o-2024-08-06"},
	},
	"test_openrouter/test_openrouter_tool_calling.yaml": {
		{calls: []call{{"3sniiMddS", "divide", `{"numerator":123,"denominator":456,"on_inf":"infinity"}`}}, usage: llm.Usage{InputTokens: 134, OutputTokens: 43}, stop: llm.StopToolUse, model: "mistralai/mistral-small"},
	},
}

func checkTurn(t *testing.T, label string, want turn, got *llm.Response) {
	t.Helper()
	require.NotNil(t, got, label)
	assert.Equal(t, want.text, got.Message.Text(), label)
	require.Len(t, got.Message.ToolCalls, len(want.calls), label)
	assert.Empty(t, got.Message.InvalidToolCalls, label)
	for i, c := range want.calls {
		tc := got.Message.ToolCalls[i]
		if c.id == "" {
			assert.Regexp(t, synthesized, tc.ID, "%s: an id is synthesised when the server sends none", label)
		} else {
			assert.Equal(t, c.id, tc.ID, label)
		}
		assert.Equal(t, c.name, tc.Name, label)
		assert.JSONEq(t, c.args, string(tc.Args), label)
	}
	var sigs []string
	for _, b := range got.Message.Content {
		if b.Type == llm.BlockThinking {
			sigs = append(sigs, b.Signature)
		}
	}
	if want.signature != "" {
		require.Len(t, sigs, 1, label)
		assert.True(t, strings.HasPrefix(sigs[0], "gemini:"+want.signature), label)
	} else {
		assert.Empty(t, sigs, label)
	}
	assert.Equal(t, want.usage, got.Usage, label)
	assert.Equal(t, want.stop, got.StopReason, label)
	assert.Equal(t, want.model, got.Model, label)
}

func TestEveryOpenAIRecordingParses(t *testing.T) {
	for name, turns := range openaiRecordings {
		t.Run(name, func(t *testing.T) {
			c := recorded.MustLoad(t, name)
			require.Len(t, c.Interactions, len(turns))
			// Gemini's native answers come first in one recording; serve the
			// OpenAI-shaped ones from a server per interaction so each gets
			// its own base URL.
			for i, want := range turns {
				label := fmt.Sprintf("%s #%d", name, i)
				one := &recorded.Cassette{Name: c.Name, Interactions: c.Interactions[i : i+1]}
				var m *openai.Model
				if p := one.Interactions[0].URL.Path; strings.HasSuffix(p, ":generateContent") {
					// Gemini's native API has no OpenAI path; serve its answer
					// where a compatible client would ask.
					srv := fixedServer(t, one.Interactions[0].Body, one.Interactions[0].Body)
					m = modelFor(t, one, srv.URL)
				} else {
					srv := recorded.Serve(t, one)
					m = modelFor(t, one, srv.BaseURL())
				}
				var got *llm.Response
				var err error
				if one.Interactions[0].Streamed() {
					s := collect(t, m, userRequest("hi"))
					got, err = s.Final, s.Err
				} else {
					got, err = m.Generate(context.Background(), userRequest("hi"))
				}
				if want.bad {
					require.Error(t, err, label)
					assert.ErrorIs(t, err, llm.ErrBadResponse, label)
					continue
				}
				require.NoError(t, err, label)
				checkTurn(t, label, want, got)
			}
		})
	}
}

func TestChatStreamDeltasAddUpToTheFinalResponse(t *testing.T) {
	c := recorded.MustLoad(t, "test_openai/test_run_stream_sync_streams_real_model.yaml")
	srv := recorded.Serve(t, c)
	m := modelFor(t, c, srv.BaseURL())
	first := collect(t, m, userRequest("What is the capital of the UK? Use the tool, then answer."))
	require.NoError(t, first.Err)
	var args strings.Builder
	for _, ch := range first.Chunks {
		if ch.ToolCallDelta != nil {
			assert.Equal(t, 0, ch.ToolCallDelta.Index)
			args.WriteString(ch.ToolCallDelta.ArgsDelta)
		}
	}
	assert.Equal(t, `{"country":"UK"}`, args.String())
	assert.Equal(t, "call_ZR5UUuTt3pf61kjwAJIYdVMj", first.Chunks[0].ToolCallDelta.ID)

	second := collect(t, m, userRequest("next"))
	require.NoError(t, second.Err)
	var text strings.Builder
	for _, ch := range second.Chunks {
		text.WriteString(ch.TextDelta)
	}
	assert.Equal(t, "The capital of the UK is London.", text.String())
	assert.Equal(t, text.String(), second.Final.Message.Text())

	sent := srv.Requests()[0].JSON(t)
	assert.Equal(t, true, sent["stream"])
	assert.Equal(t, map[string]any{"include_usage": true}, sent["stream_options"])
}

// TestStreamedAndWholeAnswersAreEqual checks both directions on the real
// recordings: each whole answer re-sent as the event stream the API would
// produce, and each recorded stream re-sent as the whole answer the SDK's
// accumulator builds from it.
func TestStreamedAndWholeAnswersAreEqual(t *testing.T) {
	for name, turns := range openaiRecordings {
		c := recorded.MustLoad(t, name)
		for i, in := range c.Interactions {
			if turns[i].bad {
				continue
			}
			label := fmt.Sprintf("%s #%d", name, i)
			responses := strings.HasSuffix(in.URL.Path, "/responses")
			var whole, sse []byte
			switch {
			case in.Streamed():
				sse, whole = in.Body, accumulateChat(t, in.Body)
			case responses:
				whole, sse = in.Body, responsesSSE(t, in.Body)
			default:
				whole, sse = in.Body, chatSSE(t, in.Body)
			}
			srv := fixedServer(t, whole, sse)
			one := &recorded.Cassette{Interactions: []recorded.Interaction{in}}
			m := modelFor(t, one, srv.URL+one.BaseURL())
			g, err := m.Generate(context.Background(), userRequest("hi"))
			require.NoError(t, err, label)
			s := collect(t, m, userRequest("hi"))
			require.NoError(t, s.Err, label)
			assert.Equal(t, g, s.Final, label)
			assert.Greater(t, len(s.Chunks), 1, label)
			var text strings.Builder
			for _, ch := range s.Chunks {
				text.WriteString(ch.TextDelta)
			}
			assert.Equal(t, g.Message.Text(), text.String(), label)

			// Answered the other way round, each call decodes what arrived:
			// Generate assembles the stream, Stream yields the whole answer
			// as its one final chunk.
			crossed := crossedServer(t, whole, sse)
			cm := modelFor(t, one, crossed.URL+one.BaseURL())
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

func dataLines(body []byte) []string {
	var out []string
	for _, ev := range strings.Split(string(body), "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
				out = append(out, d)
			}
		}
	}
	return out
}

// accumulateChat builds the whole completion from a recorded stream with
// the SDK's own accumulator, independently of the adapter.
func accumulateChat(t *testing.T, body []byte) []byte {
	t.Helper()
	var acc sdk.ChatCompletionAccumulator
	for _, d := range dataLines(body) {
		var chunk sdk.ChatCompletionChunk
		require.NoError(t, json.Unmarshal([]byte(d), &chunk))
		require.True(t, acc.AddChunk(chunk))
	}
	raw, err := json.Marshal(acc.ChatCompletion)
	require.NoError(t, err)
	return raw
}

// chatSSE re-sends a whole chat completion as chunks: role, content in
// pieces, each tool call's id and name then its arguments in pieces, the
// finish reason, then usage.
func chatSSE(t *testing.T, body []byte) []byte {
	t.Helper()
	var c map[string]any
	require.NoError(t, json.Unmarshal(body, &c))
	choice := c["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	var b strings.Builder
	chunk := func(delta map[string]any, finish any, usage any) {
		ch := map[string]any{"id": c["id"], "object": "chat.completion.chunk", "created": c["created"], "model": c["model"],
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			ch["choices"] = []any{}
			ch["usage"] = usage
		}
		raw, err := json.Marshal(ch)
		require.NoError(t, err)
		fmt.Fprintf(&b, "data: %s\n\n", raw)
	}
	first := map[string]any{"role": "assistant"}
	if ec, ok := msg["extra_content"]; ok {
		first["extra_content"] = ec
	}
	chunk(first, nil, nil)
	if text, _ := msg["content"].(string); text != "" {
		for _, part := range thirds(text) {
			chunk(map[string]any{"content": part}, nil, nil)
		}
	}
	calls, _ := msg["tool_calls"].([]any)
	for i, raw := range calls {
		tc := raw.(map[string]any)
		fn := tc["function"].(map[string]any)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc["id"], "type": "function", "function": map[string]any{"name": fn["name"], "arguments": ""}}}}, nil, nil)
		for _, part := range thirds(fn["arguments"].(string)) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil, nil)
		}
	}
	chunk(map[string]any{}, choice["finish_reason"], nil)
	chunk(nil, nil, c["usage"])
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// responsesSSE re-sends a whole Responses API answer as its event stream.
func responsesSSE(t *testing.T, body []byte) []byte {
	t.Helper()
	var r map[string]any
	require.NoError(t, json.Unmarshal(body, &r))
	var b strings.Builder
	seq := 0
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		data["sequence_number"] = seq
		seq++
		raw, err := json.Marshal(data)
		require.NoError(t, err)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, raw)
	}
	created := map[string]any{}
	for k, v := range r {
		created[k] = v
	}
	created["status"] = "in_progress"
	created["output"] = []any{}
	created["usage"] = nil
	event("response.created", map[string]any{"response": created})
	for i, raw := range r["output"].([]any) {
		item := raw.(map[string]any)
		switch item["type"] {
		case "message":
			event("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": item["id"], "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
			for j, craw := range item["content"].([]any) {
				part := craw.(map[string]any)
				for _, piece := range thirds(part["text"].(string)) {
					event("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": i, "content_index": j, "delta": piece})
				}
			}
		case "function_call":
			event("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": item["id"], "type": "function_call", "call_id": item["call_id"], "name": item["name"], "arguments": "", "status": "in_progress"}})
			for _, piece := range thirds(item["arguments"].(string)) {
				event("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": i, "delta": piece})
			}
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	event("response.completed", map[string]any{"response": r})
	return []byte(b.String())
}
