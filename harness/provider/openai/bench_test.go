package openai_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
	"github.com/dageval/dageval/harness/provider/openai"
)

func benchRequest() *llm.Request {
	msgs := []llm.Message{
		llm.User("What is the capital of France?"),
		llm.Assistant("", llm.ToolCall{ID: "call_1", Name: "get_capital", Args: json.RawMessage(`{"country":"France"}`)}),
		llm.ToolResult("call_1", "get_capital", "Paris", false),
		llm.Assistant("The capital of France is Paris."),
		llm.User("What is the capital of England?"),
	}
	return &llm.Request{
		System:   []llm.Block{llm.TextBlock("Answer with the tool.")},
		Messages: msgs,
		Tools: []llm.ToolSpec{{Name: "get_capital", Description: "Get the capital of a country.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"country":{"type":"string"}},"required":["country"],"additionalProperties":false}`)}},
	}
}

func benchModel(b *testing.B, name string, index int, responses bool) *openai.Model {
	b.Helper()
	c := recorded.MustLoad(b, name)
	m, err := openai.New(provider.Config{Model: "gpt-4o-mini", BaseURL: "http://bench.invalid/v1", Replay: true, UseResponsesAPI: &responses,
		HTTPClient: &http.Client{Transport: c.Interactions[index].Answer()}})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkChatGenerate measures one Chat Completions call's conversion,
// encoding and parsing, with the HTTP answer served from memory.
func BenchmarkChatGenerate(b *testing.B) {
	providertest.BenchGenerate(b, benchModel(b, "test_openai/test_multiple_agent_tool_calls.yaml", 2, false), benchRequest())
}

// BenchmarkResponsesGenerate is the same through the Responses API.
func BenchmarkResponsesGenerate(b *testing.B) {
	providertest.BenchGenerate(b, benchModel(b, "test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml", 0, true), benchRequest())
}

// BenchmarkChatStream measures a recorded 9-chunk SSE answer.
func BenchmarkChatStream(b *testing.B) {
	providertest.BenchStream(b, benchModel(b, "test_openai/test_run_stream_sync_streams_real_model.yaml", 0, false), benchRequest())
}
