package backendtest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// runToolName is the tool InToolCall's agent calls.
const runToolName = "backendtest_run"

// InToolCall runs fn inside a tool call of a real agent.Agent, so that code
// which needs agent state (the State backend) runs exactly as it does in a
// live agent. The agent's state starts with files; InToolCall returns the
// files in the state after the call. The agent is driven by a two-step
// scripted model: call the tool once, then finish. opts are passed to
// Invoke (for example agent.WithClock to stamp files deterministically).
func InToolCall(ctx context.Context, files map[string]agent.FileData, fn func(ctx context.Context) error, opts ...agent.Option) (map[string]agent.FileData, error) {
	var fnErr error
	ran := false
	t := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: runToolName, Description: "Runs the test's operations.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			ran = true
			fnErr = fn(ctx)
			return tool.Text("done"), nil
		},
	}
	a, err := agent.New(agent.Config{Model: &callOnce{}, Tools: []tool.Tool{t}})
	if err != nil {
		return nil, err
	}
	res, err := a.Invoke(ctx, agent.Input{Messages: []llm.Message{llm.User("run the backend operations")}, Files: files}, opts...)
	if err != nil {
		return nil, err
	}
	if !ran {
		return nil, errors.New("backendtest: the agent never ran the tool call")
	}
	return res.State.Files, fnErr
}

// callOnce is a chat model that calls runToolName once and then finishes.
type callOnce struct {
	mu    sync.Mutex
	calls int
}

func (m *callOnce) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.calls == 1 {
		call := llm.ToolCall{ID: "backendtest-call-1", Name: runToolName, Args: json.RawMessage(`{}`)}
		return &llm.Response{Message: llm.Assistant("", call), StopReason: llm.StopToolUse}, nil
	}
	return &llm.Response{Message: llm.Assistant("done"), StopReason: llm.StopEndTurn}, nil
}

// StateHarness is the Harness for the State backend: every subtest runs
// inside a tool call of a real agent (InToolCall) whose state starts empty.
func StateHarness() Harness {
	return Harness{
		New: func(*testing.T) backend.Backend { return backend.NewState() },
		Within: func(t *testing.T, fn func(ctx context.Context)) {
			t.Helper()
			if _, err := InToolCall(t.Context(), nil, func(ctx context.Context) error { fn(ctx); return nil }); err != nil {
				t.Fatalf("running inside an agent tool call: %v", err)
			}
		},
	}
}
