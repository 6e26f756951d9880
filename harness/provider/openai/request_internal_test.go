package openai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func model(t *testing.T, kind string, responses bool) *Model {
	t.Helper()
	m, err := New(provider.Config{Provider: "p", Model: "m", Kind: kind, BaseURL: "http://127.0.0.1:1/v1", UseResponsesAPI: &responses, Replay: true})
	require.NoError(t, err)
	return m
}

func conversation() *llm.Request {
	temp, seed := 0.5, int64(7)
	return &llm.Request{
		System: []llm.Block{llm.TextBlock("Be brief."), llm.TextBlock("\n\nUse tools.")},
		Messages: []llm.Message{
			llm.User("Weather?"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockThinking, Thinking: "Need the tool.", Signature: `openai-reasoning:{"id":"rs_1","encrypted_content":"enc"}`},
				{Type: llm.BlockThinking, Thinking: "anthropic thought", Signature: "c2ln"},
				{Type: llm.BlockThinking, Signature: "gemini:sig-msg"},
				{Type: llm.BlockThinking, Signature: "gemini-call:call_1:sig-call"},
				llm.TextBlock("Checking."),
			}, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "weather", Args: json.RawMessage(`{"city":"Oslo"}`)}},
				InvalidToolCalls: []llm.InvalidToolCall{{ID: "call_2", Name: "weather", Args: `{"city":`, Error: "bad"}}},
			llm.ToolResult("call_1", "weather", "rain", false),
			llm.ToolResult("call_2", "weather", "Error: arguments are not valid JSON", true),
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("And this?"), {Type: llm.BlockImage, MediaType: "image/png", Data: "iVBO"}}},
		},
		Tools:          []llm.ToolSpec{{Name: "weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
		ToolChoice:     &llm.ToolChoice{Mode: llm.ToolChoiceAny},
		ResponseFormat: &llm.ResponseFormat{Name: "Weather Report", Schema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"],"additionalProperties":false}`), Strict: true},
		MaxTokens:      300,
		Temperature:    &temp,
		Seed:           &seed,
		StopSequences:  []string{"END"},
	}
}

func TestChatRequest(t *testing.T) {
	p, err := model(t, provider.KindOpenAICompatible, false).chatParams(conversation(), true)
	require.NoError(t, err)
	got := toMap(t, p)
	want := map[string]any{
		"model": "m",
		"messages": []any{
			map[string]any{"role": "system", "content": "Be brief.\n\nUse tools."},
			map[string]any{"role": "user", "content": "Weather?"},
			map[string]any{"role": "assistant", "content": "Checking.",
				"extra_content": map[string]any{"google": map[string]any{"thought_signature": "sig-msg"}},
				"tool_calls": []any{
					map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":"Oslo"}`},
						"extra_content": map[string]any{"google": map[string]any{"thought_signature": "sig-call"}}},
					map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":`}},
				}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "rain"},
			map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "Error: arguments are not valid JSON"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "And this?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBO"}},
			}},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather", "description": "Weather for a city.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}},
		"tool_choice": "required",
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "Weather_Report", "strict": true,
			"schema": map[string]any{"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}, "required": []any{"summary"}, "additionalProperties": false}}},
		"max_tokens":     float64(300),
		"temperature":    0.5,
		"seed":           float64(7),
		"stop":           []any{"END"},
		"stream_options": map[string]any{"include_usage": true},
	}
	assert.Equal(t, want, got)

	// OpenAI itself takes max_completion_tokens.
	p, err = model(t, provider.KindOpenAI, false).chatParams(conversation(), false)
	require.NoError(t, err)
	got = toMap(t, p)
	assert.Equal(t, float64(300), got["max_completion_tokens"])
	assert.NotContains(t, got, "max_tokens")
	assert.NotContains(t, got, "stream_options")
}

func TestResponsesRequest(t *testing.T) {
	p, err := model(t, provider.KindOpenAI, true).responsesParams(conversation())
	require.NoError(t, err)
	got := toMap(t, p)
	want := map[string]any{
		"model":        "m",
		"instructions": "Be brief.\n\nUse tools.",
		"input": []any{
			map[string]any{"role": "user", "content": "Weather?"},
			map[string]any{"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "summary": []any{map[string]any{"type": "summary_text", "text": "Need the tool."}}},
			map[string]any{"role": "assistant", "content": "Checking."},
			map[string]any{"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": `{"city":"Oslo"}`},
			map[string]any{"type": "function_call", "call_id": "call_2", "name": "weather", "arguments": `{"city":`},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "rain"},
			map[string]any{"type": "function_call_output", "call_id": "call_2", "output": "Error: arguments are not valid JSON"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "input_text", "text": "And this?"},
				map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "auto"},
			}},
		},
		"tools": []any{map[string]any{"type": "function", "name": "weather", "description": "Weather for a city.", "strict": false,
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}},
		"tool_choice": "required",
		"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "Weather_Report", "strict": true,
			"schema": map[string]any{"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}, "required": []any{"summary"}, "additionalProperties": false}}},
		"max_output_tokens": float64(300),
		"temperature":       0.5,
	}
	assert.Equal(t, want, got)

	req := &llm.Request{Messages: []llm.Message{llm.User("think")}, Thinking: &llm.Thinking{BudgetTokens: 20000}}
	p, err = model(t, provider.KindOpenAI, true).responsesParams(req)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"effort": "high", "summary": "auto"}, toMap(t, p)["reasoning"])
}

