package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

func taskCall(subagent, description string) llm.ToolCall {
	return fakes.Call("task", map[string]string{"subagent_type": subagent, "description": description})
}

// toolMessages returns the tool results of a run, in order.
func toolMessages(s *agent.State) []llm.Message {
	var out []llm.Message
	for _, m := range s.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// Declarative subagents inherit the caller's tools unless they list their
// own; an explicit empty list means none.
func TestDeclarativeSubagentTools(t *testing.T) {
	alpha, beta := echoTool(t, "alpha", "Alpha."), echoTool(t, "beta", "Beta.")
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Tools: []tool.Tool{alpha, beta},
		SubAgents: []harness.SubAgentSpec{
			{Name: "inherits", Description: "d", SystemPrompt: "p"},
			{Name: "none", Description: "d", SystemPrompt: "p", Tools: []tool.Tool{}},
			{Name: "some", Description: "d", SystemPrompt: "p", Tools: []tool.Tool{beta}},
		}})
	as := describe(t, a)
	withFS := func(extra ...string) []string { return append(append([]string{}, fsTools...), extra...) }
	assert.Equal(t, withFS("task", "alpha", "beta"), stackTools(stackOf(t, as, "main")))
	assert.Equal(t, withFS("alpha", "beta"), stackTools(stackOf(t, as, "subagent:"+gpName)))
	assert.Equal(t, withFS("alpha", "beta"), stackTools(stackOf(t, as, "subagent:inherits")))
	assert.Equal(t, withFS(), stackTools(stackOf(t, as, "subagent:none")))
	assert.Equal(t, withFS("beta"), stackTools(stackOf(t, as, "subagent:some")))
	// Subagents never get the task tool of their own.
	for _, s := range as.Stacks[1:] {
		assert.NotContains(t, s.Middleware, subMW, s.Name)
	}
}

// requiresApproval is a caller tool that counts its runs.
func requiresApproval(runs *int) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "requires_approval", Description: "Does something a human must approve.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			*runs++
			return tool.Text("the approved thing happened"), nil
		},
	}
}

// Case 59 end to end: the parent's interrupt_on reaches a declarative
// subagent, whose pause surfaces as one interrupt of the parent naming the
// tool; a subagent that switches the entry off runs the tool at once.
func TestSubagentInheritsInterruptOn(t *testing.T) {
	run := func(t *testing.T, spec harness.SubAgentSpec) (*harness.Agent, *agent.Result, *int) {
		runs := 0
		parentModel := fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", taskCall("worker", "do the approved thing")), fakes.Reply("finished"))
		spec.Model = fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", fakes.Call("requires_approval", nil)), fakes.Reply("worker done"))
		a := newAgent(t, harness.Config{
			Model: parentModel, Tools: []tool.Tool{requiresApproval(&runs)},
			InterruptOn:  middleware.InterruptOn{"requires_approval": {}},
			Checkpointer: agent.NewMemoryCheckpointer(),
			SubAgents:    []harness.SubAgentSpec{spec},
		})
		res, err := a.Invoke(t.Context(), inputOf("go"), agent.WithThread("t1"))
		require.NoError(t, err)
		return a, res, &runs
	}
	spec := harness.SubAgentSpec{Name: "worker", Description: "Works.", SystemPrompt: "Work."}

	t.Run("inherited: one interrupt through the parent", func(t *testing.T) {
		a, res, runs := run(t, spec)
		assert.Contains(t, mwNames(subAgentConfig(t, a, "worker").Middleware), hitlMW)
		assert.Contains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), hitlMW, "general-purpose always inherits")
		require.Len(t, res.Interrupts, 1)
		assert.Zero(t, *runs, "nothing runs before the human answers")
		var relayed struct {
			Subagent   string `json:"subagent"`
			Interrupts []struct {
				Value middleware.HITLRequest `json:"value"`
			} `json:"interrupts"`
		}
		require.NoError(t, json.Unmarshal(res.Interrupts[0].Value, &relayed))
		assert.Equal(t, "worker", relayed.Subagent)
		require.Len(t, relayed.Interrupts, 1)
		require.Len(t, relayed.Interrupts[0].Value.ActionRequests, 1)
		assert.Equal(t, "requires_approval", relayed.Interrupts[0].Value.ActionRequests[0].Name)

		res, err := a.Invoke(t.Context(), agent.Input{Resume: middleware.HITLResponse{Decisions: []middleware.Decision{middleware.Approve()}}}, agent.WithThread("t1"))
		require.NoError(t, err)
		assert.False(t, res.Interrupted())
		assert.Equal(t, 1, *runs)
		assert.Equal(t, "finished", res.Text())
		assert.Equal(t, "worker done", toolMessages(res.State)[0].Text())
	})
	t.Run("switched off in the spec: runs without interrupt", func(t *testing.T) {
		s := spec
		s.InterruptOn = middleware.InterruptOn{"requires_approval": nil}
		_, res, runs := run(t, s)
		assert.False(t, res.Interrupted())
		assert.Equal(t, 1, *runs)
		assert.Equal(t, "finished", res.Text())
	})
	t.Run("an empty map switches inherited interrupts off", func(t *testing.T) {
		s := spec
		s.InterruptOn = middleware.InterruptOn{}
		a, res, runs := run(t, s)
		assert.NotContains(t, mwNames(subAgentConfig(t, a, "worker").Middleware), hitlMW)
		assert.False(t, res.Interrupted())
		assert.Equal(t, 1, *runs)
	})
}

