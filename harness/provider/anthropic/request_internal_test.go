package anthropic

import (
	"encoding/json"
	"strconv"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

func wire(t *testing.T, model string, req *llm.Request) map[string]any {
	t.Helper()
	m, err := New(provider.Config{Model: model, Replay: true})
	require.NoError(t, err)
	return wireOf(t, m, req)
}

func wireOf(t *testing.T, m *Model, req *llm.Request) map[string]any {
	t.Helper()
	p, err := m.params(req)
	require.NoError(t, err)
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func TestRequestRoundTripsThinkingCacheAndTools(t *testing.T) {
	temp := 0.2
	req := &llm.Request{
		System: []llm.Block{{Type: llm.BlockText, Text: "You are terse.", CacheControl: llm.Ephemeral()}},
		Messages: []llm.Message{
			llm.System("Extra rule."),
			llm.User("Find it."),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockThinking, Thinking: "Let me look.", Signature: "c2lnbmF0dXJl"},
				{Type: llm.BlockRedactedThinking, Redacted: "b3BhcXVl"},
				{Type: llm.BlockThinking, Thinking: "foreign", Signature: "openai-reasoning:{}"},
				llm.TextBlock("Calling tools."),
			}, ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "ls", Args: json.RawMessage(`{"path": "/"}`)},
				{ID: "toolu_2", Name: "ls", Args: json.RawMessage(``)},
			}},
			llm.ToolResult("toolu_1", "ls", "a.txt", false),
			{Role: llm.RoleTool, ToolCallID: "toolu_2", IsError: true, Content: []llm.Block{{Type: llm.BlockText, Text: "denied", CacheControl: &llm.CacheControl{Type: "ephemeral", TTL: "1h"}}}},
			llm.User("And then?"),
			llm.System("Mid-run reminder."),
		},
		Tools: []llm.ToolSpec{{Name: "ls", Description: "List files.",
			Parameters:   json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
			CacheControl: llm.Ephemeral()}},
		ToolChoice:    &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "ls"},
		MaxTokens:     2048,
		Temperature:   &temp,
		StopSequences: []string{"END"},
		Thinking:      &llm.Thinking{BudgetTokens: 512},
	}
	got := wire(t, "claude-sonnet-4-5", req)
	want := map[string]any{
		"model":      "claude-sonnet-4-5",
		"max_tokens": float64(2048),
		"system": []any{
			map[string]any{"type": "text", "text": "You are terse.", "cache_control": map[string]any{"type": "ephemeral"}},
			map[string]any{"type": "text", "text": "Extra rule."},
		},
		"messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Find it."}}},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": "Let me look.", "signature": "c2lnbmF0dXJl"},
				map[string]any{"type": "redacted_thinking", "data": "b3BhcXVl"},
				map[string]any{"type": "text", "text": "Calling tools."},
				map[string]any{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": map[string]any{"path": "/"}},
				map[string]any{"type": "tool_use", "id": "toolu_2", "name": "ls", "input": map[string]any{}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "a.txt"}}},
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": []any{map[string]any{"type": "text", "text": "denied"}},
					"cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}},
				map[string]any{"type": "text", "text": "And then?"},
			}},
			map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "Mid-run reminder."}}},
		},
		"tools": []any{map[string]any{
			"name": "ls", "description": "List files.", "cache_control": map[string]any{"type": "ephemeral"},
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}, "additionalProperties": false},
		}},
		"tool_choice":    map[string]any{"type": "tool", "name": "ls"},
		"stop_sequences": []any{"END"},
		"thinking":       map[string]any{"type": "enabled", "budget_tokens": float64(1024)},
	}
	assert.Equal(t, want, got)
}

