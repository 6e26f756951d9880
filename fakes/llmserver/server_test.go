package llmserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/internal/posttest"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

type sseEvent struct{ event, data string }

func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, chunk := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(chunk, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected SSE line %q", line)
			}
		}
		out = append(out, ev)
	}
	return out
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), s)
	return m
}

// richAnswer is an answer with thinking, text and two parallel tool calls.
func richAnswer() fakes.Step {
	return fakes.Respond(llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant,
			Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "Two cities, two calls.", Signature: "sig-abc"}, llm.TextBlock("Checking both cities.")},
			ToolCalls: []llm.ToolCall{
				fakes.CallID("toolu_paris", "get_weather", map[string]string{"city": "Paris"}),
				fakes.CallID("toolu_tokyo", "get_weather", map[string]string{"city": "Tokyo"}),
			}},
		Usage: llm.Usage{InputTokens: 120, OutputTokens: 45, CacheReadTokens: 30, CacheWriteTokens: 10},
	})
}

// Anthropic

func accumulateAnthropic(t *testing.T, body string) map[string]any {
	t.Helper()
	var msg map[string]any
	var blocks []map[string]any
	partial := map[int]string{}
	for _, ev := range parseSSE(t, body) {
		d := decodeJSON(t, ev.data)
		require.Equal(t, ev.event, d["type"], "event name matches the data type")
		require.True(t, strings.HasPrefix(ev.data, fmt.Sprintf(`{"type":%q`, ev.event)), "type comes first, as the API writes it: %s", ev.data)
		switch ev.event {
		case "message_start":
			msg = d["message"].(map[string]any)
		case "content_block_start":
			blocks = append(blocks, d["content_block"].(map[string]any))
		case "content_block_delta":
			i := int(d["index"].(float64))
			delta := d["delta"].(map[string]any)
			switch delta["type"] {
			case "text_delta":
				blocks[i]["text"] = blocks[i]["text"].(string) + delta["text"].(string)
			case "thinking_delta":
				blocks[i]["thinking"] = blocks[i]["thinking"].(string) + delta["thinking"].(string)
			case "signature_delta":
				blocks[i]["signature"] = delta["signature"]
			case "input_json_delta":
				partial[i] += delta["partial_json"].(string)
			}
		case "message_delta":
			delta := d["delta"].(map[string]any)
			msg["stop_reason"] = delta["stop_reason"]
			msg["usage"] = d["usage"]
		}
	}
	for i, p := range partial {
		var v any
		require.NoError(t, json.Unmarshal([]byte(p), &v))
		blocks[i]["input"] = v
	}
	out := make([]any, len(blocks))
	for i, b := range blocks {
		out[i] = b
	}
	msg["content"] = out
	return msg
}

