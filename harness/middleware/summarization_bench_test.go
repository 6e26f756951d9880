package middleware_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// benchTools returns n tool specs about the size of the Deep Agents tools
// (a paragraph of description, a schema with a few documented properties).
func benchTools(n int) []llm.ToolSpec {
	specs := make([]llm.ToolSpec, n)
	for i := range specs {
		specs[i] = llm.ToolSpec{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: strings.Repeat(fmt.Sprintf("Tool %d does one well-defined thing and explains when to use it. ", i), 12),
			Parameters: []byte(fmt.Sprintf(`{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path of the file %d."},`+
				`"offset":{"type":"integer","description":"Line to start reading from."},"limit":{"type":"integer","description":"Maximum number of lines."},`+
				`"pattern":{"type":"string","description":"A literal string to search for, not a regular expression."}},"required":["file_path"],"additionalProperties":false}`, i)),
		}
	}
	return specs
}

func benchRequest(tools int) *agent.ModelRequest {
	msgs := make([]llm.Message, 20)
	for i := range msgs {
		text := strings.Repeat(fmt.Sprintf("Message %d of a realistic conversation about the code base. ", i), 8)
		if i%2 == 0 {
			msgs[i] = llm.User(text)
		} else {
			msgs[i] = llm.Assistant(text)
		}
	}
	return &agent.ModelRequest{
		Request: llm.Request{System: []llm.Block{llm.TextBlock(strings.Repeat("You are a careful coding agent. ", 60))}, Messages: msgs, Tools: benchTools(tools)},
		Model:   fakes.NewScripted(),
		State:   &agent.State{Messages: msgs},
	}
}

// BenchmarkSummarizationNoOp measures the per-model-call cost when no
// summarization is due (triggers that never fire). "cached" is the default
// counter, which measures each tool schema once; "remeasure" uses the
// stateless ApproxTokens, which measures every schema on every call — the
// regression the tool cache guards against.
func BenchmarkSummarizationNoOp(b *testing.B) {
	never := []middleware.Threshold{{Tokens: 1_000_000_000}}
	next := func(context.Context, *agent.ModelRequest) (*agent.ModelResponse, error) { return nil, nil }
	for _, tools := range []int{1, 5, 23} {
		for _, counter := range []struct {
			name  string
			count middleware.TokenCounter
		}{{"cached", nil}, {"remeasure", middleware.ApproxTokens}} {
			b.Run(fmt.Sprintf("tools=%d/%s", tools, counter.name), func(b *testing.B) {
				m, err := middleware.NewSummarization(middleware.SummarizationOptions{
					Trigger:      never,
					CountTokens:  counter.count,
					TruncateArgs: middleware.TruncateArgsOptions{Trigger: never},
				})
				if err != nil {
					b.Fatal(err)
				}
				req := benchRequest(tools)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.WrapModelCall(b.Context(), req, next); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkApproxCounterTools isolates the tool part of the count.
func BenchmarkApproxCounterTools(b *testing.B) {
	specs := benchTools(23)
	b.Run("cached", func(b *testing.B) {
		count := middleware.ApproxCounter()
		b.ReportAllocs()
		for b.Loop() {
			_ = count(nil, nil, specs)
		}
	})
	b.Run("remeasure", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = middleware.ApproxTokens(nil, nil, specs)
		}
	})
}
