package evals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/rubrics"
)

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson returns the Wilson score interval of passed successes in n trials
// at 95% confidence; [0, 0] when n is 0.
func Wilson(passed, n int) [2]float64 {
	if n <= 0 {
		return [2]float64{0, 0}
	}
	p := float64(passed) / float64(n)
	fn := float64(n)
	z2 := z95 * z95
	center := (p + z2/(2*fn)) / (1 + z2/fn)
	half := z95 / (1 + z2/fn) * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn))
	return [2]float64{math.Max(0, center-half), math.Min(1, center+half)}
}

// Summarize aggregates the results of a run (nil entries are cells that
// produced no result) into a Summary and judges it: a run with errored or
// missing cells is errored unless the suite tolerates errors, and
// otherwise passes when its thresholds hold. A missing or errored cell
// counts as a failure in every rate.
func (s *Suite) Summarize(cells []Cell, results []*CellResult, mode string) Summary {
	return s.summarize(cells, results, mode, s.TolerateErrors)
}

func (s *Suite) summarize(cells []Cell, results []*CellResult, mode string, tolerate bool) Summary {
	t := s.newTally(cells, mode, tolerate)
	for i := range cells {
		t.add(i, results[i])
	}
	return t.summary()
}

// tally sums up a run's results one cell at a time, in matrix order, so
// that a summary needs no results in memory: the runner streams them from
// its results file into it. Adding in matrix order keeps every sum (the
// scores and costs are floating point) the same however the cells were
// run — in any order, resumed, or on several machines.
type tally struct {
	s        *Suite
	cells    []Cell
	sum      Summary
	tolerate bool
	groups   []*groupTally // by s.Models × s.Profiles
	groupOf  map[[2]string]*groupTally
	all      groupTally
	causes   map[Cause]int
	rate     map[string]*RateLimitCount
}

// groupTally aggregates the cells of one model × profile (or all cells).
type groupTally struct {
	g      GroupSummary
	scores float64
	// lat holds the model time of each fully timed cell, for the
	// percentiles; a few bytes per cell, the one part of a summary that
	// grows with the matrix.
	lat           []int64
	first, firsts int64
	recorded      bool
	// unit is the case × model × profile being counted across its epochs,
	// which are adjacent in matrix order.
	unit                  string
	unitCells, unitPassed int
	units, atK, hatK      int
}

func (s *Suite) newTally(cells []Cell, mode string, tolerate bool) *tally {
	t := &tally{
		s: s, cells: cells, tolerate: tolerate, groupOf: map[[2]string]*groupTally{},
		causes: map[Cause]int{}, rate: map[string]*RateLimitCount{},
		sum: Summary{
			SchemaVersion: SchemaVersion,
			Suite:         s.Name,
			SuiteDigest:   s.Digest(),
			CasesDigest:   s.CasesDigest(),
			Mode:          mode,
			ExpectedCells: len(cells),
			Groups:        []GroupSummary{},
			Thresholds:    s.Thresholds,
		},
	}
	t.all = newGroupTally("", "")
	for _, m := range s.Models {
		for _, p := range s.Profiles {
			g := newGroupTally(m, p.Name)
			t.groups = append(t.groups, &g)
			t.groupOf[[2]string{m, p.Name}] = &g
		}
	}
	return t
}

func newGroupTally(model, profile string) groupTally {
	return groupTally{g: GroupSummary{Model: model, Profile: profile, CostKnown: true}, recorded: true}
}

// add counts cell i of the tally's cells with its result, nil when it
// has none; cells must come in matrix order.
func (t *tally) add(i int, r *CellResult) {
	c := &t.cells[i]
	if r == nil {
		t.sum.Missing = append(t.sum.Missing, c.CellKey)
	} else {
		t.sum.ActualCells++
		if r.Status == StatusError {
			t.causes[cellCause(r)]++
		}
		for _, rl := range r.RateLimits {
			sum, ok := t.rate[rl.Provider]
			if !ok {
				sum = &RateLimitCount{Provider: rl.Provider}
				t.rate[rl.Provider] = sum
			}
			sum.add(rl)
		}
	}
	if g, ok := t.groupOf[[2]string{c.Model, c.Profile}]; ok {
		g.add(c, r)
	}
	t.all.add(c, r)
}

