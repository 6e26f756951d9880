package middleware_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

func mustAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	require.NoError(t, err)
	return a
}

func subagentMW(t *testing.T, subs ...middleware.SubAgent) *middleware.SubAgentMiddleware {
	t.Helper()
	m, err := middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{SubAgents: subs, PrivateKeys: []string{"_secret"}})
	require.NoError(t, err)
	return m
}

func lastTool(t *testing.T, s *agent.State) llm.Message {
	t.Helper()
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == llm.RoleTool {
			return s.Messages[i]
		}
	}
	t.Fatal("no tool message")
	return llm.Message{}
}

func TestTaskReturnsSubagentAnswer(t *testing.T) {
	// Reference case 53 and 54: the parent's tool message holds the subagent's
	// last non-empty answer, even when a trailing empty message follows.
	child := mustAgent(t, agent.Config{Name: "general-purpose", Model: fakes.NewScripted(
		fakes.Respond(llm.Response{Message: llm.Assistant("The sum of 2 and 3 is 5.")}),
	)})
	parentModel := fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"add 2 and 3","subagent_type":"general-purpose"}`)),
		fakes.Reply("5"),
	)
	m := subagentMW(t, middleware.SubAgent{Name: "general-purpose", Description: "does anything", Runner: child})
	parent := mustAgent(t, agent.Config{Model: parentModel, Middleware: []agent.Middleware{m}})
	res, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("what is 2+3?")}})
	require.NoError(t, err)
	msg := lastTool(t, res.State)
	assert.Equal(t, "task", msg.Name)
	assert.Equal(t, "The sum of 2 and 3 is 5.", msg.Text())
	assert.Contains(t, parentModel.Requests()[0].Tools[0].Description, "- general-purpose: does anything")
}

func TestTaskTrailingEmptyAndStructured(t *testing.T) {
	trailing := mustAgent(t, agent.Config{
		Model:      fakes.NewScripted(fakes.Reply("real answer"), fakes.Respond(llm.Response{Message: llm.Message{Role: llm.RoleAssistant}})),
		Middleware: []agent.Middleware{&againOnce{}},
	})
	structured := mustAgent(t, agent.Config{
		Model:          fakes.NewScripted(fakes.Calls("", fakes.Call("answer", `{"total": 5}`))),
		ResponseFormat: &agent.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"total":{"type":"integer"}},"required":["total"]}`)},
	})
	m := subagentMW(t,
		middleware.SubAgent{Name: "trailing", Description: "x", Runner: trailing},
		middleware.SubAgent{Name: "structured", Description: "y", Runner: structured},
	)
	parent := mustAgent(t, agent.Config{Model: fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"a","subagent_type":"trailing"}`), fakes.Call("task", `{"description":"b","subagent_type":"structured"}`)),
		fakes.Reply("ok"),
	), Middleware: []agent.Middleware{m}})
	res, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	var got []string
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool {
			got = append(got, msg.Text())
		}
	}
	assert.Equal(t, []string{"real answer", `{"total":5}`}, got)
}

// againOnce sends the agent back to the model once, so its last message is
// the scripted empty one.
type againOnce struct {
	agent.Base
	done bool
}

func (*againOnce) Name() string { return "AgainOnce" }
func (a *againOnce) AfterAgent(context.Context, *agent.State) (*agent.Update, error) {
	if a.done {
		return nil, nil
	}
	a.done = true
	return &agent.Update{JumpTo: agent.JumpModel}, nil
}

func TestTaskUnknownTypeAndValidation(t *testing.T) {
	child := mustAgent(t, agent.Config{Model: fakes.NewScripted()})
	m := subagentMW(t, middleware.SubAgent{Name: "a", Description: "A", Runner: child}, middleware.SubAgent{Name: "b", Description: "B", Runner: child})
	parent := mustAgent(t, agent.Config{Model: fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"x","subagent_type":"zeta"}`)),
		fakes.Reply("ok"),
	), Middleware: []agent.Middleware{m}})
	res, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	assert.Equal(t, "We cannot invoke subagent zeta because it does not exist, the only allowed types are `a`, `b`", lastTool(t, res.State).Text())

	_, err = middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{})
	require.ErrorContains(t, err, "at least one subagent")
	_, err = middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{{Name: "a", Runner: child}, {Name: "a", Runner: child}}})
	require.ErrorContains(t, err, `two subagents are named "a"`)
}