func TestThinkingModes(t *testing.T) {
	tests := []struct {
		model  string
		budget int
		want   map[string]any
	}{
		{"claude-sonnet-4-6", 4000, map[string]any{"type": "enabled", "budget_tokens": float64(4000)}},
		{"claude-haiku-4-5-20251001", 2000, map[string]any{"type": "enabled", "budget_tokens": float64(2000)}},
		{"claude-opus-4-7", 4000, map[string]any{"type": "adaptive"}},
		{"claude-opus-4-8", 4000, map[string]any{"type": "adaptive"}},
		{"claude-sonnet-5-5", 4000, map[string]any{"type": "adaptive"}},
		{"claude-fable-5", 4000, map[string]any{"type": "adaptive"}},
		{"claude-sonnet-4-6", 0, map[string]any{"type": "adaptive"}},
	}
	for _, tt := range tests {
		got := wire(t, tt.model, &llm.Request{Messages: []llm.Message{llm.User("x")}, Thinking: &llm.Thinking{BudgetTokens: tt.budget}})
		assert.Equal(t, tt.want, got["thinking"], tt.model)
	}
	got := wire(t, "claude-sonnet-4-6", &llm.Request{Messages: []llm.Message{llm.User("x")}})
	assert.NotContains(t, got, "thinking")
	assert.Equal(t, float64(provider.DefaultMaxTokens), got["max_tokens"])
	assert.NotContains(t, got, "temperature", "sampling parameters are rejected by API 2026-10-21")
}

func TestRequestConversionErrors(t *testing.T) {
	m, err := New(provider.Config{Model: "claude-sonnet-4-6", Replay: true})
	require.NoError(t, err)
	bad := []struct {
		req  llm.Request
		want string
	}{
		{llm.Request{System: []llm.Block{{Type: llm.BlockImage, URL: "http://x"}}}, "anthropic: system block 0 has type image"},
		{llm.Request{Messages: []llm.Message{{Role: "robot"}}}, `anthropic: message 0 has unknown role "robot"`},
		{llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage}}}}}, "anthropic: message 0 block 0: image has neither data nor url"},
		{llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockFile, MediaType: "application/zip", Data: "x"}}}}}, `files of type "application/zip" are not supported`},
		{llm.Request{Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":"string"}`)}}}, "anthropic: tool t: schema type is string; it must be object"},
		{llm.Request{Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, "anthropic: tool t: schema is not a JSON object"},
		{llm.Request{Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`null`)}}}, "anthropic: tool t: schema is not a JSON object"},
		{llm.Request{Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":"object","required":"a"}`)}}}, "anthropic: tool t: required must be a list of names"},
		{llm.Request{ToolChoice: &llm.ToolChoice{Mode: "sometimes"}}, `unknown tool choice mode "sometimes"`},
	}
	for _, b := range bad {
		_, err := m.params(&b.req)
		require.Error(t, err)
		assert.Contains(t, err.Error(), b.want)
	}
}

func TestMediaBlocks(t *testing.T) {
	got := wire(t, "claude-sonnet-4-6", &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
		{Type: llm.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
		{Type: llm.BlockImage, URL: "https://example.com/a.jpg"},
		{Type: llm.BlockFile, MediaType: "application/pdf", Data: "JVBERi0="},
		{Type: llm.BlockFile, MediaType: "text/plain", Data: "notes"},
	}}}})
	content := got["messages"].([]any)[0].(map[string]any)["content"].([]any)
	assert.Equal(t, []any{
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/a.jpg"}},
		map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
		map[string]any{"type": "document", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "notes"}},
	}, content)
}

