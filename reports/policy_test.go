package reports_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/reports"
)

// modelRun builds a run of cases × models × epochs with one profile, the
// shape of observation 1 of issue 12; pass(case, model, epoch) decides
// each cell.
func modelRun(models []string, cases, epochs int, pass func(c int, m string, e int) bool) *reports.Run {
	r := &reports.Run{HasResults: true, Details: map[string]*evals.CellDetail{}}
	s := &r.Summary
	s.SchemaVersion, s.Suite, s.SuiteDigest, s.Mode = evals.SchemaVersion, "sim", "sha256:sim", "live"
	for _, m := range models {
		g := evals.GroupSummary{Model: m, Profile: "p", Expected: cases * epochs, K: epochs}
		for c := 1; c <= cases; c++ {
			for e := 1; e <= epochs; e++ {
				k := evals.CellKey{Case: fmt.Sprintf("case-%02d", c), Model: m, Profile: "p", Epoch: e}
				cr := evals.CellResult{CellKey: k, ID: fmt.Sprintf("%s-%s-%d", k.Case, m, e), Status: evals.StatusFail, CostKnown: true}
				if pass(c, m, e) {
					cr.Status, cr.Score = evals.StatusPass, 1
					g.Passed++
				}
				r.Results = append(r.Results, cr)
				g.Cells++
			}
		}
		s.Groups = append(s.Groups, g)
		s.ExpectedCells += g.Expected
		s.ActualCells += g.Cells
	}
	s.Complete = true
	return r
}

var twoModels = []string{"openai:gpt-5", "anthropic:claude-sonnet-4-6"}

// TestPoliciesOnObservation1 is observation 1 of issue 12: 5 cases × 2
// models at 1 epoch, both groups from 100% to 40% (6 pass → fail, 0 fail →
// pass). compare exited 0, "inconclusive … within noise". The default
// policy now fails it, with the MDE and the epochs that would decide; the
// significant policy, chosen explicitly, still passes it as inconclusive
// and says how many epochs would decide.
func TestPoliciesOnObservation1(t *testing.T) {
	base := modelRun(twoModels, 5, 1, func(int, string, int) bool { return true })
	head := modelRun(twoModels, 5, 1, func(c int, _ string, _ int) bool { return c > 3 })

	c := compare(t, base, head, reports.CompareOptions{Seed: 1})
	assert.Equal(t, 6, c.Overall.Regressions)
	assert.Equal(t, reports.OutcomeUnderpowered, c.Verdict.Outcome)
	assert.Equal(t, 1, c.Verdict.ExitCode)
	assert.Contains(t, c.Verdict.Reason, "overall pass rate fell 60.0 pp (6 pass → fail, 0 fail → pass in 10 pairs)")
	assert.Contains(t, c.Verdict.Reason, "10 pairs can only tell changes of 80.0 pp or more from noise")
	assert.Contains(t, c.Verdict.Reason, "more epoch per cell (--epochs 2) would decide")
	assert.Contains(t, c.Verdict.Reason, "new failures: case-01 · openai:gpt-5 · p, case-02 · openai:gpt-5 · p")

	c = compare(t, base, head, reports.CompareOptions{Seed: 1, Policy: reports.PolicySignificant})
	assert.Equal(t, reports.OutcomeInconclusive, c.Verdict.Outcome)
	assert.Equal(t, 0, c.Verdict.ExitCode)
	assert.Contains(t, c.Verdict.Reason, "detecting 60.0 pp would need about")
	assert.Contains(t, c.Verdict.Reason, "more epochs per cell")

	c = compare(t, base, head, reports.CompareOptions{Seed: 1, Policy: reports.PolicyStrict})
	assert.Equal(t, 1, c.Verdict.ExitCode)

	// With epochs: 4 the same change is significant under every policy.
	base4 := modelRun(twoModels, 5, 4, func(int, string, int) bool { return true })
	head4 := modelRun(twoModels, 5, 4, func(c int, _ string, _ int) bool { return c > 3 })
	for _, p := range reports.Policies {
		c = compare(t, base4, head4, reports.CompareOptions{Seed: 1, Policy: p})
		assert.Equal(t, reports.OutcomeRegression, c.Verdict.Outcome, p)
	}
}