// Case 52: permissions are inherited by declarative and general-purpose
// subagents; a subagent's own list replaces the parent's.
func TestSubagentPermissions(t *testing.T) {
	deny := []middleware.Permission{{Operations: []middleware.Operation{middleware.OpWrite}, Paths: []string{"/secrets/**"}, Mode: middleware.Deny}}
	writeSecret := func() *fakes.Scripted {
		return fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", fakes.Call("write_file", map[string]string{"file_path": "/secrets/key.txt", "content": "x"})), fakes.Reply("done"))
	}
	main := writeSecret()
	a := newAgent(t, harness.Config{Model: main, Permissions: deny, SubAgents: []harness.SubAgentSpec{
		{Name: "inherits", Description: "d", SystemPrompt: "p", Model: writeSecret()},
		{Name: "looser", Description: "d", SystemPrompt: "p", Model: writeSecret(), Permissions: []middleware.Permission{}},
		{Name: "stricter", Description: "d", SystemPrompt: "p", Model: writeSecret(), Permissions: []middleware.Permission{{Operations: []middleware.Operation{middleware.OpWrite}, Paths: []string{"/**"}, Mode: middleware.Deny}}},
	}})
	want := map[string]bool{gpName: false, "inherits": false, "looser": true, "stricter": false}
	for _, sa := range subAgents(t, a) {
		t.Run(sa.Name, func(t *testing.T) {
			res, err := sa.Runner.Invoke(t.Context(), inputOf("write the key"))
			require.NoError(t, err)
			msg := toolMessages(res.State)[0]
			_, written := res.State.Files["/secrets/key.txt"]
			assert.Equal(t, want[sa.Name], written, msg.Text())
			if !want[sa.Name] {
				assert.True(t, msg.IsError)
				assert.Contains(t, msg.Text(), "permission denied")
			}
		})
	}
}

// scriptedRunner is a compiled subagent returning a fixed result.
type scriptedRunner struct {
	res *agent.Result
	err error
}

func (r scriptedRunner) Invoke(context.Context, agent.Input, ...agent.Option) (*agent.Result, error) {
	return r.res, r.err
}

