package reports_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/reports"
)

var (
	cmpModels   = []string{"anthropic:claude-sonnet-4-6", "openai:gpt-5"}
	cmpProfiles = []string{"baseline", "candidate"}
)

// outcomeFn decides a cell's status and score in a constructed run.
type outcomeFn func(k evals.CellKey) (evals.Status, float64)

func allPass(evals.CellKey) (evals.Status, float64) { return evals.StatusPass, 1 }

// makeRun builds a run of 2 models × 2 profiles × cases × epochs in memory.
func makeRun(t testing.TB, cases, epochs int, out outcomeFn) *reports.Run {
	t.Helper()
	r := &reports.Run{HasResults: true, Details: map[string]*evals.CellDetail{}}
	s := &r.Summary
	s.SchemaVersion, s.Suite, s.SuiteDigest, s.Mode = evals.SchemaVersion, "constructed", "sha256:abc", "live"
	for _, m := range cmpModels {
		for _, p := range cmpProfiles {
			g := evals.GroupSummary{Model: m, Profile: p, Expected: cases * epochs, K: epochs}
			for c := 1; c <= cases; c++ {
				for e := 1; e <= epochs; e++ {
					k := evals.CellKey{Case: fmt.Sprintf("case-%02d", c), Model: m, Profile: p, Epoch: e}
					st, sc := out(k)
					if st == "" {
						s.Missing = append(s.Missing, k)
						continue
					}
					cr := evals.CellResult{CellKey: k, ID: fmt.Sprintf("%s-%s-%s-%d", k.Case, m, p, e), Status: st, Score: sc, CostUSD: 0.01, CostKnown: true}
					if st == evals.StatusError {
						cr.Error = "replay: no recording matches request 2"
					}
					r.Results = append(r.Results, cr)
					g.Cells++
					if st == evals.StatusPass {
						g.Passed++
					}
				}
			}
			g.PassRate = float64(g.Passed) / float64(g.Expected)
			s.Groups = append(s.Groups, g)
			s.Totals.Passed += g.Passed
			s.Totals.Expected += g.Expected
		}
	}
	s.ExpectedCells = s.Totals.Expected
	s.ActualCells = len(r.Results)
	s.Complete = s.ActualCells == s.ExpectedCells
	s.Totals.PassRate = float64(s.Totals.Passed) / float64(s.Totals.Expected)
	return r
}

// caseNum parses "case-07" → 7.
func caseNum(k evals.CellKey) int {
	var n int
	fmt.Sscanf(k.Case, "case-%d", &n)
	return n
}

// baseOutcome: cases 9 and 10 fail everywhere, the rest pass; a realistic
// baseline with some headroom.
func baseOutcome(k evals.CellKey) (evals.Status, float64) {
	if caseNum(k) >= 9 {
		return evals.StatusFail, 0.25
	}
	return evals.StatusPass, 1
}

func compare(t *testing.T, base, head *reports.Run, opts reports.CompareOptions) *reports.Comparison {
	t.Helper()
	c, err := reports.Compare(base, head, opts)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, reports.RenderComparison(&b, c, reports.FormatJSON))
	require.NoError(t, reports.ValidateCompareJSON(b.Bytes()), "compare JSON must validate against its schema")
	for _, f := range []reports.Format{reports.FormatTable, reports.FormatMD} {
		require.NoError(t, reports.RenderComparison(&bytes.Buffer{}, c, f))
	}
	return c
}

// regressedHead: the candidate profile on gpt-5 breaks cases 1–6 in every
// epoch (a tool the cases need was excluded).
func regressedHead(k evals.CellKey) (evals.Status, float64) {
	if k.Model == "openai:gpt-5" && k.Profile == "candidate" && caseNum(k) <= 6 {
		return evals.StatusFail, 0.25
	}
	return baseOutcome(k)
}

