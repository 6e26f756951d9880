package middleware_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

// toolLog records which tools ran with which arguments.
type toolLog struct {
	mu   sync.Mutex
	runs []string
}

func (l *toolLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, s)
}

func (l *toolLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.runs...)
}

type emailArgs struct {
	To   string `json:"to"`
	Body string `json:"body"`
}

type pathArgs struct {
	Path string `json:"path"`
}

// officeTools are a side-effecting send_email, an innocuous read_file and a
// delete_file, all recording their runs.
func officeTools(log *toolLog) []tool.Tool {
	return []tool.Tool{
		tool.Must(tool.New("send_email", "Sends an email.", func(_ context.Context, a emailArgs) (string, error) {
			log.add("send_email to=" + a.To + " body=" + a.Body)
			return "sent to " + a.To, nil
		})),
		tool.Must(tool.New("read_file", "Reads a file.", func(_ context.Context, a pathArgs) (string, error) {
			log.add("read_file " + a.Path)
			return "contents of " + a.Path, nil
		})),
		tool.Must(tool.New("delete_file", "Deletes a file.", func(_ context.Context, a pathArgs) (string, error) {
			log.add("delete_file " + a.Path)
			return "deleted " + a.Path, nil
		})),
	}
}

// transcript renders messages one per line: role, tool name, error mark, text, calls.
func transcript(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role)
		if m.Role == llm.RoleTool {
			s += "(" + m.Name + "#" + m.ToolCallID + ")"
			if m.IsError {
				s += "!"
			}
		}
		if t := m.Text(); t != "" {
			s += ": " + t
		}
		for _, tc := range m.ToolCalls {
			s += " -> " + tc.ID + ":" + tc.Name + string(tc.Args)
		}
		out = append(out, s)
	}
	return out
}

func hitl(t *testing.T, on middleware.InterruptOn) *middleware.HumanInTheLoopMiddleware {
	t.Helper()
	m, err := middleware.NewHumanInTheLoop(middleware.HumanInTheLoopConfig{InterruptOn: on})
	require.NoError(t, err)
	return m
}

func newHITLAgent(t *testing.T, model llm.ChatModel, log *toolLog, on middleware.InterruptOn) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{
		Model:        model,
		Tools:        officeTools(log),
		Middleware:   []agent.Middleware{hitl(t, on)},
		Checkpointer: agent.NewMemoryCheckpointer(),
	})
	require.NoError(t, err)
	return a
}

func TestHumanInTheLoopDecisions(t *testing.T) {
	const (
		email = `{"to":"boss@example.com","body":"I quit"}`
		read  = `{"path":"/notes.md"}`
	)
	firstTurn := []string{
		"user: mail the boss",
		"assistant -> c1:send_email" + email + " -> c2:read_file" + read,
	}
	tests := []struct {
		name     string
		decision middleware.Decision
		// seen is what the model sees on its second call, after firstTurn
		// (with the assistant message as revised by the decision).
		assistant string
		seen      []string
		ran       []string
	}{
		{
			name:      "approve runs the call as made",
			decision:  middleware.Approve(),
			assistant: firstTurn[1],
			seen:      []string{"tool(send_email#c1): sent to boss@example.com", "tool(read_file#c2): contents of /notes.md"},
			ran:       []string{"send_email to=boss@example.com body=I quit", "read_file /notes.md"},
		},
		{
			name:      "edit runs the edited call under the same id",
			decision:  middleware.Edit("send_email", json.RawMessage(`{"to":"boss@example.com","body":"I stay"}`)),
			assistant: `assistant -> c1:send_email{"to":"boss@example.com","body":"I stay"} -> c2:read_file` + read,
			seen:      []string{"tool(send_email#c1): sent to boss@example.com", "tool(read_file#c2): contents of /notes.md"},
			ran:       []string{"send_email to=boss@example.com body=I stay", "read_file /notes.md"},
		},
		{
			name:      "reject keeps the call, answers it with an error and skips it",
			decision:  middleware.Reject("Do not send this; draft it in /draft.md instead."),
			assistant: firstTurn[1],
			seen:      []string{"tool(send_email#c1)!: Do not send this; draft it in /draft.md instead.", "tool(read_file#c2): contents of /notes.md"},
			ran:       []string{"read_file /notes.md"},
		},
		{
			name:      "reject without a message uses a default naming the tool and id",
			decision:  middleware.Reject(""),
			assistant: firstTurn[1],
			seen:      []string{"tool(send_email#c1)!: The user rejected the tool call send_email (id c1); it was not run.", "tool(read_file#c2): contents of /notes.md"},
			ran:       []string{"read_file /notes.md"},
		},
		{
			name:      "respond skips the call and the human's text is its result",
			decision:  middleware.Respond("Already sent it myself."),
			assistant: firstTurn[1],
			seen:      []string{"tool(send_email#c1): Already sent it myself.", "tool(read_file#c2): contents of /notes.md"},
			ran:       []string{"read_file /notes.md"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &toolLog{}
			model := fakes.NewScripted(
				fakes.Calls("", fakes.CallID("c1", "send_email", email), fakes.CallID("c2", "read_file", read)),
				fakes.Reply("done"),
			)
			a := newHITLAgent(t, model, log, middleware.InterruptOn{"send_email": {}, "delete_file": {}})

			res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("mail the boss")}}, agent.WithThread("t"))
			require.NoError(t, err)
			require.True(t, res.Interrupted())
			require.Len(t, res.Interrupts, 1)
			assert.JSONEq(t, `{
				"action_requests": [{"name": "send_email", "args": `+email+`,
					"description": "Tool execution requires approval\n\nTool: send_email\nArgs: `+strings.ReplaceAll(email, `"`, `\"`)+`"}],
				"review_configs": [{"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject", "respond"]}]
			}`, string(res.Interrupts[0].Value))
			var req middleware.HITLRequest
			require.NoError(t, json.Unmarshal(res.Interrupts[0].Value, &req), "the payload decodes into the Go type")
			assert.Equal(t, "send_email", req.ReviewConfigs[0].ActionName)
			assert.Empty(t, log.all(), "nothing runs while the run is paused, not even the unreviewed call")
			assert.Equal(t, firstTurn, transcript(res.State.Messages))

			res, err = a.Invoke(t.Context(), agent.Input{Resume: middleware.HITLResponse{Decisions: []middleware.Decision{tt.decision}}}, agent.WithThread("t"))
			require.NoError(t, err)
			require.False(t, res.Interrupted())
			assert.Equal(t, "done", res.Text())
			assert.ElementsMatch(t, tt.ran, log.all(), "parallel calls run in any order")

			reqs := model.Requests()
			require.Len(t, reqs, 2)
			want := append([]string{firstTurn[0], tt.assistant}, tt.seen...)
			assert.Equal(t, want, transcript(reqs[1].Messages))
			assert.Equal(t, append(want, "assistant: done"), transcript(res.State.Messages))
		})
	}
}

