package evals_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
)

func TestWilson(t *testing.T) {
	tests := []struct {
		passed, n int
		lo, hi    float64
	}{
		{8, 10, 0.4902, 0.9433},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{50, 100, 0.4038, 0.5962},
		{0, 0, 0, 0},
	}
	for _, tt := range tests {
		ci := evals.Wilson(tt.passed, tt.n)
		assert.InDelta(t, tt.lo, ci[0], 5e-5, "%d/%d", tt.passed, tt.n)
		assert.InDelta(t, tt.hi, ci[1], 5e-5, "%d/%d", tt.passed, tt.n)
	}
}

const matrixSuite = `version: 1
name: m
agent: {name: a}
models: [openai:gpt-5, anthropic:claude-sonnet-4-6]
profiles: [{name: base}, {name: alt, profile: {system_prompt_suffix: hi}}]
epochs: 2
cases:
  - {id: a, input: x, tags: [smoke]}
  - {id: b, input: y, epochs: 3}
`

func TestSummarize(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte(matrixSuite))
	require.NoError(t, err)
	cells, err := s.Cells("", 0)
	require.NoError(t, err)
	require.Len(t, cells, 2*2*(2+3))
	results := make([]*evals.CellResult, len(cells))
	for i, c := range cells {
		r := &evals.CellResult{CellKey: c.CellKey, ID: c.ID, Status: evals.StatusPass, Score: 1, CostUSD: 0.01, CostKnown: true,
			Usage: evals.RoleUsage{Agent: llm.Usage{InputTokens: 10}}}
		if c.Model == "openai:gpt-5" && c.Profile == "base" {
			switch {
			case c.Case == "a" && c.Epoch == 2:
				r.Status, r.Score = evals.StatusFail, 0.5 // case a: flaky
			case c.Case == "b" && c.Epoch == 1:
				r.Status, r.Score, r.Cause = evals.StatusError, 0, evals.CauseReplayMiss
			case c.Case == "b" && c.Epoch == 3:
				r = nil // missing
			}
		}
		results[i] = r
	}
	sum := s.Summarize(cells, results, "replay")
	assert.Equal(t, 20, sum.ExpectedCells)
	assert.Equal(t, 19, sum.ActualCells)
	assert.False(t, sum.Complete)
	assert.Equal(t, []evals.CellKey{{Case: "b", Model: "openai:gpt-5", Profile: "base", Epoch: 3}}, sum.Missing)
	require.Len(t, sum.Groups, 4)
	g := sum.Groups[0]
	assert.Equal(t, "openai:gpt-5", g.Model)
	assert.Equal(t, "base", g.Profile)
	assert.Equal(t, 5, g.Expected)
	assert.Equal(t, 4, g.Cells)
	assert.Equal(t, 2, g.Passed)
	assert.Equal(t, 1, g.Failed)
	assert.Equal(t, 1, g.Errors)
	assert.Equal(t, 1, g.Missing)
	assert.InDelta(t, 0.4, g.PassRate, 1e-12, "missing and errored cells count as failures")
	assert.Equal(t, evals.Wilson(2, 5), g.CI95)
	assert.InDelta(t, 2.5/5, g.MeanScore, 1e-12)
	assert.Equal(t, 3, g.K)
	assert.InDelta(t, 1, g.PassAtK, 1e-12, "both cases passed at least once")
	assert.InDelta(t, 0, g.PassHatK, 1e-12, "neither passed every epoch")
	assert.False(t, g.CostKnown, "a missing cell's cost is unknown")
	assert.Equal(t, 40, g.Tokens.Agent.InputTokens)
	for _, other := range sum.Groups[1:] {
		assert.Equal(t, 1.0, other.PassRate)
		assert.Equal(t, 1.0, other.PassHatK)
		assert.True(t, other.CostKnown)
	}
	assert.Equal(t, 20, sum.Totals.Expected)
	assert.Equal(t, 17, sum.Totals.Passed)
	assert.InDelta(t, 6.0/8, sum.Totals.PassHatK, 1e-12)

	assert.False(t, sum.Passed)
	assert.Equal(t, evals.OutcomeErrored, sum.Outcome, "errored and missing cells decide the verdict")
	assert.Equal(t, []evals.CauseCount{{Cause: evals.CauseReplayMiss, Cells: 1}, {Cause: evals.CauseMissing, Cells: 1}}, sum.Causes)
	assert.Equal(t, []string{
		"2 cells errored (1 replay miss, 1 missing result), so the run cannot be judged",
		"1 replay miss: the agent's requests changed since its cassettes were recorded; if the change is intended, re-record with DAGEVAL_RECORD=missing (or --mode record-missing) and commit the cassettes",
		"1 missing result: the cell produced no result (the run was interrupted); run it again",
	}, sum.Reasons)
	assert.False(t, sum.ErrorsTolerated)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, sum.SuiteDigest)

	// Tolerated, errored and missing cells count as failures.
	s.TolerateErrors = true
	sum = s.Summarize(cells, results, "replay")
	assert.Equal(t, evals.OutcomeFailed, sum.Outcome)
	assert.True(t, sum.ErrorsTolerated)
	assert.Equal(t, []string{"1 cell failed", "1 cell errored", "1 cell is missing"}, sum.Reasons)
}