func (g *groupTally) add(c *Cell, r *CellResult) {
	unit := c.CaseDef.ID + "\x00" + c.Model + "\x00" + c.Profile
	if unit != g.unit {
		g.closeUnit()
		g.unit = unit
	}
	g.unitCells++
	g.g.Expected++
	g.g.K = max(g.g.K, c.Epoch)
	if r == nil {
		g.g.Missing++
		g.g.CostKnown = false
		return
	}
	g.g.Cells++
	switch r.Status {
	case StatusPass:
		g.g.Passed++
		g.unitPassed++
	case StatusError:
		g.g.Errors++
	default:
		g.g.Failed++
	}
	g.scores += r.Score
	g.g.CostUSD += r.CostUSD
	g.g.CostKnown = g.g.CostKnown && r.CostKnown
	g.g.Tokens.Agent.Add(r.Usage.Agent)
	g.g.Tokens.Subagents.Add(r.Usage.Subagents)
	g.g.Tokens.Grader.Add(r.Usage.Grader)
	if l := r.Latency; l.Known() {
		g.lat = append(g.lat, l.ModelMS)
		g.recorded = g.recorded && l.Recorded
		if l.FirstEventMS > 0 {
			g.first += l.FirstEventMS
			g.firsts++
		}
	}
}

// closeUnit counts the finished case × model × profile for pass@k and pass^k.
func (g *groupTally) closeUnit() {
	if g.unitCells == 0 {
		return
	}
	g.units++
	if g.unitPassed > 0 {
		g.atK++
	}
	if g.unitPassed == g.unitCells {
		g.hatK++
	}
	g.unitCells, g.unitPassed = 0, 0
}

func (g *groupTally) summary() GroupSummary {
	g.closeUnit()
	out := g.g
	if n := len(g.lat); n > 0 {
		slices.Sort(g.lat)
		var sum int64
		for _, v := range g.lat {
			sum += v
		}
		out.Latency = &GroupLatency{Cells: n, MeanMS: sum / int64(n), P50MS: nearestRank(g.lat, 50), P95MS: nearestRank(g.lat, 95), Recorded: g.recorded}
		if g.firsts > 0 {
			out.Latency.FirstEventMS = g.first / g.firsts
		}
	}
	if out.Expected > 0 {
		out.PassRate = float64(out.Passed) / float64(out.Expected)
		out.MeanScore = g.scores / float64(out.Expected)
	}
	out.CI95 = Wilson(out.Passed, out.Expected)
	if g.units > 0 {
		out.PassAtK = float64(g.atK) / float64(g.units)
		out.PassHatK = float64(g.hatK) / float64(g.units)
	}
	return out
}

// summary judges what was added.
func (t *tally) summary() Summary {
	sum := t.sum
	sum.Complete = sum.ActualCells == sum.ExpectedCells
	for _, g := range t.groups {
		if g.g.Expected > 0 {
			sum.Groups = append(sum.Groups, g.summary())
		}
	}
	sum.Totals = t.all.summary()
	t.causes[CauseMissing] += len(sum.Missing)
	for _, c := range causeOrder {
		if n := t.causes[c]; n > 0 {
			sum.Causes = append(sum.Causes, CauseCount{Cause: c, Cells: n})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.rate)) {
		sum.RateLimits = append(sum.RateLimits, *t.rate[name])
	}
	sum.Outcome, sum.Reasons = t.s.verdict(&sum, t.tolerate)
	sum.Passed = sum.Outcome == OutcomePassed
	sum.ErrorsTolerated = t.tolerate && len(sum.Causes) > 0
	return sum
}

// verdict decides the run's outcome. Errored or missing cells decide it
// first, since no threshold can be checked on cells nobody could judge;
// tolerated, they count as failures. Then every model × profile must meet
// the rate thresholds and the whole run the cost threshold; without
// thresholds, every cell of a complete matrix must pass.
func (s *Suite) verdict(sum *Summary, tolerate bool) (Outcome, []string) {
	if len(sum.Causes) > 0 && !tolerate {
		reasons := []string{erroredReason(sum.Causes)}
		if len(sum.Causes) > 1 {
			reasons = append(reasons, causeReasons(sum.Causes)...)
		}
		return OutcomeErrored, reasons
	}
	if ok, reasons := s.thresholdVerdict(sum); !ok {
		return OutcomeFailed, reasons
	}
	return OutcomePassed, nil
}

