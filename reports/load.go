package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dageval/dageval/evals"
)

// Run is one loaded run: its summary, its cell results in matrix order and,
// when the output directory has them, the per-cell details.
type Run struct {
	// Source is the path the run was loaded from, for messages only; no
	// renderer prints it, so reports do not depend on where a run lives.
	Source  string
	Summary evals.Summary
	// Results is nil when only a summary file was loaded.
	Results []evals.CellResult
	// Details maps a cell id to its detail record; empty without cells/.
	Details map[string]*evals.CellDetail
	// HasResults distinguishes "no cells ran" from "cells not loaded".
	HasResults bool
}

// LoadOptions tunes Load.
type LoadOptions struct {
	// SkipDetails leaves cells/*.json unread; compare and the text
	// renderers do not need transcripts.
	SkipDetails bool
}

// Error is a problem with a run's files, located as precisely as possible.
type Error struct {
	File  string // path of the file
	Line  int    // 1-based; 0 when not known
	Col   int    // 1-based; 0 when not known
	Field string // JSON field, when known
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrSchemaVersion is wrapped by errors about a file written with a schema
// version this package does not read.
var ErrSchemaVersion = errors.New("unsupported schema version")

// Load reads a run from an output directory, from a summary.json (its
// results.jsonl and cells/ are read from beside it when present), or from a
// JSON report written by this package.
func Load(path string) (*Run, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith is Load with options.
func LoadWith(path string, opts LoadOptions) (*Run, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return loadDir(path, opts, true, nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, jsonError(path, data, err)
	}
	if strings.HasPrefix(probe.Schema, reportSchemaPrefix) {
		return loadReport(path, data)
	}
	r, err := loadDir(filepath.Dir(path), opts, false, nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// LoadWithResults is LoadWith for the output directory of a run that has
// just finished, whose cell results the caller holds already, decoded from
// results.jsonl's lines as they were written (evals.Options.KeepResults):
// they are checked as the file's lines would be, in place of reading the
// file back and decoding every line again. The summary and, unless
// opts.SkipDetails, the cells' details are read from dir.
func LoadWithResults(dir string, results []evals.CellResult, opts LoadOptions) (*Run, error) {
	return loadDir(dir, opts, true, &results)
}

// loadDir reads summary.json and, when present (required when strict),
// results.jsonl and cells/ from dir. Results given stand for what
// results.jsonl holds, which must be there all the same.
func loadDir(dir string, opts LoadOptions, strict bool, given *[]evals.CellResult) (*Run, error) {
	r := &Run{Source: dir, Details: map[string]*evals.CellDetail{}}
	sumPath := filepath.Join(dir, evals.SummaryFile)
	data, err := os.ReadFile(sumPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{File: sumPath, Err: errors.New("not found: the run did not finish, or this is not a dageval output directory")}
	}
	if err != nil {
		return nil, err
	}
	if err := decodeVersioned(sumPath, data, &r.Summary, &r.Summary.SchemaVersion); err != nil {
		return nil, err
	}
	if err := checkSummary(sumPath, &r.Summary); err != nil {
		return nil, err
	}
	resPath := filepath.Join(dir, evals.ResultsFile)
	var f *os.File
	if given != nil {
		_, err = os.Stat(resPath)
	} else {
		f, err = os.Open(resPath)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) && !strict:
		return r, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{File: resPath, Err: errors.New("not found beside summary.json")}
	case err != nil:
		return nil, err
	}
	if given != nil {
		r.Results, err = checkResults(resPath, *given)
	} else {
		defer f.Close()
		r.Results, err = readResults(resPath, f)
	}
	if err != nil {
		return nil, err
	}
	r.HasResults = true
	if err := checkGroups(resPath, r); err != nil {
		return nil, err
	}
	if len(r.Results) != r.Summary.ActualCells {
		return nil, &Error{File: resPath, Err: fmt.Errorf("%d cell results, but %s says actual_cells is %d: the files come from different runs", len(r.Results), evals.SummaryFile, r.Summary.ActualCells)}
	}
	if !opts.SkipDetails {
		if err := r.loadDetails(filepath.Join(dir, evals.CellsDir)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func checkSummary(path string, s *evals.Summary) error {
	switch {
	case s.Suite == "":
		return &Error{File: path, Field: "suite", Err: errors.New("missing")}
	case s.ExpectedCells < 0 || s.ActualCells < 0 || s.ActualCells > s.ExpectedCells:
		return &Error{File: path, Field: "actual_cells", Err: fmt.Errorf("%d cells of %d expected is not possible", s.ActualCells, s.ExpectedCells)}
	}
	for i, g := range s.Groups {
		if g.Model == "" || g.Profile == "" {
			return &Error{File: path, Field: fmt.Sprintf("groups[%d]", i), Err: errors.New("model and profile are required")}
		}
	}
	return nil
}

// checkGroups makes sure every cell belongs to a model × profile the
// summary aggregates, so no renderer silently leaves a cell out.
func checkGroups(path string, r *Run) error {
	if len(r.Summary.Groups) == 0 {
		return nil
	}
	rank := groupRank(r.Summary.Groups)
	for i, c := range r.Results {
		if _, ok := rank[[2]string{c.Model, c.Profile}]; !ok {
			return &Error{File: path, Line: i + 1, Err: fmt.Errorf("cell %s belongs to no model × profile of %s", keyString(c.CellKey), evals.SummaryFile)}
		}
	}
	return nil
}

// NewRun wraps results already in memory (the runner's, at the end of
// dageval run) as a Run for Render and WriteFiles, without reading files.
func NewRun(summary evals.Summary, results []evals.CellResult, details map[string]*evals.CellDetail) *Run {
	if details == nil {
		details = map[string]*evals.CellDetail{}
	}
	return &Run{Summary: summary, Results: results, Details: details, HasResults: true}
}

// readResults parses results.jsonl, checking every line and refusing
// duplicate cells.
func readResults(path string, rd io.Reader) ([]evals.CellResult, error) {
	var out []evals.CellResult
	check := newResultChecker(path)
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var c evals.CellResult
		if err := json.Unmarshal(b, &c); err != nil {
			e := jsonError(path, b, err)
			e.Line = line // the offset, and so the column, is within this line
			return nil, e
		}
		if err := check.cell(line, &c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{File: path, Line: line + 1, Err: err}
	}
	return out, nil
}

// checkResults checks results decoded from results.jsonl's lines, one
// line each, as readResults checks the lines it reads.
func checkResults(path string, results []evals.CellResult) ([]evals.CellResult, error) {
	if len(results) == 0 {
		return nil, nil // as from a file without lines
	}
	check := newResultChecker(path)
	for i := range results {
		if err := check.cell(i+1, &results[i]); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// resultChecker checks each cell result of a results.jsonl, refusing
// duplicate cells.
type resultChecker struct {
	path string
	seen map[evals.CellKey]int
}

func newResultChecker(path string) *resultChecker {
	return &resultChecker{path: path, seen: map[evals.CellKey]int{}}
}

// cell checks the result on line (1-based) of the file.
func (rc *resultChecker) cell(line int, c *evals.CellResult) error {
	if field, err := checkCell(c); err != nil {
		return &Error{File: rc.path, Line: line, Field: field, Err: err}
	}
	if prev, dup := rc.seen[c.CellKey]; dup {
		return &Error{File: rc.path, Line: line, Err: fmt.Errorf("cell %s repeats line %d", keyString(c.CellKey), prev)}
	}
	rc.seen[c.CellKey] = line
	return nil
}

func checkCell(c *evals.CellResult) (string, error) {
	switch {
	case c.Case == "":
		return "case", errors.New("missing")
	case c.Model == "":
		return "model", errors.New("missing")
	case c.Profile == "":
		return "profile", errors.New("missing")
	case c.Epoch < 1:
		return "epoch", fmt.Errorf("%d: epochs count from 1", c.Epoch)
	case c.ID == "":
		return "id", errors.New("missing")
	case c.Score < 0 || c.Score > 1 || c.Score != c.Score:
		return "score", fmt.Errorf("%v is outside [0, 1]", c.Score)
	}
	switch c.Status {
	case evals.StatusPass, evals.StatusFail, evals.StatusError:
	default:
		return "status", fmt.Errorf("%q is not pass, fail or error", c.Status)
	}
	if strings.ContainsAny(c.ID, `/\`) || c.ID == "." || c.ID == ".." {
		return "id", fmt.Errorf("%q is not a plain file name", c.ID)
	}
	return "", nil
}

// loadDetails reads cells/<id>.json for every result that has one. A
// missing directory is fine (older or trimmed runs); a broken file is not.
func (r *Run) loadDetails(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, c := range r.Results {
		p := filepath.Join(dir, c.ID+".json")
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		d := new(evals.CellDetail)
		if err := decodeVersioned(p, data, d, &d.SchemaVersion); err != nil {
			return err
		}
		if d.Result.CellKey != c.CellKey {
			return &Error{File: p, Field: "result", Err: fmt.Errorf("describes cell %s, but results.jsonl gives id %s to %s", keyString(d.Result.CellKey), c.ID, keyString(c.CellKey))}
		}
		r.Details[c.ID] = d
	}
	return nil
}

// decodeVersioned decodes a JSON file holding schema_version, refusing
// versions other than evals.SchemaVersion before looking at anything else,
// so a newer file fails with a version error rather than a confusing
// field error.
func decodeVersioned(path string, data []byte, v any, version *int) error {
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return jsonError(path, data, err)
	}
	if probe.SchemaVersion == nil {
		return &Error{File: path, Field: "schema_version", Err: errors.New("missing")}
	}
	if *probe.SchemaVersion != evals.SchemaVersion {
		return &Error{File: path, Field: "schema_version", Err: fmt.Errorf("%w %d: this dageval reads version %d", ErrSchemaVersion, *probe.SchemaVersion, evals.SchemaVersion)}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return jsonError(path, data, err)
	}
	*version = *probe.SchemaVersion
	return nil
}

// jsonError turns a decoding error into an Error with a line and column.
func jsonError(path string, data []byte, err error) *Error {
	e := &Error{File: path, Err: err}
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		e.Field = te.Field
		e.Err = fmt.Errorf("got JSON %s, want %s", te.Value, te.Type)
	}
	if off >= 0 {
		e.Line, e.Col = lineCol(data, off)
	}
	return e
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return line, col
}

func keyString(k evals.CellKey) string {
	return fmt.Sprintf("%s × %s × %s epoch %d", k.Case, k.Model, k.Profile, k.Epoch)
}

// FailingCells returns the cells that failed or errored, in results order.
func (r *Run) FailingCells() []evals.CellResult {
	var out []evals.CellResult
	for _, c := range r.Results {
		if c.Status != evals.StatusPass {
			out = append(out, c)
		}
	}
	return out
}

// sortedResults returns the results in a stable order independent of the
// order cells finished in: by model, profile, case, epoch, following the
// group order of the summary for model and profile.
func (r *Run) sortedResults() []evals.CellResult {
	out := slices.Clone(r.Results)
	rank := groupRank(r.Summary.Groups)
	slices.SortStableFunc(out, func(a, b evals.CellResult) int { return compareKeys(rank, a.CellKey, b.CellKey) })
	return out
}

func groupRank(gs []evals.GroupSummary) map[[2]string]int {
	m := make(map[[2]string]int, len(gs))
	for i, g := range gs {
		m[[2]string{g.Model, g.Profile}] = i
	}
	return m
}

func compareKeys(rank map[[2]string]int, a, b evals.CellKey) int {
	ra, oka := rank[[2]string{a.Model, a.Profile}]
	rb, okb := rank[[2]string{b.Model, b.Profile}]
	switch {
	case oka && okb && ra != rb:
		return ra - rb
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	if c := strings.Compare(a.Profile, b.Profile); c != 0 {
		return c
	}
	if c := strings.Compare(a.Case, b.Case); c != 0 {
		return c
	}
	return a.Epoch - b.Epoch
}