func TestTaskDescriptionOverride(t *testing.T) {
	child := mustAgent(t, agent.Config{Model: fakes.NewScripted()})
	m, err := middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{
		SubAgents:       []middleware.SubAgent{{Name: "a", Description: "A", Runner: child}},
		TaskDescription: "Delegate. Agents:\n{available_agents}",
	})
	require.NoError(t, err)
	assert.Equal(t, "Delegate. Agents:\n- a: A", m.Tools()[0].Spec().Description)
	m, err = middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{
		SubAgents:       []middleware.SubAgent{{Name: "a", Description: "A", Runner: child}},
		TaskDescription: "custom task",
	})
	require.NoError(t, err)
	assert.Equal(t, "custom task", m.Tools()[0].Spec().Description, "without the placeholder the override is verbatim")
}

// The default description points at general-purpose only when there is one.
func TestTaskDescriptionGeneralPurposeHint(t *testing.T) {
	child := mustAgent(t, agent.Config{Model: fakes.NewScripted()})
	for _, tt := range []struct {
		names []string
		hint  bool
	}{
		{[]string{"general-purpose", "a"}, true},
		{[]string{"a"}, false},
	} {
		var subs []middleware.SubAgent
		for _, n := range tt.names {
			subs = append(subs, middleware.SubAgent{Name: n, Description: "D", Runner: child})
		}
		m, err := middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{SubAgents: subs})
		require.NoError(t, err)
		d := m.Tools()[0].Spec().Description
		assert.Equal(t, tt.hint, strings.Contains(d, "Prefer general-purpose"), "%v: %s", tt.names, d)
		assert.True(t, strings.HasSuffix(d, "do so without being asked.") != tt.hint, d)
	}
}

// stateKeys declares a public and a private key, and records what it saw.
type stateKeys struct {
	agent.Base
	seen *map[string]bool
}

func (stateKeys) Name() string { return "StateKeys" }
func (stateKeys) StateKeys() []agent.StateKey {
	return []agent.StateKey{{Name: "shared"}, {Name: "_secret", Private: true}}
}
func (k stateKeys) BeforeAgent(_ context.Context, s *agent.State) (*agent.Update, error) {
	if k.seen != nil {
		_, sec := s.Values["_secret"]
		_, sh := s.Values["shared"]
		*k.seen = map[string]bool{"_secret": sec, "shared": sh}
	}
	return nil, nil
}

func TestTaskStateIsolation(t *testing.T) {
	// Reference case 58: private state stays out of subagents; files and
	// public values written by the subagent flow back.
	seen := map[string]bool{}
	writer := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "write_note", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			st := agent.ToolState(ctx)
			u := &agent.Update{Files: map[string]*agent.FileData{"/child.md": {Content: "from child, saw " + st.Files["/parent.md"].Content}}}
			u.MustValue("shared", "changed by child").MustValue("_secret", "child secret")
			return tool.Text("ok"), agent.UpdateState(ctx, u)
		},
	}
	child := mustAgent(t, agent.Config{
		Model:      fakes.NewScripted(fakes.Calls("", fakes.Call("write_note", nil)), fakes.Reply("wrote it")),
		Tools:      []tool.Tool{writer},
		Middleware: []agent.Middleware{stateKeys{seen: &seen}},
	})
	m := subagentMW(t, middleware.SubAgent{Name: "w", Description: "writes", Runner: child})
	parent := mustAgent(t, agent.Config{Model: fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"write","subagent_type":"w"}`)),
		fakes.Reply("done"),
	), Middleware: []agent.Middleware{m, stateKeys{}}, Checkpointer: agent.NewMemoryCheckpointer()})
	in := agent.Input{
		Messages: []llm.Message{llm.User("go")},
		Files:    map[string]agent.FileData{"/parent.md": {Content: "P"}},
		Values:   map[string]json.RawMessage{"shared": json.RawMessage(`"parent"`), "_secret": json.RawMessage(`"parent secret"`)},
	}
	res, err := parent.Invoke(t.Context(), in, agent.WithThread("iso"))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"_secret": false, "shared": true}, seen, "the subagent sees public values only")
	assert.Equal(t, "from child, saw P", res.State.Files["/child.md"].Content, "files flow back")
	shared, _ := agent.Value[string](res.State, "shared")
	assert.Equal(t, "changed by child", shared)
	full, err := parent.GetState(t.Context(), "iso")
	require.NoError(t, err)
	secret, _ := agent.Value[string](full, "_secret")
	assert.Equal(t, "parent secret", secret, "the subagent's private value does not bubble up")
}

func TestParallelTasksRunConcurrently(t *testing.T) {
	// Both subagents block until the other has started; sequential execution
	// would deadlock (and time out).
	var wg sync.WaitGroup
	wg.Add(2)
	barrier := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "meet", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			wg.Done()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
				return tool.Text("met"), nil
			case <-time.After(10 * time.Second):
				return tool.Result{}, context.DeadlineExceeded
			}
		},
	}
	mk := func() *agent.Agent {
		return mustAgent(t, agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("meet", nil)), fakes.Reply("met")), Tools: []tool.Tool{barrier}})
	}
	m := subagentMW(t, middleware.SubAgent{Name: "x", Description: "x", Runner: mk()}, middleware.SubAgent{Name: "y", Description: "y", Runner: mk()})
	parent := mustAgent(t, agent.Config{Model: fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"1","subagent_type":"x"}`), fakes.Call("task", `{"description":"2","subagent_type":"y"}`)),
		fakes.Reply("both done"),
	), Middleware: []agent.Middleware{m}})
	res, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	assert.Equal(t, "both done", res.Text())
}