// The resume value may also arrive as plain JSON-shaped data, e.g. decoded
// from an HTTP request body.
func TestHumanInTheLoopResumeFromJSON(t *testing.T) {
	log := &toolLog{}
	model := fakes.NewScripted(fakes.Calls("", fakes.CallID("c1", "delete_file", `{"path":"/a"}`)), fakes.Reply("ok"))
	a := newHITLAgent(t, model, log, middleware.InterruptOn{"delete_file": {}})
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("clean up")}}, agent.WithThread("t"))
	require.NoError(t, err)
	require.True(t, res.Interrupted())

	var answer any
	require.NoError(t, json.Unmarshal([]byte(`{"decisions":[{"type":"edit","edited_action":{"name":"delete_file","args":{"path":"/tmp/a"}}}]}`), &answer))
	res, err = a.Invoke(t.Context(), agent.Input{Resume: answer}, agent.WithThread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"delete_file /tmp/a"}, log.all())
	assert.Equal(t, "ok", res.Text())
}

func TestHumanInTheLoopSeveralCalls(t *testing.T) {
	log := &toolLog{}
	model := fakes.NewScripted(
		fakes.Calls("cleaning",
			fakes.CallID("d1", "delete_file", `{"path":"/tmp/x"}`),
			fakes.CallID("r1", "read_file", `{"path":"/a"}`),
			fakes.CallID("d2", "delete_file", `{"path":"/etc/passwd"}`),
			fakes.CallID("e1", "send_email", `{"to":"ops@example.com","body":"cleaned"}`),
		),
		fakes.Reply("finished"),
	)
	on := middleware.InterruptOn{
		"delete_file": {AllowedDecisions: []middleware.DecisionType{middleware.DecisionApprove, middleware.DecisionReject}, Description: "Deleting is permanent."},
		"send_email": {
			When: func(call llm.ToolCall, _ *agent.State) bool {
				return !strings.Contains(string(call.Args), "@example.com")
			},
			DescribeFunc: func(call llm.ToolCall, _ *agent.State) string { return "external mail" },
		},
		"read_file": nil, // explicit false
	}
	a := newHITLAgent(t, model, log, on)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("clean up")}}, agent.WithThread("t"))
	require.NoError(t, err)
	require.True(t, res.Interrupted())
	assert.JSONEq(t, `{
		"action_requests": [
			{"name": "delete_file", "args": {"path":"/tmp/x"}, "description": "Deleting is permanent."},
			{"name": "delete_file", "args": {"path":"/etc/passwd"}, "description": "Deleting is permanent."}
		],
		"review_configs": [
			{"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]},
			{"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]}
		]
	}`, string(res.Interrupts[0].Value), "the internal email is auto-approved by its predicate; read_file is switched off")

	resume := func(ds ...middleware.Decision) (*agent.Result, error) {
		return a.Invoke(t.Context(), agent.Input{Resume: middleware.HITLResponse{Decisions: ds}}, agent.WithThread("t"))
	}
	// Bad answers fail clearly and leave the thread paused, so the caller can answer again.
	_, err = resume(middleware.Approve())
	require.ErrorContains(t, err, "resume has 1 decisions for 2 reviewed tool calls [delete_file (d1), delete_file (d2)]")
	_, err = resume(middleware.Approve(), middleware.Edit("delete_file", json.RawMessage(`{"path":"/tmp"}`)))
	require.ErrorContains(t, err, `decision 2: "edit" is not allowed for tool delete_file (call d2); allowed: approve, reject`)
	_, err = resume(middleware.Approve(), middleware.Decision{Type: "maybe"})
	require.ErrorContains(t, err, `decision 2: unknown decision type "maybe" for tool delete_file (call d2); use one of approve, edit, reject, respond`)
	_, err = a.Invoke(t.Context(), agent.Input{Resume: map[string]any{"decision": "approve"}}, agent.WithThread("t"))
	require.ErrorContains(t, err, `resume value must be {"decisions": [...]}`)
	assert.Empty(t, log.all())

	res, err = resume(middleware.Approve(), middleware.Reject(""))
	require.NoError(t, err)
	assert.Equal(t, "finished", res.Text())
	assert.ElementsMatch(t, []string{"delete_file /tmp/x", "read_file /a", "send_email to=ops@example.com body=cleaned"}, log.all())
	assert.Equal(t, []string{
		"user: clean up",
		`assistant: cleaning -> d1:delete_file{"path":"/tmp/x"} -> r1:read_file{"path":"/a"} -> d2:delete_file{"path":"/etc/passwd"} -> e1:send_email{"to":"ops@example.com","body":"cleaned"}`,
		"tool(delete_file#d2)!: The user rejected the tool call delete_file (id d2); it was not run.",
		"tool(delete_file#d1): deleted /tmp/x",
		"tool(read_file#r1): contents of /a",
		"tool(send_email#e1): sent to ops@example.com",
	}, transcript(model.Requests()[1].Messages))
}