func TestAnthropicServerStreamsWhatItAnswers(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris and Tokyo?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	plainSrv := llmserver.NewServer(fakes.NewScripted(richAnswer()))
	defer plainSrv.Close()
	streamSrv := llmserver.NewServer(fakes.NewScripted(richAnswer()))
	defer streamSrv.Close()

	plain := posttest.MustPost(t, context.Background(), http.DefaultClient, plainSrv.URL+"/v1/messages", body, posttest.AnthropicHeaders("k")...)
	require.Equal(t, 200, plain.Status, plain.Body)
	assert.Equal(t, "application/json", plain.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(plain.Header.Get("Request-Id"), "req_"))
	want := decodeJSON(t, plain.Body)
	assert.Equal(t, "message", want["type"])
	assert.Equal(t, "claude-sonnet-4-5", want["model"], "the requested model is echoed")
	assert.Equal(t, "tool_use", want["stop_reason"])
	assert.Regexp(t, `^msg_01[0-9A-Za-z]{22}$`, want["id"])
	assert.Equal(t, map[string]any{"input_tokens": 120.0, "output_tokens": 45.0, "cache_read_input_tokens": 30.0, "cache_creation_input_tokens": 10.0}, want["usage"])
	assert.Equal(t, []any{
		map[string]any{"type": "thinking", "thinking": "Two cities, two calls.", "signature": "sig-abc"},
		map[string]any{"type": "text", "text": "Checking both cities."},
		map[string]any{"type": "tool_use", "id": "toolu_paris", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
		map[string]any{"type": "tool_use", "id": "toolu_tokyo", "name": "get_weather", "input": map[string]any{"city": "Tokyo"}},
	}, want["content"])

	streamBody := strings.Replace(body, `"max_tokens":1024`, `"max_tokens":1024,"stream":true`, 1)
	stream := posttest.MustPost(t, context.Background(), http.DefaultClient, streamSrv.URL+"/v1/messages", streamBody, posttest.AnthropicHeaders("k")...)
	require.Equal(t, 200, stream.Status, stream.Body)
	assert.Equal(t, "text/event-stream; charset=utf-8", stream.Header.Get("Content-Type"))
	events := parseSSE(t, stream.Body)
	assert.Equal(t, "message_start", events[0].event)
	assert.Equal(t, "message_stop", events[len(events)-1].event)
	got := accumulateAnthropic(t, stream.Body)
	assert.Equal(t, want["content"], got["content"])
	assert.Equal(t, want["stop_reason"], got["stop_reason"])
	assert.Equal(t, want["usage"], got["usage"])
	assert.True(t, streamSrv.Requests()[0].Stream)
}

func TestAnthropicServerDecodesRequests(t *testing.T) {
	m := fakes.NewScripted(fakes.Reply("ok"))
	srv := llmserver.NewServer(m)
	defer srv.Close()
	body := `{
	  "model": "claude-sonnet-4-5", "max_tokens": 2048, "temperature": 0.2, "stop_sequences": ["END"],
	  "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
	  "thinking": {"type": "enabled", "budget_tokens": 1024},
	  "tool_choice": {"type": "tool", "name": "get_weather"},
	  "output_config": {"format": {"type": "json_schema", "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}}},
	  "tools": [{"name": "get_weather", "description": "Weather now.", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
	  "messages": [
	    {"role": "user", "content": [{"type": "text", "text": "Paris?"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
	    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s1"}, {"type": "redacted_thinking", "data": "opaque"}, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
	    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}], "is_error": true}, {"type": "text", "text": "Thanks."}]}
	  ]
	}`
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", body, posttest.AnthropicHeaders("k")...)
	require.Equal(t, 200, r.Status, r.Body)
	got := srv.Requests()[0]
	assert.Equal(t, cassette.APIAnthropicMessages, got.API)
	assert.Equal(t, "claude-sonnet-4-5", got.Model)
	assert.Equal(t, cassette.Redacted, got.Header.Get("X-Api-Key"), "served requests never keep credentials")
	temp := 0.2
	want := &llm.Request{
		System: []llm.Block{{Type: llm.BlockText, Text: "You are terse.", CacheControl: llm.Ephemeral()}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Paris?"), {Type: llm.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "hm", Signature: "s1"}, {Type: llm.BlockRedactedThinking, Redacted: "opaque"}},
				ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
			{Role: llm.RoleTool, ToolCallID: "toolu_1", Name: "get_weather", IsError: true, Content: []llm.Block{llm.TextBlock("sunny")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Thanks.")}},
		},
		Tools:          []llm.ToolSpec{{Name: "get_weather", Description: "Weather now.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`), CacheControl: &llm.CacheControl{Type: "ephemeral", TTL: "1h"}}},
		ToolChoice:     &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"},
		ResponseFormat: &llm.ResponseFormat{Name: "output", Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`), Strict: true},
		MaxTokens:      2048, Temperature: &temp, StopSequences: []string{"END"},
		Thinking: &llm.Thinking{BudgetTokens: 1024},
	}
	assert.Equal(t, want, got.Request)
	assert.Equal(t, *want, m.Requests()[0], "the model sees the decoded request")
}

// errorCase is a request the server must refuse.
type errorCase struct {
	name   string
	body   string
	header []string
	status int
	msg    string
}

func TestAnthropicServerRejectsWireMistakes(t *testing.T) {
	const tools = `"tools":[{"name":"f","input_schema":{"type":"object"}}]`
	tests := []errorCase{
		{"no key", `{}`, []string{"Anthropic-Version", "2023-06-01"}, 401, "x-api-key header is required"},
		{"no version header", `{}`, []string{"X-Api-Key", "k"}, 400, "anthropic-version: header is required"},
		{"unknown field", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"max_token":5}`, nil, 400, `request body: unknown field "max_token"`},
		{"wrong type", `{"model":"m","max_tokens":"1","messages":[]}`, nil, 400, "request body.max_tokens: expected a number, got a JSON string"},
		{"missing max_tokens", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil, 400, "max_tokens: Field required"},
		{"missing model", `{"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, nil, 400, "model: Field required"},
		{"no messages", `{"model":"m","max_tokens":1,"messages":[]}`, nil, 400, "messages: at least one message is required"},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, nil, 400, `messages.0.role: expected user, assistant or system, got "tool"`},
		{"empty text block", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, nil, 400, "messages.0.content.0: text content blocks must be non-empty"},
		{"unknown block field", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x","cache":{}}]}]}`, nil, 400, `messages.0.content.0: unknown field "cache"`},
		{"tool_use without result", `{"model":"m","max_tokens":1,` + tools + `,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"y"}]}`, nil, 400, "messages.1: tool_use ids were found without tool_result blocks immediately after: t1"},
		{"result for unknown call", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"r"}]}]}`, nil, 400, "unexpected tool_use_id found in tool_result blocks: t9"},
		{"tool input not an object", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"{}"}]}]}`, nil, 400, "messages.1.content.0.input: Input should be a valid dictionary"},
		{"schema not an object type", `{"model":"m","max_tokens":1,"tools":[{"name":"f","input_schema":{"type":"string"}}],"messages":[{"role":"user","content":"x"}]}`, nil, 400, `tools.0.input_schema.type: Input should be 'object', got "string"`},
		{"server tool", `{"model":"m","max_tokens":1,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"x"}]}`, nil, 400, `server tool "web_search_20250305" is not available`},
		{"tool choice without tools", `{"model":"m","max_tokens":1,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"}]}`, nil, 400, "tool_choice may only be specified while providing tools"},
		{"thinking budget too large", `{"model":"m","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":200},"messages":[{"role":"user","content":"x"}]}`, nil, 400, "budget_tokens: must be less than max_tokens"},
		{"not JSON", `{"model":`, nil, 400, "request body: invalid JSON"},
	}
	srv := llmserver.NewServer(fakes.NewScripted())
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := tt.header
			if hdr == nil {
				hdr = posttest.AnthropicHeaders("k")
			}
			r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", tt.body, hdr...)
			assert.Equal(t, tt.status, r.Status, r.Body)
			e := decodeJSON(t, r.Body)
			assert.Equal(t, "error", e["type"])
			inner := e["error"].(map[string]any)
			assert.Contains(t, inner["message"], tt.msg)
			if tt.status == 401 {
				assert.Equal(t, "authentication_error", inner["type"])
			} else {
				assert.Equal(t, "invalid_request_error", inner["type"])
			}
		})
	}
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", `{}`, "X-Api-Key", "k", "Anthropic-Version", "v", "Content-Type", "text/plain")
	assert.Equal(t, 400, r.Status)
	assert.Contains(t, r.Body, "content-type must be application/json")
}