// thresholdVerdict checks the thresholds, counting errored and missing
// cells as failures.
func (s *Suite) thresholdVerdict(sum *Summary) (bool, []string) {
	var reasons []string
	t := s.Thresholds
	if t == nil {
		tot := sum.Totals
		if n := tot.Failed; n > 0 {
			reasons = append(reasons, plural(n, "cell failed", "cells failed"))
		}
		if n := tot.Errors; n > 0 {
			reasons = append(reasons, plural(n, "cell errored", "cells errored"))
		}
		if n := tot.Missing; n > 0 {
			reasons = append(reasons, plural(n, "cell is missing", "cells are missing"))
		}
		return len(reasons) == 0, reasons
	}
	for _, g := range sum.Groups {
		name := g.Model + " × " + g.Profile
		check := func(what string, got float64, min *float64) {
			if min != nil && got < *min-1e-12 {
				reasons = append(reasons, fmt.Sprintf("%s: %s %.4g is below the threshold %.4g", name, what, got, *min))
			}
		}
		check("pass rate", g.PassRate, t.PassRate)
		check("mean score", g.MeanScore, t.MeanScore)
		check("pass^k", g.PassHatK, t.PassHatK)
	}
	if t.MaxCostUSD != nil {
		switch {
		case !sum.Totals.CostKnown:
			reasons = append(reasons, fmt.Sprintf("the run's cost is not fully known (a model has no price or a cell is missing), so max_cost_usd $%g cannot be checked", *t.MaxCostUSD))
		case sum.Totals.CostUSD > *t.MaxCostUSD:
			reasons = append(reasons, fmt.Sprintf("the run cost $%.4f, over the threshold $%g", sum.Totals.CostUSD, *t.MaxCostUSD))
		}
	}
	return len(reasons) == 0, reasons
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Digest fingerprints what the suite asks (its name, the roles of its
// models, profile names and cases with their inputs, files, tools, rubrics
// and checks) but not how it is run or which agent and profile contents
// answer it, so that runs of a changed agent or profile still pair with a
// baseline. A model's role is its alias when it has one, so swapping the
// model behind an alias keeps the digest; without aliases it is the model
// spec, and the digest is what it always was.
func (s *Suite) Digest() string { return s.digest(true) }

// CasesDigest fingerprints the suite as Digest does but without its
// models, so compare can pair two runs that differ only in their models
// when it is told how they pair (compare --pair).
func (s *Suite) CasesDigest() string { return s.digest(false) }

func (s *Suite) digest(withModels bool) string {
	type caseView struct {
		ID    string `json:"id"`
		Input string `json:"input"`
		// History is part of what the case asks; its agent override is not
		// (like the suite's agent, it is what answers).
		History []llm.Message            `json:"history,omitempty"`
		Files   map[string]string        `json:"files,omitempty"`
		Tools   map[string]*ToolBehavior `json:"tools,omitempty"`
		Rubric  *rubrics.Rubric          `json:"rubric,omitempty"`
		Checks  []checkView              `json:"checks,omitempty"`
		Tags    []string                 `json:"tags,omitempty"`
		Models  []string                 `json:"models,omitempty"`
	}
	type casesView struct {
		Name     string                   `json:"name"`
		Profiles []string                 `json:"profiles"`
		Tools    map[string]*ToolBehavior `json:"tools,omitempty"`
		Cases    []caseView               `json:"cases"`
	}
	roles := func(models []string) []string {
		if models == nil || !withModels {
			return nil
		}
		out := make([]string, len(models))
		for i, m := range models {
			out[i] = s.Role(m)
		}
		return out
	}
	cv := casesView{Name: s.Name, Tools: s.Tools}
	for _, p := range s.Profiles {
		cv.Profiles = append(cv.Profiles, p.Name)
	}
	for _, c := range s.Cases {
		v := caseView{ID: c.ID, Input: c.Input, History: c.History, Files: c.Files, Tools: c.Tools, Rubric: c.Rubric, Tags: c.Tags, Models: roles(c.Models)}
		for _, ch := range c.Checks {
			v.Checks = append(v.Checks, checkView{Kind: ch.Kind(), Spec: ch})
		}
		cv.Cases = append(cv.Cases, v)
	}
	var view any = cv
	if withModels {
		// The field order of the digest before CasesDigest existed.
		view = struct {
			Name     string                   `json:"name"`
			Models   []string                 `json:"models"`
			Profiles []string                 `json:"profiles"`
			Tools    map[string]*ToolBehavior `json:"tools,omitempty"`
			Cases    []caseView               `json:"cases"`
		}{cv.Name, roles(s.Models), cv.Profiles, cv.Tools, cv.Cases}
	}
	raw, err := json.Marshal(view)
	if err != nil {
		// Every part is plain data; a failure here is a bug worth seeing.
		raw = []byte(strings.ToUpper(err.Error()))
	}
	h := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(h[:])
}

type checkView struct {
	Kind string        `json:"kind"`
	Spec rubrics.Check `json:"spec"`
}