func TestThresholdVerdicts(t *testing.T) {
	// The missing cell below counts as a failure only because errors are
	// tolerated; TestErroredCellsDecideTheVerdict shows the default.
	base := matrixSuite + "errors: tolerate\nthresholds: "
	tests := []struct {
		thresholds string
		pass       bool
		reason     string
	}{
		{"{pass_rate: 0.2}", true, ""},
		{"{pass_rate: 0.5}", false, "openai:gpt-5 × base: pass rate 0.2 is below the threshold 0.5"},
		{"{mean_score: 0.9}", false, "openai:gpt-5 × base: mean score 0.2 is below the threshold 0.9"},
		{"{pass_hat_k: 0.5}", false, "openai:gpt-5 × base: pass^k 0 is below the threshold 0.5"},
		{"{max_cost_usd: 1}", false, "cost is not fully known"},
	}
	for _, tt := range tests {
		s, err := evals.Parse("suite.yaml", []byte(base+tt.thresholds+"\n"))
		require.NoError(t, err)
		cells, _ := s.Cells("", 0)
		results := make([]*evals.CellResult, len(cells))
		for i, c := range cells {
			results[i] = &evals.CellResult{CellKey: c.CellKey, Status: evals.StatusPass, Score: 1, CostKnown: true}
			if c.Model == "openai:gpt-5" && c.Profile == "base" && c.Epoch > 1 {
				results[i] = &evals.CellResult{CellKey: c.CellKey, Status: evals.StatusFail, CostKnown: true}
			}
			if c.Model == "openai:gpt-5" && c.Profile == "base" && c.Case == "b" && c.Epoch == 1 {
				results[i] = nil
			}
		}
		sum := s.Summarize(cells, results, "replay")
		assert.Equal(t, tt.pass, sum.Passed, tt.thresholds)
		assert.Equal(t, map[bool]evals.Outcome{true: evals.OutcomePassed, false: evals.OutcomeFailed}[tt.pass], sum.Outcome, tt.thresholds)
		if tt.reason != "" {
			require.Len(t, sum.Reasons, 1, tt.thresholds)
			assert.Contains(t, sum.Reasons[0], tt.reason)
		}
	}
}