// OpenAI Chat Completions

func TestChatServerStreamsWhatItAnswers(t *testing.T) {
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris and Tokyo?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	plainSrv := llmserver.NewServer(fakes.NewScripted(richAnswer()))
	defer plainSrv.Close()
	streamSrv := llmserver.NewServer(fakes.NewScripted(richAnswer()))
	defer streamSrv.Close()

	plain := posttest.MustPost(t, context.Background(), http.DefaultClient, plainSrv.OpenAIBaseURL()+"/chat/completions", body, posttest.OpenAIHeaders("k")...)
	require.Equal(t, 200, plain.Status, plain.Body)
	want := decodeJSON(t, plain.Body)
	assert.Equal(t, "chat.completion", want["object"])
	assert.Regexp(t, `^chatcmpl-[0-9A-Za-z]{29}$`, want["id"])
	assert.Equal(t, 1767225600.0, want["created"], "a fixed clock, never the wall clock")
	choice := want["choices"].([]any)[0].(map[string]any)
	assert.Equal(t, "tool_calls", choice["finish_reason"])
	msg := choice["message"].(map[string]any)
	assert.Equal(t, "Checking both cities.", msg["content"])
	assert.Equal(t, []any{
		map[string]any{"id": "toolu_paris", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}},
		map[string]any{"id": "toolu_tokyo", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Tokyo"}`}},
	}, msg["tool_calls"])
	usage := want["usage"].(map[string]any)
	assert.Equal(t, 160.0, usage["prompt_tokens"], "prompt tokens include cached ones")
	assert.Equal(t, 45.0, usage["completion_tokens"])
	assert.Equal(t, 205.0, usage["total_tokens"])
	assert.Equal(t, 30.0, usage["prompt_tokens_details"].(map[string]any)["cached_tokens"])

	streamBody := strings.Replace(body, `"model":"gpt-4o"`, `"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}`, 1)
	stream := posttest.MustPost(t, context.Background(), http.DefaultClient, streamSrv.OpenAIBaseURL()+"/chat/completions", streamBody, posttest.OpenAIHeaders("k")...)
	require.Equal(t, 200, stream.Status, stream.Body)
	events := parseSSE(t, stream.Body)
	require.Equal(t, "[DONE]", events[len(events)-1].data)
	text, finish := "", ""
	type call struct{ ID, Name, Args string }
	var calls []call
	var gotUsage any
	for _, ev := range events[:len(events)-1] {
		assert.Empty(t, ev.event, "chat streams send data lines only")
		c := decodeJSON(t, ev.data)
		assert.Equal(t, "chat.completion.chunk", c["object"])
		assert.Contains(t, c, "usage", "with include_usage every chunk carries usage")
		if u := c["usage"]; u != nil {
			gotUsage = u
			assert.Empty(t, c["choices"], "the usage chunk has no choices")
			continue
		}
		ch := c["choices"].([]any)[0].(map[string]any)
		d := ch["delta"].(map[string]any)
		if s, ok := d["content"].(string); ok {
			text += s
		}
		if tcs, ok := d["tool_calls"].([]any); ok {
			for _, x := range tcs {
				tc := x.(map[string]any)
				i := int(tc["index"].(float64))
				if i == len(calls) {
					calls = append(calls, call{})
				}
				if id, ok := tc["id"].(string); ok {
					calls[i].ID = id
				}
				f := tc["function"].(map[string]any)
				if n, ok := f["name"].(string); ok {
					calls[i].Name += n
				}
				calls[i].Args += f["arguments"].(string)
			}
		}
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
		}
	}
	assert.Equal(t, "Checking both cities.", text)
	assert.Equal(t, "tool_calls", finish)
	assert.Equal(t, []call{{"toolu_paris", "get_weather", `{"city":"Paris"}`}, {"toolu_tokyo", "get_weather", `{"city":"Tokyo"}`}}, calls)
	assert.Equal(t, usage, gotUsage)

	// Without include_usage there is no usage chunk and no usage field.
	srv3 := llmserver.NewServer(fakes.NewScripted(fakes.Reply("hi there")))
	defer srv3.Close()
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv3.OpenAIBaseURL()+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, posttest.OpenAIHeaders("k")...)
	assert.NotContains(t, r.Body, `"usage"`)
}

