package checkpoint_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// writerModel is a scripted model for long runs: until it has seen `cycles`
// tool results it asks write_file to write the next small file, then it
// answers. It decides from the request alone, so one value serves any number
// of concurrent runs.
type writerModel struct{ cycles int }

func (m writerModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	done := 0
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleTool {
			done++
		}
	}
	if done >= m.cycles {
		return &llm.Response{Message: llm.Assistant(fmt.Sprintf("Wrote %d files.", done)), StopReason: llm.StopEndTurn}, nil
	}
	args := fmt.Sprintf(`{"file_path":"/notes/step-%03d.md","content":"# Step %d\n\nObserved value %d; next I will look at item %d.\n"}`, done+1, done+1, done*7%13, done+2)
	msg := llm.Assistant(fmt.Sprintf("Writing notes for step %d.", done+1), llm.ToolCall{ID: fmt.Sprintf("call_%03d", done+1), Name: "write_file", Args: []byte(args)})
	return &llm.Response{Message: msg, StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 100 + 40*done, OutputTokens: 30}}, nil
}

type writeArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// writeFileTool stores files in agent state, as the State backend does.
func writeFileTool() tool.Tool {
	return tool.Must(tool.New("write_file", "Writes a file.", func(ctx context.Context, a writeArgs) (string, error) {
		now := agent.Now(ctx).UTC().Format("2006-01-02T15:04:05Z")
		fd := &agent.FileData{Content: a.Content, Encoding: "utf-8", CreatedAt: now, ModifiedAt: now}
		if err := agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{a.FilePath: fd}}); err != nil {
			return "", err
		}
		return fmt.Sprintf("Updated file %s (%d lines)", a.FilePath, strings.Count(a.Content, "\n")), nil
	}))
}

// writerAgent runs `cycles` model → write_file cycles and a final answer.
func writerAgent(cp agent.Checkpointer, cycles int) (*agent.Agent, error) {
	return agent.New(agent.Config{
		Model:          writerModel{cycles: cycles},
		System:         []llm.Block{llm.TextBlock("You keep notes.")},
		Tools:          []tool.Tool{writeFileTool()},
		Checkpointer:   cp,
		RecursionLimit: 2*cycles + 1,
	})
}