func TestPoliciesPassWhatIsNotADrop(t *testing.T) {
	all := func(int, string, int) bool { return true }
	base := modelRun(twoModels, 5, 4, all)
	for _, p := range reports.Policies {
		c := compare(t, base, modelRun(twoModels, 5, 4, all), reports.CompareOptions{Seed: 1, Policy: p})
		assert.Equal(t, reports.OutcomeUnchanged, c.Verdict.Outcome, "identical runs pass under %s", p)
	}
	// One flip among 40 pairs: no policy but strict reads a drop into it.
	oneFlip := modelRun(twoModels, 5, 4, func(c int, m string, e int) bool { return !(c == 2 && m == twoModels[0] && e == 3) })
	for _, p := range []reports.Policy{reports.PolicyPowered, reports.PolicySignificant} {
		c := compare(t, base, oneFlip, reports.CompareOptions{Seed: 1, Policy: p})
		assert.Equal(t, reports.OutcomeInconclusive, c.Verdict.Outcome, p)
		assert.Equal(t, 0, c.Verdict.ExitCode, p)
	}
	// Strict would fail a stable new failure, but this case still passes
	// 3 of 4 head epochs: it is flaky, not newly failing.
	c := compare(t, base, oneFlip, reports.CompareOptions{Seed: 1, Policy: reports.PolicyStrict})
	assert.Equal(t, 0, c.Verdict.ExitCode)

	// At 1 epoch a single flip is a stable new failure, which only strict fails.
	base1 := modelRun(twoModels, 20, 1, all)
	flip1 := modelRun(twoModels, 20, 1, func(c int, m string, _ int) bool { return !(c == 7 && m == twoModels[1]) })
	assert.Equal(t, 0, compare(t, base1, flip1, reports.CompareOptions{Seed: 1}).Verdict.ExitCode)
	c = compare(t, base1, flip1, reports.CompareOptions{Seed: 1, Policy: reports.PolicyStrict})
	assert.Equal(t, reports.OutcomeNewFailures, c.Verdict.Outcome)
	assert.Contains(t, c.Verdict.Reason, "strict policy: 1 case passed in every base epoch and fail in every head epoch: case-07 · anthropic:claude-sonnet-4-6 · p")
}

// simDesign is a suite shape of the error-rate simulation.
type simDesign struct {
	name          string
	cases, epochs int
}

// simScenario changes each (case, model)'s pass probability for the head run.
type simScenario struct {
	name string
	head func(p float64, broken bool) float64
}

var (
	simDesigns = []simDesign{{"5 cases × 2 models × 1 epoch", 5, 1}, {"10 cases × 2 models × 3 epochs", 10, 3}, {"25 cases × 2 models × 4 epochs", 25, 4}}
	simScens   = []simScenario{
		{"identical", func(p float64, _ bool) float64 { return p }},
		{"−10 pp", func(p float64, _ bool) float64 { return math.Max(0, p-0.1) }},
		{"30% of cases break", func(p float64, broken bool) float64 {
			if broken {
				return 0
			}
			return p
		}},
	}
)

// simReps is how many suites each cell of the README's table simulates.
const simReps = 400

// TestPolicyErrorRates measures, by simulation, how often each policy fails
// the gate: on two runs identical in distribution (the false-alarm rate)
// and after a change (the detection rate), and checks the README's table
// against the measurement. Every (case, model) draws its pass probability
// once per simulated suite: 0.98 (60% of them), 0.7 (25%) or 0.1 (15%), so
// a suite passes about 78% of its cells and a fifth of its cases are
// flaky; epochs are independent draws. The runs are seeded, so the
// numbers are the same on every machine; DAGEVAL_POLICY_TABLE=1 prints the
// table to paste into the README after a deliberate change.
func TestPolicyErrorRates(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	rng := rand.New(rand.NewPCG(12, 2026))
	type cellKey struct{ design, scen int }
	rates := map[cellKey]map[reports.Policy]float64{}
	checked := 0
	for di, d := range simDesigns {
		for si, sc := range simScens {
			fails := map[reports.Policy]int{}
			for range simReps {
				n := d.cases * len(twoModels)
				p, q := make([]float64, n), make([]float64, n)
				for i := range n {
					switch u := rng.Float64(); {
					case u < 0.6:
						p[i] = 0.98
					case u < 0.85:
						p[i] = 0.7
					default:
						p[i] = 0.1
					}
					q[i] = sc.head(p[i], rng.Float64() < 0.3)
				}
				draw := func(probs []float64) *reports.Run {
					return modelRun(twoModels, d.cases, d.epochs, func(c int, m string, _ int) bool {
						i := (c - 1) * len(twoModels)
						if m == twoModels[1] {
							i++
						}
						return rng.Float64() < probs[i]
					})
				}
				base, head := draw(p), draw(q)
				// One comparison serves all three policies: they share
				// the statistics and differ only in what fails (checked
				// against Compare itself on the first suites).
				c, err := reports.Compare(base, head, reports.CompareOptions{Seed: 1, Resamples: 200})
				require.NoError(t, err)
				regression := c.Verdict.Outcome == reports.OutcomeRegression
				fail := map[reports.Policy]bool{
					reports.PolicySignificant: regression,
					reports.PolicyPowered:     regression || len(c.Underpowered) > 0,
					reports.PolicyStrict:      regression || len(c.Underpowered) > 0 || len(c.NewFailures) > 0,
				}
				for _, pol := range reports.Policies {
					if checked < 30 {
						cp, err := reports.Compare(base, head, reports.CompareOptions{Policy: pol, Seed: 1, Resamples: 200})
						require.NoError(t, err)
						require.Equal(t, cp.Verdict.ExitCode == 1, fail[pol], "%s: %s", pol, cp.Verdict.Reason)
					}
					if fail[pol] {
						fails[pol]++
					}
				}
				checked++
			}
			rates[cellKey{di, si}] = map[reports.Policy]float64{}
			for _, pol := range reports.Policies {
				rates[cellKey{di, si}][pol] = float64(fails[pol]) / simReps
			}
		}
	}

	// The table, as the README has it: a row per policy and design.
	var b strings.Builder
	b.WriteString("| policy | suite | false alarm (identical) |")
	for _, sc := range simScens[1:] {
		b.WriteString(" detects " + sc.name + " |")
	}
	b.WriteString("\n|---|---|---:|" + strings.Repeat("---:|", len(simScens)-1) + "\n")
	for _, pol := range reports.Policies {
		for di, d := range simDesigns {
			fmt.Fprintf(&b, "| `%s` | %s |", pol, d.name)
			for si := range simScens {
				fmt.Fprintf(&b, " %.2f |", rates[cellKey{di, si}][pol])
			}
			b.WriteString("\n")
		}
	}
	if os.Getenv("DAGEVAL_POLICY_TABLE") != "" {
		t.Logf("measured error rates (%d suites each):\n%s", simReps, b.String())
	}

	// Every policy's false alarms stay bounded, and at 1 epoch the
	// significant policy misses what the default catches.
	for di := range simDesigns {
		assert.LessOrEqual(t, rates[cellKey{di, 0}][reports.PolicySignificant], 0.05+0.03, "significant keeps α")
	}
	assert.Greater(t, rates[cellKey{0, 2}][reports.PolicyPowered], rates[cellKey{0, 2}][reports.PolicySignificant]+0.3)

	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| ([^|]+) \\|((?: [0-9.]+ \\|)+)$")
	found := 0
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		pol, design := reports.Policy(m[1]), strings.TrimSpace(m[2])
		di := -1
		for i, d := range simDesigns {
			if d.name == design {
				di = i
			}
		}
		if di < 0 {
			continue
		}
		found++
		for si, cell := range strings.Fields(strings.ReplaceAll(m[3], "|", " ")) {
			v, err := strconv.ParseFloat(cell, 64)
			require.NoError(t, err)
			assert.InDelta(t, rates[cellKey{di, si}][pol], v, 0.011, "README error rate of %s on %s, %s; the measured table is:\n%s", pol, design, simScens[si].name, b.String())
		}
	}
	assert.Equal(t, len(reports.Policies)*len(simDesigns), found, "the README has a row per policy and suite; the measured table is:\n%s", b.String())
}