// Observation 2 of issue 12: with the quickstart's pass_rate 0.8, a run
// whose errored cells would still leave the pass rate above the threshold
// must not pass, and its first reason names the cause.
func TestErroredCellsDecideTheVerdict(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte(matrixSuite+"thresholds: {pass_rate: 0.8}\n"))
	require.NoError(t, err)
	cells, _ := s.Cells("", 0)
	results := make([]*evals.CellResult, len(cells))
	for i, c := range cells {
		results[i] = &evals.CellResult{CellKey: c.CellKey, Status: evals.StatusPass, Score: 1, CostKnown: true}
		if i == 0 {
			results[i] = &evals.CellResult{CellKey: c.CellKey, Status: evals.StatusError, Cause: evals.CauseCassetteInvalid, Error: "x.yaml:1: a cassette is a mapping", CostKnown: true}
		}
	}
	sum := s.Summarize(cells, results, "replay")
	assert.Equal(t, evals.OutcomeErrored, sum.Outcome)
	assert.Equal(t, 2, sum.Outcome.ExitCode())
	assert.False(t, sum.Passed)
	require.Len(t, sum.Reasons, 1)
	assert.True(t, strings.HasPrefix(sum.Reasons[0], "1 cell errored: unreadable cassette — "), sum.Reasons[0])
	assert.NotContains(t, sum.Reasons[0], "pass rate")

	s.TolerateErrors = true
	sum = s.Summarize(cells, results, "replay")
	assert.Equal(t, evals.OutcomePassed, sum.Outcome, "19 of 20 is above 0.8 once the error is tolerated")
	assert.True(t, sum.ErrorsTolerated)

	_, err = evals.Parse("suite.yaml", []byte(matrixSuite+"errors: ignore\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "suite.yaml:10:1: errors: errors must be fail")
}

func TestFilter(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte(matrixSuite))
	require.NoError(t, err)
	count := func(expr string) int {
		cells, err := s.Cells(expr, 0)
		require.NoError(t, err, expr)
		return len(cells)
	}
	assert.Equal(t, 20, count(""))
	assert.Equal(t, 8, count("a"))
	assert.Equal(t, 8, count("case=a"))
	assert.Equal(t, 8, count("tag=smoke"))
	assert.Equal(t, 10, count("model=openai:*"))
	assert.Equal(t, 5, count("model=openai:* profile=base"))
	assert.Equal(t, 10, count("model!=openai:*"))
	assert.Equal(t, 10, count("model=*:claude-*"))
	assert.Equal(t, 20, count("case=a,case=b"))
	assert.Equal(t, 4, count("epoch=3"))
	assert.Equal(t, 4, count("case=b epoch=1"))
	cells, err := s.Cells("", 1)
	require.NoError(t, err)
	assert.Len(t, cells, 8, "--epochs overrides every case")
	assert.Equal(t, "a--openai-gpt-5--base--e1", cells[0].ID)

	for _, bad := range []string{"colour=red", "case=", "case=[", "case=nope"} {
		_, err := s.Cells(bad, 0)
		assert.Error(t, err, bad)
	}
}

func TestCellFileNamesMustNotCollide(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte("version: 1\nname: c\nagent: {name: a}\nmodels: [openai:gpt-5]\ncases:\n  - {id: a.b, input: x}\n  - {id: a_b, input: y}\n  - {id: a-b, input: z}\n"))
	require.NoError(t, err)
	_, err = s.Cells("", 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "suite.yaml:8:6: cases[2].id: cells a.b/openai:gpt-5/default/e1 and a-b/openai:gpt-5/default/e1 would share the file name a-b--openai-gpt-5--default--e1")
}

// The public Go API agrees with the CLI: Validate names a broken
// cassette's file and line, and Suite.Run makes its cell errored with the
// cause recorded, so the run is errored however low its thresholds are.
func TestBrokenCassetteErrorsTheRun(t *testing.T) {
	path := writeSuite(t, map[string]string{
		"suite.yaml": "version: 1\nname: broken\nagent: {name: a}\nmodels: [openai:gpt-5]\nthresholds: {pass_rate: 0}\ncases: [{id: a, input: hi}]\n",
		"cassettes/a--openai-gpt-5--default--e1.yaml": "---\nversion: 1\ninteractions: []\n",
	})
	s, err := evals.Load(path)
	require.NoError(t, err)
	err = s.Validate(t.Context(), evals.Options{Getenv: testEnv})
	require.Error(t, err)
	assert.Regexp(t, `a--openai-gpt-5--default--e1\.yaml:2: version 1 is a vcrpy cassette`, err.Error())

	rr, err := s.Run(t.Context(), evals.Options{Getenv: testEnv})
	require.NoError(t, err, "a broken cassette is the cell's error, not the run's")
	require.Len(t, rr.Results, 1)
	assert.Equal(t, evals.StatusError, rr.Results[0].Status)
	assert.Equal(t, evals.CauseCassetteInvalid, rr.Results[0].Cause)
	assert.Equal(t, evals.OutcomeErrored, rr.Summary.Outcome)
	assert.False(t, rr.Summary.Passed)
}

