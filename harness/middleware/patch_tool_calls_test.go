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

func withID(m llm.Message, id string) llm.Message {
	m.ID = id
	return m
}

// Reference case 72: the hook itself, on hand-built histories.
func TestPatchToolCallsBeforeAgent(t *testing.T) {
	events := llm.ToolCall{ID: "123", Name: "get_events_for_days", Args: []byte(`{"date_str":"2024-01-01"}`)}
	sys := withID(llm.System("You are a calendar assistant."), "m1")
	ask := withID(llm.User("What is on my calendar?"), "m2")
	ai := withID(llm.Assistant("", events), "m3")
	again := withID(llm.User("Never mind, what time is it?"), "m4")

	tests := []struct {
		name    string
		history []llm.Message
		want    []string // nil: no update
	}{
		{
			name:    "dangling call gets a cancelled result right after its message",
			history: []llm.Message{sys, ask, ai, again},
			want: []string{
				"system: You are a calendar assistant.",
				"user: What is on my calendar?",
				`assistant -> 123:get_events_for_days{"date_str":"2024-01-01"}`,
				"tool(get_events_for_days#123): Tool call get_events_for_days with id 123 was cancelled: another message came in before it could run.",
				"user: Never mind, what time is it?",
			},
		},
		{
			name: "the synthetic result follows the results the message already has",
			history: []llm.Message{ask, withID(llm.Assistant("", events, llm.ToolCall{ID: "124", Name: "get_weather", Args: []byte(`{}`)}), "m3"),
				withID(llm.ToolResult("124", "get_weather", "sunny", false), "m5"), again},
			want: []string{
				"user: What is on my calendar?",
				`assistant -> 123:get_events_for_days{"date_str":"2024-01-01"} -> 124:get_weather{}`,
				"tool(get_weather#124): sunny",
				"tool(get_events_for_days#123): Tool call get_events_for_days with id 123 was cancelled: another message came in before it could run.",
				"user: Never mind, what time is it?",
			},
		},
		{
			name:    "answered anywhere later is not dangling",
			history: []llm.Message{sys, ask, ai, again, llm.ToolResult("123", "get_events_for_days", "no events", false)},
		},
		{
			name:    "no tool calls",
			history: []llm.Message{sys, ask},
		},
		{
			name:    "empty history",
			history: nil,
		},
		{
			name: "invalid call gets the malformed variant; a nameless call is unknown",
			history: []llm.Message{ask, {ID: "m3", Role: llm.RoleAssistant,
				ToolCalls:        []llm.ToolCall{{ID: "a", Args: []byte(`{}`)}},
				InvalidToolCalls: []llm.InvalidToolCall{{ID: "b", Name: "write_file", Args: `{"file_path": "/x`, Error: "unexpected end of JSON"}, {Name: "no_id"}},
			}, again},
			want: []string{
				"user: What is on my calendar?",
				"assistant -> a:{}",
				"tool(unknown#a): Tool call unknown with id a was cancelled: another message came in before it could run.",
				"tool(write_file#b)!: Tool call write_file with id b was not run: its arguments were malformed or truncated.",
				"user: Never mind, what time is it?",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := middleware.NewPatchToolCalls().BeforeAgent(t.Context(), &agent.State{Messages: tt.history})
			require.NoError(t, err)
			if tt.want == nil {
				assert.Nil(t, u)
				return
			}
			require.NotNil(t, u)
			assert.True(t, u.ReplaceMessages)
			assert.Equal(t, tt.want, transcript(u.Messages))
			for _, m := range u.Messages {
				if m.Role != llm.RoleTool {
					assert.NotEmpty(t, m.ID, "existing messages keep their ids")
				}
			}
		})
	}
}

// Reference case 72 through a real agent: the model never sees the dangling call.
func TestPatchToolCallsInAgent(t *testing.T) {
	model := fakes.NewScripted(fakes.Reply("It is noon."))
	a, err := agent.New(agent.Config{Model: model, Middleware: []agent.Middleware{middleware.NewPatchToolCalls()}})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{
		llm.System("You are a calendar assistant."),
		llm.User("What is on my calendar?"),
		llm.Assistant("", llm.ToolCall{ID: "123", Name: "get_events_for_days", Args: []byte(`{}`)}),
		llm.User("Never mind, what time is it?"),
	}})
	require.NoError(t, err)
	want := []string{
		"system: You are a calendar assistant.",
		"user: What is on my calendar?",
		"assistant -> 123:get_events_for_days{}",
		"tool(get_events_for_days#123): Tool call get_events_for_days with id 123 was cancelled: another message came in before it could run.",
		"user: Never mind, what time is it?",
	}
	assert.Equal(t, want, transcript(model.Requests()[0].Messages))
	assert.Equal(t, append(want, "assistant: It is noon."), transcript(res.State.Messages))
	ids := map[string]bool{}
	for _, m := range res.State.Messages {
		require.NotEmpty(t, m.ID)
		require.False(t, ids[m.ID], "ids stay unique after the rewrite")
		ids[m.ID] = true
	}
}