func TestChatServerDecodesRequests(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("ok")))
	defer srv.Close()
	body := `{
	  "model": "gpt-4o", "max_completion_tokens": 300, "seed": 7, "stop": "END", "user": "u1",
	  "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": {"type": "object"}}},
	  "tool_choice": "required", "parallel_tool_calls": false,
	  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true}}],
	  "messages": [
	    {"role": "developer", "content": "Be terse."},
	    {"role": "system", "content": [{"type": "text", "text": "Use tools."}]},
	    {"role": "user", "content": [{"type": "text", "text": "Paris?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]},
	    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}, {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{broken"}}]},
	    {"role": "tool", "tool_call_id": "call_b", "content": "bad args"},
	    {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text", "text": "sunny"}]}
	  ]
	}`
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/chat/completions", body, posttest.OpenAIHeaders("k")...)
	require.Equal(t, 200, r.Status, r.Body)
	seed := int64(7)
	want := &llm.Request{
		System: []llm.Block{llm.TextBlock("Be terse."), llm.TextBlock("Use tools.")},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Paris?"), {Type: llm.BlockImage, MediaType: "image/png", Data: "iVBOR"}}},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_a", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}},
				InvalidToolCalls: []llm.InvalidToolCall{{ID: "call_b", Name: "get_weather", Args: "{broken", Error: "arguments are not valid JSON"}}},
			{Role: llm.RoleTool, ToolCallID: "call_b", Name: "get_weather", Content: []llm.Block{llm.TextBlock("bad args")}},
			{Role: llm.RoleTool, ToolCallID: "call_a", Name: "get_weather", Content: []llm.Block{llm.TextBlock("sunny")}},
		},
		Tools:          []llm.ToolSpec{{Name: "get_weather", Description: "Weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		ToolChoice:     &llm.ToolChoice{Mode: llm.ToolChoiceAny},
		ResponseFormat: &llm.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
		MaxTokens:      300, Seed: &seed, StopSequences: []string{"END"},
	}
	assert.Equal(t, want, srv.Requests()[0].Request)
}