// TestThinkingRoundTrip parses an answer with signed and redacted thinking
// and sends it back: the blocks must return verbatim, before the tool call.
func TestThinkingRoundTrip(t *testing.T) {
	raw := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[
		{"type":"thinking","thinking":"I should list files.","signature":"RXZNQ0NrWUlDeGdD"},
		{"type":"redacted_thinking","data":"RW5jcnlwdGVkIGJsb2I="},
		{"type":"tool_use","id":"toolu_9","name":"ls","input":{"path":"/"}}],
		"stop_reason":"tool_use","usage":{"input_tokens":9,"output_tokens":4}}`
	var msg sdk.Message
	require.NoError(t, json.Unmarshal([]byte(raw), &msg))
	resp := response(&msg)
	assert.Equal(t, []llm.Block{
		{Type: llm.BlockThinking, Thinking: "I should list files.", Signature: "RXZNQ0NrWUlDeGdD"},
		{Type: llm.BlockRedactedThinking, Redacted: "RW5jcnlwdGVkIGJsb2I="},
	}, resp.Message.Content)
	assert.Equal(t, llm.StopToolUse, resp.StopReason)

	got := wire(t, "claude-sonnet-4-6", &llm.Request{Messages: []llm.Message{
		llm.User("ls"), resp.Message, llm.ToolResult("toolu_9", "ls", "a.txt", false),
	}, Thinking: &llm.Thinking{BudgetTokens: 2048}})
	assistant := got["messages"].([]any)[1].(map[string]any)["content"].([]any)
	assert.Equal(t, []any{
		map[string]any{"type": "thinking", "thinking": "I should list files.", "signature": "RXZNQ0NrWUlDeGdD"},
		map[string]any{"type": "redacted_thinking", "data": "RW5jcnlwdGVkIGJsb2I="},
		map[string]any{"type": "tool_use", "id": "toolu_9", "name": "ls", "input": map[string]any{"path": "/"}},
	}, assistant)
}

func TestStopReasons(t *testing.T) {
	for in, want := range map[sdk.StopReason]llm.StopReason{
		"end_turn": llm.StopEndTurn, "tool_use": llm.StopToolUse, "max_tokens": llm.StopMaxTokens,
		"model_context_window_exceeded": llm.StopMaxTokens, "stop_sequence": llm.StopSequence,
		"pause_turn": llm.StopPauseTurn, "refusal": llm.StopRefusal, "something_new": "something_new",
	} {
		assert.Equal(t, want, stopReason(in), in)
	}
}

// TestToolSchemasAreConvertedOncePerModel: the converted schema is kept per
// model and shared by later calls, which must neither see each other's
// changes nor confuse two tools with different schemas.
func TestToolSchemasAreConvertedOncePerModel(t *testing.T) {
	m, err := New(provider.Config{Model: "claude-sonnet-4-6", Replay: true})
	require.NoError(t, err)
	a := llm.ToolSpec{Name: "a", Description: "first", Parameters: json.RawMessage(`{"type":"object","properties":{"z":{"type":"string"},"b":{"type":"integer"}},"required":["z"],"$defs":{"x":{"type":"string"}}}`)}
	b := llm.ToolSpec{Name: "b", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"boolean"}}}`), CacheControl: llm.Ephemeral()}
	empty := llm.ToolSpec{Name: "c"}
	for range 3 {
		got := wireOf(t, m, &llm.Request{Tools: []llm.ToolSpec{a, b, empty}})
		tools := got["tools"].([]any)
		require.Len(t, tools, 3)
		assert.Equal(t, map[string]any{"name": "a", "description": "first", "input_schema": map[string]any{
			"type": "object", "properties": map[string]any{"z": map[string]any{"type": "string"}, "b": map[string]any{"type": "integer"}},
			"required": []any{"z"}, "$defs": map[string]any{"x": map[string]any{"type": "string"}},
		}}, tools[0])
		assert.Equal(t, map[string]any{"name": "b", "cache_control": map[string]any{"type": "ephemeral"}, "input_schema": map[string]any{
			"type": "object", "properties": map[string]any{"q": map[string]any{"type": "boolean"}},
		}}, tools[1])
		assert.Equal(t, map[string]any{"name": "c", "input_schema": map[string]any{"type": "object", "properties": map[string]any{}}}, tools[2])
	}
	p, err := m.params(&llm.Request{Tools: []llm.ToolSpec{a}})
	require.NoError(t, err)
	raw, err := json.Marshal(p.Tools[0])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"properties":{"z":{"type":"string"},"b":{"type":"integer"}}`, "properties go out as written")
	assert.Len(t, m.schemas, 3, "one conversion per distinct schema")
}

func TestToolSchemaCacheIsBounded(t *testing.T) {
	m, err := New(provider.Config{Model: "claude-sonnet-4-6", Replay: true})
	require.NoError(t, err)
	for i := range provider.MaxCachedSchemas + 10 {
		schema := json.RawMessage(`{"type":"object","properties":{"p` + strconv.Itoa(i) + `":{"type":"string"}}}`)
		got := wireOf(t, m, &llm.Request{Tools: []llm.ToolSpec{{Name: "t", Parameters: schema}}})
		props := got["tools"].([]any)[0].(map[string]any)["input_schema"].(map[string]any)["properties"].(map[string]any)
		require.Contains(t, props, "p"+strconv.Itoa(i))
	}
	assert.Len(t, m.schemas, provider.MaxCachedSchemas)
}
