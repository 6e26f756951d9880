package rubrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// TrajectoryMode says how expected calls are compared with a run's calls.
type TrajectoryMode string

// Trajectory modes. Matching of expected to actual calls is a maximum
// bipartite matching, so permissive matchers and repeated tools never cause
// false failures the way first-fit (greedy) matching does.
const (
	// TrajectoryStrict: the same calls in the same order and the same
	// number; calls requested together in one model turn may come in any order.
	// Score: matched positions / max(expected, actual).
	TrajectoryStrict TrajectoryMode = "strict"
	// TrajectoryUnordered: the same calls in any order, no more, no fewer.
	// Score: 2·matched / (expected + actual).
	TrajectoryUnordered TrajectoryMode = "unordered"
	// TrajectorySuperset: every expected call was made; extra calls are fine.
	// Score: matched / expected.
	TrajectorySuperset TrajectoryMode = "superset"
	// TrajectorySubset: every call made was an expected one; expected calls
	// may be missing. Score: matched / actual.
	TrajectorySubset TrajectoryMode = "subset"
	// TrajectoryInOrder: the expected calls appear in this order, with any
	// other calls in between. Score: longest in-order match / expected.
	TrajectoryInOrder TrajectoryMode = "in_order"
	// TrajectoryBefore: for each consecutive pair A, B of expected calls, A
	// was called, B was called after it, and B was never called before the
	// first A. Score: satisfied pairs / pairs.
	TrajectoryBefore TrajectoryMode = "before"
)

var trajectoryModes = []TrajectoryMode{TrajectoryStrict, TrajectoryUnordered, TrajectorySuperset, TrajectorySubset, TrajectoryInOrder, TrajectoryBefore}

// Scopes name which runs a check looks at.
const (
	// ScopeMain is the root agent's run.
	ScopeMain = "main"
	// ScopeAll is every run: the root agent and all subagents.
	ScopeAll = "all"
)

const scoreEpsilon = 1e-9

// TrajectoryCheck compares a run's tool calls with expected calls.
type TrajectoryCheck struct {
	Mode  TrajectoryMode `json:"mode"`
	Calls []CallMatcher  `json:"calls"`
	// Agent selects the run: "" or "main" for the root agent; "all" for every
	// call of the run tree in the order they happened; a subagent type
	// ("researcher") or agent path ("main/task:researcher") for every run of
	// that subagent, each of which must pass.
	Agent string `json:"agent,omitempty"`
	// Threshold is the score needed to pass, in (0, 1]; 0 means 1.
	Threshold float64 `json:"threshold,omitempty"`
}

func (c *TrajectoryCheck) threshold() float64 {
	if c.Threshold == 0 {
		return 1
	}
	return c.Threshold
}

// Kind implements Check.
func (c *TrajectoryCheck) Kind() string { return KindTrajectory }

// Name implements Check.
func (c *TrajectoryCheck) Name() string {
	if c.Agent == "" || c.Agent == ScopeMain {
		return fmt.Sprintf("trajectory(%s)", c.Mode)
	}
	return fmt.Sprintf("trajectory(%s @%s)", c.Mode, c.Agent)
}

// Validate checks the mode, matchers and threshold.
func (c *TrajectoryCheck) Validate() error {
	known := false
	for _, m := range trajectoryModes {
		known = known || m == c.Mode
	}
	if !known {
		return fmt.Errorf("unknown trajectory mode %q (want %s)", c.Mode, modeList())
	}
	if c.Mode == TrajectoryBefore && len(c.Calls) < 2 {
		return errors.New("mode before needs at least two calls: each must come before the next")
	}
	if c.Threshold < 0 || c.Threshold > 1 {
		return fmt.Errorf("threshold must be in (0, 1], got %v", c.Threshold)
	}
	for i, m := range c.Calls {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("calls[%d]: %w", i, err)
		}
	}
	return nil
}