func TestTaskEventsAreForwarded(t *testing.T) {
	child := mustAgent(t, agent.Config{Model: fakes.NewScripted(fakes.Reply("child answer"))})
	m := subagentMW(t, middleware.SubAgent{Name: "helper", Description: "h", Runner: child})
	parent := mustAgent(t, agent.Config{Model: fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"do","subagent_type":"helper"}`)),
		fakes.Reply("ok"),
	), Middleware: []agent.Middleware{m}})
	var agents []string
	_, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithEvents(func(ev agent.Event) {
		if ev.Type == agent.EventModelEnd {
			agents = append(agents, ev.Agent)
		}
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{"main", "main/task:helper", "main"}, agents)
}

// approvalTool pauses for a human inside the subagent.
func approvalTool() tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "requires_approval", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			ans, err := agent.Interrupt(ctx, map[string]string{"action": "requires_approval"})
			if err != nil {
				return tool.Result{}, err
			}
			return tool.Text("approved: " + string(ans)), nil
		},
	}
}

func TestSubagentInterruptSurfacesThroughParent(t *testing.T) {
	childModel := fakes.NewScripted(
		fakes.Calls("", fakes.Call("requires_approval", nil)),
		fakes.Calls("", fakes.Call("requires_approval", nil)),
		fakes.Reply("all approved"),
	)
	child := mustAgent(t, agent.Config{Model: childModel, Tools: []tool.Tool{approvalTool()}})
	m := subagentMW(t, middleware.SubAgent{Name: "worker", Description: "w", Runner: child})
	parentModel := fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"do it","subagent_type":"worker"}`)),
		fakes.Reply("finished"),
	)
	parent := mustAgent(t, agent.Config{Model: parentModel, Middleware: []agent.Middleware{m}, Checkpointer: agent.NewMemoryCheckpointer()})

	res, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithThread("p"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	var payload struct {
		Subagent   string `json:"subagent"`
		Interrupts []struct {
			Value map[string]string `json:"value"`
		} `json:"interrupts"`
	}
	require.NoError(t, json.Unmarshal(res.Interrupts[0].Value, &payload))
	assert.Equal(t, "worker", payload.Subagent)
	assert.Equal(t, "requires_approval", payload.Interrupts[0].Value["action"])

	// First answer resumes the subagent, which pauses again.
	res, err = parent.Invoke(t.Context(), agent.Input{Resume: "yes-1"}, agent.WithThread("p"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1, "the second pause inside the subagent surfaces too")
	res, err = parent.Invoke(t.Context(), agent.Input{Resume: "yes-2"}, agent.WithThread("p"))
	require.NoError(t, err)
	require.False(t, res.Interrupted())
	assert.Equal(t, "all approved", lastTool(t, res.State).Text())
	assert.Equal(t, "finished", res.Text())
	// The subagent saw each answer once, in order.
	var approvals []string
	for _, req := range childModel.Requests() {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			approvals = append(approvals, last.Text())
		}
	}
	assert.Equal(t, []string{`approved: "yes-1"`, `approved: "yes-2"`}, approvals)
	assert.Equal(t, 2, parentModel.CallCount())
}