func TestCompareFlagsTrueRegression(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	head := makeRun(t, 10, 3, regressedHead)
	c := compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Equal(t, reports.OutcomeRegression, c.Verdict.Outcome)
	assert.Equal(t, 1, c.Verdict.ExitCode)
	assert.Contains(t, c.Verdict.Reason, "regression: overall pass rate -15.0 pp")
	assert.Contains(t, c.Verdict.Reason, "6 new failures")
	assert.Contains(t, strings.Join(c.Verdict.Details, "\n"), "openai:gpt-5 × candidate pass rate -60.0 pp")
	require.Len(t, c.NewFailures, 6)
	for i, cc := range c.NewFailures {
		assert.Equal(t, fmt.Sprintf("case-%02d", i+1), cc.Case)
		assert.Equal(t, "candidate", cc.Profile)
		assert.Equal(t, 3, cc.BasePassed)
		assert.Equal(t, 0, cc.HeadPassed)
	}
	assert.Empty(t, c.Flaky)
	assert.Equal(t, 18, c.Overall.Regressions)
	assert.Equal(t, 0, c.Overall.Improvements)
	// 120 pairs: overall, score and 4 groups are tested.
	assert.Equal(t, 120, c.Overall.Pairs)
	assert.Len(t, c.Tests, 6)
}

func TestCompareSymmetricFlipsAreNotARegression(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	// In every model × profile, case 1 epochs 1–3 go pass → fail and case
	// 9 epochs 1–3 go fail → pass: 12 flips each way.
	head := makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		switch caseNum(k) {
		case 1:
			return evals.StatusFail, 0.25
		case 9:
			return evals.StatusPass, 1
		}
		return baseOutcome(k)
	})
	c := compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Equal(t, 12, c.Overall.Regressions)
	assert.Equal(t, 12, c.Overall.Improvements)
	assert.Equal(t, 0, c.Verdict.ExitCode)
	assert.Equal(t, reports.OutcomeInconclusive, c.Verdict.Outcome)
	assert.Contains(t, c.Verdict.Reason, "12 pairs went pass → fail and 12 fail → pass")
	assert.InDelta(t, 1.0, c.Overall.McNemarP, 1e-12)
	assert.Len(t, c.NewFailures, 4)
	assert.Len(t, c.NewPasses, 4)
}

func TestCompareSmallChangeIsInconclusive(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	// Three one-way flips among 120 pairs: real, perhaps, but below what
	// this sample can detect.
	head := makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		if k.Model == "anthropic:claude-sonnet-4-6" && k.Profile == "baseline" && caseNum(k) == 2 {
			return evals.StatusFail, 0.25
		}
		return baseOutcome(k)
	})
	c := compare(t, base, head, reports.CompareOptions{Seed: 1, Policy: reports.PolicySignificant})
	assert.Equal(t, reports.OutcomeInconclusive, c.Verdict.Outcome)
	assert.Equal(t, 0, c.Verdict.ExitCode)
	assert.InDelta(t, -0.025, c.Overall.PassDelta, 1e-12)
	assert.Greater(t, c.MDE.PassRate, 0.025, "the observed change is below the MDE")
	assert.Contains(t, c.Verdict.Reason, "inconclusive")
	assert.Contains(t, c.Verdict.Reason, "with 120 pairs the smallest pass-rate change detectable at 80% power is")
	assert.Contains(t, c.Verdict.Reason, "detecting 2.5 pp would need about")
	assert.Greater(t, c.MDE.NeedPairs, 0)
	assert.Greater(t, c.MDE.NeedEpochs, 0)
	// The three flips of one case in one group are a stable new failure.
	require.Len(t, c.NewFailures, 1)
	var md bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	assert.True(t, strings.HasPrefix(md.String(), "### ❔ "), "a drop passed by policy is no green check:\n%s", md.String())

	// The default policy judges the overall drop, 2.5 points, below its
	// margin; the strict policy fails the stable new failure.
	c = compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Equal(t, reports.OutcomeInconclusive, c.Verdict.Outcome)
	assert.Empty(t, c.Underpowered)
	c = compare(t, base, head, reports.CompareOptions{Seed: 1, Policy: reports.PolicyStrict})
	assert.Equal(t, reports.OutcomeNewFailures, c.Verdict.Outcome)
	assert.Equal(t, 1, c.Verdict.ExitCode)
	assert.Contains(t, c.Verdict.Reason, "case-02 · anthropic:claude-sonnet-4-6 · baseline")
}

