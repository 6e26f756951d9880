package evals

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dageval/dageval/internal/fileutil"
)

// ManifestFile is run.json in a run's output directory: how the run was
// started, so that it can be resumed, and its shards merged, over the same
// matrix.
const ManifestFile = "run.json"

// Manifest is run.json: what a run was started with. It is written when
// the run starts and kept after it ends.
type Manifest struct {
	SchemaVersion int `json:"schema_version"`
	// Suite is the suite file as the run was given it (relative to the
	// directory the run was started in, when it was given so).
	Suite       string `json:"suite"`
	SuiteName   string `json:"suite_name"`
	SuiteDigest string `json:"suite_digest"`
	// Filter and Epochs are the run's Options.Filter and Options.Epochs.
	Filter string `json:"filter,omitempty"`
	Epochs int    `json:"epochs,omitempty"`
	// Shard is the part of the matrix the run has; nil for the whole.
	Shard *Shard `json:"shard,omitempty"`
	// Mode is the mode the run resolved to; a resumed run keeps it.
	Mode           string `json:"mode"`
	TolerateErrors bool   `json:"tolerate_errors,omitempty"`
	// Cells is how many cells the run has (its shard's, for a shard).
	Cells int `json:"cells"`
}

// ReadManifest reads dir's run.json, for resuming the run in dir.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: not found: %s holds no run that can be resumed (a run writes run.json when it starts)", path, dir)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: field schema_version: %d, but this dageval reads version %d", path, m.SchemaVersion, SchemaVersion)
	}
	return &m, nil
}

func writeManifest(dir string, m *Manifest) error {
	data, err := encodeJSON(m, true)
	if err != nil {
		return err
	}
	return fileutil.WriteFileAtomic(filepath.Join(dir, ManifestFile), data)
}

// manifest is what a run of s with o over its cells writes as run.json.
func (ss *session) manifest() *Manifest {
	m := &Manifest{
		SchemaVersion: SchemaVersion, Suite: ss.s.Path, SuiteName: ss.s.Name, SuiteDigest: ss.s.Digest(),
		Filter: ss.o.Filter, Epochs: ss.o.Epochs, Mode: string(ss.mode), TolerateErrors: ss.o.TolerateErrors, Cells: len(ss.cells),
	}
	if !ss.o.Shard.Whole() {
		sh := ss.o.Shard
		m.Shard = &sh
	}
	return m
}

// checkResumable refuses to resume a run that was started otherwise: from
// another suite, or with another filter, epochs or shard, whose results
// would not be this matrix's.
func (m *Manifest) checkResumable(path string, want *Manifest) error {
	field := func(name string, had, now any) error {
		return fmt.Errorf("%s: field %s: the run was started with %v, this one has %v; resume it with what it was started with, or start a new run in another directory", path, name, had, now)
	}
	shard := func(s *Shard) string {
		if s == nil {
			return "the whole matrix"
		}
		return "shard " + s.String()
	}
	switch {
	case m.SuiteDigest != want.SuiteDigest:
		return fmt.Errorf("%s: field suite_digest: the run in %s is of suite %q (%s), which differs from %s (%s): its cases, models or profiles changed", path, filepath.Dir(path), m.SuiteName, m.SuiteDigest, want.Suite, want.SuiteDigest)
	case m.Filter != want.Filter:
		return field("filter", fmt.Sprintf("%q", m.Filter), fmt.Sprintf("%q", want.Filter))
	case m.Epochs != want.Epochs:
		return field("epochs", m.Epochs, want.Epochs)
	case shard(m.Shard) != shard(want.Shard):
		return field("shard", shard(m.Shard), shard(want.Shard))
	}
	return nil
}

// resumed says what resuming found in the output directory.
type resumed struct {
	// Finished counts the cells whose results were kept; Retried the
	// errored ones dropped to run again (RetryErrors); NoDetail those
	// whose line survived without their cell file whole (a machine that
	// crashed before the file reached the disk), and Garbled the lines
	// that are not a result at all (the same crash, in the journal),
	// whose cells run again too.
	Finished, Retried, NoDetail, Garbled int
}

