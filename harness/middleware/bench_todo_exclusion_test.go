package middleware_test

import (
	"context"
	"testing"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// Both run on every model call of an agent that uses them.

func BenchmarkToolExclusionWrapModelCall(b *testing.B) {
	specs := make([]llm.ToolSpec, 0, 12)
	for _, n := range []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute", "task", "write_todos", "a", "b", "c"} {
		specs = append(specs, llm.ToolSpec{Name: n})
	}
	req := &agent.ModelRequest{Request: llm.Request{Tools: specs}}
	m := middleware.NewToolExclusion("execute", "write_file")
	next := func(_ context.Context, r *agent.ModelRequest) (*agent.ModelResponse, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.WrapModelCall(b.Context(), req, next)
	}
}

func BenchmarkTodoListWrapModelCall(b *testing.B) {
	req := &agent.ModelRequest{Request: llm.Request{System: []llm.Block{llm.TextBlock("You are helpful.")}}}
	m := middleware.NewTodoList(middleware.TodoListConfig{})
	next := func(_ context.Context, r *agent.ModelRequest) (*agent.ModelResponse, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.WrapModelCall(b.Context(), req, next)
	}
}
