package evals

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/internal/fileutil"
)

// MergeOptions tune Merge.
type MergeOptions struct {
	// ResultsOnDisk leaves the RunResult's Results and Details empty, as
	// Options.ResultsOnDisk does.
	ResultsOnDisk bool
	// Warn is told about shards that did not finish (their finished cells
	// are merged, the rest are missing); nil discards it.
	Warn func(string)
}

// mergeShard is one shard's output directory being merged.
type mergeShard struct {
	dir string
	m   *Manifest
	// files are the shard's results files (results.jsonl, or the journal
	// of a shard that did not finish), open for reading lines back.
	files []*os.File
}

// mergeCell is where a cell's result line is: which shard, file, offset.
type mergeCell struct {
	shard, file int32
	n           int32
	off         int64
	line        int
}

// Merge joins the output directories of a run's shards (dageval run
// --shard I/N) into out, which then holds what one machine running the
// whole matrix would have written: results.jsonl in matrix order, cells/,
// summary.json tallied over the whole matrix, and run.json. It refuses
// shards of another suite (or of the same suite run with another filter,
// epochs or mode) and shards that overlap, naming the files; cells no
// shard has are missing from the summary, as in an interrupted run. A
// shard that did not finish (no summary.json) gives the cells of its
// journal, with a warning. Like a run, Merge tallies one result at a
// time, so its memory does not grow with the matrix either.
func (s *Suite) Merge(out string, shardDirs []string, o MergeOptions) (*RunResult, error) {
	if len(shardDirs) == 0 {
		return nil, fmt.Errorf("merge: no shard directories")
	}
	warn := o.Warn
	if warn == nil {
		warn = func(string) {}
	}
	absOut, _ := filepath.Abs(out)
	shards := make([]*mergeShard, len(shardDirs))
	defer func() {
		for _, sh := range shards {
			if sh != nil {
				for _, f := range sh.files {
					f.Close()
				}
			}
		}
	}()
	want := &Manifest{SuiteName: s.Name, SuiteDigest: s.Digest(), Suite: s.Path}
	for k, dir := range shardDirs {
		if abs, _ := filepath.Abs(dir); abs == absOut {
			return nil, fmt.Errorf("merge: the output directory %s is one of the shards; merge into a new directory", out)
		}
		m, err := ReadManifest(dir)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, ManifestFile)
		if m.SuiteDigest != want.SuiteDigest {
			return nil, fmt.Errorf("%s: field suite_digest: %s is a shard of suite %q (%s), not of %s (%q, %s): merge the shards of one run of one suite", path, dir, m.SuiteName, m.SuiteDigest, s.Path, s.Name, want.SuiteDigest)
		}
		if k == 0 {
			want.Filter, want.Epochs, want.Mode, want.TolerateErrors = m.Filter, m.Epochs, m.Mode, m.TolerateErrors
		}
		for _, f := range []struct {
			name      string
			had, want any
		}{{"filter", m.Filter, want.Filter}, {"epochs", m.Epochs, want.Epochs}, {"mode", m.Mode, want.Mode}, {"tolerate_errors", m.TolerateErrors, want.TolerateErrors}} {
			if f.had != f.want {
				return nil, fmt.Errorf("%s: field %s: %v, but %s has %v: the shards of one run have the same options", path, f.name, f.had, filepath.Join(shardDirs[0], ManifestFile), f.want)
			}
		}
		shards[k] = &mergeShard{dir: dir, m: m}
	}
	cells, err := s.Cells(want.Filter, want.Epochs)
	if err != nil {
		return nil, err
	}
	index := make(map[CellKey]int, len(cells))
	for i, c := range cells {
		index[c.CellKey] = i
	}
	where := make([]mergeCell, len(cells))
	for i := range where {
		where[i].shard = -1
	}
	for k, sh := range shards {
		names := []string{ResultsFile}
		if _, err := os.Stat(filepath.Join(sh.dir, SummaryFile)); err != nil {
			names = []string{PartialResultsFile, ResultsFile}
		}
		found := 0
		for fi, name := range names {
			path := filepath.Join(sh.dir, name)
			f, err := os.Open(path)
			if os.IsNotExist(err) {
				sh.files = append(sh.files, nil)
				continue
			}
			if err != nil {
				return nil, err
			}
			sh.files = append(sh.files, f)
			err = scanLines(path, func(n int, off int64, b []byte) error {
				var line struct {
					CellKey
					CellFile *cellFileSum `json:"cell_file"`
				}
				if err := json.Unmarshal(b, &line); err != nil {
					return fmt.Errorf("%s:%d: %w", path, n, err)
				}
				key := line.CellKey
				i, ok := index[key]
				if !ok {
					return fmt.Errorf("%s:%d: cell %s is not in the matrix of %s", path, n, cellName(key), s.Path)
				}
				switch prev := where[i]; {
				case prev.shard == int32(k):
					return nil // in both files of a shard killed while it finished
				case prev.shard >= 0:
					other := shards[prev.shard]
					return fmt.Errorf("%s:%d: cell %s is also in %s:%d: the shards overlap; merge each shard of one run once", path, n, cellName(key), filepath.Join(other.dir, mergeFileName(other, prev.file)), prev.line)
				}
				cellFile := filepath.Join(sh.dir, CellsDir, cells[i].ID+".json")
				if _, err := os.Stat(cellFile); err != nil {
					return fmt.Errorf("%s:%d: cell %s has no cell file: %w", path, n, cellName(key), err)
				}
				if line.CellFile != nil {
					if _, ok := checkCellFile(cellFile, line.CellFile); !ok {
						return fmt.Errorf("%s:%d: cell %s: %s is not the file the line was written with (its machine crashed before it reached the disk?); resume the shard with dageval run --resume %s", path, n, cellName(key), cellFile, sh.dir)
					}
				}
				where[i] = mergeCell{shard: int32(k), file: int32(fi), n: int32(len(b)), off: off, line: n}
				found++
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		if len(names) > 1 {
			warn(fmt.Sprintf("%s did not finish (no %s): its %d finished cells are merged, the rest of its cells are missing; resume it with dageval run --resume %s", sh.dir, SummaryFile, found, sh.dir))
		}
	}

	if _, err := prepareOutDir(out, false); err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	t := s.newTally(cells, want.Mode, s.TolerateErrors || want.TolerateErrors)
	rr := &RunResult{Cells: cells, Details: map[string]*CellDetail{}}
	f, err := fileutil.CreateAtomic(filepath.Join(out, ResultsFile))
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	var buf []byte
	for i, c := range cells {
		at := where[i]
		if at.shard < 0 {
			t.add(i, nil)
			continue
		}
		sh := shards[at.shard]
		if cap(buf) < int(at.n) {
			buf = make([]byte, at.n)
		}
		buf = buf[:at.n]
		if _, err := sh.files[at.file].ReadAt(buf, at.off); err != nil {
			f.Abort()
			return nil, fmt.Errorf("reading %s back: %w", sh.files[at.file].Name(), err)
		}
		r := new(CellResult)
		if err := json.Unmarshal(buf, r); err != nil {
			f.Abort()
			return nil, fmt.Errorf("%s:%d: %w", sh.files[at.file].Name(), at.line, err)
		}
		t.add(i, r)
		w.Write(resultLine(buf))
		name := c.ID + ".json"
		keep[name] = true
		if err := copyFile(filepath.Join(sh.dir, CellsDir, name), filepath.Join(out, CellsDir, name)); err != nil {
			f.Abort()
			return nil, err
		}
		if !o.ResultsOnDisk {
			rr.Results = append(rr.Results, *r)
			if d, err := readDetail(out, r.ID); err == nil {
				rr.Details[r.ID] = d
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Abort()
		return nil, err
	}
	if err := f.Commit(false); err != nil {
		return nil, err
	}
	if err := pruneExcept(filepath.Join(out, CellsDir), keep); err != nil {
		return nil, err
	}
	rr.Summary = t.summary()
	rr.Mode = recorder.Mode(want.Mode)
	m := *want
	m.SchemaVersion, m.Suite, m.Cells = SchemaVersion, shards[0].m.Suite, len(cells)
	if err := writeManifest(out, &m); err != nil {
		return nil, err
	}
	data, err := encodeJSON(&rr.Summary, true)
	if err != nil {
		return nil, err
	}
	return rr, fileutil.WriteFileAtomic(filepath.Join(out, SummaryFile), data)
}

func mergeFileName(sh *mergeShard, file int32) string {
	if sh.files[file] == nil {
		return ""
	}
	return filepath.Base(sh.files[file].Name())
}

// cellName names a cell in messages: case/model/profile/e<epoch>.
func cellName(k CellKey) string {
	return fmt.Sprintf("%s/%s/%s/e%d", k.Case, k.Model, k.Profile, k.Epoch)
}

// pruneExcept removes the .json files of dir that keep does not name.
func pruneExcept(dir string, keep map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".json") && !keep[name] && !e.IsDir() {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
