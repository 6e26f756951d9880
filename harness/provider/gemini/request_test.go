package gemini_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// sent returns the JSON body the adapter sends for req.
func sent(t *testing.T, req *llm.Request, mutate ...func(*provider.Config)) map[string]any {
	t.Helper()
	srv := newWireServer(t, jsonAnswer(okAnswer))
	_, err := newModel(t, srv.URL, mutate...).Generate(context.Background(), req)
	require.NoError(t, err)
	return srv.requests()[0].JSON(t)
}

func ptr[T any](v T) *T { return &v }

// TestRequestConversion pins what reaches the wire for each feature of a
// request, as Gemini's REST API spells it.
func TestRequestConversion(t *testing.T) {
	weather := llm.ToolSpec{Name: "get_weather", Description: "Weather now.",
		Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}
	tests := []struct {
		name  string
		req   *llm.Request
		check func(t *testing.T, body map[string]any)
	}{
		{"text only", userRequest("Hi"), func(t *testing.T, b map[string]any) {
			assert.Equal(t, []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Hi"}}}}, b["contents"])
			assert.Nil(t, b["systemInstruction"])
			assert.Nil(t, b["tools"])
			assert.Equal(t, map[string]any{}, b["generationConfig"], "nothing set, nothing sent")
		}},
		{"system prompt and leading system messages join the instruction; later ones are user turns",
			&llm.Request{System: []llm.Block{llm.TextBlock("Be terse."), llm.TextBlock("\n\nUse tools.")}, Messages: []llm.Message{
				llm.System("Today is Monday."), llm.User("Hi"), llm.Assistant("Hello"), llm.System("Wrap up."),
			}}, func(t *testing.T, b map[string]any) {
				assert.Equal(t, map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Be terse.\n\nUse tools."}, map[string]any{"text": "Today is Monday."}}}, b["systemInstruction"])
				assert.Equal(t, []any{
					map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Hi"}}},
					map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Hello"}}},
					map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Wrap up."}}},
				}, b["contents"])
			}},
		{"tools use parametersJsonSchema without $schema; an empty schema declares no parameters",
			&llm.Request{Messages: []llm.Message{llm.User("Paris?")}, Tools: []llm.ToolSpec{weather, {Name: "now"}}},
			func(t *testing.T, b map[string]any) {
				assert.Equal(t, []any{map[string]any{"functionDeclarations": []any{
					map[string]any{"name": "get_weather", "description": "Weather now.", "parametersJsonSchema": map[string]any{
						"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}, "additionalProperties": false}},
					map[string]any{"name": "now"},
				}}}, b["tools"])
			}},
		{"tool choice: a named tool is ANY with one allowed name",
			&llm.Request{Messages: []llm.Message{llm.User("Paris?")}, Tools: []llm.ToolSpec{weather}, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"}},
			func(t *testing.T, b map[string]any) {
				assert.Equal(t, map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY", "allowedFunctionNames": []any{"get_weather"}}}, b["toolConfig"])
			}},
		{"tool choice none", &llm.Request{Messages: []llm.Message{llm.User("x")}, Tools: []llm.ToolSpec{weather}, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceNone}},
			func(t *testing.T, b map[string]any) {
				assert.Equal(t, map[string]any{"functionCallingConfig": map[string]any{"mode": "NONE"}}, b["toolConfig"])
			}},
		{"sampling, limits, stop sequences, thinking and a response format",
			&llm.Request{Messages: []llm.Message{llm.User("x")}, MaxTokens: 512, Temperature: ptr(0.5), TopP: ptr(0.9), Seed: ptr(int64(42)),
				StopSequences: []string{"END"}, Thinking: &llm.Thinking{BudgetTokens: 2048},
				ResponseFormat: &llm.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
			func(t *testing.T, b map[string]any) {
				assert.Equal(t, map[string]any{
					"maxOutputTokens": 512.0, "temperature": 0.5, "topP": 0.9, "seed": 42.0, "stopSequences": []any{"END"},
					"thinkingConfig":   map[string]any{"includeThoughts": true, "thinkingBudget": 2048.0},
					"responseMimeType": "application/json", "responseJsonSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
				}, b["generationConfig"])
			}},
		{"thinking without a budget is dynamic", &llm.Request{Messages: []llm.Message{llm.User("x")}, Thinking: &llm.Thinking{}},
			func(t *testing.T, b map[string]any) {
				assert.Equal(t, map[string]any{"thinkingConfig": map[string]any{"includeThoughts": true, "thinkingBudget": -1.0}}, b["generationConfig"])
			}},
		{"user media: inline data as bytes, URLs as file data",
			&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
				llm.TextBlock("What is this?"),
				{Type: llm.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: llm.BlockFile, MediaType: "application/pdf", URL: "https://generativelanguage.googleapis.com/v1beta/files/abc"},
			}}}},
			func(t *testing.T, b map[string]any) {
				assert.Equal(t, []any{
					map[string]any{"text": "What is this?"},
					map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": "iVBORw0KGgo="}},
					map[string]any{"fileData": map[string]any{"mimeType": "application/pdf", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
				}, b["contents"].([]any)[0].(map[string]any)["parts"])
			}},
		{"assistant history: signatures go back on their parts, made-up ids stay home, real ids go back",
			&llm.Request{Messages: []llm.Message{
				llm.User("Paris and Rome?"),
				{Role: llm.RoleAssistant, Content: []llm.Block{
					{Type: llm.BlockThinking, Thinking: "Two calls.", Signature: "gemini:dGhvdWdodA=="},
					{Type: llm.BlockThinking, Signature: "gemini:dGV4dA=="},
					llm.TextBlock("Checking."),
					{Type: llm.BlockThinking, Signature: "gemini-call:gemini_0123456789abcdef01234567:Y2FsbA=="},
					{Type: llm.BlockThinking, Thinking: "Claude's view", Signature: "EqQBCkYIBxgC"},
					{Type: llm.BlockThinking, Thinking: "unsigned reasoning"},
				}, ToolCalls: []llm.ToolCall{
					{ID: "gemini_0123456789abcdef01234567", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
					{ID: "fc-rome", Name: "get_weather", Args: json.RawMessage(`{"city":"Rome"}`)},
				}},
				llm.ToolResult("gemini_0123456789abcdef01234567", "get_weather", "sunny", false),
				{Role: llm.RoleTool, ToolCallID: "fc-rome", Content: []llm.Block{llm.TextBlock("no station")}, IsError: true},
				llm.User("Thanks."),
			}},
			func(t *testing.T, b map[string]any) {
				contents := b["contents"].([]any)
				require.Len(t, contents, 4)
				assert.Equal(t, map[string]any{"role": "model", "parts": []any{
					map[string]any{"text": "Two calls.", "thought": true, "thoughtSignature": "dGhvdWdodA=="},
					map[string]any{"text": "Checking.", "thoughtSignature": "dGV4dA=="},
					map[string]any{"functionCall": map[string]any{"name": "get_weather", "args": map[string]any{"city": "Paris"}}, "thoughtSignature": "Y2FsbA=="},
					map[string]any{"functionCall": map[string]any{"id": "fc-rome", "name": "get_weather", "args": map[string]any{"city": "Rome"}}},
				}}, contents[1], "Claude's signed thinking and unsigned reasoning are not Gemini's to see")
				assert.Equal(t, map[string]any{"role": "user", "parts": []any{
					map[string]any{"functionResponse": map[string]any{"name": "get_weather", "response": map[string]any{"output": "sunny"}}},
					map[string]any{"functionResponse": map[string]any{"id": "fc-rome", "name": "get_weather", "response": map[string]any{"error": "no station"}}},
				}}, contents[2], "one turn answers both calls; a tool without a name is found by its call id")
				assert.Equal(t, map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Thanks."}}}, contents[3])
			}},
		{"an invalid call goes back under arguments", &llm.Request{Messages: []llm.Message{
			llm.User("x"),
			{Role: llm.RoleAssistant, InvalidToolCalls: []llm.InvalidToolCall{{ID: "c1", Name: "f", Args: "{not json", Error: "bad"}}},
			llm.ToolResult("c1", "f", "arguments are not JSON", true),
		}}, func(t *testing.T, b map[string]any) {
			assert.Equal(t, map[string]any{"functionCall": map[string]any{"id": "c1", "name": "f", "args": map[string]any{"arguments": "{not json"}}},
				b["contents"].([]any)[1].(map[string]any)["parts"].([]any)[0])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, sent(t, tt.req)) })
	}
}

func TestRequestExtraBodyAndHeaders(t *testing.T) {
	srv := newWireServer(t, jsonAnswer(okAnswer))
	m := newModel(t, srv.URL, func(c *provider.Config) {
		c.ExtraBody = map[string]any{"generationConfig": map[string]any{"topK": 3}, "safetySettings": []any{map[string]any{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}}}
		c.Headers = map[string]string{"X-Team": "evals"}
	})
	_, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("x")}, MaxTokens: 10})
	require.NoError(t, err)
	got := srv.requests()[0]
	b := got.JSON(t)
	assert.Equal(t, map[string]any{"maxOutputTokens": 10.0, "topK": 3.0}, b["generationConfig"], "extra body merges into the request")
	assert.Len(t, b["safetySettings"], 1)
	assert.Equal(t, "evals", got.Header.Get("X-Team"))
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", got.Path)
	assert.Empty(t, got.Query, "the key never goes in the URL")
}

func TestRequestErrors(t *testing.T) {
	m := newModel(t, "http://127.0.0.1:1")
	tests := []struct {
		name string
		req  *llm.Request
		msg  string
	}{
		{"image system block", &llm.Request{System: []llm.Block{{Type: llm.BlockImage, Data: "AA=="}}, Messages: []llm.Message{llm.User("x")}}, "system instruction takes text only"},
		{"unknown role", &llm.Request{Messages: []llm.Message{{Role: "critic", Content: []llm.Block{llm.TextBlock("x")}}}}, `unknown role "critic"`},
		{"tool result for no call", &llm.Request{Messages: []llm.Message{llm.User("x"), {Role: llm.RoleTool, ToolCallID: "nope", Content: []llm.Block{llm.TextBlock("r")}}}}, "names no function"},
		{"media without data", &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage}}}}}, "neither data nor url"},
		{"bad tool schema", &llm.Request{Messages: []llm.Message{llm.User("x")}, Tools: []llm.ToolSpec{{Name: "f", Parameters: json.RawMessage(`[1]`)}}}, "tool f: schema is not a JSON object"},
		{"bad tool choice", &llm.Request{Messages: []llm.Message{llm.User("x")}, ToolChoice: &llm.ToolChoice{Mode: "sometimes"}}, `unknown tool choice mode "sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Generate(context.Background(), tt.req)
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}