func TestCompareSeparatesFlakyCases(t *testing.T) {
	base := makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		if caseNum(k) == 3 && k.Epoch == 2 {
			return evals.StatusFail, 0.5 // flaky in base
		}
		return baseOutcome(k)
	})
	head := makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		if caseNum(k) == 3 && k.Epoch == 1 {
			return evals.StatusFail, 0.5 // still flaky, another epoch
		}
		if caseNum(k) == 4 && k.Epoch == 3 && k.Profile == "candidate" {
			return evals.StatusFail, 0.5 // newly flaky in head
		}
		return baseOutcome(k)
	})
	c := compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Empty(t, c.NewFailures, "flaky cases are not new failures")
	require.Len(t, c.Flaky, 6)
	var newlyFlaky int
	for _, cc := range c.Flaky {
		switch cc.Case {
		case "case-03":
			assert.True(t, cc.BaseFlaky && cc.HeadFlaky)
		case "case-04":
			assert.False(t, cc.BaseFlaky)
			assert.True(t, cc.HeadFlaky)
			newlyFlaky++
		default:
			t.Errorf("unexpected flaky case %s", cc.Case)
		}
	}
	assert.Equal(t, 2, newlyFlaky)
	var b bytes.Buffer
	require.NoError(t, c.WriteText(&b))
	assert.Contains(t, b.String(), "Flaky cases (6): pass^k < pass@k")
	assert.Contains(t, b.String(), "case-04 · openai:gpt-5 · candidate 3/3 → 2/3 passed, score 1.000 → 0.833 (flaky in head)")
}

func TestCompareToleranceAndImprovement(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	head := makeRun(t, 10, 3, regressedHead)
	// The same regression, with a tolerance wider than its interval allows.
	c := compare(t, base, head, reports.CompareOptions{Seed: 1, Tolerance: 0.9})
	assert.Equal(t, reports.OutcomeWithinTolerance, c.Verdict.Outcome)
	assert.Equal(t, 0, c.Verdict.ExitCode)
	assert.Contains(t, c.Verdict.Reason, "not beyond the tolerance of 90.0 pp")

	// Swapping the sides turns it into an improvement.
	c = compare(t, head, base, reports.CompareOptions{Seed: 1})
	assert.Equal(t, reports.OutcomeImprovement, c.Verdict.Outcome)
	assert.Equal(t, 0, c.Verdict.ExitCode)
	assert.Len(t, c.NewPasses, 6)
}

func TestCompareScoreOnlyRegression(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	// Every passing cell still passes, but with a lower score.
	head := makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		st, sc := baseOutcome(k)
		if st == evals.StatusPass {
			sc = 0.7
		}
		return st, sc
	})
	c := compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Equal(t, reports.OutcomeRegression, c.Verdict.Outcome)
	assert.Contains(t, c.Verdict.Reason, "overall mean score -0.240")
	assert.Zero(t, c.Overall.Regressions)
	assert.Len(t, c.ScoreChanges, 32)
}

func TestCompareUnchanged(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	c := compare(t, base, makeRun(t, 10, 3, baseOutcome), reports.CompareOptions{})
	assert.Equal(t, reports.OutcomeUnchanged, c.Verdict.Outcome)
	assert.Equal(t, 0, c.Verdict.ExitCode)
	assert.Contains(t, c.Verdict.Reason, "unchanged: all 120 pairs have the same outcome and score")
}

func TestCompareErroredAndMissingCellsExit2(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	head := makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		if caseNum(k) == 5 && k.Epoch == 2 && k.Model == "openai:gpt-5" && k.Profile == "candidate" {
			return evals.StatusError, 0
		}
		return regressedHead(k)
	})
	c := compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Equal(t, reports.OutcomeErrored, c.Verdict.Outcome)
	assert.Equal(t, 2, c.Verdict.ExitCode)
	assert.Contains(t, c.Verdict.Reason, "1 cell errored")
	assert.Contains(t, c.Verdict.Reason, "errors are not regressions")
	assert.Contains(t, c.Verdict.Reason, "head case-05 · openai:gpt-5 · candidate · epoch 2")
	require.Len(t, c.Errored, 1)
	assert.Equal(t, 119, c.Overall.Pairs, "the errored pair is left out of the statistics")

	head = makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		if caseNum(k) == 7 && k.Epoch == 3 && k.Model == "anthropic:claude-sonnet-4-6" && k.Profile == "baseline" {
			return "", 0 // missing
		}
		return baseOutcome(k)
	})
	c = compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Equal(t, reports.OutcomeIncomplete, c.Verdict.Outcome)
	assert.Equal(t, 2, c.Verdict.ExitCode)
	require.Len(t, c.MissingInHead, 1)
	assert.Equal(t, "case-07", c.MissingInHead[0].Case)
	assert.Empty(t, c.MissingInBase)
}

