package middleware_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

func namedTool(name string) tool.Tool {
	return tool.Must(tool.New(name, "The "+name+" tool.", func(context.Context, struct{}) (string, error) {
		return name + " ran", nil
	}))
}

func TestToolExclusionHidesToolsFromTheRequest(t *testing.T) {
	specs := []llm.ToolSpec{{Name: "keep"}, {Name: "drop"}, {Name: "also"}}
	req := &agent.ModelRequest{Request: llm.Request{Tools: specs}}
	var seen *agent.ModelRequest
	next := func(_ context.Context, r *agent.ModelRequest) (*agent.ModelResponse, error) {
		seen = r
		return &agent.ModelResponse{}, nil
	}

	m := middleware.NewToolExclusion("drop", "missing", "drop")
	assert.Equal(t, "_ToolExclusionMiddleware", m.Name())
	assert.Equal(t, []string{"drop", "missing"}, m.Excluded())
	_, err := m.WrapModelCall(t.Context(), req, next)
	require.NoError(t, err)
	assert.Equal(t, []string{"keep", "also"}, seen.ToolNames())
	assert.Equal(t, []llm.ToolSpec{{Name: "keep"}, {Name: "drop"}, {Name: "also"}}, specs, "caller's slice untouched")
	assert.Equal(t, []string{"keep", "drop", "also"}, req.ToolNames(), "caller's request untouched")

	_, err = middleware.NewToolExclusion().WrapModelCall(t.Context(), req, next)
	require.NoError(t, err)
	assert.Same(t, req, seen, "an empty exclusion set passes the request through")

	_, err = middleware.NewToolExclusion("absent").WrapModelCall(t.Context(), req, next)
	require.NoError(t, err)
	assert.Same(t, req, seen, "nothing to hide: request passes through")
}

func TestToolExclusionInAnAgentIsVisibilityOnly(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("drop", nil)),
		fakes.Reply("ok"),
	)
	a, err := agent.New(agent.Config{
		Model:      model,
		Tools:      []tool.Tool{namedTool("keep"), namedTool("drop")},
		Middleware: []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{}), middleware.NewToolExclusion("drop", "write_todos")},
	})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)

	for _, r := range model.Requests() {
		names := make([]string, len(r.Tools))
		for i, s := range r.Tools {
			names[i] = s.Name
		}
		assert.Equal(t, []string{"keep"}, names, "hidden tools, including middleware tools, never reach the model")
	}
	tms := toolMessages(res.State.Messages)
	require.Len(t, tms, 1)
	assert.Equal(t, "drop ran", tms[0].Text(), "a call to a hidden tool still executes")
}