func TestHumanInTheLoopEditErrors(t *testing.T) {
	tests := []struct {
		name     string
		decision middleware.Decision
		err      string
	}{
		{"no edited action", middleware.Decision{Type: middleware.DecisionEdit}, "decision 1: edit of tool send_email (call c1) needs edited_action"},
		{"args not an object", middleware.Edit("send_email", json.RawMessage(`"to boss"`)), `decision 1: edited args for tool send_email (call c1) must be a JSON object, got "to boss"`},
		{"respond without text", middleware.Respond(""), "decision 1: respond for tool send_email (call c1) needs a message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &toolLog{}
			model := fakes.NewScripted(fakes.Calls("", fakes.CallID("c1", "send_email", `{"to":"a","body":"b"}`)), fakes.Reply("ok"))
			a := newHITLAgent(t, model, log, middleware.InterruptOn{"send_email": {}})
			_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithThread("t"))
			require.NoError(t, err)
			_, err = a.Invoke(t.Context(), agent.Input{Resume: middleware.HITLResponse{Decisions: []middleware.Decision{tt.decision}}}, agent.WithThread("t"))
			require.ErrorContains(t, err, tt.err)
			assert.Empty(t, log.all())
		})
	}
}

func TestHumanInTheLoopNoReviewNeeded(t *testing.T) {
	log := &toolLog{}
	model := fakes.NewScripted(fakes.Calls("", fakes.Call("read_file", `{"path":"/a"}`)), fakes.Reply("ok"))
	a := newHITLAgent(t, model, log, middleware.InterruptOn{"send_email": {}})
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("read")}}, agent.WithThread("t"))
	require.NoError(t, err)
	assert.False(t, res.Interrupted())
	assert.Equal(t, []string{"read_file /a"}, log.all())
	assert.Equal(t, "HumanInTheLoopMiddleware", hitl(t, nil).Name())
}

func TestHumanInTheLoopConfigErrors(t *testing.T) {
	_, err := middleware.NewHumanInTheLoop(middleware.HumanInTheLoopConfig{InterruptOn: middleware.InterruptOn{
		"write_file": {AllowedDecisions: []middleware.DecisionType{"approve", "aprove"}},
	}})
	require.EqualError(t, err, `interrupt_on[write_file].allowed_decisions: unknown decision "aprove"; use approve, edit, reject, respond`)
	_, err = middleware.NewHumanInTheLoop(middleware.HumanInTheLoopConfig{InterruptOn: middleware.InterruptOn{"": {}}})
	require.EqualError(t, err, "interrupt_on: an entry has an empty tool name")
}

// Pausing needs somewhere to keep the thread.
func TestHumanInTheLoopNeedsCheckpointer(t *testing.T) {
	log := &toolLog{}
	a, err := agent.New(agent.Config{
		Model:      fakes.NewScripted(fakes.Calls("", fakes.Call("send_email", `{"to":"a","body":"b"}`))),
		Tools:      officeTools(log),
		Middleware: []agent.Middleware{hitl(t, middleware.InterruptOn{"send_email": {}})},
	})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.ErrorIs(t, err, agent.ErrNoCheckpointer)
	assert.Empty(t, log.all())
}