// A model's alias is its role: swapping the model behind an alias keeps
// the suite digest, and the cases digest ignores models altogether.
func TestAliasesKeepTheDigest(t *testing.T) {
	parse := func(models string) *evals.Suite {
		t.Helper()
		s, err := evals.Parse("suite.yaml", []byte("version: 1\nname: a\nagent: {name: a}\nmodels: "+models+"\ncases: [{id: a, input: x, models: [primary]}]\n"))
		require.NoError(t, err)
		return s
	}
	gpt5 := parse("[{spec: openai:gpt-5, alias: primary}]")
	mini := parse("[{spec: openai:gpt-5-mini, alias: primary}]")
	assert.Equal(t, gpt5.Digest(), mini.Digest())
	assert.Equal(t, "primary", gpt5.Role("openai:gpt-5"))
	assert.Equal(t, []string{"openai:gpt-5"}, gpt5.Cases[0].Models, "a case names a model by its alias")
	cells, err := mini.Cells("model=primary", 0)
	require.NoError(t, err)
	assert.Equal(t, "primary", cells[0].Alias)
	assert.Equal(t, "a--openai-gpt-5-mini--default--e1", cells[0].ID, "cassettes stay per model")

	plain, err := evals.Parse("suite.yaml", []byte("version: 1\nname: a\nagent: {name: a}\nmodels: [openai:gpt-5]\ncases: [{id: a, input: x}]\n"))
	require.NoError(t, err)
	swapped, err := evals.Parse("suite.yaml", []byte("version: 1\nname: a\nagent: {name: a}\nmodels: [openai:gpt-5-mini]\ncases: [{id: a, input: x}]\n"))
	require.NoError(t, err)
	assert.NotEqual(t, plain.Digest(), swapped.Digest(), "without aliases the models are part of the suite")
	assert.Equal(t, plain.CasesDigest(), swapped.CasesDigest())

	for _, tc := range []struct{ models, want string }{
		{"[{spec: openai:gpt-5, alias: p}, {spec: openai:gpt-5-mini, alias: p}]", "suite.yaml:4:68: models[1].alias: alias p is given to two models"},
		{"[{spec: openai:gpt-5, alias: 'a b'}]", "suite.yaml:4:31: models[0].alias: alias \"a b\" may only hold"},
		{"[{alias: p}]", "suite.yaml:4:11: models[0]: a model entry needs a spec"},
		{"[{spec: openai:gpt-5, alis: p}]", "suite.yaml:4:31: models[0].alis: unknown key \"alis\""},
	} {
		_, err := evals.Parse("suite.yaml", []byte("version: 1\nname: a\nagent: {name: a}\nmodels: "+tc.models+"\ncases: [{id: a, input: x}]\n"))
		require.Error(t, err, tc.models)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// Run(t) shares the verdict: under GateOnThresholds an errored cell fails
// the test unless TolerateErrors says errors count as failures (here the
// thresholds then hold, so the test passes and the summary says why).
func TestRunUnderGoTestToleratesErrorsOnlyWhenAsked(t *testing.T) {
	path := writeSuite(t, map[string]string{
		"suite.yaml": "version: 1\nname: broken\nagent: {name: a}\nmodels: [openai:gpt-5]\nthresholds: {pass_rate: 0}\ncases: [{id: a, input: hi}]\n",
		"cassettes/a--openai-gpt-5--default--e1.yaml": "",
	})
	rr := evals.Run(t, path, evals.GateOnThresholds(), evals.TolerateErrors(), evals.WithGetenv(testEnv))
	assert.Equal(t, evals.OutcomePassed, rr.Summary.Outcome)
	assert.True(t, rr.Summary.ErrorsTolerated)
	assert.Equal(t, evals.CauseCassetteInvalid, rr.Results[0].Cause)
}
