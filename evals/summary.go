package evals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
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
	sum := Summary{
		SchemaVersion: SchemaVersion,
		Suite:         s.Name,
		SuiteDigest:   s.Digest(),
		CasesDigest:   s.CasesDigest(),
		Mode:          mode,
		ExpectedCells: len(cells),
		Groups:        []GroupSummary{},
		Thresholds:    s.Thresholds,
	}
	for i, c := range cells {
		if results[i] == nil {
			sum.Missing = append(sum.Missing, c.CellKey)
		} else {
			sum.ActualCells++
		}
	}
	sum.Complete = sum.ActualCells == sum.ExpectedCells
	for _, m := range s.Models {
		for _, p := range s.Profiles {
			var idx []int
			for i, c := range cells {
				if c.Model == m && c.Profile == p.Name {
					idx = append(idx, i)
				}
			}
			if len(idx) == 0 {
				continue
			}
			g := aggregate(cells, results, idx)
			g.Model, g.Profile = m, p.Name
			sum.Groups = append(sum.Groups, g)
		}
	}
	all := make([]int, len(cells))
	for i := range cells {
		all[i] = i
	}
	sum.Totals = aggregate(cells, results, all)
	sum.Causes = summarizeCauses(results, len(sum.Missing))
	sum.Outcome, sum.Reasons = s.verdict(&sum, tolerate)
	sum.Passed = sum.Outcome == OutcomePassed
	sum.ErrorsTolerated = tolerate && len(sum.Causes) > 0
	return sum
}

func aggregate(cells []Cell, results []*CellResult, idx []int) GroupSummary {
	g := GroupSummary{Expected: len(idx), CostKnown: true}
	var scores float64
	var latencies []*Latency
	type unit struct{ expected, passed int }
	units := map[string]*unit{} // a case within a model × profile, across epochs
	var order []string
	for _, i := range idx {
		c := cells[i]
		key := c.CaseDef.ID + "\x00" + c.Model + "\x00" + c.Profile
		u, ok := units[key]
		if !ok {
			u = &unit{}
			units[key] = u
			order = append(order, key)
		}
		u.expected++
		g.K = max(g.K, c.Epoch)
		r := results[i]
		if r == nil {
			g.Missing++
			g.CostKnown = false
			continue
		}
		g.Cells++
		switch r.Status {
		case StatusPass:
			g.Passed++
			u.passed++
		case StatusError:
			g.Errors++
		default:
			g.Failed++
		}
		scores += r.Score
		g.CostUSD += r.CostUSD
		g.CostKnown = g.CostKnown && r.CostKnown
		g.Tokens.Agent.Add(r.Usage.Agent)
		g.Tokens.Subagents.Add(r.Usage.Subagents)
		g.Tokens.Grader.Add(r.Usage.Grader)
		latencies = append(latencies, r.Latency)
	}
	g.Latency = GroupLatencyOf(latencies)
	if g.Expected > 0 {
		g.PassRate = float64(g.Passed) / float64(g.Expected)
		g.MeanScore = scores / float64(g.Expected)
	}
	g.CI95 = Wilson(g.Passed, g.Expected)
	atK, hatK := 0, 0
	for _, k := range order {
		u := units[k]
		if u.passed > 0 {
			atK++
		}
		if u.passed == u.expected {
			hatK++
		}
	}
	if len(order) > 0 {
		g.PassAtK = float64(atK) / float64(len(order))
		g.PassHatK = float64(hatK) / float64(len(order))
	}
	return g
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