func modeList() string {
	s := make([]string, len(trajectoryModes))
	for i, m := range trajectoryModes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// Evaluate implements Check.
func (c *TrajectoryCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	switch c.Agent {
	case "", ScopeMain:
		var calls []ToolCall
		if rec.Trajectory != nil {
			calls = rec.Trajectory.Calls
		}
		res.Score, res.Detail = c.score(calls)
	case ScopeAll:
		res.Score, res.Detail = c.score(rec.Trajectory.Flatten())
	default:
		runs := selectRuns(rec, c.Agent)
		if len(runs) == 0 {
			res.Detail = fmt.Sprintf("no run of %s was found, so its trajectory cannot be checked", c.Agent)
			return res
		}
		passed := true
		var details []string
		for i, r := range runs {
			s, d := c.score(r.Calls)
			res.Score += s
			passed = passed && s >= c.threshold()-scoreEpsilon
			if len(runs) > 1 {
				d = fmt.Sprintf("run %d of %d (%s): %s", i+1, len(runs), r.Agent, d)
			}
			details = append(details, d)
		}
		res.Score /= float64(len(runs))
		res.Passed = passed
		res.Detail = strings.Join(details, "; ")
		return res
	}
	res.Passed = res.Score >= c.threshold()-scoreEpsilon
	return res
}

// selectRuns returns the runs a subagent scope names: by agent path when it
// contains a slash, else by subagent type.
func selectRuns(rec *Record, scope string) []*Trajectory {
	var out []*Trajectory
	for _, r := range rec.Runs {
		if r == rec.Trajectory {
			continue
		}
		if strings.Contains(scope, "/") && r.Agent == scope || !strings.Contains(scope, "/") && r.Subagent == scope {
			out = append(out, r)
		}
	}
	return out
}

// score computes the mode's score for a run's calls and says what was
// expected and what happened.
func (c *TrajectoryCheck) score(actual []ToolCall) (float64, string) {
	exp := c.Calls
	ok := matchTable(exp, actual)
	nE, nA := len(exp), len(actual)
	head := fmt.Sprintf("expected %s [%s]; actual [%s]", c.Mode, matchersText(exp), callsText(actual))
	switch c.Mode {
	case TrajectoryStrict:
		m := strictMatches(ok, actual)
		denom := max(nE, nA)
		if denom == 0 {
			return 1, head
		}
		return float64(m) / float64(denom), fmt.Sprintf("%s; %d of %d positions match", head, m, denom)
	case TrajectoryUnordered, TrajectorySuperset, TrajectorySubset:
		m, matchE, matchA := maxMatching(nE, nA, ok)
		var score float64
		switch c.Mode {
		case TrajectoryUnordered:
			score = ratio(2*m, nE+nA)
		case TrajectorySuperset:
			score = ratio(m, nE)
		default:
			score = ratio(m, nA)
		}
		detail := fmt.Sprintf("%s; %d matched", head, m)
		if c.Mode != TrajectorySubset {
			if missing := unmatchedExpected(exp, matchE); missing != "" {
				detail += "; missing: " + missing
			}
		}
		if c.Mode != TrajectorySuperset {
			if extra := unmatchedActual(actual, matchA); extra != "" {
				detail += "; unexpected: " + extra
			}
		}
		return score, detail
	case TrajectoryInOrder:
		m, matchedE := longestInOrder(ok, nE, nA)
		detail := fmt.Sprintf("%s; %d of %d found in order", head, m, nE)
		if missing := unmatchedExpected(exp, matchedE); missing != "" {
			detail += "; not found in order: " + missing
		}
		return ratio(m, nE), detail
	case TrajectoryBefore:
		good := 0
		var broken []string
		for k := 0; k+1 < nE; k++ {
			if why := before(ok[k], ok[k+1]); why == "" {
				good++
			} else {
				broken = append(broken, fmt.Sprintf("%s before %s: %s", exp[k].String(), exp[k+1].String(), why))
			}
		}
		detail := fmt.Sprintf("%s; %d of %d orderings hold", head, good, nE-1)
		if len(broken) > 0 {
			detail += "; " + strings.Join(broken, "; ")
		}
		return ratio(good, nE-1), detail
	}
	return 0, "unknown mode"
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// matchTable evaluates every expected matcher against every actual call once.
func matchTable(exp []CallMatcher, actual []ToolCall) [][]bool {
	ok := make([][]bool, len(exp))
	for i, m := range exp {
		ok[i] = make([]bool, len(actual))
		for j, c := range actual {
			ok[i][j] = m.Match(c)
		}
	}
	return ok
}

// maxMatching finds a maximum matching between expected (rows) and actual
// (columns) calls with augmenting paths (Kuhn's algorithm). matchE[i] is the
// actual call matched to expected i, or -1; matchA likewise.
func maxMatching(nE, nA int, ok [][]bool) (int, []int, []int) {
	matchE := make([]int, nE)
	matchA := make([]int, nA)
	for i := range matchE {
		matchE[i] = -1
	}
	for j := range matchA {
		matchA[j] = -1
	}
	seen := make([]bool, nA)
	var augment func(i int) bool
	augment = func(i int) bool {
		for j := range nA {
			if !ok[i][j] || seen[j] {
				continue
			}
			seen[j] = true
			if matchA[j] < 0 || augment(matchA[j]) {
				matchA[j], matchE[i] = i, j
				return true
			}
		}
		return false
	}
	size := 0
	for i := range nE {
		clear(seen)
		if augment(i) {
			size++
		}
	}
	return size, matchE, matchA
}

// strictMatches counts positions that match in order, letting the calls of
// one model turn (consecutive calls sharing a step) match the expected calls
// at those positions in any order.
func strictMatches(ok [][]bool, actual []ToolCall) int {
	nE := len(ok)
	total := 0
	for s := 0; s < len(actual) && s < nE; {
		e := s + 1
		for e < len(actual) && actual[e].Step == actual[s].Step && actual[s].Step != 0 {
			e++
		}
		hi := min(e, nE)
		sub := make([][]bool, hi-s)
		for i := range sub {
			sub[i] = ok[s+i][s:e]
		}
		m, _, _ := maxMatching(hi-s, e-s, sub)
		total += m
		s = e
	}
	return total
}

// longestInOrder is the longest common subsequence of expected matchers and
// actual calls; it returns its length and, per expected call, the actual
// call it used (-1 when not part of it).
func longestInOrder(ok [][]bool, nE, nA int) (int, []int) {
	dp := make([][]int, nE+1)
	for i := range dp {
		dp[i] = make([]int, nA+1)
	}
	for i := nE - 1; i >= 0; i-- {
		for j := nA - 1; j >= 0; j-- {
			best := max(dp[i+1][j], dp[i][j+1])
			if ok[i][j] {
				best = max(best, 1+dp[i+1][j+1])
			}
			dp[i][j] = best
		}
	}
	used := make([]int, nE)
	for i := range used {
		used[i] = -1
	}
	i, j := 0, 0
	for i < nE && j < nA {
		switch {
		case ok[i][j] && dp[i][j] == 1+dp[i+1][j+1]:
			used[i] = j
			i++
			j++
		case dp[i][j+1] >= dp[i+1][j]:
			// On ties keep the earlier expected calls: skip the actual call.
			j++
		default:
			i++
		}
	}
	return dp[0][0], used
}

// before checks one "A before B" ordering and says why it fails ("" when it holds).
func before(a, b []bool) string {
	firstA, firstB := -1, -1
	for j := range a {
		if a[j] && firstA < 0 {
			firstA = j
		}
		if b[j] && firstB < 0 {
			firstB = j
		}
	}
	switch {
	case firstA < 0 && firstB < 0:
		return "neither was called"
	case firstA < 0:
		return "the first was never called"
	case firstB < 0:
		return "the second was never called"
	case firstB < firstA:
		return fmt.Sprintf("the second was called first (call %d, before call %d)", firstB+1, firstA+1)
	}
	for j := firstA + 1; j < len(b); j++ {
		if b[j] {
			return ""
		}
	}
	return "the second was only called together with the first"
}

func unmatchedExpected(exp []CallMatcher, match []int) string {
	var out []string
	for i, j := range match {
		if j < 0 {
			out = append(out, exp[i].String())
		}
	}
	return strings.Join(out, ", ")
}

func unmatchedActual(actual []ToolCall, match []int) string {
	var out []string
	for j, i := range match {
		if i < 0 {
			out = append(out, callText(actual[j]))
		}
	}
	return strings.Join(out, ", ")
}