// Pairing by role: a swapped model pairs by --pair (or alias) when the
// cases are the same, and the comparison names both models.
func TestComparePairsSwappedModels(t *testing.T) {
	all := func(int, string, int) bool { return true }
	base := modelRun(twoModels, 3, 1, all)
	base.Summary.CasesDigest = "sha256:cases"
	head := modelRun([]string{"openai:gpt-5-mini", twoModels[1]}, 3, 1, func(c int, m string, _ int) bool { return !(c == 1 && m == "openai:gpt-5-mini") })
	head.Summary.SuiteDigest, head.Summary.CasesDigest = "sha256:other", "sha256:cases"

	_, err := reports.Compare(base, head, reports.CompareOptions{})
	var ie *reports.IncompatibleError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "pass --pair openai:gpt-5=openai:gpt-5-mini")

	c := compare(t, base, head, reports.CompareOptions{Pairs: []reports.ModelPair{{Base: "openai:gpt-5", Head: "openai:gpt-5-mini"}}})
	assert.Equal(t, []reports.ModelPair{{Base: "openai:gpt-5", Head: "openai:gpt-5-mini"}}, c.Pairs)
	require.Len(t, c.Groups, 2)
	assert.Equal(t, "openai:gpt-5-mini", c.Groups[0].HeadModel)
	assert.Empty(t, c.Groups[1].HeadModel)
	require.Len(t, c.NewFailures, 1)
	assert.Equal(t, "openai:gpt-5-mini", c.NewFailures[0].HeadModel)

	for _, tc := range []struct {
		pairs []reports.ModelPair
		want  string
	}{
		{[]reports.ModelPair{{Base: "openai:gpt-4", Head: "openai:gpt-5-mini"}}, "--pair openai:gpt-4=openai:gpt-5-mini: base has no model or alias openai:gpt-4"},
		{[]reports.ModelPair{{Base: "openai:gpt-5", Head: "openai:o3"}}, "head has no model or alias openai:o3"},
		{[]reports.ModelPair{{Base: "openai:gpt-5", Head: "openai:gpt-5-mini"}, {Base: "openai:gpt-5", Head: twoModels[1]}}, "a model can be paired only once"},
	} {
		_, err := reports.Compare(base, head, reports.CompareOptions{Pairs: tc.pairs})
		require.ErrorAs(t, err, &ie)
		assert.Contains(t, err.Error(), tc.want)
	}

	// Different cases are refused whatever the pairing.
	head.Summary.CasesDigest = "sha256:changed"
	_, err = reports.Compare(base, head, reports.CompareOptions{Pairs: []reports.ModelPair{{Base: "openai:gpt-5", Head: "openai:gpt-5-mini"}}})
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "suite_digest differs")
}