// stack is the order Deep Agents uses: patching early, human review at the tail.
func controlAgent(t *testing.T, model llm.ChatModel, log *toolLog) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{
		Model: model,
		Tools: officeTools(log),
		Middleware: []agent.Middleware{
			middleware.NewPatchToolCalls(),
			hitl(t, middleware.InterruptOn{"send_email": {}}),
		},
		Checkpointer: agent.NewMemoryCheckpointer(),
	})
	require.NoError(t, err)
	return a
}

// The caller abandons a paused run by sending a new message instead of
// decisions: the reviewed call never runs and the model is told it was cancelled.
func TestPatchToolCallsAfterAbandonedInterrupt(t *testing.T) {
	log := &toolLog{}
	model := fakes.NewScripted(
		fakes.Calls("", fakes.CallID("c1", "send_email", `{"to":"boss@example.com","body":"I quit"}`)),
		fakes.Reply("Hi!"),
	)
	a := controlAgent(t, model, log)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("mail the boss")}}, agent.WithThread("t"))
	require.NoError(t, err)
	require.True(t, res.Interrupted())

	res, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("forget it, just say hi")}}, agent.WithThread("t"))
	require.NoError(t, err)
	assert.False(t, res.Interrupted())
	assert.Empty(t, log.all())
	assert.Equal(t, []string{
		"user: mail the boss",
		`assistant -> c1:send_email{"to":"boss@example.com","body":"I quit"}`,
		"tool(send_email#c1): Tool call send_email with id c1 was cancelled: another message came in before it could run.",
		"user: forget it, just say hi",
	}, transcript(model.Requests()[1].Messages))

	_, err = a.Invoke(t.Context(), agent.Input{Resume: middleware.HITLResponse{Decisions: []middleware.Decision{middleware.Approve()}}}, agent.WithThread("t"))
	require.ErrorIs(t, err, agent.ErrNothingToResume, "the abandoned interrupt is gone")
	assert.Empty(t, log.all())
}

// After a reject the call is answered, so new input patches nothing and the
// model sees each call answered exactly once.
func TestPatchToolCallsAfterReject(t *testing.T) {
	log := &toolLog{}
	model := fakes.NewScripted(
		fakes.Calls("", fakes.CallID("c1", "send_email", `{"to":"boss@example.com","body":"I quit"}`)),
		fakes.Reply("Understood, not sent."),
		fakes.Reply("Hi!"),
	)
	a := controlAgent(t, model, log)
	_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("mail the boss")}}, agent.WithThread("t"))
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Resume: middleware.HITLResponse{Decisions: []middleware.Decision{middleware.Reject("Too rash.")}}}, agent.WithThread("t"))
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("say hi")}}, agent.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, "Hi!", res.Text())
	assert.Empty(t, log.all())
	assert.Equal(t, []string{
		"user: mail the boss",
		`assistant -> c1:send_email{"to":"boss@example.com","body":"I quit"}`,
		"tool(send_email#c1)!: Too rash.",
		"assistant: Understood, not sent.",
		"user: say hi",
	}, transcript(model.Requests()[2].Messages))
}

// A tool that pauses the run inside the tool step; its sibling call finished
// before the caller abandoned the run, so only the paused call is cancelled.
func TestPatchToolCallsAfterAbandonedToolInterrupt(t *testing.T) {
	log := &toolLog{}
	confirm := tool.Must(tool.New("confirm", "Asks the user.", func(ctx context.Context, a struct {
		Question string `json:"question"`
	}) (string, error) {
		answer, err := agent.Interrupt(ctx, a.Question)
		if err != nil {
			return "", err
		}
		return string(answer), nil
	}))
	model := fakes.NewScripted(
		fakes.Calls("", fakes.CallID("r1", "read_file", `{"path":"/plan.md"}`), fakes.CallID("q1", "confirm", `{"question":"Proceed?"}`)),
		fakes.Reply("Hi!"),
	)
	a, err := agent.New(agent.Config{
		Model:        model,
		Tools:        append(officeTools(log), confirm),
		Middleware:   []agent.Middleware{middleware.NewPatchToolCalls()},
		Checkpointer: agent.NewMemoryCheckpointer(),
	})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("plan")}}, agent.WithThread("t"))
	require.NoError(t, err)
	require.True(t, res.Interrupted())

	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("just say hi")}}, agent.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"read_file /plan.md"}, log.all())
	assert.Equal(t, []string{
		"user: plan",
		`assistant -> r1:read_file{"path":"/plan.md"} -> q1:confirm{"question":"Proceed?"}`,
		"tool(read_file#r1): contents of /plan.md",
		"tool(confirm#q1): Tool call confirm with id q1 was cancelled: another message came in before it could run.",
		"user: just say hi",
	}, transcript(model.Requests()[1].Messages))
}
