package reports

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dageval/dageval/evals"
)

// CompareSchema names compare's JSON output format (schema/compare.v1.json).
const CompareSchema = "dageval.compare/v1"

// Defaults for CompareOptions' zero values.
const (
	DefaultAlpha     = 0.05
	DefaultPower     = 0.8
	DefaultResamples = 10000
	// DefaultMinDrop is the smallest pass-rate drop the powered policy
	// treats as material: one pass → fail flip among 20 pairs is not.
	DefaultMinDrop = 0.05
	DefaultPolicy  = PolicyPowered
)

// Policy is how compare turns its statistics into a gate decision. Every
// policy fails a statistically supported regression beyond the tolerance;
// they differ in what else fails and so in their error rates (see the
// README's table, measured by TestPolicyErrorRates).
type Policy string

// The gate policies, from most to least permissive.
const (
	// PolicySignificant fails only a statistically supported regression
	// (Holm-adjusted exact tests, interval beyond the tolerance). A drop
	// the sample cannot tell from noise passes as "inconclusive". Its
	// false-alarm rate is at most α; it misses most drops at 1 epoch.
	PolicySignificant Policy = "significant"
	// PolicyPowered also fails a drop in the overall pass rate larger than
	// the margin (max of --tolerance and --min-drop) and of at least two
	// net pass → fail pairs that the comparison was too small to tell from
	// noise (its minimum detectable effect is larger than the drop). It
	// reports the epochs that would decide. An underpowered comparison
	// that shows a material drop is never a pass. Drops confined to one
	// model × profile are left to the tests (and to strict): judged by
	// point estimate on a fraction of the pairs, they would raise false
	// alarms on flaky suites several times as often.
	PolicyPowered Policy = "powered"
	// PolicyStrict also fails any case that passed in every base epoch and
	// fails in every head epoch, however few.
	PolicyStrict Policy = "strict"
)

// Policies lists the policies in documentation order.
var Policies = []Policy{PolicyPowered, PolicySignificant, PolicyStrict}

// ParsePolicy reads a policy name; "" is the default.
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return DefaultPolicy, nil
	}
	for _, p := range Policies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown policy %q (want powered, significant or strict)", s)
}

// CompareOptions tunes Compare. The zero value means the powered policy,
// α = 0.05, no tolerance, a 5-point minimum drop, 80% power, seed 0 and
// 10 000 bootstrap resamples.
type CompareOptions struct {
	// Policy decides the gate (DefaultPolicy when empty).
	Policy Policy
	// MinDrop is the powered and strict policies' margin: a pass-rate drop
	// up to max(Tolerance, MinDrop) is not material (DefaultMinDrop when 0).
	MinDrop float64
	// Alpha is the family-wise significance level of the gate (two-sided).
	Alpha float64
	// Tolerance is the drop (0–1, in pass rate or mean score) the gate
	// accepts: a regression fails the gate only when its confidence
	// interval lies wholly below −Tolerance.
	Tolerance float64
	// Power is used for the minimum detectable effect.
	Power float64
	// Seed and Resamples drive the bootstrap; the same seed gives the same
	// intervals.
	Seed      uint64
	Resamples int
	// AgentDiff, when set, is the `dageval assemble --diff` of the two
	// configurations; the markdown shows it next to the behaviour change.
	AgentDiff string
	// Pairs says which head model is compared with which base model (by
	// model spec or alias), for a change that swaps models. Models not
	// named here pair by alias, then by spec.
	Pairs []ModelPair
}

// ModelPair pairs a base model with the head model that takes its role.
type ModelPair struct {
	Base string `json:"base"`
	Head string `json:"head"`
	// Alias is the role both have in their suites, when they have one.
	Alias string `json:"alias,omitempty"`
}

// margin is the largest pass-rate drop the powered policy lets pass
// without evidence that it is noise.
func (o CompareOptions) margin() float64 { return math.Max(o.Tolerance, o.MinDrop) }

func (o CompareOptions) withDefaults() CompareOptions {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = DefaultAlpha
	}
	if o.Power <= 0 || o.Power >= 1 {
		o.Power = DefaultPower
	}
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Tolerance < 0 {
		o.Tolerance = 0
	}
	if o.Policy == "" {
		o.Policy = DefaultPolicy
	}
	if o.MinDrop <= 0 {
		o.MinDrop = DefaultMinDrop
	}
	return o
}

// Outcome is compare's verdict.
type Outcome string

// Verdicts, from worst to best. Regression, underpowered and new failures
// fail the gate; errored and incomplete runs cannot be judged and exit 2.
const (
	OutcomeErrored         Outcome = "errored"          // a cell errored on either side: not a regression, not judgeable
	OutcomeIncomplete      Outcome = "incomplete"       // cells missing on either side
	OutcomeRegression      Outcome = "regression"       // statistically supported, beyond the tolerance
	OutcomeUnderpowered    Outcome = "underpowered"     // powered, strict: a material drop the sample cannot tell from noise
	OutcomeNewFailures     Outcome = "new_failures"     // strict: cases that passed every base epoch fail every head epoch
	OutcomeWithinTolerance Outcome = "within_tolerance" // supported, but not beyond the tolerance
	OutcomeInconclusive    Outcome = "inconclusive"     // something changed, but not beyond noise
	OutcomeImprovement     Outcome = "improvement"      // statistically supported improvement, no regression
	OutcomeUnchanged       Outcome = "unchanged"        // every pair has the same outcome and score
)

// ExitCode is the process exit code for an outcome: 1 for a regression, 2
// when the runs cannot be judged, 0 otherwise.
func (o Outcome) ExitCode() int {
	switch o {
	case OutcomeRegression, OutcomeUnderpowered, OutcomeNewFailures:
		return 1
	case OutcomeErrored, OutcomeIncomplete:
		return 2
	}
	return 0
}

// IncompatibleError says two runs cannot be compared at all (different
// suites or schema versions, or no cell results); compare exits 2.
type IncompatibleError struct{ Reasons []string }