// resumeOutDir prepares dir to continue its run: the cells of results
// (results.partial.jsonl, the journal of a run that was killed, and
// results.jsonl, that of one that ended, interrupted or not) whose cell
// files are whole become the new journal — rewritten whole, without a
// torn last line, before the summaries are removed, so that a resume that
// is itself killed loses nothing — and the rest of the cells are left to
// run.
func resumeOutDir(dir string, cells []Cell, durable, retryErrors bool) (*outDir, resumed, error) {
	var info resumed
	o := &outDir{dir: dir, durable: durable}
	if err := os.MkdirAll(filepath.Join(dir, CellsDir), 0o755); err != nil {
		return nil, info, fmt.Errorf("output directory: %w", err)
	}
	index := make(map[CellKey]int, len(cells))
	for i, c := range cells {
		index[c.CellKey] = i
	}
	partial := filepath.Join(dir, PartialResultsFile)
	tmp := partial + ".tmp"
	j, err := newJournal(tmp, len(cells))
	if err != nil {
		return nil, info, fmt.Errorf("output directory: %w", err)
	}
	fail := func(err error) (*outDir, resumed, error) {
		j.close()
		os.Remove(tmp)
		return nil, info, err
	}
	// dropped holds the cells whose line was refused: a line of the
	// same cell in results.jsonl (of a run interrupted after it, when the
	// journal was kept) must not bring the cell back.
	dropped := make([]bool, len(cells))
	var line []byte
	keep := func(path string) func(int, int64, []byte) error {
		return func(n int, _ int64, b []byte) error {
			var k struct {
				CellKey
				ID       string       `json:"id"`
				Status   Status       `json:"status"`
				CellFile *cellFileSum `json:"cell_file"`
			}
			if err := json.Unmarshal(b, &k); err != nil {
				if !json.Valid(b) {
					// Not JSON: bytes of a line that never reached the
					// disk whole, before a crash. Its cell runs again.
					info.Garbled++
					return nil
				}
				return fmt.Errorf("%s:%d: %w", path, n, err)
			}
			i, ok := index[k.CellKey]
			switch {
			case !ok:
				return fmt.Errorf("%s:%d: cell %s/%s/%s/e%d is not in this run's matrix", path, n, k.Case, k.Model, k.Profile, k.Epoch)
			case j.has(i):
				return nil // in both files: the run was killed while it finished
			case dropped[i]:
				return nil
			case retryErrors && k.Status == StatusError:
				info.Retried++
				dropped[i] = true
				return nil
			}
			sum, ok := checkCellFile(filepath.Join(dir, CellsDir, cells[i].ID+".json"), k.CellFile)
			if !ok {
				info.NoDetail++
				dropped[i] = true
				return nil
			}
			info.Finished++
			line = appendJournalLine(line[:0], resultLine(b), sum)
			return j.add(i, line)
		}
	}
	for _, name := range []string{PartialResultsFile, ResultsFile} {
		path := filepath.Join(dir, name)
		if err := scanLines(path, keep(path)); err != nil {
			return fail(err)
		}
	}
	if err := j.f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, partial); err != nil {
		return fail(err)
	}
	j.path = partial
	if err := fileutil.SyncDir(dir); err != nil {
		return fail(err)
	}
	if err := removeSummaries(dir); err != nil {
		j.close()
		return nil, info, err
	}
	o.j = j
	o.queued = make([]bool, len(cells))
	return o, info, nil
}

// checkCellFile tells whether the cell file at path is the one its line
// was written with, and returns its sum for the new journal's line. A line
// with a sum needs a file of that size and SHA-256. A line without one is
// of results.jsonl, written after the run's files were made durable (or of
// a journal dageval wrote when it fsynced each cell file): its file must
// be there and be JSON, which a torn or zeroed file is not.
func checkCellFile(path string, want *cellFileSum) (cellFileSum, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return cellFileSum{}, false
	}
	if want != nil {
		if int64(len(data)) != want.Bytes {
			return cellFileSum{}, false
		}
		got := sumOf(data)
		return got, got == *want
	}
	if !json.Valid(data) {
		return cellFileSum{}, false
	}
	return sumOf(data), true
}
