package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// A caller may abandon a paused run by sending new input instead of a resume
// value. Calls of the paused tool step that had already finished did run:
// their results and state changes are kept, and only the paused call is left
// unanswered (for PatchToolCallsMiddleware to report as cancelled).
func TestAbandonedToolStepKeepsFinishedCalls(t *testing.T) {
	save := tool.Must(tool.New("save", "Saves.", func(ctx context.Context, a struct {
		Path string `json:"path"`
	}) (string, error) {
		return "saved " + a.Path, agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{a.Path: {Content: "v1"}}})
	}))
	ask := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "ask", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			if _, err := agent.Interrupt(ctx, "sure?"); err != nil {
				return tool.Result{}, err
			}
			return tool.Text("answered"), nil
		},
	}
	model := fakes.NewScripted(
		fakes.Calls("", fakes.CallID("s1", "save", `{"path":"/a.md"}`), fakes.CallID("q1", "ask", `{}`), fakes.CallID("s2", "save", `{"path":"/b.md"}`)),
		fakes.Reply("ok"),
	)
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{save, ask}, Checkpointer: agent.NewMemoryCheckpointer()})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("save both")}}, agent.WithThread("t"))
	require.NoError(t, err)
	require.True(t, res.Interrupted())

	res, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("never mind")}}, agent.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"user: save both",
		`assistant -> save{"path":"/a.md"} -> ask{} -> save{"path":"/b.md"}`,
		"tool(save): saved /a.md",
		"tool(save): saved /b.md",
		"user: never mind",
	}, roles(model.Requests()[1].Messages))
	assert.Len(t, res.State.Files, 2)
}