func TestCompareIncompatibleInputs(t *testing.T) {
	base := makeRun(t, 3, 1, baseOutcome)
	tests := []struct {
		name   string
		mutate func(r *reports.Run)
		want   string
	}{
		{"other suite digest", func(r *reports.Run) { r.Summary.SuiteDigest = "sha256:def" }, "suite_digest differs (base sha256:abc, head sha256:def)"},
		{"other suite", func(r *reports.Run) { r.Summary.Suite = "nightly" }, `different suites (base "constructed", head "nightly")`},
		{"other schema", func(r *reports.Run) { r.Summary.SchemaVersion = 2 }, "schema versions differ (base 1, head 2)"},
		{"summary only", func(r *reports.Run) { r.Results, r.HasResults = nil, false }, "head has no cell results"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			head := makeRun(t, 3, 1, baseOutcome)
			tc.mutate(head)
			_, err := reports.Compare(base, head, reports.CompareOptions{})
			var ie *reports.IncompatibleError
			require.True(t, errors.As(err, &ie), "got %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCompareIsReproducible(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	head := makeRun(t, 10, 3, regressedHead)
	render := func(seed uint64) string {
		c := compare(t, base, head, reports.CompareOptions{Seed: seed, Resamples: 2000})
		var b bytes.Buffer
		require.NoError(t, reports.RenderComparison(&b, c, reports.FormatJSON))
		return b.String()
	}
	assert.Equal(t, render(3), render(3))
	assert.NotEqual(t, render(3), render(4), "the seed drives the bootstrap")
}

func TestCompareGolden(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	head := makeRun(t, 10, 3, func(k evals.CellKey) (evals.Status, float64) {
		if caseNum(k) == 3 && k.Epoch == 1 {
			return evals.StatusFail, 0.5
		}
		return regressedHead(k)
	})
	diff := "--- base\n+++ head\n@@ tools @@\n-  edit_file\n"
	c := compare(t, base, head, reports.CompareOptions{Seed: 1, AgentDiff: diff})
	for _, tc := range []struct {
		f   reports.Format
		ext string
	}{{reports.FormatTable, ".txt"}, {reports.FormatMD, ".md"}, {reports.FormatJSON, ".json"}} {
		t.Run(string(tc.f), func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, reports.RenderComparison(&b, c, tc.f))
			snaps.WithConfig(snaps.Ext(tc.ext)).MatchStandaloneSnapshot(t, b.String())
		})
	}
	var b bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&b))
	assert.True(t, strings.Contains(b.String(), "```diff\n--- base\n+++ head\n@@ tools @@\n-  edit_file\n```"))
}

// The fixture run compared with itself has errored and missing cells, so it
// cannot be judged, and says which.
func TestCompareFixtureWithItself(t *testing.T) {
	r := loadFixture(t)
	c, err := reports.Compare(r, r, reports.CompareOptions{})
	require.NoError(t, err)
	assert.Equal(t, reports.OutcomeErrored, c.Verdict.Outcome)
	assert.Len(t, c.Errored, 2) // the same cell, on both sides
	assert.Len(t, c.MissingInBase, 1)
	assert.Len(t, c.MissingInHead, 1)
}

func TestCompareSchemaIsStrict(t *testing.T) {
	c := compare(t, makeRun(t, 3, 2, baseOutcome), makeRun(t, 3, 2, regressedHead), reports.CompareOptions{Resamples: 100})
	b, err := c.JSON()
	require.NoError(t, err)
	for _, edit := range [][2]string{
		{`"outcome": "`, `"outcome": "x`},
		{`"schema": "dageval.compare/v1"`, `"schema": "dageval.compare/v2"`},
		{`"agent_diff": ""`, `"agent_diff": "", "surprise": true`},
		{`"mcnemar_p": `, `"mcnemar_p": 2, "was": `},
	} {
		bad := strings.Replace(string(b), edit[0], edit[1], 1)
		require.NotEqual(t, string(b), bad, edit[0])
		assert.Error(t, reports.ValidateCompareJSON([]byte(bad)), edit[1])
	}
}