func (e *IncompatibleError) Error() string {
	return "runs are not comparable: " + strings.Join(e.Reasons, "; ")
}

// Comparison is the result of comparing a head run with a base run.
type Comparison struct {
	Schema      string   `json:"schema"`
	Suite       string   `json:"suite"`
	SuiteDigest string   `json:"suite_digest"`
	Base        RunBrief `json:"base"`
	Head        RunBrief `json:"head"`
	Options     Settings `json:"options"`
	// Overall pools every pair; Groups splits them by model × profile.
	Overall Effect   `json:"overall"`
	Groups  []Effect `json:"groups"`
	// Tests is the family of hypothesis tests the gate rests on, with
	// Holm-adjusted p-values.
	Tests        []Test       `json:"tests"`
	MDE          MDE          `json:"mde"`
	NewFailures  []CaseChange `json:"new_failures"`
	NewPasses    []CaseChange `json:"new_passes"`
	Flaky        []CaseChange `json:"flaky"`
	ScoreChanges []CaseChange `json:"score_changes"`
	// MissingInBase and MissingInHead are cells one side has and the other
	// lacks (or lists as missing).
	MissingInBase []evals.CellKey `json:"missing_in_base"`
	MissingInHead []evals.CellKey `json:"missing_in_head"`
	Errored       []ErroredCell   `json:"errored"`
	// Pairs lists the base models compared with a head model of another
	// name (a model swap), in group order; empty when every model kept its name.
	Pairs []ModelPair `json:"pairs,omitempty"`
	// Underpowered lists the scopes whose drop the powered policy could
	// not tell from noise (computed under every policy; only powered and
	// strict fail on it).
	Underpowered []Underpowered `json:"underpowered"`
	Verdict      Verdict        `json:"verdict"`
	AgentDiff    string         `json:"agent_diff"`

	// base and head are the runs compared (head under base's model
	// names), for the HTML view's transcripts; pairs are their cells.
	base, head *Run
	pairs      []pair
}

// RunBrief describes one side of a comparison.
type RunBrief struct {
	Mode          string  `json:"mode"`
	ExpectedCells int     `json:"expected_cells"`
	ActualCells   int     `json:"actual_cells"`
	PassRate      float64 `json:"pass_rate"`
	MeanScore     float64 `json:"mean_score"`
	CostUSD       float64 `json:"cost_usd"`
	Tokens        int     `json:"tokens"`
}

// Settings are the options a comparison ran with, recorded so that it can
// be reproduced.
type Settings struct {
	Policy Policy `json:"policy"`
	// MinDrop is the powered and strict policies' margin below the tolerance.
	MinDrop   float64 `json:"min_drop"`
	Alpha     float64 `json:"alpha"`
	Tolerance float64 `json:"tolerance"`
	Power     float64 `json:"power"`
	Seed      uint64  `json:"seed"`
	Resamples int     `json:"resamples"`
}

// Effect is the paired change over a set of pairs, head minus base.
type Effect struct {
	Model string `json:"model"`
	// HeadModel is the head's model when it differs from the base's (a
	// model swap paired by alias or --pair).
	HeadModel string `json:"head_model,omitempty"`
	Profile   string `json:"profile"`
	Pairs     int    `json:"pairs"`
	// BothPass, BothFail, Regressions (pass → fail) and Improvements
	// (fail → pass) count the pairs; the last two are McNemar's b and c.
	BothPass     int        `json:"both_pass"`
	BothFail     int        `json:"both_fail"`
	Regressions  int        `json:"regressions"`
	Improvements int        `json:"improvements"`
	BasePassRate float64    `json:"base_pass_rate"`
	HeadPassRate float64    `json:"head_pass_rate"`
	PassDelta    float64    `json:"pass_delta"`
	PassCI       [2]float64 `json:"pass_ci"`
	McNemarP     float64    `json:"mcnemar_p"`
	BaseScore    float64    `json:"base_score"`
	HeadScore    float64    `json:"head_score"`
	ScoreDelta   float64    `json:"score_delta"`
	ScoreCI      [2]float64 `json:"score_ci"`
	// ScoreDown and ScoreUp count pairs whose score fell or rose.
	ScoreDown  int     `json:"score_down"`
	ScoreUp    int     `json:"score_up"`
	SignTestP  float64 `json:"sign_test_p"`
	CostDelta  float64 `json:"cost_delta"`
	TokenDelta int     `json:"token_delta"`
	// LatencyDeltaMS is the mean change in model time over the
	// LatencyPairs pairs timed on both sides; both absent when none was.
	LatencyDeltaMS *int64 `json:"latency_delta_ms,omitempty"`
	LatencyPairs   int    `json:"latency_pairs,omitempty"`
}

// Test is one hypothesis of the gate's family.
type Test struct {
	// Scope is "overall" or "model × profile"; Metric is "pass_rate"
	// (McNemar's exact test) or "score" (exact sign test).
	Scope     string     `json:"scope"`
	Metric    string     `json:"metric"`
	Delta     float64    `json:"delta"`
	CI        [2]float64 `json:"ci"`
	Down      int        `json:"down"`
	Up        int        `json:"up"`
	P         float64    `json:"p"`
	PAdjusted float64    `json:"p_adjusted"`
	// Significant: PAdjusted < alpha. BeyondTolerance: the interval lies
	// wholly beyond the tolerance in the direction of the change.
	Significant     bool `json:"significant"`
	BeyondTolerance bool `json:"beyond_tolerance"`
}