func TestChatServerRejectsWireMistakes(t *testing.T) {
	const tools = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	tests := []errorCase{
		{"no key", `{}`, []string{}, 401, "You didn't provide an API key"},
		{"unknown field", `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokenz":3}`, nil, 400, `unknown field "max_tokenz"`},
		{"missing model", `{"messages":[{"role":"user","content":"x"}]}`, nil, 400, "you must provide a model parameter"},
		{"empty messages", `{"model":"m","messages":[]}`, nil, 400, "[] is too short - 'messages'"},
		{"stream options without stream", `{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, nil, 400, "The 'stream_options' parameter is only allowed when 'stream' is enabled."},
		{"arguments as an object", `{"model":"m",` + tools + `,"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`, nil, 400, "messages[1].tool_calls[0].function.arguments: expected a string holding JSON, got a JSON object"},
		{"call without id", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, nil, 400, "Missing required parameter: 'messages[1].tool_calls[0].id'."},
		{"call without answer", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"y"}]}`, nil, 400, "The following tool_call_ids did not have response messages: c1"},
		{"answer without call", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"r"}]}`, nil, 400, "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"},
		{"tool_choice without tools", `{"model":"m","tool_choice":"required","messages":[{"role":"user","content":"x"}]}`, nil, 400, "'tool_choice' is only allowed when 'tools' are specified"},
		{"n above one", `{"model":"m","n":2,"messages":[{"role":"user","content":"x"}]}`, nil, 400, "n must be 1"},
		{"legacy functions", `{"model":"m","functions":[],"messages":[{"role":"user","content":"x"}]}`, nil, 400, "deprecated"},
		{"image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"http://x"}}]},{"role":"user","content":"x"}]}`, nil, 400, "image parts are only allowed in user messages"},
		{"schema without name", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"schema":{}}},"messages":[{"role":"user","content":"x"}]}`, nil, 400, "response_format.json_schema.name"},
	}
	srv := llmserver.NewServer(fakes.NewScripted())
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := tt.header
			if hdr == nil {
				hdr = posttest.OpenAIHeaders("k")
			}
			r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/chat/completions", tt.body, hdr...)
			assert.Equal(t, tt.status, r.Status, r.Body)
			e := decodeJSON(t, r.Body)["error"].(map[string]any)
			assert.Contains(t, e["message"], tt.msg)
			assert.Equal(t, "invalid_request_error", e["type"])
			assert.Contains(t, e, "param")
			assert.Contains(t, e, "code")
		})
	}
}

// OpenAI Responses

func TestResponsesServerStreamsWhatItAnswers(t *testing.T) {
	body := `{"model":"gpt-5","input":"Weather in Paris and Tokyo?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":false}]}`
	plainSrv := llmserver.NewServer(fakes.NewScripted(richAnswer()))
	defer plainSrv.Close()
	streamSrv := llmserver.NewServer(fakes.NewScripted(richAnswer()))
	defer streamSrv.Close()

	plain := posttest.MustPost(t, context.Background(), http.DefaultClient, plainSrv.OpenAIBaseURL()+"/responses", body, posttest.OpenAIHeaders("k")...)
	require.Equal(t, 200, plain.Status, plain.Body)
	want := decodeJSON(t, plain.Body)
	assert.Equal(t, "response", want["object"])
	assert.Equal(t, "completed", want["status"])
	assert.Regexp(t, `^resp_[0-9A-Za-z]{48}$`, want["id"])
	output := want["output"].([]any)
	require.Len(t, output, 4)
	kinds := []string{}
	for _, o := range output {
		kinds = append(kinds, o.(map[string]any)["type"].(string))
	}
	assert.Equal(t, []string{"reasoning", "message", "function_call", "function_call"}, kinds)
	assert.Equal(t, "Two cities, two calls.", output[0].(map[string]any)["summary"].([]any)[0].(map[string]any)["text"])
	assert.Equal(t, "sig-abc", output[0].(map[string]any)["encrypted_content"])
	assert.Equal(t, "Checking both cities.", output[1].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
	fc := output[3].(map[string]any)
	assert.Equal(t, "toolu_tokyo", fc["call_id"])
	assert.Equal(t, `{"city":"Tokyo"}`, fc["arguments"])
	assert.Regexp(t, `^fc_`, fc["id"])
	u := want["usage"].(map[string]any)
	assert.Equal(t, 160.0, u["input_tokens"])
	assert.Equal(t, 205.0, u["total_tokens"])
	assert.Len(t, want["tools"], 1, "the request's tools are echoed")

	streamBody := strings.Replace(body, `"model":"gpt-5"`, `"model":"gpt-5","stream":true`, 1)
	stream := posttest.MustPost(t, context.Background(), http.DefaultClient, streamSrv.OpenAIBaseURL()+"/responses", streamBody, posttest.OpenAIHeaders("k")...)
	require.Equal(t, 200, stream.Status, stream.Body)
	events := parseSSE(t, stream.Body)
	assert.Equal(t, "response.created", events[0].event)
	last := decodeJSON(t, events[len(events)-1].data)
	assert.Equal(t, "response.completed", last["type"])
	text, args := "", map[string]string{}
	for i, ev := range events {
		d := decodeJSON(t, ev.data)
		assert.Equal(t, ev.event, d["type"])
		assert.Equal(t, float64(i), d["sequence_number"])
		// As the API writes them: type, then sequence_number, first.
		assert.True(t, strings.HasPrefix(ev.data, fmt.Sprintf(`{"type":%q,"sequence_number":%d,`, ev.event, i)), ev.data)
		switch ev.event {
		case "response.output_text.delta":
			text += d["delta"].(string)
		case "response.function_call_arguments.delta":
			args[d["item_id"].(string)] += d["delta"].(string)
		}
	}
	final := last["response"].(map[string]any)
	assert.Equal(t, "Checking both cities.", text)
	out := final["output"].([]any)
	for _, o := range out {
		item := o.(map[string]any)
		if item["type"] == "function_call" {
			assert.Equal(t, item["arguments"], args[item["id"].(string)], "argument deltas add up")
		}
		delete(item, "id") // ids differ: they are derived from the request, which says stream:true
	}
	for _, o := range output {
		delete(o.(map[string]any), "id")
	}
	assert.Equal(t, output, out)
	assert.Equal(t, want["usage"], final["usage"])
}

func TestResponsesServerDecodesRequests(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("ok")))
	defer srv.Close()
	body := `{
	  "model": "gpt-5", "instructions": "Be terse.", "max_output_tokens": 500, "store": false,
	  "text": {"format": {"type": "json_schema", "name": "city", "schema": {"type": "object"}, "strict": true}},
	  "tool_choice": {"type": "function", "name": "get_weather"},
	  "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": true}],
	  "input": [
	    {"role": "user", "content": [{"type": "input_text", "text": "Paris?"}]},
	    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "enc"},
	    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
	    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
	    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
	    {"role": "developer", "content": "Answer in JSON."}
	  ]
	}`
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/responses", body, posttest.OpenAIHeaders("k")...)
	require.Equal(t, 200, r.Status, r.Body)
	want := &llm.Request{
		System: []llm.Block{llm.TextBlock("Be terse.")},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Paris?")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockThinking, Thinking: "think", Signature: "enc"}, llm.TextBlock("Checking.")},
				ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: []llm.Block{llm.TextBlock("sunny")}},
			{Role: llm.RoleSystem, Content: []llm.Block{llm.TextBlock("Answer in JSON.")}},
		},
		Tools:          []llm.ToolSpec{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice:     &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"},
		ResponseFormat: &llm.ResponseFormat{Name: "city", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
		MaxTokens:      500,
	}
	assert.Equal(t, want, srv.Requests()[0].Request)
	resp := decodeJSON(t, r.Body)
	assert.Equal(t, false, resp["store"])
	assert.Equal(t, "Be terse.", resp["instructions"])
}

func TestResponsesServerRejectsWireMistakes(t *testing.T) {
	tests := []errorCase{
		{"no key", `{}`, []string{}, 401, "You didn't provide an API key"},
		{"stateful follow-up", `{"model":"m","input":"x","previous_response_id":"resp_1"}`, nil, 400, "keeps no responses"},
		{"missing input", `{"model":"m"}`, nil, 400, "Missing required parameter: 'input'."},
		{"output without call", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"c9","output":"r"}]}`, nil, 400, "No tool call found for function call output with call_id c9."},
		{"call without output", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`, nil, 400, "No tool output found for function call c1."},
		{"arguments as an object", `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"f","arguments":{}}]}`, nil, 400, "input[0].arguments: expected a string holding JSON"},
		{"output_text in a user message", `{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, nil, 400, "output_text parts belong to assistant messages"},
		{"input_text in an assistant message", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_text","text":"x"}]}]}`, nil, 400, "input_text parts belong to user, system and developer messages"},
		{"tiny max_output_tokens", `{"model":"m","input":"x","max_output_tokens":5}`, nil, 400, "Expected a value >= 16"},
		{"unknown item type", `{"model":"m","input":[{"type":"computer_call","call_id":"c"}]}`, nil, 400, `item type "computer_call" is not supported by the local server`},
		{"non-function tool", `{"model":"m","input":"x","tools":[{"type":"web_search"}]}`, nil, 400, `supports function tools, got "web_search"`},
	}
	srv := llmserver.NewServer(fakes.NewScripted())
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := tt.header
			if hdr == nil {
				hdr = posttest.OpenAIHeaders("k")
			}
			r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/responses", tt.body, hdr...)
			assert.Equal(t, tt.status, r.Status, r.Body)
			e := decodeJSON(t, r.Body)["error"].(map[string]any)
			assert.Contains(t, e["message"], tt.msg)
		})
	}
}

