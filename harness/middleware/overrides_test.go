package middleware_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
)

func toolDescs(m agent.Middleware) map[string]string {
	out := map[string]string{}
	for _, t := range m.Tools() {
		out[t.Spec().Name] = t.Spec().Description
	}
	return out
}

// appended is the system text m adds to a request without one.
func appended(t *testing.T, m agent.Middleware) string {
	t.Helper()
	var got string
	_, err := m.WrapModelCall(context.Background(), &agent.ModelRequest{}, func(_ context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		got = req.SystemText()
		return &agent.ModelResponse{}, nil
	})
	require.NoError(t, err)
	return got
}

func TestTodoListWithOverrides(t *testing.T) {
	prompt := "PROFILE todo prompt."
	o := middleware.TextOverrides{ToolDescriptions: map[string]string{"write_todos": "PROFILE write_todos.", "ls": "not mine"}, TodoSystemPrompt: &prompt}

	def := middleware.NewTodoList(middleware.TodoListConfig{})
	before, beforePrompt := toolDescs(def), appended(t, def)
	got := def.WithOverrides(o)
	require.NotSame(t, def, got)
	assert.Equal(t, map[string]string{"write_todos": "PROFILE write_todos."}, toolDescs(got))
	assert.Equal(t, prompt, appended(t, got))
	assert.Equal(t, before, toolDescs(def), "the receiver keeps its text: another stack may share it")
	assert.Equal(t, beforePrompt, appended(t, def))

	// Text the caller gave the middleware wins over the profile's.
	own := "OWN prompt."
	mine := middleware.NewTodoList(middleware.TodoListConfig{SystemPrompt: &own, ToolDescription: "OWN write_todos."})
	assert.Same(t, mine, mine.WithOverrides(o), "nothing to change")
	half := middleware.NewTodoList(middleware.TodoListConfig{ToolDescription: "OWN write_todos."}).WithOverrides(o)
	assert.Equal(t, "OWN write_todos.", toolDescs(half)["write_todos"])
	assert.Equal(t, prompt, appended(t, half))

	// An empty profile prompt appends nothing; no overrides change nothing.
	empty := ""
	assert.Empty(t, appended(t, def.WithOverrides(middleware.TextOverrides{TodoSystemPrompt: &empty})))
	assert.Same(t, def, def.WithOverrides(middleware.TextOverrides{}))
}

func TestAsyncSubAgentsWithOverrides(t *testing.T) {
	subs := []middleware.AsyncSubAgent{{Name: "remote", Description: "Works remotely.", GraphID: "g", URL: "http://127.0.0.1:9"}}
	m, err := middleware.NewAsyncSubAgentMiddleware(middleware.AsyncSubAgentOptions{SubAgents: subs})
	require.NoError(t, err)
	before := toolDescs(m)
	o := middleware.TextOverrides{ToolDescriptions: map[string]string{
		"start_async_task": "PROFILE start.\n{available_agents}\nEnd.",
		"list_async_tasks": "PROFILE list.",
	}}
	got := toolDescs(m.WithOverrides(o))
	assert.Equal(t, "PROFILE start.\n- remote: Works remotely.\nEnd.", got["start_async_task"], "the placeholder lists the subagents, as task's does")
	assert.Equal(t, "PROFILE list.", got["list_async_tasks"])
	assert.Equal(t, before["check_async_task"], got["check_async_task"])
	assert.Equal(t, before, toolDescs(m), "the receiver keeps its text")
	assert.Len(t, got, 5)

	mine, err := middleware.NewAsyncSubAgentMiddleware(middleware.AsyncSubAgentOptions{SubAgents: subs, ToolDescriptions: map[string]string{"list_async_tasks": "OWN list."}})
	require.NoError(t, err)
	got = toolDescs(mine.WithOverrides(o))
	assert.Equal(t, "OWN list.", got["list_async_tasks"], "the options' own text wins")
	assert.Equal(t, "PROFILE start.\n- remote: Works remotely.\nEnd.", got["start_async_task"])
	assert.Same(t, mine, mine.WithOverrides(middleware.TextOverrides{ToolDescriptions: map[string]string{"list_async_tasks": "PROFILE list."}}))
}

func TestCompactConversationWithOverrides(t *testing.T) {
	s, err := middleware.NewSummarization(middleware.SummarizationOptions{})
	require.NoError(t, err)
	m, err := middleware.NewCompactConversation(s, middleware.CompactConversationOptions{})
	require.NoError(t, err)
	o := middleware.TextOverrides{ToolDescriptions: map[string]string{"compact_conversation": "PROFILE compact."}}
	assert.Equal(t, map[string]string{"compact_conversation": "PROFILE compact."}, toolDescs(m.WithOverrides(o)))
	assert.NotEqual(t, "PROFILE compact.", toolDescs(m)["compact_conversation"])
	mine, err := middleware.NewCompactConversation(s, middleware.CompactConversationOptions{ToolDescription: "OWN compact."})
	require.NoError(t, err)
	assert.Same(t, mine, mine.WithOverrides(o))
}