// MDE is the smallest change the comparison could have detected.
type MDE struct {
	Pairs int `json:"pairs"`
	// Alpha is the per-test level the MDE is computed at: the family's
	// alpha divided by the number of tests (Holm's first step).
	Alpha float64 `json:"alpha"`
	Power float64 `json:"power"`
	// PassRate is in rate units (0.1 = 10 percentage points); Score is
	// null when the score differences have no spread to estimate from.
	PassRate float64  `json:"pass_rate"`
	Score    *float64 `json:"score"`
	// Target, NeedPairs and NeedEpochs say what it would take to detect a
	// change of Target (the observed change, when it was too small):
	// NeedPairs more paired rollouts in all, about NeedEpochs more epochs
	// per cell; -1 when out of reach, 0 when no more are needed.
	Target     float64 `json:"target"`
	NeedPairs  int     `json:"need_pairs"`
	NeedEpochs int     `json:"need_epochs"`
}

// CaseChange is how one case (under a model and profile) fared across its
// paired epochs.
type CaseChange struct {
	Case       string  `json:"case"`
	Model      string  `json:"model"`
	HeadModel  string  `json:"head_model,omitempty"`
	Profile    string  `json:"profile"`
	Epochs     int     `json:"epochs"`
	BasePassed int     `json:"base_passed"`
	HeadPassed int     `json:"head_passed"`
	BaseScore  float64 `json:"base_score"`
	HeadScore  float64 `json:"head_score"`
	ScoreDelta float64 `json:"score_delta"`
	// BaseFlaky and HeadFlaky: some epochs passed and some did not
	// (pass^k < pass@k).
	BaseFlaky bool `json:"base_flaky"`
	HeadFlaky bool `json:"head_flaky"`
	// Reason is why the case did not pass where it newly fails (head) or
	// used to fail (base, for a new pass): the first failing epoch's
	// rubric gap, failed check or error.
	Reason string `json:"reason,omitempty"`
}

// ErroredCell is a cell whose status is error on one side.
type ErroredCell struct {
	Side string `json:"side"`
	evals.CellKey
	// HeadModel is the head's model, for a head cell of a swapped model.
	HeadModel string `json:"head_model,omitempty"`
	Error     string `json:"error"`
}

// sideKey is the cell's key on its own side: a head cell of a swapped
// model under the head's model name.
func (e ErroredCell) sideKey() evals.CellKey {
	k := e.CellKey
	if e.HeadModel != "" {
		k.Model = e.HeadModel
	}
	return k
}

// Verdict is the gate's decision with its reason.
type Verdict struct {
	Outcome  Outcome `json:"outcome"`
	ExitCode int     `json:"exit_code"`
	// Reason is one line; Details add a line per supporting fact.
	Reason  string   `json:"reason"`
	Details []string `json:"details"`
}

type pairKey struct{ model, profile, kase string }

type pair struct {
	key        evals.CellKey
	base, head evals.CellResult
}

// Compare pairs the cells of two runs of the same suite by case, model,
// profile and epoch and decides whether head regressed from base. It
// returns an *IncompatibleError when the runs cannot be compared at all;
// errored or missing cells are reported in the Comparison's verdict.
func Compare(base, head *Run, opts CompareOptions) (*Comparison, error) {
	opts = opts.withDefaults()
	pr, err := pairModels(base, head, opts.Pairs)
	if err != nil {
		return nil, err
	}
	if err := compatible(base, head, pr); err != nil {
		return nil, err
	}
	head = pr.mapHead(head)
	c := &Comparison{
		Schema: CompareSchema, Suite: head.Summary.Suite, SuiteDigest: head.Summary.SuiteDigest,
		Base: brief(base), Head: brief(head),
		Options:   Settings{Policy: opts.Policy, MinDrop: opts.MinDrop, Alpha: opts.Alpha, Tolerance: opts.Tolerance, Power: opts.Power, Seed: opts.Seed, Resamples: opts.Resamples},
		AgentDiff: opts.AgentDiff, Pairs: pr.swapped(base),
		Groups: []Effect{}, Tests: []Test{}, NewFailures: []CaseChange{}, NewPasses: []CaseChange{}, Flaky: []CaseChange{},
		ScoreChanges: []CaseChange{}, MissingInBase: []evals.CellKey{}, MissingInHead: []evals.CellKey{}, Errored: []ErroredCell{},
	}
	rank := groupRank(head.Summary.Groups)
	for _, g := range base.Summary.Groups {
		if _, ok := rank[[2]string{g.Model, g.Profile}]; !ok {
			rank[[2]string{g.Model, g.Profile}] = len(rank)
		}
	}
	bm := indexCells(base.Results)
	hm := indexCells(head.Results)
	var pairs []pair
	for _, r := range base.sortedResults() {
		if h, ok := hm[r.CellKey]; ok {
			pairs = append(pairs, pair{key: r.CellKey, base: r, head: h})
		} else {
			c.MissingInHead = append(c.MissingInHead, r.CellKey)
		}
	}
	for _, r := range head.sortedResults() {
		if _, ok := bm[r.CellKey]; !ok {
			c.MissingInBase = append(c.MissingInBase, r.CellKey)
		}
	}
	for _, k := range base.Summary.Missing {
		c.MissingInBase = appendKey(c.MissingInBase, k)
	}
	for _, k := range head.Summary.Missing {
		c.MissingInHead = appendKey(c.MissingInHead, k)
	}
	sortKeys(rank, c.MissingInBase)
	sortKeys(rank, c.MissingInHead)
	slices.SortStableFunc(pairs, func(a, b pair) int { return compareKeys(rank, a.key, b.key) })

	// Errored pairs are reported, not judged.
	var judged []pair
	for _, p := range pairs {
		bad := false
		if p.base.Status == evals.StatusError {
			c.Errored = append(c.Errored, ErroredCell{Side: "base", CellKey: p.key, Error: firstLine(p.base.Error)})
			bad = true
		}
		if p.head.Status == evals.StatusError {
			c.Errored = append(c.Errored, ErroredCell{Side: "head", CellKey: p.key, HeadModel: pr.headOf(p.key.Model), Error: firstLine(p.head.Error)})
			bad = true
		}
		if !bad {
			judged = append(judged, p)
		}
	}
	for _, side := range []struct {
		name string
		run  *Run
		m    map[evals.CellKey]evals.CellResult
		peer map[evals.CellKey]evals.CellResult
	}{{"base", base, bm, hm}, {"head", head, hm, bm}} {
		for _, r := range side.run.sortedResults() {
			if _, paired := side.peer[r.CellKey]; !paired && r.Status == evals.StatusError {
				e := ErroredCell{Side: side.name, CellKey: r.CellKey, Error: firstLine(r.Error)}
				if side.name == "head" {
					e.HeadModel = pr.headOf(r.Model)
				}
				c.Errored = append(c.Errored, e)
			}
		}
	}

	// Effects overall and per model × profile.
	var groupOrder [][2]string
	byGroup := map[[2]string][]pair{}
	for _, p := range judged {
		g := [2]string{p.key.Model, p.key.Profile}
		if _, ok := byGroup[g]; !ok {
			groupOrder = append(groupOrder, g)
		}
		byGroup[g] = append(byGroup[g], p)
	}
	c.Overall = effectOf(judged, opts, 0)
	for i, g := range groupOrder {
		e := effectOf(byGroup[g], opts, uint64(i+1))
		e.Model, e.HeadModel, e.Profile = g[0], pr.headOf(g[0]), g[1]
		c.Groups = append(c.Groups, e)
	}

	// The gate's family: overall pass rate and score, and the pass rate of
	// each model × profile when there is more than one.
	c.Tests = append(c.Tests,
		testOf("overall", "pass_rate", c.Overall.PassDelta, c.Overall.PassCI, c.Overall.Regressions, c.Overall.Improvements),
		testOf("overall", "score", c.Overall.ScoreDelta, c.Overall.ScoreCI, c.Overall.ScoreDown, c.Overall.ScoreUp))
	if len(c.Groups) > 1 {
		for _, e := range c.Groups {
			c.Tests = append(c.Tests, testOf(e.Model+" × "+e.Profile, "pass_rate", e.PassDelta, e.PassCI, e.Regressions, e.Improvements))
		}
	}
	ps := make([]float64, len(c.Tests))
	for i, t := range c.Tests {
		ps[i] = t.P
	}
	for i, adj := range holm(ps) {
		t := &c.Tests[i]
		t.PAdjusted = adj
		t.Significant = adj < opts.Alpha
		if t.Delta < 0 {
			t.BeyondTolerance = t.CI[1] < -opts.Tolerance
		} else {
			t.BeyondTolerance = t.CI[0] > opts.Tolerance
		}
	}

	c.caseChanges(judged, pr)
	c.base, c.head, c.pairs = base, head, pairs
	c.mde(judged, opts, len(c.Tests))
	c.powerChecks(judged, opts)
	c.decide(opts)
	return c, nil
}

