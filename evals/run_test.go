package evals_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// A run that hits a limit is judged and fails (its checks still run); it
// is not an error.
func TestLimitsFailTheCell(t *testing.T) {
	loop := make([]llm.Message, 30)
	for i := range loop {
		loop[i] = say("", call("ping", `{}`))
	}
	m := &convModel{convs: map[string][]llm.Message{"loop": loop, "fine": {say("ok")}}}
	srv := server(t, m)
	suite := liveHeader(srv.URL) + `models: [local:m]
agent: {tools: [{name: ping}]}
tools: {ping: {mock: {result: pong}}}
limits: {max_steps: 5}
cases:
  - id: loop
    input: loop
    checks: [{no_error: true}, {tool_called: ping}]
  - id: fine
    input: fine
    checks: [{no_error: true}]
`
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	r := resultOf(t, oc, "loop")
	assert.Equal(t, evals.StatusFail, r.Status)
	assert.Contains(t, r.Error, "recursion limit of 5 steps")
	require.Len(t, r.Checks, 2)
	assert.False(t, r.Checks[0].Passed, "no_error sees the limit")
	assert.True(t, r.Checks[1].Passed, "the calls made before the limit count")
	assert.Equal(t, 0.5, r.Score)
	assert.Equal(t, evals.StatusPass, resultOf(t, oc, "fine").Status)
	assert.Equal(t, []string{"1 cell failed"}, oc.Summary.Reasons)
}

func TestCostLimitStopsTheRun(t *testing.T) {
	loop := make([]llm.Message, 30)
	for i := range loop {
		loop[i] = say("", call("ping", `{}`))
	}
	m := &convModel{convs: map[string][]llm.Message{"loop": loop}}
	srv := server(t, m)
	suite := "version: 1\nname: t\nmode: live\nproviders: {openai: {kind: openai, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: TEST_KEY}}\n" + `models: [openai:gpt-5]
agent: {tools: [{name: ping}]}
tools: {ping: {mock: {result: pong}}}
limits: {max_cost_usd: 0.01}
cases: [{id: loop, input: loop}]
`
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	r := oc.Results[0]
	assert.Equal(t, evals.StatusFail, r.Status)
	assert.Contains(t, r.Error, "cost limit reached")
	assert.Greater(t, r.CostUSD, 0.01)
	assert.Less(t, r.Steps, 30)
}

// The grader's verdicts decide the cell: a revision that fixes the gap
// passes, one that never does fails with max_iterations_reached, and a
// grader that cannot answer makes the cell an error.
func TestRubricOutcomes(t *testing.T) {
	m := &convModel{
		convs: map[string][]llm.Message{
			"fixable":  {say("draft"), say("final, with source docs/a.md")},
			"hopeless": {say("draft"), say("still a draft")},
		},
		grade: func(criterion, transcript string) (bool, string) {
			if criterion == "cites" && !strings.Contains(transcript, "docs/") {
				return false, "no source named"
			}
			return true, ""
		},
	}
	srv := server(t, m)
	suite := liveHeader(srv.URL) + `models: [local:m]
agent: {name: a}
grader: {model: local:grader, max_iterations: 2, temperature: 0}
cases:
  - id: fixable
    input: fixable
    rubric: [{name: cites, description: Names its source.}, {name: polite, description: Is polite.}]
  - id: hopeless
    input: hopeless
    rubric: {name: r, criteria: [{name: cites, description: Names its source.}]}
    checks: [{final_answer: {contains: draft}}]
`
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	fixable := resultOf(t, oc, "fixable")
	require.Equal(t, evals.StatusPass, fixable.Status, fixable.Error)
	require.NotNil(t, fixable.Rubric)
	assert.Equal(t, "satisfied", fixable.Rubric.Result)
	assert.Equal(t, 2, fixable.Rubric.Iterations)
	assert.Positive(t, fixable.Usage.Grader.InputTokens)

	hopeless := resultOf(t, oc, "hopeless")
	assert.Equal(t, evals.StatusFail, hopeless.Status)
	require.NotNil(t, hopeless.Rubric)
	assert.Equal(t, "max_iterations_reached", hopeless.Rubric.Result)
	assert.Equal(t, []middleware.CriterionVerdict{{Name: "cites", Gap: "no source named"}}, hopeless.Rubric.Criteria)
	assert.Equal(t, 0.5, hopeless.Score, "rubric 0 and checks 1 weigh half each")

	t.Run("grader error", func(t *testing.T) {
		m := &convModel{convs: map[string][]llm.Message{"x": {say("done")}}}
		srv := server(t, m)
		suite := liveHeader(srv.URL) + `models: [local:m]
agent: {name: a}
grader: {model: local:grader, temperature: 0}
cases: [{id: x, input: x, rubric: helpful}]
`
		// The grader gets no verdict: the server answers its model with an error.
		srv.FailOn(2, faultBadRequest)
		oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
		r := oc.Results[0]
		assert.Equal(t, evals.StatusError, r.Status)
		assert.Contains(t, r.Error, "the rubric grader failed")
	})
}