// Cases 53–57: what the task tool hands back to the parent.
func TestTaskResults(t *testing.T) {
	compiledGP, err := agent.New(agent.Config{Name: gpName, Model: fakes.NewScripted(fakes.Reply("The sum of 2 and 3 is 5."))})
	require.NoError(t, err)
	answer := json.RawMessage(`{"sum":5}`)
	format := &agent.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`)}
	tests := []struct {
		name      string
		subagents []harness.SubAgentSpec
		call      llm.ToolCall
		want      string
		isError   bool
		task      []string // substrings of the task tool's description
	}{
		{
			name:      "compiled general-purpose answers (case 53) and replaces the default",
			subagents: []harness.SubAgentSpec{{Name: gpName, Description: "Adds numbers.", Runner: compiledGP}},
			call:      taskCall(gpName, "add 2 and 3"),
			want:      "The sum of 2 and 3 is 5.",
			task:      []string{"- general-purpose: Adds numbers.\n\nHow"},
		},
		{
			name: "a trailing empty answer is skipped (case 54)",
			subagents: []harness.SubAgentSpec{{Name: "w", Description: "d", Runner: scriptedRunner{res: &agent.Result{State: &agent.State{Messages: []llm.Message{
				llm.User("q"), llm.Assistant("the real answer  \n"), llm.Assistant(""),
			}}}}}},
			call: taskCall("w", "q"),
			want: "the real answer",
		},
		{
			name: "a structured response comes back as JSON (case 54)",
			subagents: []harness.SubAgentSpec{{Name: "w", Description: "d", SystemPrompt: "Add.", ResponseFormat: format,
				Model: fakes.NewScripted(fakes.Calls("", fakes.Call("answer", answer)))}},
			call: taskCall("w", "add"),
			want: `{"sum":5}`,
		},
		{
			name:      "a compiled subagent without a state fails the call (case 55)",
			subagents: []harness.SubAgentSpec{{Name: "w", Description: "d", Runner: scriptedRunner{res: &agent.Result{}}}},
			call:      taskCall("w", "q"),
			want:      "Error: subagent w returned no state; a subagent must return its final state with messages",
			isError:   true,
		},
		{
			name:      "a failing subagent is reported to the model",
			subagents: []harness.SubAgentSpec{{Name: "w", Description: "d", Runner: scriptedRunner{err: errors.New("boom")}}},
			call:      taskCall("w", "q"),
			want:      "Error: subagent w: boom",
			isError:   true,
		},
		{
			name:      "an unknown type lists the allowed ones (case 56)",
			subagents: []harness.SubAgentSpec{{Name: "w", Description: "d", SystemPrompt: "p"}},
			call:      taskCall("nope", "q"),
			want:      "We cannot invoke subagent nope because it does not exist, the only allowed types are `general-purpose`, `w`",
		},
		{
			name: "an explicit general-purpose spec replaces the default (case 57)",
			subagents: []harness.SubAgentSpec{{Name: gpName, Description: "My own generalist.", SystemPrompt: "Be general.",
				Model: fakes.NewScripted(fakes.Reply("override answer"))}},
			call: taskCall(gpName, "q"),
			want: "override answer",
			task: []string{"- general-purpose: My own generalist.\n\nHow"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", tt.call), fakes.Reply("done"))
			a := newAgent(t, harness.Config{Model: m, SubAgents: tt.subagents})
			res := invoke(t, a)
			msgs := toolMessages(res.State)
			require.Len(t, msgs, 1)
			assert.Equal(t, tt.want, msgs[0].Text())
			assert.Equal(t, tt.isError, msgs[0].IsError)
			assert.Equal(t, "done", res.Text())
			task := toolDescription(t, m.Requests()[0].Tools, "task")
			for _, s := range tt.task {
				assert.Contains(t, task, s)
			}
			assert.Equal(t, 1, countOf(task, "- general-purpose:"), task)
		})
	}
}

func countOf(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

// keys declares a public and a private state key; it sets both before the
// run and records what it saw.
type keys struct {
	agent.Base
	name string
	set  string // value written to both keys in BeforeAgent ("" writes nothing)
	saw  *map[string]string
	end  *map[string]string
}

func (k *keys) Name() string { return k.name }
func (k *keys) StateKeys() []agent.StateKey {
	return []agent.StateKey{{Name: "shared"}, {Name: "_secret", Private: true}}
}
func (k *keys) BeforeAgent(_ context.Context, s *agent.State) (*agent.Update, error) {
	*k.saw = map[string]string{}
	for n, v := range s.Values {
		(*k.saw)[n] = string(v)
	}
	if k.set == "" {
		return nil, nil
	}
	v := json.RawMessage(`"` + k.set + `"`)
	return &agent.Update{Values: map[string]json.RawMessage{"shared": v, "_secret": v}}, nil
}
func (k *keys) AfterAgent(_ context.Context, s *agent.State) (*agent.Update, error) {
	if k.end != nil {
		*k.end = map[string]string{}
		for n, v := range s.Values {
			(*k.end)[n] = string(v)
		}
	}
	return nil, nil
}

// Case 58: private state never crosses into a subagent or back; public
// state does both.
func TestPrivateStateStaysPrivate(t *testing.T) {
	var parentSaw, parentEnd, childSaw map[string]string
	parentKeys := &keys{name: "Keys", set: "parent", saw: &parentSaw, end: &parentEnd}
	childKeys := &keys{name: "Keys", set: "child", saw: &childSaw}
	m := fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", taskCall("w", "q")), fakes.Reply("done"))
	a := newAgent(t, harness.Config{Model: m, Middleware: []agent.Middleware{parentKeys},
		SubAgents: []harness.SubAgentSpec{{Name: "w", Description: "d", SystemPrompt: "p", Middleware: []agent.Middleware{childKeys},
			Skills: []string{"/skills/"}, Model: fakes.NewScripted(fakes.Reply("child answer"))}}})
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}, Files: map[string]agent.FileData{
		"/skills/tidy/SKILL.md": {Content: "---\nname: tidy\ndescription: Tidies things\n---\n# Tidy\n"},
	}})
	require.NoError(t, err)
	assert.Contains(t, childSaw, middleware.SkillsMetadataKey, "the child's own skills loaded before its Keys ran")
	delete(childSaw, middleware.SkillsMetadataKey)
	assert.Equal(t, map[string]string{"shared": `"parent"`}, childSaw, "the child sees public state only")
	assert.Equal(t, `"child"`, parentEnd["shared"], "public state flows back")
	assert.Equal(t, `"parent"`, parentEnd["_secret"], "the child's private value does not")
	assert.NotContains(t, parentEnd, middleware.SkillsMetadataKey, "the subagent's skills metadata stays with it")
	assert.NotContains(t, res.State.Values, "_secret")
}

// Case 60: a per-run response format rebuilds declarative subagents; a
// compiled subagent cannot take one.
func TestDynamicResponseFormat(t *testing.T) {
	format := &agent.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}
	compiled, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Reply("plain"))})
	require.NoError(t, err)
	m := fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", taskCall("decl", "count"), taskCall("comp", "count")), fakes.Reply("ok"))
	sub := fakes.NewScripted(fakes.Calls("", fakes.Call("answer", `{"n":7}`)))
	a := newAgent(t, harness.Config{Model: m, SubAgents: []harness.SubAgentSpec{
		{Name: "decl", Description: "d", SystemPrompt: "Count.", Model: sub},
		{Name: "comp", Description: "c", Runner: compiled},
	}})
	res := invoke(t, a, agent.WithConfig(middleware.ResponseFormatConfigKey, format))
	msgs := toolMessages(res.State)
	require.Len(t, msgs, 2)
	assert.Equal(t, `{"n":7}`, msgs[0].Text())
	assert.True(t, msgs[1].IsError)
	assert.Contains(t, msgs[1].Text(), "compiled subagent")
	assert.Contains(t, toolNames(sub.Requests()[0].Tools), "answer", "the rebuilt subagent offers the answer tool")

	_, err = middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{})
	assert.ErrorContains(t, err, "at least one subagent")
}

// Case 61: skills are per stack — a declarative subagent has none unless it
// lists its own, the general-purpose one inherits the main agent's.
func TestSubagentSkills(t *testing.T) {
	files := map[string]agent.FileData{
		"/skills/main/alpha/SKILL.md": {Content: "---\nname: alpha\ndescription: The main agent's skill\n---\n# Alpha\n"},
		"/skills/sub/beta/SKILL.md":   {Content: "---\nname: beta\ndescription: One of the subagent's skills\n---\n# Beta\n"},
		"/skills/more/gamma/SKILL.md": {Content: "---\nname: gamma\ndescription: Another of the subagent's skills\n---\n# Gamma\n"},
	}
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Skills: []string{"/skills/main/"}, SubAgents: []harness.SubAgentSpec{
		{Name: "plain", Description: "d", SystemPrompt: "Plain."},
		{Name: "one", Description: "d", SystemPrompt: "One.", Skills: []string{"/skills/sub/"}},
		{Name: "two", Description: "d", SystemPrompt: "Two.", Skills: []string{"/skills/sub/", "/skills/more/"}},
	}})
	as, err := a.Describe(t.Context(), harness.DescribeOptions{Files: files})
	require.NoError(t, err)
	tests := []struct {
		stack      string
		has        bool
		want, not  []string
		middleware []string
	}{
		{"main", true, []string{"alpha"}, []string{"beta", "gamma"}, []string{skillsMW, fsMW, subMW, summMW, patchMW, cacheMW}},
		{"subagent:" + gpName, true, []string{"alpha"}, []string{"beta", "gamma"}, []string{fsMW, summMW, patchMW, skillsMW, cacheMW}},
		{"subagent:plain", false, nil, []string{"alpha", "beta", "gamma"}, []string{fsMW, summMW, patchMW, cacheMW}},
		{"subagent:one", true, []string{"beta"}, []string{"alpha", "gamma"}, []string{fsMW, summMW, patchMW, skillsMW, cacheMW}},
		{"subagent:two", true, []string{"beta", "gamma"}, []string{"alpha"}, []string{fsMW, summMW, patchMW, skillsMW, cacheMW}},
	}
	for _, tt := range tests {
		s := stackOf(t, as, tt.stack)
		assert.Equal(t, tt.middleware, s.Middleware, tt.stack)
		for _, w := range tt.want {
			assert.Contains(t, s.SystemPrompt, "**"+w+"**", tt.stack)
		}
		for _, w := range tt.not {
			assert.NotContains(t, s.SystemPrompt, w, tt.stack)
		}
	}
}

// barrier is a model that answers only once n calls are in flight, so a
// test deadlocks (and times out) unless the calls run concurrently.
type barrier struct {
	mu      sync.Mutex
	waiting int
	n       int
	release chan struct{}
}

func (b *barrier) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	b.mu.Lock()
	b.waiting++
	if b.waiting == b.n {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
		return &llm.Response{Message: llm.Assistant("met"), StopReason: llm.StopEndTurn}, nil
	case <-time.After(10 * time.Second):
		return nil, errors.New("the task calls did not run concurrently")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Parallel task calls of one turn run concurrently.
func TestParallelTasks(t *testing.T) {
	b := &barrier{n: 2, release: make(chan struct{})}
	m := fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", taskCall("left", "l"), taskCall("right", "r")), fakes.Reply("both done"))
	a := newAgent(t, harness.Config{Model: m, SubAgents: []harness.SubAgentSpec{
		{Name: "left", Description: "d", SystemPrompt: "p", Model: b},
		{Name: "right", Description: "d", SystemPrompt: "p", Model: b},
	}})
	res := invoke(t, a)
	msgs := toolMessages(res.State)
	require.Len(t, msgs, 2)
	assert.Equal(t, "met", msgs[0].Text())
	assert.Equal(t, "met", msgs[1].Text())
}

// The assembly lists the stacks in the order the task tool offers them:
// main, general-purpose, then the caller's subagents as declared.
func TestAssemblyStackOrder(t *testing.T) {
	compiled, err := agent.New(agent.Config{Model: fakes.NewScripted()})
	require.NoError(t, err)
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SubAgents: []harness.SubAgentSpec{
		{Name: "b-declarative", Description: "d", SystemPrompt: "p"},
		{Name: "a-async", Description: "d", GraphID: "g"},
		{Name: "c-compiled", Description: "d", Runner: compiled},
	}})
	as := describe(t, a)
	var got []string
	for _, s := range as.Stacks {
		got = append(got, s.Name+" "+s.Kind)
	}
	assert.Equal(t, []string{"main main", "subagent:general-purpose general-purpose", "subagent:b-declarative declarative", "subagent:a-async async", "subagent:c-compiled compiled"}, got)
	assert.NotEmpty(t, as.Stacks[3].Note)
	assert.NotEmpty(t, as.Stacks[4].Note)
	assert.Empty(t, as.Stacks[4].Middleware)
}
