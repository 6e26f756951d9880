package rubrics

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
)

// Policy says how criterion verdicts combine into a pass.
type Policy string

// Pass policies.
const (
	// PolicyAll passes when every criterion passes.
	PolicyAll Policy = "all"
	// PolicyWeighted passes when the passing criteria carry at least
	// Threshold of the total weight.
	PolicyWeighted Policy = "weighted"
)

// Rubric is a set of criteria a grader judges an agent's work against.
type Rubric struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Policy is PolicyAll when empty.
	Policy Policy `json:"policy"`
	// Threshold is the weighted share needed to pass, in (0, 1]; weighted policy only.
	Threshold float64     `json:"threshold,omitempty"`
	Criteria  []Criterion `json:"criteria"`
}

// Criterion is one thing the grader checks.
type Criterion struct {
	Name string `json:"name"`
	// Description tells the grader what passing means.
	Description string `json:"description"`
	// Weight is the criterion's share under the weighted policy (1 when 0).
	Weight float64 `json:"weight,omitempty"`
}

func (c Criterion) weight() float64 {
	if c.Weight == 0 {
		return 1
	}
	return c.Weight
}

func (r *Rubric) policy() Policy {
	if r.Policy == "" {
		return PolicyAll
	}
	return r.Policy
}

// Validate checks a rubric built in Go the way the YAML loader checks files.
func (r *Rubric) Validate() error {
	switch r.policy() {
	case PolicyAll:
		if r.Threshold != 0 {
			return errors.New("rubric: threshold only applies to the weighted policy")
		}
	case PolicyWeighted:
		if !(r.Threshold > 0 && r.Threshold <= 1) {
			return fmt.Errorf("rubric: the weighted policy needs a threshold in (0, 1], got %v", r.Threshold)
		}
	default:
		return fmt.Errorf("rubric: unknown policy %q (want all or weighted)", r.Policy)
	}
	if len(r.Criteria) == 0 {
		return errors.New("rubric: no criteria")
	}
	seen := map[string]bool{}
	for i, c := range r.Criteria {
		if err := checkCriterionName(c.Name); err != nil {
			return fmt.Errorf("rubric: criteria[%d]: %w", i, err)
		}
		if strings.TrimSpace(c.Description) == "" {
			return fmt.Errorf("rubric: criterion %q has no description", c.Name)
		}
		if c.Weight < 0 || math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) {
			return fmt.Errorf("rubric: criterion %q: weight must be a positive number", c.Name)
		}
		k := strings.ToLower(strings.TrimSpace(c.Name))
		if seen[k] {
			return fmt.Errorf("rubric: two criteria are named %q", c.Name)
		}
		seen[k] = true
	}
	return nil
}

func checkCriterionName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("name is empty")
	case strings.ContainsAny(name, "\r\n"):
		return errors.New("name must be a single line")
	case strings.TrimSpace(name) != name:
		return errors.New("name has leading or trailing spaces")
	}
	return nil
}

// ParseRubric parses a rubric file. file names the source in errors.
func ParseRubric(file string, src []byte) (*Rubric, error) {
	root, err := ParseYAML(file, src)
	if err != nil {
		return nil, err
	}
	return DecodeRubric(file, root, "")
}

// LoadRubric reads and parses a rubric file from disk.
func LoadRubric(name string) (*Rubric, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("rubric: %w", err)
	}
	return ParseRubric(name, src)
}

// LoadRubricFS reads and parses a rubric file from fsys.
func LoadRubricFS(fsys fs.FS, name string) (*Rubric, error) {
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("rubric: %w", err)
	}
	return ParseRubric(name, src)
}

//go:embed *.yaml
var stock embed.FS

// Stock returns the stock rubric files shipped with dageval.
func Stock() fs.FS { return stock }

