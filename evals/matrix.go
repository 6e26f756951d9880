package evals

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
)

// Cell is one run of the matrix: a case with a model, a profile and an epoch.
type Cell struct {
	CellKey
	// ID names the cell's detail file and cassette.
	ID string
	// CaseDef is the case named by CellKey.Case.
	CaseDef *Case
	// ProfileDef is the profile named by CellKey.Profile.
	ProfileDef *Profile
	// Cassette is the cell's cassette file.
	Cassette string
	// Alias is the role the suite gives the cell's model ("" for none).
	Alias string
	// Stream says whether the cell's agent streams its model calls (see Suite.Streams).
	Stream bool
}

var unsafeID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })

// CellID is the file name (without extension) of a cell's detail file and
// cassette: "<case>--<model>--<profile>--e<epoch>", where characters other
// than letters, digits, '_' and '-' become '-'.
func CellID(k CellKey) string {
	part := func(s string) string { return unsafeID().ReplaceAllString(s, "-") }
	return part(k.Case) + "--" + part(k.Model) + "--" + part(k.Profile) + "--e" + strconv.Itoa(k.Epoch)
}

// Cells expands the suite into its matrix, cases × models × profiles ×
// epochs in suite order, keeping the cells the filter selects. epochs > 0
// overrides every case's epochs.
func (s *Suite) Cells(filter string, epochs int) ([]Cell, error) {
	f, err := parseFilter(filter)
	if err != nil {
		return nil, err
	}
	if err := s.checkMatrix(epochs); err != nil {
		return nil, err
	}
	var out []Cell
	ids := map[string]CellKey{}
	for _, c := range s.Cases {
		n := c.Epochs
		if epochs > 0 {
			n = epochs
		}
		for _, m := range c.models(s) {
			for _, p := range s.Profiles {
				for e := 1; e <= n; e++ {
					k := CellKey{Case: c.ID, Model: m, Profile: p.Name, Epoch: e}
					if !f.match(k, s.Aliases[m], c.Tags) {
						continue
					}
					id := CellID(k)
					if other, dup := ids[id]; dup {
						return nil, s.caseErr(c, "id", "cells %s/%s/%s/e%d and %s/%s/%s/e%d would share the file name %s; rename a case, model or profile",
							other.Case, other.Model, other.Profile, other.Epoch, k.Case, k.Model, k.Profile, k.Epoch, id)
					}
					ids[id] = k
					cas := c.Cassette
					if cas == "" {
						cas = filepath.Join(s.Cassettes, id+".yaml")
					}
					out = append(out, Cell{CellKey: k, ID: id, CaseDef: c, ProfileDef: p, Cassette: cas, Alias: s.Aliases[m], Stream: s.Streams(m, p)})
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the filter %q selects no cells", filter)
	}
	return out, nil
}

// The matrix limits: a run beyond them is a typo (epochs: 2000000000)
// or a hostile suite, and expanding it would exhaust memory before the
// first cell ran. The environment raises them.
const (
	DefaultMaxCells      = 100_000
	DefaultMaxModelCalls = 10_000_000
	EnvMaxCells          = "DAGEVAL_MAX_CELLS"
	EnvMaxModelCalls     = "DAGEVAL_MAX_MODEL_CALLS"
)

// matrixLimit is a limit from the environment, or its default.
func matrixLimit(env string, def int64) (int64, error) {
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive whole number", env, v)
	}
	return n, nil
}

// mulCap multiplies without overflowing: past limit the exact number no
// longer matters, only that it is past.
func mulCap(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// checkMatrix counts the cells and the most model calls they can make
// (each cell's max_steps, plus the grader's iterations for a case with a
// rubric) before any cell is made, and refuses a matrix beyond the limits
// with the number it would have been. The count is of the whole matrix,
// before a filter selects from it.
func (s *Suite) checkMatrix(epochs int) error {
	maxCells, err := matrixLimit(EnvMaxCells, DefaultMaxCells)
	if err != nil {
		return err
	}
	maxCalls, err := matrixLimit(EnvMaxModelCalls, DefaultMaxModelCalls)
	if err != nil {
		return err
	}
	steps := int64(s.Limits.MaxSteps)
	if steps <= 0 {
		steps = agent.DefaultRecursionLimit
	}
	grades := int64(0)
	if s.Grader != nil {
		grades = int64(s.Grader.MaxIterations)
	}
	if grades <= 0 {
		grades = middleware.DefaultRubricMaxIterations
	}
	var cells, calls, most int64
	var biggest *Case
	for _, c := range s.Cases {
		n := int64(c.Epochs)
		if epochs > 0 {
			n = int64(epochs)
		}
		cc := mulCap(int64(len(c.models(s))*len(s.Profiles)), n)
		cells = min(cells+cc, math.MaxInt64/2)
		if cc > most {
			most, biggest = cc, c
		}
		per := steps
		if c.Rubric != nil {
			per += grades
		}
		calls = min(calls+mulCap(cc, per), math.MaxInt64/2)
	}
	where := func(format string, args ...any) error {
		if epochs > 0 {
			return fmt.Errorf("--epochs %d: "+format, append([]any{epochs}, args...)...)
		}
		if biggest != nil && biggest.Epochs != s.Epochs {
			// The case's own epochs make the matrix big.
			return s.caseErr(biggest, "epochs", format, args...)
		}
		if s.doc != nil && s.doc.Has("epochs") {
			return s.errAt("epochs", format, args...)
		}
		return s.errAt("cases", format, args...)
	}
	if cells > maxCells {
		return where("the matrix would have %s cells (cases × models × profiles × epochs), which exceeds the limit of %s cells (set %s to raise it)", count(cells), count(maxCells), EnvMaxCells)
	}
	if calls > maxCalls {
		return where("the matrix's %s cells could make %s model calls (max_steps %d a cell, plus the grader's %d for a case with a rubric), which exceeds the limit of %s (set %s to raise it)", count(cells), count(calls), steps, grades, count(maxCalls), EnvMaxModelCalls)
	}
	return nil
}

// count writes a big number readably; MaxInt64/2 stands for "beyond int64".
func count(n int64) string {
	if n >= math.MaxInt64/2 {
		return "more than 2^62"
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// filter selects cells. It is a list of terms separated by commas or
// spaces: field=glob or field!=glob with field one of case, model,
// profile, epoch, tag; a bare glob is a case. Terms on the same field are
// alternatives; terms on different fields must all hold; != terms exclude.
type filter struct {
	include map[string][]string
	exclude map[string][]string
}

var filterFields = []string{"case", "model", "profile", "epoch", "tag"}

func parseFilter(expr string) (*filter, error) {
	f := &filter{include: map[string][]string{}, exclude: map[string][]string{}}
	for _, term := range strings.FieldsFunc(expr, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		field, glob, neg := "case", term, false
		if i := strings.Index(term, "!="); i >= 0 {
			field, glob, neg = term[:i], term[i+2:], true
		} else if i := strings.IndexByte(term, '='); i >= 0 {
			field, glob = term[:i], term[i+1:]
		}
		if !slices.Contains(filterFields, field) {
			return nil, fmt.Errorf("filter term %q: unknown field %q (want %s)", term, field, strings.Join(filterFields, ", "))
		}
		if glob == "" {
			return nil, fmt.Errorf("filter term %q has no pattern", term)
		}
		if _, err := compileGlob(glob); err != nil {
			return nil, fmt.Errorf("filter term %q: %v", term, err)
		}
		if neg {
			f.exclude[field] = append(f.exclude[field], glob)
		} else {
			f.include[field] = append(f.include[field], glob)
		}
	}
	return f, nil
}

func (f *filter) match(k CellKey, alias string, tags []string) bool {
	values := func(field string) []string {
		switch field {
		case "case":
			return []string{k.Case}
		case "model":
			if alias != "" {
				return []string{k.Model, alias}
			}
			return []string{k.Model}
		case "profile":
			return []string{k.Profile}
		case "epoch":
			return []string{strconv.Itoa(k.Epoch)}
		}
		return tags
	}
	anyMatch := func(globs, vals []string) bool {
		for _, g := range globs {
			re, _ := compileGlob(g)
			for _, v := range vals {
				if re.MatchString(v) {
					return true
				}
			}
		}
		return false
	}
	for field, globs := range f.include {
		if !anyMatch(globs, values(field)) {
			return false
		}
	}
	for field, globs := range f.exclude {
		if anyMatch(globs, values(field)) {
			return false
		}
	}
	return true
}

// compileGlob turns a filter pattern into a regular expression: * matches
// any run of characters ('/' and ':' included, which model specs hold), ?
// one character, [set] a character class; anything else is literal.
func compileGlob(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(glob[i:], ']')
			if j < 0 {
				return nil, errors.New("unclosed [ in pattern")
			}
			b.WriteString(glob[i : i+j+1])
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
