package evals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dageval/dageval/internal/fileutil"
)

// PartialResultsFile receives each cell's result line the moment the cell
// finishes, in completion order, so a long run can be followed and a crash
// leaves what was done. When the run ends, results.jsonl is written in
// matrix order (so two runs give the same file) and this file is removed.
const PartialResultsFile = "results.partial.jsonl"

// SummaryMarkdownFile is the markdown summary `dageval run` writes beside summary.json.
const SummaryMarkdownFile = "summary.md"

// outDir writes a run's files.
type outDir struct {
	dir     string
	partial *os.File
	written map[string]bool // cell files of this run
}

// openOutDir prepares dir for a run: it removes the results and summaries
// an earlier run left there and starts the partial results file. Cell
// files of an earlier run are replaced as cells finish, and the ones this
// run does not write are removed when it ends (never any other file).
func openOutDir(dir string) (*outDir, error) {
	if err := os.MkdirAll(filepath.Join(dir, CellsDir), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	for _, name := range []string{ResultsFile, SummaryFile, SummaryMarkdownFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("output directory: %w", err)
		}
	}
	f, err := os.Create(filepath.Join(dir, PartialResultsFile))
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	return &outDir{dir: dir, partial: f, written: map[string]bool{}}, nil
}

func encodeJSON(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// detail writes a finished cell's detail file. Workers call it
// concurrently, each for its own cell.
func (o *outDir) detail(d *CellDetail) error {
	data, err := encodeJSON(d, true)
	if err != nil {
		return err
	}
	return writeCellFile(filepath.Join(o.dir, CellsDir), d.Result.ID+".json", data)
}

// result appends a finished cell's line to the partial results; calls are
// serialised by the caller, after detail.
func (o *outDir) result(res *CellResult) error {
	o.written[res.ID+".json"] = true
	line, err := encodeJSON(res, false)
	if err != nil {
		return err
	}
	if _, err := o.partial.Write(line); err != nil {
		return fmt.Errorf("writing %s: %w", PartialResultsFile, err)
	}
	return nil
}

// cell records a finished cell: its detail file, then its result line.
func (o *outDir) cell(res *CellResult, d *CellDetail) error {
	if err := o.detail(d); err != nil {
		return err
	}
	return o.result(res)
}

// writeCellFile writes a cell's file in place. A half-written cell file
// can only be left by a run that died, and such a run has no summary.json
// (which is removed when a run starts and written last, atomically): a
// directory with a summary never holds a half-written file. Writing in
// place reuses the files of the previous run into the same directory,
// which on some file systems costs a fraction of creating new ones.
func writeCellFile(dir, name string, data []byte) error {
	return os.WriteFile(filepath.Join(dir, name), data, 0o644)
}

// pruneCells removes the cell files (and leftover temporary files) that
// this run did not write.
func (o *outDir) pruneCells() error {
	entries, err := os.ReadDir(filepath.Join(o.dir, CellsDir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		stale := strings.HasSuffix(name, ".json") && !o.written[name]
		if stale && !e.IsDir() {
			if err := os.Remove(filepath.Join(o.dir, CellsDir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish writes results.jsonl in matrix order and summary.json, then drops
// the partial file.
func (o *outDir) finish(results []*CellResult, sum *Summary) error {
	if err := o.partial.Close(); err != nil {
		return err
	}
	if err := o.pruneCells(); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, r := range results {
		if r == nil {
			continue
		}
		line, err := encodeJSON(r, false)
		if err != nil {
			return err
		}
		b.Write(line)
	}
	if err := fileutil.WriteFileAtomic(filepath.Join(o.dir, ResultsFile), b.Bytes()); err != nil {
		return err
	}
	data, err := encodeJSON(sum, true)
	if err != nil {
		return err
	}
	if err := fileutil.WriteFileAtomic(filepath.Join(o.dir, SummaryFile), data); err != nil {
		return err
	}
	return os.Remove(o.partial.Name())
}

// abort closes the partial file, keeping it: the run ended before its
// results could be written.
func (o *outDir) abort() { o.partial.Close() }
