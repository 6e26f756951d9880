package middleware_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

func lookupTool() tool.Tool {
	type args struct {
		Query string `json:"query"`
	}
	return tool.Must(tool.New("lookup", "Looks something up.", func(_ context.Context, a args) (string, error) {
		return "found " + a.Query, nil
	}))
}

func runAgent(t *testing.T, model *fakes.Scripted, system []llm.Block, mws ...agent.Middleware) *agent.Result {
	t.Helper()
	a, err := agent.New(agent.Config{Model: model, System: system, Middleware: mws, Tools: []tool.Tool{lookupTool()}})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("plan the release")}})
	require.NoError(t, err)
	return res
}

func toolMessages(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestWriteTodosReplacesTheList(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("write_todos", map[string]any{"todos": []map[string]string{
			{"content": "Draft notes", "status": "in_progress"},
			{"content": "Tag release", "status": "pending"},
		}})),
		fakes.Calls("", fakes.Call("write_todos", map[string]any{"todos": []map[string]string{
			{"content": "Draft notes", "status": "completed"},
			{"content": "Tag release", "status": "in_progress"},
			{"content": "Announce", "status": "pending"},
		}})),
		fakes.Reply("done"),
	)
	res := runAgent(t, model, nil, middleware.NewTodoList(middleware.TodoListConfig{}))

	assert.Equal(t, []agent.Todo{
		{Content: "Draft notes", Status: "completed"},
		{Content: "Tag release", Status: "in_progress"},
		{Content: "Announce", Status: "pending"},
	}, res.State.Todos)
	tms := toolMessages(res.State.Messages)
	require.Len(t, tms, 2)
	assert.False(t, tms[0].IsError)
	assert.Equal(t, `Updated todo list to [{"content":"Draft notes","status":"in_progress"},{"content":"Tag release","status":"pending"}]`, tms[0].Text())

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		assert.Equal(t, middleware.DefaultTodoSystemPrompt, r.SystemText(), "fragment appended without a leading blank line to an empty prompt")
		require.Len(t, r.Tools, 2)
		assert.Equal(t, "write_todos", r.Tools[0].Name, "middleware tools come before the caller's")
	}
	var schema struct {
		Properties struct {
			Todos struct {
				Items struct {
					Properties struct {
						Status struct {
							Enum []string `json:"enum"`
						} `json:"status"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"todos"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Tools[0].Parameters, &schema))
	assert.Equal(t, []string{"pending", "in_progress", "completed"}, schema.Properties.Todos.Items.Properties.Status.Enum)
}

func TestWriteTodosRejectsBadItems(t *testing.T) {
	good := map[string]any{"todos": []map[string]string{{"content": "Keep me", "status": "pending"}}}
	tests := []struct {
		name    string
		args    any
		wantErr string
	}{
		{"unknown status", map[string]any{"todos": []map[string]string{{"content": "x", "status": "done"}}}, "invalid arguments for tool write_todos"},
		{"blank content", map[string]any{"todos": []map[string]string{{"content": "  ", "status": "pending"}}}, "todos[0].content is blank"},
		{"missing status", map[string]any{"todos": []map[string]string{{"content": "x"}}}, "invalid arguments for tool write_todos"},
		{"extra field", map[string]any{"todos": []map[string]string{{"content": "x", "status": "pending", "owner": "me"}}}, "invalid arguments for tool write_todos"},
		{"no todos key", map[string]any{}, "invalid arguments for tool write_todos"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := fakes.NewScripted(
				fakes.Calls("", fakes.Call("write_todos", good)),
				fakes.Calls("", fakes.Call("write_todos", tt.args)),
				fakes.Reply("ok"),
			)
			res := runAgent(t, model, nil, middleware.NewTodoList(middleware.TodoListConfig{}))
			assert.Equal(t, []agent.Todo{{Content: "Keep me", Status: "pending"}}, res.State.Todos, "a rejected call leaves the list alone")
			tms := toolMessages(res.State.Messages)
			require.Len(t, tms, 2)
			assert.True(t, tms[1].IsError)
			assert.Contains(t, tms[1].Text(), tt.wantErr)
		})
	}
}

func TestWriteTodosEmptyListClears(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("write_todos", map[string]any{"todos": []map[string]string{{"content": "a", "status": "pending"}}})),
		fakes.Calls("", fakes.Call("write_todos", `{"todos":[]}`)),
		fakes.Reply("ok"),
	)
	res := runAgent(t, model, nil, middleware.NewTodoList(middleware.TodoListConfig{}))
	assert.Empty(t, res.State.Todos)
	assert.False(t, toolMessages(res.State.Messages)[1].IsError)
}

func TestWriteTodosParallelCallsAreRejected(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Calls("",
			fakes.Call("write_todos", map[string]any{"todos": []map[string]string{{"content": "a", "status": "pending"}}}),
			fakes.Call("lookup", `{"query":"x"}`),
			fakes.Call("write_todos", map[string]any{"todos": []map[string]string{{"content": "b", "status": "pending"}}}),
		),
		fakes.Reply("ok"),
	)
	res := runAgent(t, model, nil, middleware.NewTodoList(middleware.TodoListConfig{}))
	assert.Empty(t, res.State.Todos, "neither parallel call is applied")
	byName := map[string][]llm.Message{}
	for _, m := range toolMessages(res.State.Messages) {
		byName[m.Name] = append(byName[m.Name], m)
	}
	require.Len(t, byName["write_todos"], 2)
	for _, m := range byName["write_todos"] {
		assert.True(t, m.IsError)
		assert.Contains(t, m.Text(), "called 2 times in one turn")
	}
	require.Len(t, byName["lookup"], 1, "the other call in the turn still runs")
	assert.Equal(t, "found x", byName["lookup"][0].Text())
	// The model saw the errors on its next turn.
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Len(t, toolMessages(reqs[1].Messages), 3)
}

func TestTodoSystemPromptFragment(t *testing.T) {
	custom := "Track work with write_todos."
	empty := ""
	tests := []struct {
		name   string
		cfg    middleware.TodoListConfig
		system []llm.Block
		want   string
	}{
		{"appended after the caller's prompt", middleware.TodoListConfig{}, []llm.Block{llm.TextBlock("You are helpful.")}, "You are helpful.\n\n" + middleware.DefaultTodoSystemPrompt},
		{"custom fragment", middleware.TodoListConfig{SystemPrompt: &custom}, []llm.Block{llm.TextBlock("Base.")}, "Base.\n\n" + custom},
		{"empty fragment appends nothing", middleware.TodoListConfig{SystemPrompt: &empty}, []llm.Block{llm.TextBlock("Base.")}, "Base."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := fakes.NewScripted(fakes.Reply("hi"))
			runAgent(t, model, tt.system, middleware.NewTodoList(tt.cfg))
			assert.Equal(t, tt.want, model.Requests()[0].SystemText())
		})
	}
	m := middleware.NewTodoList(middleware.TodoListConfig{ToolDescription: "Custom description."})
	assert.Equal(t, "TodoListMiddleware", m.Name())
	assert.Equal(t, "Custom description.", m.Tools()[0].Spec().Description)
	assert.NotSame(t, middleware.NewTodoList(middleware.TodoListConfig{}), middleware.NewTodoList(middleware.TodoListConfig{}))
}

func TestWriteTodosOutsideAnAgent(t *testing.T) {
	m := middleware.NewTodoList(middleware.TodoListConfig{})
	_, err := m.Tools()[0].Call(t.Context(), json.RawMessage(`{"todos":[{"content":"a","status":"pending"}]}`))
	require.ErrorIs(t, err, agent.ErrNoToolCall)
}
