package evals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
}

// openOutDir prepares dir for a run: it removes the files an earlier run
// left there (results, summaries, cell details, never anything else) and
// starts the partial results file.
func openOutDir(dir string) (*outDir, error) {
	if err := os.MkdirAll(filepath.Join(dir, CellsDir), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	for _, name := range []string{ResultsFile, SummaryFile, SummaryMarkdownFile, PartialResultsFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("output directory: %w", err)
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, CellsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return nil, fmt.Errorf("output directory: %w", err)
		}
	}
	f, err := os.Create(filepath.Join(dir, PartialResultsFile))
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	return &outDir{dir: dir, partial: f}, nil
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

// cell records a finished cell: its detail file and its partial result line.
func (o *outDir) cell(res *CellResult, d *CellDetail) error {
	line, err := encodeJSON(res, false)
	if err != nil {
		return err
	}
	if _, err := o.partial.Write(line); err != nil {
		return fmt.Errorf("writing %s: %w", PartialResultsFile, err)
	}
	data, err := encodeJSON(d, true)
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(o.dir, CellsDir, res.ID+".json"), data)
}

// finish writes results.jsonl in matrix order and summary.json, then drops
// the partial file.
func (o *outDir) finish(results []*CellResult, sum *Summary) error {
	if err := o.partial.Close(); err != nil {
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
	if err := WriteFileAtomic(filepath.Join(o.dir, ResultsFile), b.Bytes()); err != nil {
		return err
	}
	data, err := encodeJSON(sum, true)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(o.dir, SummaryFile), data); err != nil {
		return err
	}
	return os.Remove(o.partial.Name())
}

// abort closes the partial file, keeping it: the run ended before its
// results could be written.
func (o *outDir) abort() { o.partial.Close() }

// WriteFileAtomic writes data to path through a temporary file and a
// rename, so readers never see a half-written file.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+strings.TrimPrefix(filepath.Base(path), ".")+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
