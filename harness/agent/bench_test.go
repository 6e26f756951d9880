package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// loopModel writes a file, reads it back, then answers, deciding from the
// last message so it needs no script and allocates little.
type loopModel struct{}

var (
	writeCall = llm.ToolCall{ID: "w", Name: "write_file", Args: json.RawMessage(`{"file_path":"/notes.md","content":"hello"}`)}
	readCall  = llm.ToolCall{ID: "r", Name: "read_file", Args: json.RawMessage(`{"file_path":"/notes.md"}`)}
)

func (loopModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	var msg llm.Message
	switch {
	case last.Role == llm.RoleUser:
		msg = llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{writeCall}}
	case last.Name == "write_file":
		msg = llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{readCall}}
	default:
		msg = llm.Assistant("done")
	}
	return &llm.Response{Message: msg, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

type pathArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content,omitempty"`
}

func stateFileTools() []tool.Tool {
	write := tool.Must(tool.New("write_file", "Writes a file.", func(ctx context.Context, a pathArgs) (string, error) {
		return "Updated file " + a.FilePath, agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{a.FilePath: {Content: a.Content}}})
	}))
	read := tool.Must(tool.New("read_file", "Reads a file.", func(ctx context.Context, a pathArgs) (string, error) {
		return "1  " + agent.ToolState(ctx).Files[a.FilePath].Content, nil
	}))
	return []tool.Tool{write, read}
}

type noop struct {
	agent.Base
	name string
}

func (n noop) Name() string { return n.name }

// BenchmarkLoopStep measures the harness overhead of the loop. One op is the
// cycle model → write_file → model → read_file → model (five steps); the
// ns/step metric divides by the steps.
func BenchmarkLoopStep(b *testing.B) {
	for _, tc := range []struct {
		name string
		mws  []agent.Middleware
	}{
		{"bare", nil},
		{"six_middleware", []agent.Middleware{noop{name: "a"}, noop{name: "b"}, noop{name: "c"}, noop{name: "d"}, noop{name: "e"}, noop{name: "f"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a, err := agent.New(agent.Config{Model: loopModel{}, Tools: stateFileTools(), Middleware: tc.mws})
			if err != nil {
				b.Fatal(err)
			}
			in := agent.Input{Messages: []llm.Message{llm.User("write then read")}}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := a.Invoke(ctx, in)
				if err != nil {
					b.Fatal(err)
				}
				if res.Steps != 5 {
					b.Fatalf("steps = %d, want 5", res.Steps)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*5), "ns/step")
		})
	}
}