func TestRunStopsWhenCancelled(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{"a": {say("ok")}}}
	srv := server(t, m)
	suite := liveHeader(srv.URL) + "models: [local:m]\nagent: {name: a}\nepochs: 20\nconcurrency: 1\ncases: [{id: a, input: a}]\n"
	s, err := evals.Load(writeSuite(t, map[string]string{"suite.yaml": suite}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	out := t.TempDir()
	n := 0
	oc, err := s.Run(ctx, evals.Options{Getenv: testEnv, OutDir: out, OnCell: func(evals.CellResult) {
		if n++; n == 3 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, oc)
	assert.False(t, oc.Summary.Complete)
	assert.Equal(t, 20, oc.Summary.ExpectedCells)
	assert.Less(t, oc.Summary.ActualCells, 20)
	assert.Len(t, oc.Summary.Missing, 20-oc.Summary.ActualCells)
	assert.False(t, oc.Summary.Passed)
	assert.FileExists(t, out+"/summary.json", "what finished is written")
}

type slowModel struct{ d time.Duration }

func (m slowModel) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	select {
	case <-time.After(m.d):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &llm.Response{Message: llm.Assistant("late")}, nil
}

// An agent that spends its time budget on its own work (here a tool that
// takes too long) fails its cell: that is its behaviour.
func TestTimeLimitFailsTheCell(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{"go": {say("", call("wait", `{}`)), say("done")}}}
	srv := server(t, m)
	suite := liveHeader(srv.URL) + `models: [local:m]
agent: {tools: [{name: wait}]}
tools: {wait: {exec: {command: "sleep 30", timeout: 60s}}}
limits: {timeout: 1s}
cases: [{id: a, input: go}]
`
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	r := oc.Results[0]
	assert.Equal(t, evals.StatusFail, r.Status)
	assert.Empty(t, r.Cause)
	assert.Contains(t, r.Error, "time limit reached: the run took longer than limits.timeout 1s")
	assert.Equal(t, evals.OutcomeFailed, oc.Summary.Outcome)
}

// Observation 6 of issue 12 (its verdict): a provider that never answers
// is not the agent's failure. A time limit that fires while a model call
// has waited for most of it errors the cell as a provider stall, so
// compare never reads an outage as a regression.
func TestProviderStallErrorsTheCell(t *testing.T) {
	srv := server(t, slowModel{d: time.Minute})
	suite := liveHeader(srv.URL) + "models: [local:m]\nagent: {name: a}\nlimits: {timeout: 100ms}\ncases: [{id: a, input: go}]\n"
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	r := oc.Results[0]
	assert.Equal(t, evals.StatusError, r.Status)
	assert.Equal(t, evals.CauseProviderStall, r.Cause)
	assert.Contains(t, r.Error, "provider stall: the model call of agent a got no answer")
	assert.Equal(t, evals.OutcomeErrored, oc.Summary.Outcome)
	assert.Contains(t, oc.Summary.Reasons[0], "1 cell errored: provider stall — ")
}