// compatible says whether two runs ask the same of the same roles: the
// same suite digest (cases, profiles and model roles), or, for a model
// swap, the same cases digest with every model paired.
func compatible(base, head *Run, pr *pairing) error {
	var why []string
	b, h := base.Summary, head.Summary
	if b.SchemaVersion != h.SchemaVersion {
		why = append(why, fmt.Sprintf("schema versions differ (base %d, head %d)", b.SchemaVersion, h.SchemaVersion))
	}
	if b.Suite != h.Suite {
		why = append(why, fmt.Sprintf("different suites (base %q, head %q)", b.Suite, h.Suite))
	}
	sameCases := b.CasesDigest != "" && b.CasesDigest == h.CasesDigest
	switch {
	case b.SuiteDigest != h.SuiteDigest && !sameCases:
		why = append(why, fmt.Sprintf("suite_digest differs (base %s, head %s): the cases or the matrix changed, so cells cannot be paired", orNone(b.SuiteDigest), orNone(h.SuiteDigest)))
	case len(pr.unpairedBase)+len(pr.unpairedHead) > 0:
		why = append(why, pr.unpairedReason())
	}
	for _, s := range []struct {
		name string
		r    *Run
	}{{"base", base}, {"head", head}} {
		if !s.r.HasResults {
			why = append(why, s.name+" has no cell results (a summary file alone cannot be paired; give the output directory or a JSON report)")
		}
	}
	if len(why) > 0 {
		return &IncompatibleError{Reasons: why}
	}
	return nil
}

// pairing maps the head's models onto the base's.
type pairing struct {
	headToBase map[string]string
	baseToHead map[string]string
	alias      map[string]string // base model → the alias both share
	// unpairedBase and unpairedHead are the models left without a
	// counterpart, in group order.
	unpairedBase, unpairedHead []string
}

// modelsOf lists a run's models in group order, then any only its cells
// name, with the alias each carries.
func modelsOf(r *Run) ([]string, map[string]string) {
	var models []string
	alias := map[string]string{}
	add := func(m, a string) {
		if !slices.Contains(models, m) {
			models = append(models, m)
		}
		if a != "" && alias[m] == "" {
			alias[m] = a
		}
	}
	for _, g := range r.Summary.Groups {
		add(g.Model, "")
	}
	for _, c := range r.Results {
		add(c.Model, c.Alias)
	}
	for _, k := range r.Summary.Missing {
		add(k.Model, "")
	}
	return models, alias
}

