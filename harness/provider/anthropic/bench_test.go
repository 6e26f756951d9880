package anthropic_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
)

// benchRequest is a mid-run agent turn: system prompt, tools, a parallel
// tool call and its four results.
func benchRequest() *llm.Request {
	calls := []llm.ToolCall{}
	msgs := []llm.Message{llm.User("Alice, Bob, Charlie and Daisy are a family. Who is the youngest?")}
	for _, n := range []string{"Alice", "Bob", "Charlie", "Daisy"} {
		calls = append(calls, llm.ToolCall{ID: "toolu_" + n, Name: "retrieve_entity_info", Args: json.RawMessage(`{"name":"` + n + `"}`)})
	}
	msgs = append(msgs, llm.Assistant("I'll look them up.", calls...))
	for _, c := range calls {
		msgs = append(msgs, llm.ToolResult(c.ID, c.Name, "facts about "+string(c.Args), false))
	}
	return &llm.Request{
		System:   []llm.Block{{Type: llm.BlockText, Text: "Use the tool to get information about people.", CacheControl: llm.Ephemeral()}},
		Messages: msgs,
		Tools: []llm.ToolSpec{{Name: "retrieve_entity_info", Description: "Get the knowledge about the given entity.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)}},
	}
}

func benchModel(b *testing.B, name string, index int) *anthropic.Model {
	b.Helper()
	c := recorded.MustLoad(b, name)
	m, err := anthropic.New(provider.Config{Model: "claude-haiku-4-5", BaseURL: "http://bench.invalid", Replay: true,
		HTTPClient: &http.Client{Transport: c.Interactions[index].Answer()}})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkGenerate measures one call's request conversion, SDK encoding
// and response parsing, with the HTTP answer served from memory.
func BenchmarkGenerate(b *testing.B) {
	providertest.BenchGenerate(b, benchModel(b, "test_anthropic/test_multiple_parallel_tool_calls.yaml", 0), benchRequest())
}

// BenchmarkStream measures the same for a 100-event SSE answer.
func BenchmarkStream(b *testing.B) {
	providertest.BenchStream(b, benchModel(b, "test_anthropic/test_anthropic_model_thinking_part_stream.yaml", 0), benchRequest())
}