// Behaviour shared by all three formats.

func TestServerAuth(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewRuleModel(fakes.Rule{Reply: func(*llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Assistant("ok")}, nil
	}}), llmserver.WithAPIKey("right-key"))
	defer srv.Close()
	anth := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	chat := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	resp := `{"model":"m","input":"x"}`
	tests := []struct {
		name, path, body string
		header           []string
		status           int
		msg              string
	}{
		{"anthropic right key", "/v1/messages", anth, posttest.AnthropicHeaders("right-key"), 200, ""},
		{"anthropic bearer", "/v1/messages", anth, []string{"Authorization", "Bearer right-key", "Anthropic-Version", "v"}, 200, ""},
		{"anthropic wrong key", "/v1/messages", anth, posttest.AnthropicHeaders("wrong"), 401, "invalid x-api-key"},
		{"chat right key", "/v1/chat/completions", chat, posttest.OpenAIHeaders("right-key"), 200, ""},
		{"chat azure api-key", "/v1/chat/completions", chat, []string{"Api-Key", "right-key"}, 200, ""},
		{"chat wrong key", "/v1/chat/completions", chat, posttest.OpenAIHeaders("wrong"), 401, "Incorrect API key provided."},
		{"responses wrong key", "/v1/responses", resp, posttest.OpenAIHeaders("wrong"), 401, "Incorrect API key provided."},
		{"responses x-api-key is not OpenAI auth", "/v1/responses", resp, []string{"X-Api-Key", "right-key"}, 401, "You didn't provide an API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+tt.path, tt.body, tt.header...)
			assert.Equal(t, tt.status, r.Status, r.Body)
			assert.Contains(t, r.Body, tt.msg)
		})
	}
	for _, sr := range srv.Requests() {
		assert.NotContains(t, fmt.Sprint(sr.Header), "right-key", "served requests keep no credentials")
	}
}

func TestServerRoutesByModelAndTellsTheModelWhatItServes(t *testing.T) {
	echo := func(name string) llm.ChatModel {
		return fakes.NewRuleModel(fakes.Rule{Reply: func(*llm.Request) (*llm.Response, error) {
			return &llm.Response{Message: llm.Assistant(name)}, nil
		}})
	}
	var seen []llmserver.ServedCall
	spy := llmFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		c, ok := llmserver.ServedCallFrom(ctx)
		require.True(t, ok)
		seen = append(seen, c)
		return &llm.Response{Message: llm.Assistant("default")}, nil
	})
	srv := llmserver.NewServer(spy, llmserver.WithModelFor("grader-model", echo("grader")))
	defer srv.Close()
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/chat/completions", `{"model":"grader-model","messages":[{"role":"user","content":"x"}]}`, posttest.OpenAIHeaders("k")...)
	assert.Contains(t, r.Body, `"content":"grader"`)
	r = posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/responses", `{"model":"gpt-5","stream":true,"input":"x"}`, posttest.OpenAIHeaders("k")...)
	assert.Contains(t, r.Body, `"text":"default"`)
	assert.Equal(t, []llmserver.ServedCall{{API: cassette.APIOpenAIResponses, Model: "gpt-5", Stream: true, Call: 2}}, seen)
	_, ok := llmserver.ServedCallFrom(context.Background())
	assert.False(t, ok)
}

type llmFunc func(context.Context, *llm.Request) (*llm.Response, error)

func (f llmFunc) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return f(ctx, req)
}

