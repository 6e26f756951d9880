package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// kept is something a middleware held on to: v reads it (as JSON), then
// is what it read when the middleware got it.
type kept struct {
	what string
	v    func() any
	then string
}

// keeper is a middleware that holds on to every state, model request,
// model response and tool response it is handed, as a middleware may.
type keeper struct {
	agent.Base
	t    *testing.T
	mu   sync.Mutex // a turn's tool calls run at the same time
	kept []kept
}

func (*keeper) Name() string { return "keeper" }

func (k *keeper) keep(what string, v func() any) {
	raw, err := json.Marshal(v())
	require.NoError(k.t, err)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept = append(k.kept, kept{what: what, v: v, then: string(raw)})
}

// The runtime reuses its scratch from one step to the next (a tool step's
// outcomes and joined update, a model step's allocation, a tool call's
// response slot) only where nothing handed out can see it: every state,
// request and response a middleware kept reads, at the end of the run, as
// it read when the middleware got it.
func TestKeptStatesAndResponsesStayAsTheyWere(t *testing.T) {
	var steps []fakes.Step
	for turn := range 4 {
		steps = append(steps, fakes.Calls(fmt.Sprintf("turn %d", turn),
			fakes.Call("write_file", fmt.Sprintf(`{"file_path":"/a.md","content":"a%d"}`, turn)),
			fakes.Call("write_file", fmt.Sprintf(`{"file_path":"/b%d.md","content":"b%d"}`, turn, turn)),
			fakes.Call("read_file", `{"file_path":"/a.md"}`)))
	}
	steps = append(steps, fakes.Reply("done"))
	k := &keeper{t: t}
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(steps...), Tools: stateFileTools(), Middleware: []agent.Middleware{k}, RecursionLimit: 50})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	require.Equal(t, "done", res.Text())
	require.Len(t, res.State.Files, 5)

	require.NotEmpty(t, k.kept)
	for i, x := range k.kept {
		now, err := json.Marshal(x.v())
		require.NoError(t, err)
		if string(now) != x.then {
			t.Errorf("kept %s #%d changed after it was handed out:\nthen %s\nnow  %s", x.what, i, x.then, now)
		}
	}
}

func (k *keeper) BeforeModel(_ context.Context, s *agent.State) (*agent.Update, error) {
	k.keep("before-model state", func() any { return s })
	return nil, nil
}

func (k *keeper) AfterModel(_ context.Context, s *agent.State) (*agent.Update, error) {
	k.keep("after-model state", func() any { return s })
	return nil, nil
}

func (k *keeper) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	k.keep("model request", func() any { return []any{req.Request, req.State} })
	resp, err := next(ctx, req)
	if err == nil {
		k.keep("model response", func() any { return []any{resp.Response, resp.Update} })
	}
	return resp, err
}

func (k *keeper) WrapToolCall(ctx context.Context, req *agent.ToolRequest, next agent.ToolHandler) (*agent.ToolResponse, error) {
	k.keep("tool request", func() any { return []any{req.Call, req.State} })
	resp, err := next(ctx, req)
	if err == nil {
		k.keep("tool response", func() any { return resp })
	}
	return resp, err
}
