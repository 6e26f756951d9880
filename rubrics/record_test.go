package rubrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	"github.com/dageval/dageval/rubrics"
)

type noteArgs struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

type queryArgs struct {
	Q string `json:"q"`
}

func echoTool(name string) tool.Tool {
	return tool.Must(tool.New(name, "test tool "+name, func(_ context.Context, a queryArgs) (string, error) {
		return name + " result for " + a.Q, nil
	}))
}

var writeNote = tool.Must(tool.New("write_note", "write a note", func(ctx context.Context, a noteArgs) (string, error) {
	if err := agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{a.Path: {Content: a.Text}}}); err != nil {
		return "", err
	}
	return "wrote " + a.Path, nil
}))

// must is for test setup that cannot fail unless the test itself is wrong.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func reply(text string) func(*llm.Request) (*llm.Response, error) {
	return func(*llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Assistant(text)}, nil
	}
}

func callTool(name string, args any) func(*llm.Request) (*llm.Response, error) {
	return func(*llm.Request) (*llm.Response, error) {
		// A fixed id: parallel runs reach a rule model in any order, and its
		// generated ids would follow that order.
		return &llm.Response{Message: llm.Assistant("", fakes.CallID("call_"+name, name, args))}, nil
	}
}

// deepRun runs a main agent that starts three tasks in parallel (two
// researchers and a writer whose own checker subagent runs inside it), and is
// graded by a rubric. It returns the events and the result.
func deepRun(t *testing.T) ([]agent.Event, *agent.Result) {
	t.Helper()
	// Parallel task calls reach the researcher's model in any order, so it
	// answers by rule rather than by script.
	researcher := must(agent.New(agent.Config{
		Name: "researcher",
		Model: fakes.NewRuleModel(
			fakes.Rule{When: fakes.LastIsToolResult("web_search"), Reply: reply("topic A: found it")},
			fakes.Rule{When: fakes.LastIsToolResult("read_url"), Reply: reply("topic B: read it")},
			fakes.Rule{When: fakes.LastUserContains("topic A"), Reply: callTool("web_search", map[string]string{"q": "A"})},
			fakes.Rule{When: fakes.LastUserContains("topic B"), Reply: callTool("read_url", map[string]string{"q": "B"})},
		).WithIdentity("fake", "researcher"),
		Tools: []tool.Tool{echoTool("web_search"), echoTool("read_url")},
	}))
	checker := must(agent.New(agent.Config{
		Name: "checker",
		Model: fakes.NewScripted(
			fakes.Calls("", fakes.Call("lint", map[string]string{"q": "note"})),
			fakes.Reply("looks fine"),
		).WithIdentity("fake", "checker"),
		Tools: []tool.Tool{echoTool("lint")},
	}))
	writerTasks := must(middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{
		{Name: "checker", Description: "checks notes", Runner: checker},
	}}))
	writer := must(agent.New(agent.Config{
		Name: "writer",
		Model: fakes.NewScripted(
			fakes.Calls("", fakes.Call("task", map[string]string{"description": "check the note", "subagent_type": "checker"})),
			fakes.Calls("", fakes.Call("write_note", noteArgs{Path: "/notes/summary.md", Text: "A and B, checked"})),
			fakes.Reply("note written"),
		).WithIdentity("fake", "writer"),
		Middleware: []agent.Middleware{writerTasks},
		Tools:      []tool.Tool{writeNote},
	}))
	idle := must(agent.New(agent.Config{Name: "idle", Model: fakes.NewScripted(fakes.Reply("nothing to do")).WithIdentity("fake", "idle")}))
	tasks := must(middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{SubAgents: []middleware.SubAgent{
		{Name: "researcher", Description: "researches", Runner: researcher},
		{Name: "writer", Description: "writes", Runner: writer},
		{Name: "idle", Description: "does nothing", Runner: idle},
	}}))
	grader := fakes.NewScripted(verdictStep("satisfied", "ok", middleware.CriterionVerdict{Name: "done", Passed: true})).WithIdentity("fake", "grader")
	rubric := must(middleware.NewRubricMiddleware(middleware.RubricOptions{Model: grader}))
	main := must(agent.New(agent.Config{
		Model: fakes.NewScripted(
			fakes.Calls("",
				fakes.Call("task", map[string]string{"description": "research topic A", "subagent_type": "researcher"}),
				fakes.Call("task", map[string]string{"description": "research topic B", "subagent_type": "researcher"}),
				fakes.Call("task", map[string]string{"description": "write the note", "subagent_type": "writer"}),
			),
			fakes.Calls("", fakes.Call("task", map[string]string{"description": "rest", "subagent_type": "idle"})),
			fakes.Reply("All done: see /notes/summary.md"),
		).WithIdentity("fake", "main"),
		Middleware: []agent.Middleware{tasks, rubric},
	}))
	var mu sync.Mutex
	var events []agent.Event
	raw, _ := json.Marshal("- done: the note exists")
	res, err := main.Invoke(t.Context(), agent.Input{
		Messages: []llm.Message{llm.User("research A and B, then write a note")},
		Values:   map[string]json.RawMessage{middleware.RubricKey: raw},
	}, agent.WithEvents(func(ev agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}))
	require.NoError(t, err)
	return events, res
}