// StockNames lists the stock rubrics by name (file name without .yaml), sorted.
func StockNames() []string {
	entries, _ := fs.ReadDir(stock, ".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// StockRubric loads a stock rubric by name ("helpful" or "helpful.yaml").
func StockRubric(name string) (*Rubric, error) {
	file := strings.TrimSuffix(path.Base(name), ".yaml") + ".yaml"
	if _, err := fs.Stat(stock, file); err != nil {
		return nil, fmt.Errorf("rubric: no stock rubric %q (stock rubrics: %s)", name, strings.Join(StockNames(), ", "))
	}
	return LoadRubricFS(stock, file)
}

// DecodeRubric decodes a rubric from a YAML node: a mapping with name,
// description, policy, threshold and criteria, or just the list of criteria.
// file and key locate the node in errors (key is the path of the node in
// its document, "" at the root), so a suite can decode inline rubrics.
func DecodeRubric(file string, node ast.Node, key string) (*Rubric, error) {
	d := newDecoder(file)
	r := &Rubric{}
	if _, ok := d.resolve(node).(*ast.SequenceNode); ok {
		crit, err := d.criteria(node, join(key, "criteria"), key)
		if err != nil {
			return nil, err
		}
		r.Criteria, r.Policy = crit, PolicyAll
		return r, nil
	}
	f, _, err := d.fields(node, key, "name", "description", "policy", "threshold", "criteria")
	if err != nil {
		return nil, err
	}
	if e, ok := f["name"]; ok {
		if r.Name, err = d.str(e.val, join(key, "name")); err != nil {
			return nil, err
		}
	}
	if e, ok := f["description"]; ok {
		if r.Description, err = d.str(e.val, join(key, "description")); err != nil {
			return nil, err
		}
	}
	r.Policy = PolicyAll
	if e, ok := f["policy"]; ok {
		p, err := d.str(e.val, join(key, "policy"))
		if err != nil {
			return nil, err
		}
		switch Policy(p) {
		case PolicyAll, PolicyWeighted:
			r.Policy = Policy(p)
		default:
			return nil, d.errf(e.val, join(key, "policy"), "unknown policy %q (want all or weighted)", p)
		}
	}
	if e, ok := f["threshold"]; ok {
		if r.Policy != PolicyWeighted {
			return nil, d.errf(e.keyNode, join(key, "threshold"), "threshold only applies to policy: weighted")
		}
		if r.Threshold, err = d.float(e.val, join(key, "threshold")); err != nil {
			return nil, err
		}
		if !(r.Threshold > 0 && r.Threshold <= 1) {
			return nil, d.errf(e.val, join(key, "threshold"), "must be greater than 0 and at most 1, got %v", r.Threshold)
		}
	} else if r.Policy == PolicyWeighted {
		return nil, d.errf(f["policy"].val, join(key, "policy"), "policy weighted needs a threshold (for example threshold: 0.8)")
	}
	e, ok := f["criteria"]
	if !ok {
		return nil, d.errf(node, key, "missing key criteria")
	}
	if r.Criteria, err = d.criteria(e.val, join(key, "criteria"), key); err != nil {
		return nil, err
	}
	return r, nil
}

func (d *decoder) criteria(n ast.Node, key, rubricKey string) ([]Criterion, error) {
	items, err := d.sequence(n, key)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, d.errf(n, key, "a rubric needs at least one criterion")
	}
	seen := map[string]bool{}
	out := make([]Criterion, 0, len(items))
	for i, item := range items {
		ik := index(key, i)
		f, _, err := d.fields(item, ik, "name", "description", "weight")
		if err != nil {
			return nil, err
		}
		var c Criterion
		e, ok := f["name"]
		if !ok {
			return nil, d.errf(item, ik, "missing key name")
		}
		if c.Name, err = d.str(e.val, ik+".name"); err != nil {
			return nil, err
		}
		if err := checkCriterionName(c.Name); err != nil {
			return nil, d.errf(e.val, ik+".name", "%v", err)
		}
		lower := strings.ToLower(c.Name)
		if seen[lower] {
			return nil, d.errf(e.val, ik+".name", "duplicate criterion name %q", c.Name)
		}
		seen[lower] = true
		e, ok = f["description"]
		if !ok {
			return nil, d.errf(item, ik, "missing key description (what the grader should check)")
		}
		if c.Description, err = d.str(e.val, ik+".description"); err != nil {
			return nil, err
		}
		if strings.TrimSpace(c.Description) == "" {
			return nil, d.errf(e.val, ik+".description", "the description is empty")
		}
		c.Description = strings.TrimSpace(c.Description)
		c.Weight = 1
		if e, ok := f["weight"]; ok {
			if c.Weight, err = d.float(e.val, ik+".weight"); err != nil {
				return nil, err
			}
			if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
				return nil, d.errf(e.val, ik+".weight", "weight must be a positive number, got %v", c.Weight)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// Render returns the rubric as the grader reads it (the value of the run's
// rubric state key): the description, each criterion under its exact name,
// and what it takes to pass.
func (r *Rubric) Render() string {
	var sb strings.Builder
	if r.Name != "" {
		sb.WriteString("Rubric: ")
		sb.WriteString(r.Name)
		sb.WriteString("\n\n")
	}
	if d := strings.TrimSpace(r.Description); d != "" {
		sb.WriteString(d)
		sb.WriteString("\n\n")
	}
	weighted := r.policy() == PolicyWeighted
	sb.WriteString("Criteria (judge each one on its own and report it under its exact name):\n")
	for _, c := range r.Criteria {
		sb.WriteString("- ")
		sb.WriteString(c.Name)
		if weighted {
			sb.WriteString(" (weight ")
			sb.WriteString(strconv.FormatFloat(c.weight(), 'g', -1, 64))
			sb.WriteByte(')')
		}
		sb.WriteString(": ")
		sb.WriteString(strings.ReplaceAll(strings.TrimSpace(c.Description), "\n", "\n  "))
		sb.WriteByte('\n')
	}
	sb.WriteByte('\n')
	if weighted {
		fmt.Fprintf(&sb, "To pass, the criteria that are met must carry at least %s%% of the total weight.", strconv.FormatFloat(r.Threshold*100, 'g', 4, 64))
	} else {
		sb.WriteString("To pass, every criterion must be met.")
	}
	return sb.String()
}

// Apply returns in with the rendered rubric set as the run's rubric (the
// middleware.RubricKey value RubricMiddleware grades against). in is not modified.
func (r *Rubric) Apply(in agent.Input) agent.Input {
	raw, _ := json.Marshal(r.Render())
	values := make(map[string]json.RawMessage, len(in.Values)+1)
	maps.Copy(values, in.Values)
	values[middleware.RubricKey] = raw
	in.Values = values
	return in
}

// Grade is a rubric's outcome for one run.
type Grade struct {
	// Score is the weighted share of passing criteria, 0–1.
	Score  float64 `json:"score"`
	Passed bool    `json:"passed"`
	// Criteria follow the rubric's order, one verdict each.
	Criteria []middleware.CriterionVerdict `json:"criteria"`
	// Missing lists the criteria the grader gave no verdict on, in the
	// rubric's order; they count as failed.
	Missing []string `json:"missing,omitempty"`
	// Unknown lists verdicts on criteria the rubric does not have.
	Unknown []string `json:"unknown,omitempty"`
}

// Grade scores the grader's criterion verdicts (as found in a
// middleware.RubricEvaluation) against the rubric. Verdicts are matched to
// criteria by name, ignoring case and surrounding space; a criterion with no
// verdict fails, and one with several passes only if all of them pass.
func (r *Rubric) Grade(verdicts []middleware.CriterionVerdict) Grade {
	byName := map[string][]middleware.CriterionVerdict{}
	known := map[string]bool{}
	for _, c := range r.Criteria {
		known[normName(c.Name)] = true
	}
	g := Grade{Criteria: make([]middleware.CriterionVerdict, 0, len(r.Criteria))}
	for _, v := range verdicts {
		k := normName(v.Name)
		if !known[k] {
			g.Unknown = append(g.Unknown, v.Name)
			continue
		}
		byName[k] = append(byName[k], v)
	}
	var total, passed float64
	all := true
	for _, c := range r.Criteria {
		cv := middleware.CriterionVerdict{Name: c.Name}
		vs := byName[normName(c.Name)]
		if len(vs) == 0 {
			g.Missing = append(g.Missing, c.Name)
			cv.Gap = "the grader gave no verdict on this criterion"
		} else {
			cv.Passed = true
			for _, v := range vs {
				if !v.Passed {
					cv.Passed = false
					if cv.Gap == "" {
						cv.Gap = v.Gap
					}
				}
			}
		}
		total += c.weight()
		if cv.Passed {
			passed += c.weight()
		} else {
			all = false
		}
		g.Criteria = append(g.Criteria, cv)
	}
	if total > 0 {
		g.Score = passed / total
	}
	if r.policy() == PolicyWeighted {
		g.Passed = g.Score >= r.Threshold-1e-9
	} else {
		g.Passed = all && len(r.Criteria) > 0
	}
	return g
}

func normName(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