func TestServerStopReasons(t *testing.T) {
	tests := []struct {
		stop                        llm.StopReason
		anthropic, chat, respStatus string
	}{
		{llm.StopEndTurn, "end_turn", "stop", "completed"},
		{llm.StopMaxTokens, "max_tokens", "length", "incomplete"},
		{llm.StopRefusal, "refusal", "content_filter", "completed"},
		{llm.StopContentFilter, "refusal", "content_filter", "incomplete"},
	}
	for _, tt := range tests {
		t.Run(string(tt.stop), func(t *testing.T) {
			step := func() fakes.Step {
				return fakes.Respond(llm.Response{Message: llm.Assistant("partial"), StopReason: tt.stop})
			}
			srv := llmserver.NewServer(fakes.NewScripted(step(), step(), step()))
			defer srv.Close()
			a := decodeJSON(t, posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, posttest.AnthropicHeaders("k")...).Body)
			assert.Equal(t, tt.anthropic, a["stop_reason"])
			c := decodeJSON(t, posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, posttest.OpenAIHeaders("k")...).Body)
			assert.Equal(t, tt.chat, c["choices"].([]any)[0].(map[string]any)["finish_reason"])
			r := decodeJSON(t, posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/responses", `{"model":"m","input":"x"}`, posttest.OpenAIHeaders("k")...).Body)
			assert.Equal(t, tt.respStatus, r["status"])
			if tt.stop == llm.StopMaxTokens {
				assert.Equal(t, map[string]any{"reason": "max_output_tokens"}, r["incomplete_details"])
			}
		})
	}
}

func TestServerIDsAreDeterministic(t *testing.T) {
	body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	answer := func() *llmserver.Server {
		return llmserver.NewServer(fakes.NewScripted(fakes.Reply("a"), fakes.Reply("a"), fakes.Reply("a")))
	}
	s1, s2 := answer(), answer()
	defer s1.Close()
	defer s2.Close()
	first := posttest.MustPost(t, context.Background(), http.DefaultClient, s1.URL+"/v1/messages", body, posttest.AnthropicHeaders("k")...)
	same := posttest.MustPost(t, context.Background(), http.DefaultClient, s2.URL+"/v1/messages", body, posttest.AnthropicHeaders("k")...)
	assert.Equal(t, first.Body, same.Body, "two servers answer the same request identically")
	assert.Equal(t, first.Header.Get("Request-Id"), same.Header.Get("Request-Id"))
	again := posttest.MustPost(t, context.Background(), http.DefaultClient, s1.URL+"/v1/messages", body, posttest.AnthropicHeaders("k")...)
	assert.NotEqual(t, decodeJSON(t, first.Body)["id"], decodeJSON(t, again.Body)["id"], "a repeated request gets a new id")
	other := posttest.MustPost(t, context.Background(), http.DefaultClient, s2.URL+"/v1/messages", strings.Replace(body, `"x"`, `"y"`, 1), posttest.AnthropicHeaders("k")...)
	assert.NotEqual(t, decodeJSON(t, first.Body)["id"], decodeJSON(t, other.Body)["id"])
}