func TestDynamicResponseFormat(t *testing.T) {
	format := &agent.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}
	var built int
	declarative := middleware.SubAgent{
		Name: "decl", Description: "d",
		Runner: mustAgent(t, agent.Config{Model: fakes.NewScripted(fakes.Reply("plain"))}),
		WithResponseFormat: func(f *agent.ResponseFormat) (middleware.Runner, error) {
			built++
			return agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("answer", `{"n":7}`))), ResponseFormat: f})
		},
	}
	compiled := middleware.SubAgent{Name: "comp", Description: "c", Runner: mustAgent(t, agent.Config{Model: fakes.NewScripted(fakes.Reply("plain"))})}
	m := subagentMW(t, declarative, compiled)
	parent := mustAgent(t, agent.Config{Model: fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", `{"description":"count","subagent_type":"decl"}`), fakes.Call("task", `{"description":"count","subagent_type":"comp"}`)),
		fakes.Reply("ok"),
	), Middleware: []agent.Middleware{m}})
	res, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithConfig(middleware.ResponseFormatConfigKey, format))
	require.NoError(t, err)
	assert.Equal(t, 1, built)
	var tools []llm.Message
	for _, msg := range res.State.Messages {
		if msg.Role == llm.RoleTool {
			tools = append(tools, msg)
		}
	}
	require.Len(t, tools, 2)
	assert.Equal(t, `{"n":7}`, tools[0].Text())
	assert.True(t, tools[1].IsError)
	assert.Contains(t, tools[1].Text(), `cannot be used with the compiled subagent "comp"`)
}

// laneModel records the replay lane of each call.
type laneModel struct {
	mu    sync.Mutex
	lanes []string
}

func (m *laneModel) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.lanes = append(m.lanes, agent.Lane(ctx))
	m.mu.Unlock()
	return &llm.Response{Message: llm.Assistant("done")}, nil
}

func TestParallelTasksOfOneTypeGetDistinctLanes(t *testing.T) {
	lm := &laneModel{}
	child := mustAgent(t, agent.Config{Model: lm})
	m := subagentMW(t, middleware.SubAgent{Name: "r", Description: "r", Runner: child})
	parent := mustAgent(t, agent.Config{Model: fakes.NewScripted(
		fakes.Calls("", fakes.CallID("c1", "task", `{"description":"a","subagent_type":"r"}`), fakes.CallID("c2", "task", `{"description":"b","subagent_type":"r"}`)),
		fakes.Reply("ok"),
	), Middleware: []agent.Middleware{m}})
	_, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"main/task:r#c1", "main/task:r#c2"}, lm.lanes)
}

// TestTaskDescriptionsOfTheSameSubagentsAreShared: an eval run assembles
// the same subagents in every cell, whose task tools share one rendered
// description, while other subagents, or the same ones described
// otherwise, get theirs.
func TestTaskDescriptionsOfTheSameSubagentsAreShared(t *testing.T) {
	runner := mustAgent(t, agent.Config{Model: fakes.NewScripted()})
	desc := func(opts middleware.SubAgentOptions) string {
		m, err := middleware.NewSubAgentMiddleware(opts)
		require.NoError(t, err)
		return m.Tools()[0].Spec().Description
	}
	gp := middleware.SubAgent{Name: "general-purpose", Description: "does anything", Runner: runner}
	researcher := middleware.SubAgent{Name: "researcher", Description: "reads", Runner: runner}
	first := desc(middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{gp, researcher}})
	second := desc(middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{gp, researcher}})
	assert.Contains(t, first, "- general-purpose: does anything\n- researcher: reads\n")
	assert.Same(t, unsafe.StringData(first), unsafe.StringData(second), "the same subagents' description was rendered twice")

	renamed := researcher
	renamed.Description = "reads papers"
	for _, tt := range []struct {
		opts middleware.SubAgentOptions
		want string
	}{
		{middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{gp, renamed}}, "- general-purpose: does anything\n- researcher: reads papers\n"},
		{middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{gp}}, "- general-purpose: does anything\n\nHow to use it"},
		{middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{researcher}}, "- researcher: reads\n\nHow to use it"},
		{middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{gp, researcher}, TaskDescription: "Run one of: {available_agents}"}, "Run one of: - general-purpose: does anything\n- researcher: reads"},
		{middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{gp, researcher}}, "- general-purpose: does anything\n- researcher: reads\n"},
	} {
		assert.Contains(t, desc(tt.opts), tt.want)
	}
	assert.NotContains(t, desc(middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{researcher}}), "Prefer general-purpose")
}