func TestStrictCompatible(t *testing.T) {
	tests := []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{},"additionalProperties":false}}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"properties":{"type":"string"}},"required":["properties"],"additionalProperties":false}`, true},
	}
	for _, tt := range tests {
		s, err := schemaMap(json.RawMessage(tt.schema))
		require.NoError(t, err)
		assert.Equal(t, tt.want, strictCompatible(s), tt.schema)
	}
	assert.Equal(t, "structured_response", formatName("structured_response"))
	assert.Equal(t, "a_b_c", formatName("a b.c"))
	assert.Equal(t, "response", formatName(""))
}

func TestSynthesizedIDsAreStableAndDistinct(t *testing.T) {
	a := synthesizeID("resp", 3, 0, "ls", "{}")
	assert.Equal(t, a, synthesizeID("resp", 3, 0, "ls", "{}"))
	assert.NotEqual(t, a, synthesizeID("resp", 5, 0, "ls", "{}"), "a later turn gets another id")
	assert.NotEqual(t, a, synthesizeID("resp", 3, 1, "ls", "{}"), "a parallel call gets another id")
	assert.Regexp(t, `^call_[0-9a-f]{24}$`, a)
}

func TestInvalidArgumentsBecomeInvalidCalls(t *testing.T) {
	r := &chatResult{id: "x", finish: "tool_calls"}
	good, bad := &chatCall{id: "c1", name: "ls"}, &chatCall{id: "c2", name: "ls"}
	good.args.WriteString(`{"path": "/"}`)
	bad.args.WriteString(`{"path": `)
	r.calls = []*chatCall{good, bad}
	resp := r.response(1)
	assert.Equal(t, []llm.ToolCall{{ID: "c1", Name: "ls", Args: json.RawMessage(`{"path":"/"}`)}}, resp.Message.ToolCalls)
	require.Len(t, resp.Message.InvalidToolCalls, 1)
	assert.Equal(t, "c2", resp.Message.InvalidToolCalls[0].ID)
	assert.Equal(t, `{"path": `, resp.Message.InvalidToolCalls[0].Args)
	assert.Equal(t, llm.StopToolUse, resp.StopReason)
}

func TestKindAndAPIValidation(t *testing.T) {
	yes := true
	_, err := New(provider.Config{Provider: "ollama", Model: "m", Kind: provider.KindOpenAICompatible, BaseURL: "http://127.0.0.1:1/v1", UseResponsesAPI: &yes})
	assert.ErrorContains(t, err, "the Responses API needs kind openai")
	_, err = New(provider.Config{Model: "m", Kind: provider.KindAnthropic})
	assert.ErrorContains(t, err, "config is for kind anthropic")
	m, err := New(provider.Config{Model: "gpt-5"})
	require.NoError(t, err)
	assert.True(t, m.cfg.ResponsesAPI(), "openai: models default to the Responses API")
	assert.Equal(t, DefaultBaseURL, m.cfg.BaseURL)
}

// TestToolSchemasAreConvertedOncePerModel: tool parameters are converted
// once per model and schema, shared by later calls of either API, and sent
// as written.
func TestToolSchemasAreConvertedOncePerModel(t *testing.T) {
	m := model(t, provider.KindOpenAI, false)
	a := llm.ToolSpec{Name: "a", Parameters: json.RawMessage(`{"type":"object","properties":{"z":{"type":"string"},"b":{"type":"integer"}},"required":["z"]}`)}
	b := llm.ToolSpec{Name: "b", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"boolean"}}}`)}
	empty := llm.ToolSpec{Name: "c"}
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}, Tools: []llm.ToolSpec{a, b, empty}}
	for range 2 {
		p, err := m.chatParams(req, false)
		require.NoError(t, err)
		got := toMap(t, p)["tools"].([]any)
		require.Len(t, got, 3)
		assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"z": map[string]any{"type": "string"}, "b": map[string]any{"type": "integer"}}, "required": []any{"z"}},
			got[0].(map[string]any)["function"].(map[string]any)["parameters"])
		assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "boolean"}}},
			got[1].(map[string]any)["function"].(map[string]any)["parameters"])
		assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{}},
			got[2].(map[string]any)["function"].(map[string]any)["parameters"])

		rp, err := m.responsesParams(req)
		require.NoError(t, err)
		raw, err := json.Marshal(rp)
		require.NoError(t, err)
		assert.Contains(t, string(raw), `"properties":{"z":{"type":"string"},"b":{"type":"integer"}}`, "properties go out as written")
	}
	assert.Len(t, m.schemas, 3, "one conversion per distinct schema")
	_, err := m.chatParams(&llm.Request{Tools: []llm.ToolSpec{{Name: "bad", Parameters: json.RawMessage(`[1]`)}}}, false)
	require.ErrorContains(t, err, "openai: tool bad: schema is not a JSON object")
}