// pairModels pairs each head model with a base model: as opts.Pairs says,
// then by alias, then by name.
func pairModels(base, head *Run, explicit []ModelPair) (*pairing, error) {
	bms, balias := modelsOf(base)
	hms, halias := modelsOf(head)
	pr := &pairing{headToBase: map[string]string{}, baseToHead: map[string]string{}, alias: map[string]string{}}
	resolve := func(name string, models []string, alias map[string]string) string {
		if slices.Contains(models, name) {
			return name
		}
		for _, m := range models {
			if alias[m] == name {
				return m
			}
		}
		return ""
	}
	link := func(b, h string) {
		pr.headToBase[h], pr.baseToHead[b] = b, h
		if a := balias[b]; a != "" && a == halias[h] {
			pr.alias[b] = a
		}
	}
	for _, p := range explicit {
		b, h := resolve(p.Base, bms, balias), resolve(p.Head, hms, halias)
		switch {
		case b == "":
			return nil, &IncompatibleError{Reasons: []string{fmt.Sprintf("--pair %s=%s: base has no model or alias %s (its models: %s)", p.Base, p.Head, p.Base, strings.Join(bms, ", "))}}
		case h == "":
			return nil, &IncompatibleError{Reasons: []string{fmt.Sprintf("--pair %s=%s: head has no model or alias %s (its models: %s)", p.Base, p.Head, p.Head, strings.Join(hms, ", "))}}
		case pr.baseToHead[b] != "" || pr.headToBase[h] != "":
			return nil, &IncompatibleError{Reasons: []string{fmt.Sprintf("--pair %s=%s: a model can be paired only once", p.Base, p.Head)}}
		}
		link(b, h)
	}
	for _, h := range hms {
		if pr.headToBase[h] != "" || halias[h] == "" {
			continue
		}
		for _, b := range bms {
			if balias[b] == halias[h] && pr.baseToHead[b] == "" {
				link(b, h)
				break
			}
		}
	}
	for _, h := range hms {
		if pr.headToBase[h] == "" && slices.Contains(bms, h) && pr.baseToHead[h] == "" {
			link(h, h)
		}
	}
	for _, b := range bms {
		if pr.baseToHead[b] == "" {
			pr.unpairedBase = append(pr.unpairedBase, b)
		}
	}
	for _, h := range hms {
		if pr.headToBase[h] == "" {
			pr.unpairedHead = append(pr.unpairedHead, h)
		}
	}
	return pr, nil
}

func (pr *pairing) unpairedReason() string {
	s := "the models do not pair"
	if len(pr.unpairedBase) > 0 {
		s += fmt.Sprintf(": base has %s", strings.Join(pr.unpairedBase, ", "))
	}
	if len(pr.unpairedHead) > 0 {
		s += fmt.Sprintf(", head has %s", strings.Join(pr.unpairedHead, ", "))
	}
	s += " without a counterpart"
	if len(pr.unpairedBase) == 1 && len(pr.unpairedHead) == 1 {
		s += fmt.Sprintf("; to compare them case by case, pass --pair %s=%s or give both the same alias in the suite (models: [{spec: …, alias: …}])", pr.unpairedBase[0], pr.unpairedHead[0])
	} else {
		s += "; pair them with --pair BASE_MODEL=HEAD_MODEL or with aliases in the suite"
	}
	return s
}

// headOf is the head model paired with base model b, when its name differs.
func (pr *pairing) headOf(b string) string {
	if h := pr.baseToHead[b]; h != b {
		return h
	}
	return ""
}

// swapped lists the pairs whose models differ, in the base's group order.
func (pr *pairing) swapped(base *Run) []ModelPair {
	bms, _ := modelsOf(base)
	var out []ModelPair
	for _, b := range bms {
		if h := pr.headOf(b); h != "" {
			out = append(out, ModelPair{Base: b, Head: h, Alias: pr.alias[b]})
		}
	}
	return out
}