func TestServerFaults(t *testing.T) {
	anth := `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"x"}]}`
	t.Run("rate limit with retry-after, then success", func(t *testing.T) {
		m := fakes.NewScripted(fakes.Reply("after the retry"))
		srv := llmserver.NewServer(m)
		defer srv.Close()
		srv.FailOn(1, llmserver.Fault{Status: 429, Header: http.Header{"Retry-After": {"2"}}})
		r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", anth, posttest.AnthropicHeaders("k")...)
		assert.Equal(t, 429, r.Status)
		assert.Equal(t, "2", r.Header.Get("Retry-After"))
		assert.Equal(t, "rate_limit_error", decodeJSON(t, r.Body)["error"].(map[string]any)["type"])
		assert.Equal(t, 0, m.CallCount(), "a faulted call does not reach the model")
		r = posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", anth, posttest.AnthropicHeaders("k")...)
		assert.Equal(t, 200, r.Status)
		assert.Contains(t, r.Body, "after the retry")
		reqs := srv.Requests()
		assert.Equal(t, 429, reqs[0].Status)
		assert.Equal(t, "injected fault", reqs[0].Error)
		assert.Equal(t, 200, reqs[1].Status)
	})
	t.Run("provider-shaped error bodies", func(t *testing.T) {
		srv := llmserver.NewServer(fakes.NewScripted())
		defer srv.Close()
		srv.FailOn(1, llmserver.Fault{Status: 529}).FailOn(2, llmserver.Fault{Status: 500}).FailOn(3, llmserver.Fault{Status: 503, Body: "upstream gone"})
		r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", anth, posttest.AnthropicHeaders("k")...)
		assert.Equal(t, 529, r.Status)
		assert.Equal(t, "overloaded_error", decodeJSON(t, r.Body)["error"].(map[string]any)["type"])
		r = posttest.MustPost(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/chat/completions", `{}`, posttest.OpenAIHeaders("k")...)
		assert.Equal(t, 500, r.Status)
		e := decodeJSON(t, r.Body)["error"].(map[string]any)
		assert.Equal(t, "server_error", e["type"])
		assert.Equal(t, "server_error", e["code"])
		r = posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", anth, posttest.AnthropicHeaders("k")...)
		assert.Equal(t, 503, r.Status)
		assert.Equal(t, "upstream gone", r.Body)
	})
	t.Run("truncated stream", func(t *testing.T) {
		srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("one two three four five six seven eight")))
		defer srv.Close()
		srv.FailOn(1, llmserver.Fault{Truncate: true})
		r, err := posttest.Post(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", strings.Replace(anth, `"max_tokens":50`, `"max_tokens":50,"stream":true`, 1), posttest.AnthropicHeaders("k")...)
		require.Error(t, err)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Zero(t, r.Status)
		assert.Equal(t, "truncated", srv.Requests()[0].Error)
	})
	t.Run("truncated stream reads as far as the cut", func(t *testing.T) {
		srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("one two three four")))
		defer srv.Close()
		srv.FailOn(1, llmserver.Fault{Truncate: true, TruncateAfter: 3})
		req, _ := http.NewRequest(http.MethodPost, srv.OpenAIBaseURL()+"/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		sc := bufio.NewScanner(resp.Body)
		data := 0
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				data++
			}
		}
		assert.Equal(t, 3, data, "exactly the events before the cut arrive")
		assert.ErrorIs(t, sc.Err(), io.ErrUnexpectedEOF)
	})
	t.Run("truncated JSON", func(t *testing.T) {
		srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("a whole answer")))
		defer srv.Close()
		srv.FailOn(1, llmserver.Fault{Truncate: true})
		_, err := posttest.Post(t, context.Background(), http.DefaultClient, srv.OpenAIBaseURL()+"/responses", `{"model":"m","input":"x"}`, posttest.OpenAIHeaders("k")...)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	})
	t.Run("stall until the client gives up", func(t *testing.T) {
		srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("never")))
		srv.FailOn(1, llmserver.Fault{Stall: true})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := posttest.Post(t, ctx, http.DefaultClient, srv.URL+"/v1/messages", anth, posttest.AnthropicHeaders("k")...)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		// A stalled request does not keep Close from returning.
		srv.FailOn(2, llmserver.Fault{Stall: true})
		done := make(chan struct{})
		go func() {
			_, _ = posttest.Post(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", anth, posttest.AnthropicHeaders("k")...)
			close(done)
		}()
		for len(srv.Requests()) < 2 {
			time.Sleep(time.Millisecond)
		}
		srv.Close()
		<-done
	})
}

func TestServerStreamsIncrementallyAndStopsOnCancel(t *testing.T) {
	words := strings.Repeat("word ", 50)
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply(words)), llmserver.WithStreamDelay(5*time.Millisecond))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.OpenAIBaseURL()+"/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	require.True(t, sc.Scan(), "the first event arrives before the answer is complete")
	assert.Contains(t, sc.Text(), `"role":"assistant"`)
	cancel()
	n := 0
	for sc.Scan() {
		n++
	}
	assert.Error(t, sc.Err(), "reading stops with the cancellation")
	assert.True(t, errors.Is(sc.Err(), context.Canceled) || strings.Contains(sc.Err().Error(), "canceled"), "%v", sc.Err())
	assert.Less(t, n, 100, "the server did not send the whole stream")
}

func TestServerRefusesOtherRoutes(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted())
	defer srv.Close()
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/embeddings", `{}`, posttest.OpenAIHeaders("k")...)
	assert.Equal(t, 404, r.Status)
	assert.Contains(t, r.Body, "serves POST /v1/messages, /v1/chat/completions, /v1/responses and /v1beta/models/{model}:generateContent")
	resp, err := http.Get(srv.URL + "/v1/messages")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 405, resp.StatusCode)
}

func TestServerReportsModelErrors(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Fail(errors.New("script says no"))))
	defer srv.Close()
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, posttest.AnthropicHeaders("k")...)
	assert.Equal(t, 500, r.Status)
	assert.Contains(t, r.Body, `"type":"api_error"`)
	assert.Contains(t, r.Body, "script says no")
	r = posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, posttest.AnthropicHeaders("k")...)
	assert.Equal(t, 500, r.Status)
	assert.Contains(t, r.Body, "no more responses", "an exhausted script is a server error, visible to the client")
}

func TestUnstartedServerMounts(t *testing.T) {
	h := llmserver.NewUnstartedServer(fakes.NewScripted(fakes.Reply("mounted")))
	mux := http.NewServeMux()
	mux.Handle("/provider/", http.StripPrefix("/provider", h))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, ts.URL+"/provider/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, posttest.AnthropicHeaders("k")...)
	assert.Equal(t, 200, r.Status, r.Body)
	assert.Contains(t, r.Body, "mounted")
	assert.Empty(t, h.URL)
}

func TestUnstartedServerStarts(t *testing.T) {
	srv := llmserver.NewUnstartedServer(fakes.NewScripted(fakes.Reply("started")), llmserver.WithAPIKey("k"))
	require.Empty(t, srv.URL)
	srv.Start()
	defer srv.Close()
	r := posttest.MustPost(t, context.Background(), http.DefaultClient, srv.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, posttest.AnthropicHeaders("k")...)
	assert.Equal(t, 200, r.Status, r.Body)
	assert.Contains(t, r.Body, "started")
	assert.Panics(t, srv.Start, "a server starts once")
}