func verdictStep(result, explanation string, criteria ...middleware.CriterionVerdict) fakes.Step {
	raw, err := json.Marshal(middleware.GraderResponse{Result: middleware.RubricResult(result), Explanation: explanation, Criteria: criteria})
	if err != nil {
		panic(err)
	}
	return fakes.Calls("", fakes.Call(middleware.GraderResponseName, json.RawMessage(raw)))
}

// shape renders a trajectory tree as "name[sub: …]" for comparison.
func shape(t *rubrics.Trajectory) string {
	var parts []string
	for _, c := range t.Calls {
		s := c.Name
		if c.Name == "task" {
			var a struct {
				Description string `json:"description"`
			}
			_ = json.Unmarshal(c.Args, &a)
			s += "(" + a.Description + ")"
		}
		if c.Subagent != nil {
			s += "[" + c.Subagent.Agent + ": " + shape(c.Subagent) + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func TestRecordFromAgentRun(t *testing.T) {
	events, res := deepRun(t)
	rec := rubrics.NewRecord(events, res.State)

	assert.Equal(t, "task(research topic A)[main/task:researcher: web_search], "+
		"task(research topic B)[main/task:researcher: read_url], "+
		"task(write the note)[main/task:writer: task(check the note)[main/task:writer/task:checker: lint], write_note], "+
		"task(rest)[main/task:idle: ]", shape(rec.Trajectory))
	// The tool results come back with each call.
	assert.Equal(t, "web_search result for A", rec.Trajectory.Calls[0].Subagent.Calls[0].Result)
	assert.Equal(t, "topic A: found it", rec.Trajectory.Calls[0].Result)
	assert.Equal(t, "topic B: read it", rec.Trajectory.Calls[1].Result)
	// Calls requested together share a step.
	assert.Equal(t, []int{2, 2, 2, 4}, []int{rec.Trajectory.Calls[0].Step, rec.Trajectory.Calls[1].Step, rec.Trajectory.Calls[2].Step, rec.Trajectory.Calls[3].Step})

	var runs []string
	for _, r := range rec.Runs {
		runs = append(runs, r.Agent+"="+r.Subagent)
	}
	assert.Equal(t, []string{"main=", "main/task:researcher=researcher", "main/task:researcher=researcher",
		"main/task:writer=writer", "main/task:writer/task:checker=checker", "main/task:idle=idle"}, runs)

	assert.Equal(t, res.Steps, rec.Steps)
	assert.Equal(t, res.Usage, rec.Usage.Agent)
	assert.Positive(t, rec.Usage.Subagents.InputTokens)
	assert.Positive(t, rec.Usage.Grader.InputTokens)
	require.Len(t, rec.RubricEvaluations, 1)
	assert.Equal(t, middleware.RubricSatisfied, rec.RubricEvaluations[0].Result)
	assert.Equal(t, "All done: see /notes/summary.md", rec.FinalAnswer())
	assert.Equal(t, []string{"task", "task", "task", "task"}, rec.ToolCallNames())

	// The suite's checks run straight on the record.
	cs, err := rubrics.ParseChecks("case.yaml", []byte(`
- trajectory: {mode: in_order, calls: [web_search, read_url, lint, write_note], agent: all}
- trajectory: {mode: strict, calls: [task, write_note], agent: writer}
- trajectory:
    mode: superset
    calls:
      - name: task
        args: {subagent_type: writer}
        subagent: {mode: superset, calls: [{name: task, subagent: {mode: strict, calls: [lint]}}]}
- tool_called: {name: lint, agent: checker, times: 1}
- tool_called: {name: web_search, args: {q: A}, agent: researcher}
- tool_not_called: {name: web_search, agent: main}
- file_contains: {path: /notes/summary.md, text: checked}
- max_steps: 10
- no_error: true
`))
	require.NoError(t, err)
	for _, r := range rubrics.EvaluateAll(t.Context(), cs, rec) {
		assert.True(t, r.Passed, "%s: %s", r.Name, r.Detail)
	}
	// With researcher runs checked one by one, a mode that only one run meets fails.
	c := trajectoryCheck(t, "- trajectory: {mode: strict, calls: [web_search], agent: researcher}")
	r := c.Evaluate(t.Context(), rec)
	assert.False(t, r.Passed)
	assert.InDelta(t, 0.5, r.Score, 1e-9)
}

func TestRecordIsDeterministic(t *testing.T) {
	// Parallel subagents finish in any order, yet the record is the same every time.
	var first []byte
	for i := range 5 {
		events, res := deepRun(t)
		rec := rubrics.NewRecord(events, res.State)
		raw, err := json.Marshal(struct {
			T *rubrics.Trajectory
			U rubrics.RoleUsage
			S int
		}{rec.Trajectory, rec.Usage, rec.Steps})
		require.NoError(t, err)
		if i == 0 {
			first = raw
			continue
		}
		assert.Equal(t, string(first), string(raw))
	}
}

func TestRecordFromMessagesOnly(t *testing.T) {
	state := &agent.State{
		Messages: []llm.Message{
			llm.User("q"),
			llm.Assistant("", llm.ToolCall{ID: "1", Name: "a", Args: json.RawMessage(`{}`)}, llm.ToolCall{ID: "2", Name: "b", Args: json.RawMessage(`{"x":1}`)}),
			llm.ToolResult("2", "b", "B!", true),
			llm.ToolResult("1", "a", "A!", false),
			llm.Assistant("", llm.ToolCall{ID: "3", Name: "c"}),
			llm.ToolResult("3", "c", "C!", false),
			llm.Assistant("answer"),
		},
		StructuredResponse: json.RawMessage(`{"ok":true}`),
		Files:              map[string]agent.FileData{"/f": {Content: "x"}},
	}
	rec := rubrics.NewRecord(nil, state)
	assert.Equal(t, []rubrics.ToolCall{
		{ID: "1", Name: "a", Args: json.RawMessage(`{}`), Step: 1, Turn: 1, Result: "A!"},
		{ID: "2", Name: "b", Args: json.RawMessage(`{"x":1}`), Step: 1, Turn: 1, Result: "B!", IsError: true},
		{ID: "3", Name: "c", Step: 2, Turn: 2, Result: "C!"},
	}, rec.Trajectory.Calls)
	assert.Equal(t, 5, rec.Steps)
	assert.Equal(t, `{"ok":true}`, rec.FinalAnswer())
	content, err := rec.Files.ReadFile(t.Context(), "/f")
	require.NoError(t, err)
	assert.Equal(t, "x", content)

	empty := rubrics.NewRecord(nil, nil)
	assert.Empty(t, empty.Trajectory.Calls)
	assert.Empty(t, empty.FinalAnswer())
	assert.Nil(t, empty.Files)
}

func TestRecordFromStream(t *testing.T) {
	a := must(agent.New(agent.Config{Name: "bot", Model: fakes.NewScripted(
		fakes.Calls("", fakes.Call("web_search", map[string]string{"q": "go"})),
		fakes.Reply("found"),
	), Tools: []tool.Tool{echoTool("web_search")}}))
	var events []agent.Event
	var final *agent.State
	for ev, err := range a.Stream(t.Context(), agent.Input{Messages: []llm.Message{llm.User("search")}}) {
		require.NoError(t, err)
		events = append(events, ev)
		if ev.Type == agent.EventDone {
			final = ev.Result.State
		}
	}
	rec := rubrics.NewRecord(events, final)
	assert.Equal(t, "bot", rec.Trajectory.Agent)
	assert.Equal(t, []string{"web_search"}, rec.ToolCallNames())
	assert.Equal(t, 3, rec.Steps)
	assert.Equal(t, "found", rec.FinalAnswer())
}

func BenchmarkNewRecord(b *testing.B) {
	// A run of 100 tool steps, each with three parallel calls.
	var events []agent.Event
	events = append(events, agent.Event{Type: agent.EventModelStart, Agent: "main", Step: 1})
	for s := range 100 {
		step := 2 + 2*s
		var tcs []llm.ToolCall
		for k := range 3 {
			tc := llm.ToolCall{ID: fmt.Sprintf("c%d_%d", s, k), Name: []string{"read", "grep", "write"}[k], Args: json.RawMessage(`{"path":"/a"}`)}
			tcs = append(tcs, tc)
			events = append(events, agent.Event{Type: agent.EventToolStart, Agent: "main", Step: step, ToolCall: &tcs[k]})
		}
		for k := range tcs {
			m := llm.ToolResult(tcs[k].ID, tcs[k].Name, "ok", false)
			events = append(events, agent.Event{Type: agent.EventToolEnd, Agent: "main", Step: step, ToolCall: &tcs[k], ToolResult: &m})
		}
		events = append(events, agent.Event{Type: agent.EventModelEnd, Agent: "main", Step: step + 1, Response: &llm.Response{Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		rec := rubrics.NewRecord(events, nil)
		if len(rec.Trajectory.Calls) != 300 || !slices.Contains(rec.ToolCallNames(), "grep") {
			b.Fatal("bad record")
		}
	}
}

func TestRubricGradedRunEndToEnd(t *testing.T) {
	// A stock rubric drives the grader; the record carries its verdicts; the
	// rubric scores them.
	r, err := rubrics.StockRubric("concise")
	require.NoError(t, err)
	grader := fakes.NewScripted(
		verdictStep("needs_revision", "too long",
			middleware.CriterionVerdict{Name: "to-the-point", Passed: true},
			middleware.CriterionVerdict{Name: "no-padding", Gap: "three filler sentences"},
			middleware.CriterionVerdict{Name: "complete", Passed: true},
			middleware.CriterionVerdict{Name: "fitting-format", Passed: true}),
		verdictStep("satisfied", "short and complete",
			middleware.CriterionVerdict{Name: "to-the-point", Passed: true},
			middleware.CriterionVerdict{Name: "no-padding", Passed: true},
			middleware.CriterionVerdict{Name: "complete", Passed: true},
			middleware.CriterionVerdict{Name: "fitting-format", Passed: true}),
	).WithIdentity("fake", "grader")
	mw := must(middleware.NewRubricMiddleware(middleware.RubricOptions{Model: grader}))
	a := must(agent.New(agent.Config{Model: fakes.NewScripted(
		fakes.Reply("Well, let me think. Great question! It is sunny. Hope this helps!"),
		fakes.Reply("Sunny, 21C."),
	), Middleware: []agent.Middleware{mw}}))
	in := r.Apply(agent.Input{Messages: []llm.Message{llm.User("weather?")}})
	var events []agent.Event
	res, err := a.Invoke(t.Context(), in, agent.WithEvents(func(ev agent.Event) { events = append(events, ev) }))
	require.NoError(t, err)
	assert.Contains(t, grader.Requests()[0].Messages[0].Text(), "- no-padding (weight 2): There are no filler sentences")

	rec := rubrics.NewRecord(events, res.State)
	require.Len(t, rec.RubricEvaluations, 2)
	final, ok := rec.FinalEvaluation()
	require.True(t, ok)
	assert.Equal(t, middleware.RubricSatisfied, final.Result)
	g := r.Grade(final.Criteria)
	assert.True(t, g.Passed)
	assert.InDelta(t, 1, g.Score, 1e-9)
	first := r.Grade(rec.RubricEvaluations[0].Criteria)
	assert.InDelta(t, 6.0/8, first.Score, 1e-9)
	assert.True(t, first.Passed, "0.75 clears the 0.7 threshold")
	assert.Equal(t, "Sunny, 21C.", rec.FinalAnswer())

	_, ok = rubrics.NewRecord(nil, nil).FinalEvaluation()
	assert.False(t, ok)
	var carried string
	require.NoError(t, json.Unmarshal(in.Values[middleware.RubricKey], &carried))
	assert.Equal(t, r.Render(), carried)
	orig := agent.Input{Values: map[string]json.RawMessage{"k": json.RawMessage(`1`)}}
	applied := r.Apply(orig)
	assert.Len(t, orig.Values, 1, "Apply leaves its input alone")
	assert.Len(t, applied.Values, 2)
}

func TestRecordSubagentTranscripts(t *testing.T) {
	events, res := deepRun(t)
	rec := rubrics.NewRecord(events, res.State)
	text := func(tr *rubrics.Trajectory) []string {
		var out []string
		for _, m := range tr.Messages {
			s := string(m.Role) + ":" + m.Text()
			for _, tc := range m.ToolCalls {
				s += "<" + tc.Name + ">"
			}
			out = append(out, s)
		}
		return out
	}
	a := rec.Trajectory.Calls[0]
	assert.Equal(t, a.ID, a.Subagent.ToolCallID)
	assert.Equal(t, []string{"user:research topic A", "assistant:<web_search>", "tool:web_search result for A", "assistant:topic A: found it"}, text(a.Subagent))
	checker := rec.Runs[4]
	assert.Equal(t, "main/task:writer/task:checker", checker.Agent)
	assert.Equal(t, []string{"user:check the note", "assistant:<lint>", "tool:lint result for note", "assistant:looks fine"}, text(checker))
	assert.Empty(t, rec.Trajectory.Messages, "the root's transcript is Record.Messages")
}

func TestRoleUsageTotal(t *testing.T) {
	tests := []struct {
		name string
		u    rubrics.RoleUsage
		want llm.Usage
	}{
		{"zero", rubrics.RoleUsage{}, llm.Usage{}},
		{"every role", rubrics.RoleUsage{
			Agent:     llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50},
			Subagents: llm.Usage{InputTokens: 30, OutputTokens: 5, CacheWriteTokens: 7},
			Grader:    llm.Usage{InputTokens: 9, OutputTokens: 1},
		}, llm.Usage{InputTokens: 139, OutputTokens: 26, CacheReadTokens: 50, CacheWriteTokens: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.u.Total())
		})
	}
}