// mapHead renames the head's models to the base models they pair with, so
// that cells pair by key; the run itself is left as it is.
func (pr *pairing) mapHead(head *Run) *Run {
	identity := true
	for h, b := range pr.headToBase {
		identity = identity && h == b
	}
	if identity {
		return head
	}
	m := *head
	m.Summary.Groups = slices.Clone(head.Summary.Groups)
	for i := range m.Summary.Groups {
		m.Summary.Groups[i].Model = pr.headToBase[m.Summary.Groups[i].Model]
	}
	m.Summary.Missing = slices.Clone(head.Summary.Missing)
	for i := range m.Summary.Missing {
		m.Summary.Missing[i].Model = pr.headToBase[m.Summary.Missing[i].Model]
	}
	m.Results = slices.Clone(head.Results)
	for i := range m.Results {
		m.Results[i].Model = pr.headToBase[m.Results[i].Model]
	}
	return &m
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func brief(r *Run) RunBrief {
	t := r.Summary.Totals
	return RunBrief{Mode: r.Summary.Mode, ExpectedCells: r.Summary.ExpectedCells, ActualCells: r.Summary.ActualCells,
		PassRate: t.PassRate, MeanScore: t.MeanScore, CostUSD: t.CostUSD, Tokens: t.Tokens.Total().Total()}
}

func indexCells(rs []evals.CellResult) map[evals.CellKey]evals.CellResult {
	m := make(map[evals.CellKey]evals.CellResult, len(rs))
	for _, r := range rs {
		m[r.CellKey] = r
	}
	return m
}

func appendKey(ks []evals.CellKey, k evals.CellKey) []evals.CellKey {
	if slices.Contains(ks, k) {
		return ks
	}
	return append(ks, k)
}

func sortKeys(rank map[[2]string]int, ks []evals.CellKey) {
	slices.SortStableFunc(ks, func(a, b evals.CellKey) int { return compareKeys(rank, a, b) })
}

const scoreEps = 1e-9

func passed(r evals.CellResult) float64 {
	if r.Status == evals.StatusPass {
		return 1
	}
	return 0
}

// effectOf measures the paired change over ps; stream separates the
// bootstrap's random streams so each scope is reproducible on its own.
func effectOf(ps []pair, opts CompareOptions, stream uint64) Effect {
	e := Effect{Pairs: len(ps), McNemarP: 1, SignTestP: 1}
	if len(ps) == 0 {
		return e
	}
	var clusters []cluster
	idx := map[pairKey]int{}
	var bp, hp, bs, hs float64
	var latSum int64
	for _, p := range ps {
		if p.base.Latency.Known() && p.head.Latency.Known() {
			latSum += p.head.Latency.ModelMS - p.base.Latency.ModelMS
			e.LatencyPairs++
		}
		b, h := passed(p.base), passed(p.head)
		switch {
		case b == 1 && h == 1:
			e.BothPass++
		case b == 0 && h == 0:
			e.BothFail++
		case b == 1:
			e.Regressions++
		default:
			e.Improvements++
		}
		d := p.head.Score - p.base.Score
		switch {
		case d < -scoreEps:
			e.ScoreDown++
		case d > scoreEps:
			e.ScoreUp++
		}
		bp, hp, bs, hs = bp+b, hp+h, bs+p.base.Score, hs+p.head.Score
		e.CostDelta += p.head.CostUSD - p.base.CostUSD
		e.TokenDelta += p.head.Usage.Total().Total() - p.base.Usage.Total().Total()
		k := pairKey{p.key.Model, p.key.Profile, p.key.Case}
		i, ok := idx[k]
		if !ok {
			i = len(clusters)
			idx[k] = i
			clusters = append(clusters, cluster{})
		}
		clusters[i].pass = append(clusters[i].pass, h-b)
		clusters[i].score = append(clusters[i].score, d)
	}
	n := float64(len(ps))
	e.BasePassRate, e.HeadPassRate = bp/n, hp/n
	e.PassDelta = (hp - bp) / n
	e.BaseScore, e.HeadScore = bs/n, hs/n
	e.ScoreDelta = (hs - bs) / n
	e.McNemarP = mcnemarExact(e.Regressions, e.Improvements)
	e.SignTestP = signTestP(e.ScoreDown, e.ScoreUp)
	e.PassCI, e.ScoreCI = clusterBootstrap(clusters, opts.Alpha, opts.Resamples, opts.Seed, stream)
	e.CostDelta = math.Round(e.CostDelta*1e6) / 1e6
	if e.LatencyPairs > 0 {
		d := int64(math.Round(float64(latSum) / float64(e.LatencyPairs)))
		e.LatencyDeltaMS = &d
	}
	return e
}

func testOf(scope, metric string, delta float64, ci [2]float64, down, up int) Test {
	return Test{Scope: scope, Metric: metric, Delta: delta, CI: ci, Down: down, Up: up, P: signTestP(down, up)}
}

// caseChanges classifies each case (per model × profile) over its paired
// epochs: a stable flip is a new failure or pass; a case that passes some
// epochs and fails others on either side is flaky and listed apart, since
// its flips are as likely noise as change.
func (c *Comparison) caseChanges(ps []pair, pr *pairing) {
	var order []pairKey
	agg := map[pairKey]*CaseChange{}
	reasons, baseReasons := map[pairKey]string{}, map[pairKey]string{}
	for _, p := range ps {
		k := pairKey{p.key.Model, p.key.Profile, p.key.Case}
		cc, ok := agg[k]
		if !ok {
			cc = &CaseChange{Case: p.key.Case, Model: p.key.Model, HeadModel: pr.headOf(p.key.Model), Profile: p.key.Profile}
			agg[k] = cc
			order = append(order, k)
		}
		cc.Epochs++
		cc.BasePassed += int(passed(p.base))
		cc.HeadPassed += int(passed(p.head))
		if _, ok := reasons[k]; !ok && p.head.Status != evals.StatusPass {
			reasons[k] = reasonOf(p.head)
		}
		if _, ok := baseReasons[k]; !ok && p.base.Status != evals.StatusPass {
			baseReasons[k] = reasonOf(p.base)
		}
		cc.BaseScore += p.base.Score
		cc.HeadScore += p.head.Score
	}
	for _, k := range order {
		cc := agg[k]
		n := float64(cc.Epochs)
		cc.BaseScore, cc.HeadScore = cc.BaseScore/n, cc.HeadScore/n
		cc.ScoreDelta = cc.HeadScore - cc.BaseScore
		cc.BaseFlaky = cc.BasePassed > 0 && cc.BasePassed < cc.Epochs
		cc.HeadFlaky = cc.HeadPassed > 0 && cc.HeadPassed < cc.Epochs
		cc.Reason = reasons[k]
		if cc.HeadPassed == cc.Epochs {
			cc.Reason = baseReasons[k]
		}
		switch {
		case cc.BaseFlaky || cc.HeadFlaky:
			c.Flaky = append(c.Flaky, *cc)
		case cc.BasePassed == cc.Epochs && cc.HeadPassed == 0:
			c.NewFailures = append(c.NewFailures, *cc)
		case cc.BasePassed == 0 && cc.HeadPassed == cc.Epochs:
			c.NewPasses = append(c.NewPasses, *cc)
		}
		if math.Abs(cc.ScoreDelta) > scoreEps {
			c.ScoreChanges = append(c.ScoreChanges, *cc)
		}
	}
	slices.SortStableFunc(c.ScoreChanges, func(a, b CaseChange) int { return cmp.Compare(a.ScoreDelta, b.ScoreDelta) })
}

// reasonCap keeps a case's reason to a line a comparison can list.
const reasonCap = 240

// reasonOf says in one line why a cell did not pass: its first rubric gap,
// failed check or error.
func reasonOf(r evals.CellResult) string {
	f := failingOf(cellOf(r))
	var s string
	switch {
	case f.Error != "":
		s = firstLine(f.Error)
		if f.Cause != "" {
			s = f.Cause + ": " + s
		}
	case len(f.Gaps) > 0:
		s = "rubric " + f.RubricResult + ", " + f.Gaps[0].Criterion + ": " + f.Gaps[0].Gap
	case len(f.FailedChecks) > 0:
		s = "check " + f.FailedChecks[0].Name + ": " + f.FailedChecks[0].Detail
	default:
		s = "score " + score(f.Score)
	}
	s = oneLine(s)
	if r := []rune(s); len(r) > reasonCap {
		s = string(r[:reasonCap-1]) + "…"
	}
	return s
}

// mde computes the minimum detectable pass-rate change for the overall
// test at the level Holm's first step uses, and what it would take to
// detect the change observed when it was smaller.
func (c *Comparison) mde(ps []pair, opts CompareOptions, tests int) {
	target := math.Abs(c.Overall.PassDelta)
	if target == 0 {
		target = math.Max(opts.Tolerance, 0.05)
	}
	c.MDE = mdeOf(ps, c.Overall, target, opts, tests)
}

// mdeOf is the MDE of one scope's pairs (with its effect e), and what it
// would take to detect a change of target.
func mdeOf(ps []pair, e Effect, target float64, opts CompareOptions, tests int) MDE {
	n := len(ps)
	alpha := opts.Alpha / float64(max(tests, 1))
	m := MDE{Pairs: n, Alpha: alpha, Power: opts.Power, NeedPairs: -1, NeedEpochs: -1, Target: target}
	psi := 0.0
	if n > 0 {
		psi = float64(e.Regressions+e.Improvements) / float64(n)
		if psi == 0 {
			// No discordant pair yet: assume the discordance two
			// independent runs at this pass rate would show.
			p := (e.BasePassRate + e.HeadPassRate) / 2
			psi = 2 * p * (1 - p)
		}
	}
	m.PassRate = pairedBinaryMDE(n, psi, alpha, opts.Power)
	diffs := make([]float64, 0, n)
	for _, p := range ps {
		diffs = append(diffs, p.head.Score-p.base.Score)
	}
	if sd := sampleSD(diffs); sd > 0 {
		v := meanDiffMDE(n, sd, alpha, opts.Power)
		m.Score = &v
	}
	if n > 0 {
		need := pairsNeeded(target, math.Max(psi, target), alpha, opts.Power, 10_000_000)
		switch {
		case need < 0:
		case need <= n:
			m.NeedPairs, m.NeedEpochs = 0, 0
		default:
			m.NeedPairs = need - n
			epochs := maxEpoch(ps)
			perEpoch := float64(n) / float64(max(epochs, 1))
			m.NeedEpochs = int(math.Ceil(float64(need)/perEpoch)) - epochs
		}
	}
	return m
}

// Underpowered is a scope (the overall pass rate) that fell by more than
// the powered policy's margin while the comparison could not tell such a
// drop from noise: its MDE is larger than the drop.
type Underpowered struct {
	// Scope is "overall".
	Scope string `json:"scope"`
	Pairs int    `json:"pairs"`
	// Drop is the fall in pass rate (positive), Down and Up the pass → fail
	// and fail → pass pairs behind it.
	Drop float64 `json:"drop"`
	Down int     `json:"down"`
	Up   int     `json:"up"`
	// MDE is the scope's minimum detectable effect; NeedEpochs how many
	// more epochs per cell would detect a drop of this size (-1 when out
	// of reach) and Epochs how many were run.
	MDE        float64 `json:"mde"`
	NeedEpochs int     `json:"need_epochs"`
	Epochs     int     `json:"epochs"`
}

// powerChecks finds whether the overall pass rate dropped by more than the
// margin while the comparison's MDE is larger than the drop.
func (c *Comparison) powerChecks(judged []pair, opts CompareOptions) {
	c.Underpowered = []Underpowered{}
	check := func(scope string, ps []pair, e Effect) {
		// A single net flip is never material: one discordant pair is as
		// likely to go either way, so it is no evidence of a drop.
		drop := -e.PassDelta
		if drop <= opts.margin()+1e-12 || e.Regressions-e.Improvements < 2 {
			return
		}
		m := mdeOf(ps, e, drop, opts, len(c.Tests))
		if m.PassRate <= drop {
			return // powered to see such a drop: the tests' verdict stands
		}
		c.Underpowered = append(c.Underpowered, Underpowered{Scope: scope, Pairs: e.Pairs, Drop: drop, Down: e.Regressions, Up: e.Improvements,
			MDE: m.PassRate, NeedEpochs: m.NeedEpochs, Epochs: maxEpoch(ps)})
	}
	check("overall", judged, c.Overall)
}

func maxEpoch(ps []pair) int {
	k := 0
	for _, p := range ps {
		k = max(k, p.key.Epoch)
	}
	return k
}

// decide sets the verdict from the tests, the errored and the missing cells.
func (c *Comparison) decide(opts CompareOptions) {
	v := &c.Verdict
	v.Details = []string{}
	var down, downWithin, up []Test
	for _, t := range c.Tests {
		switch {
		case t.Significant && t.Delta < 0 && t.BeyondTolerance:
			down = append(down, t)
		case t.Significant && t.Delta < 0:
			downWithin = append(downWithin, t)
		case t.Significant && t.Delta > 0:
			up = append(up, t)
		}
	}
	for _, t := range append(append(append([]Test(nil), down...), downWithin...), up...) {
		v.Details = append(v.Details, describeTest(t, opts))
	}
	switch {
	case len(c.Errored) > 0:
		v.Outcome = OutcomeErrored
		names := make([]string, 0, len(c.Errored))
		for _, e := range c.Errored {
			names = append(names, e.Side+" "+cellName(e.sideKey()))
		}
		v.Reason = fmt.Sprintf("%s errored, so the runs cannot be judged (errors are not regressions; fix or re-run them): %s",
			plural(len(c.Errored), "cell", "cells"), strings.Join(names, "; "))
	case len(c.MissingInBase)+len(c.MissingInHead) > 0:
		v.Outcome = OutcomeIncomplete
		v.Reason = fmt.Sprintf("%d cells missing in base and %d in head, so the runs cannot be judged; re-run the incomplete side", len(c.MissingInBase), len(c.MissingInHead))
	case len(down) > 0:
		v.Outcome = OutcomeRegression
		v.Reason = "regression: " + describeTest(down[0], opts)
		if len(c.NewFailures) > 0 {
			v.Reason += fmt.Sprintf("; %s", plural(len(c.NewFailures), "new failure", "new failures"))
		}
	case opts.Policy != PolicySignificant && len(c.Underpowered) > 0:
		v.Outcome = OutcomeUnderpowered
		v.Reason = c.underpoweredReason(opts)
		for _, u := range c.Underpowered[1:] {
			v.Details = append(v.Details, "also underpowered: "+describeUnderpowered(u, opts))
		}
	case opts.Policy == PolicyStrict && len(c.NewFailures) > 0:
		v.Outcome = OutcomeNewFailures
		v.Reason = fmt.Sprintf("strict policy: %s passed in every base epoch and fail in every head epoch: %s",
			plural(len(c.NewFailures), "case", "cases"), c.newFailureNames(5))
	case len(downWithin) > 0:
		v.Outcome = OutcomeWithinTolerance
		v.Reason = fmt.Sprintf("a drop is statistically supported but not beyond the tolerance of %s: %s", ppAbs(opts.Tolerance), describeTest(downWithin[0], opts))
	case len(up) > 0:
		v.Outcome = OutcomeImprovement
		v.Reason = "improvement: " + describeTest(up[0], opts)
	case c.Overall.Regressions+c.Overall.Improvements+c.Overall.ScoreDown+c.Overall.ScoreUp > 0:
		v.Outcome = OutcomeInconclusive
		e := c.Overall
		v.Reason = fmt.Sprintf("inconclusive: %s went pass → fail and %d fail → pass (pass rate %s, score %s), which is within noise; %s",
			plural(e.Regressions, "pair", "pairs"), e.Improvements, ppDelta(e.PassDelta), signed(e.ScoreDelta), c.mdeSentence())
	default:
		v.Outcome = OutcomeUnchanged
		v.Reason = fmt.Sprintf("unchanged: all %d pairs have the same outcome and score; %s", c.Overall.Pairs, c.mdeSentence())
	}
	v.ExitCode = v.Outcome.ExitCode()
}

func ppAbs(x float64) string { return strings.TrimPrefix(ppDelta(x), "+") }

// describeUnderpowered says what fell, by how much, and why the comparison
// cannot call it noise.
func describeUnderpowered(u Underpowered, opts CompareOptions) string {
	s := fmt.Sprintf("%s pass rate fell %s (%d pass → fail, %d fail → pass in %d pairs), more than the %s margin, but %d pairs can only tell changes of %s or more from noise (%.0f%% power)",
		u.Scope, ppAbs(u.Drop), u.Down, u.Up, u.Pairs, ppAbs(opts.margin()), u.Pairs, ppAbs(u.MDE), 100*opts.Power)
	switch {
	case u.NeedEpochs > 0:
		s += fmt.Sprintf("; about %s per cell (--epochs %d) would decide", plural(u.NeedEpochs, "more epoch", "more epochs"), u.Epochs+u.NeedEpochs)
	case u.NeedEpochs < 0:
		s += "; more epochs alone cannot decide it at this discordance"
	}
	return s
}

// underpoweredReason is the verdict of the powered policy's failure: the
// worst scope, the cases that newly fail, and how to decide.
func (c *Comparison) underpoweredReason(opts CompareOptions) string {
	s := "underpowered drop: " + describeUnderpowered(c.Underpowered[0], opts)
	if len(c.NewFailures) > 0 {
		s += fmt.Sprintf("; new failures: %s", c.newFailureNames(5))
	}
	return s + ". Run the epochs that decide, or choose --policy significant to accept an undecided drop"
}

// newFailureNames lists up to limit new failures as case · model · profile.
func (c *Comparison) newFailureNames(limit int) string {
	var names []string
	for i, cc := range c.NewFailures {
		if i == limit {
			names = append(names, fmt.Sprintf("… and %d more", len(c.NewFailures)-i))
			break
		}
		names = append(names, cc.Case+" · "+modelName(cc.Model, cc.HeadModel)+" · "+cc.Profile)
	}
	return strings.Join(names, ", ")
}

// showsDrop reports whether any scope's pass rate or the overall score fell.
func (c *Comparison) showsDrop() bool {
	if c.Overall.PassDelta < -1e-12 || c.Overall.ScoreDelta < -scoreEps {
		return true
	}
	for _, g := range c.Groups {
		if g.PassDelta < -1e-12 {
			return true
		}
	}
	return false
}

func describeTest(t Test, opts CompareOptions) string {
	what := "pass rate " + ppDelta(t.Delta)
	ci := fmt.Sprintf("CI %s to %s", strings.TrimSuffix(ppDelta(t.CI[0]), " pp"), ppDelta(t.CI[1]))
	test := "McNemar"
	counts := fmt.Sprintf("%d pass → fail, %d fail → pass", t.Down, t.Up)
	if t.Metric == "score" {
		what = "mean score " + signed(t.Delta)
		ci = fmt.Sprintf("CI %s to %s", signed(t.CI[0]), signed(t.CI[1]))
		test = "sign test"
		counts = fmt.Sprintf("%d pairs scored lower, %d higher", t.Down, t.Up)
	}
	return fmt.Sprintf("%s %s (%s; %s; %s p = %s, Holm-adjusted %s < α = %s)",
		t.Scope, what, ci, counts, test, pvalue(t.P), pvalue(t.PAdjusted), pvalueAlpha(opts.Alpha))
}

func pvalueAlpha(a float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", a), "0"), ".")
}

// mdeSentence explains what the comparison could and could not detect.
func (c *Comparison) mdeSentence() string {
	m := c.MDE
	s := fmt.Sprintf("with %d pairs the smallest pass-rate change detectable at 80%% power is %s", m.Pairs, ppAbs(m.PassRate))
	if m.Power != 0.8 {
		s = fmt.Sprintf("with %d pairs the smallest pass-rate change detectable at %.0f%% power is %s", m.Pairs, 100*m.Power, ppAbs(m.PassRate))
	}
	switch {
	case m.NeedPairs > 0:
		s += fmt.Sprintf("; detecting %s would need about %d more paired rollouts (≈ %d more epochs per cell)", ppAbs(m.Target), m.NeedPairs, m.NeedEpochs)
	case m.NeedPairs < 0 && m.Pairs > 0:
		s += fmt.Sprintf("; detecting %s is out of reach at this discordance", ppAbs(m.Target))
	}
	return s
}
