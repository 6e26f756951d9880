package evals

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dageval/dageval/internal/fileutil"
)

// PartialResultsFile is the run's journal: each cell's result line is
// appended the moment the cell finishes, in completion order, with the
// size and SHA-256 of the cell's file as its last member ("cell_file"), so
// a long run can be followed, and a run that is killed or loses its
// machine can be resumed without repeating a finished cell whose file is
// intact (see Options.Resume). When the run ends, results.jsonl is written
// in matrix order (so two runs give the same file), without the cell_file
// members, and this file is removed.
const PartialResultsFile = "results.partial.jsonl"

// SummaryMarkdownFile is the markdown summary `dageval run` writes beside summary.json.
const SummaryMarkdownFile = "summary.md"

// outDir writes a run's files.
type outDir struct {
	dir string
	// durable runs make their files durable when they end, before
	// results.jsonl and summary.json: runs that call providers, whose
	// cells cost time and money to run again. A replayed cell costs
	// nothing to run again, so a replay leaves the flushing to the system.
	// While a run goes on its cell files are fsynced in the background,
	// in batches (bg), and the journal not at all: the files survive the
	// process being killed, and a machine that crashes costs the cells
	// whose files it lost, which resuming finds by their journal lines.
	// The end of the run flushes what is left and waits for the rest.
	durable bool
	j       *journal
	bg      fileutil.Syncer
	// queued marks, by cell index, the cell files handed to bg, written
	// by the worker that runs the cell.
	queued []bool
}

// openOutDir prepares dir for a fresh run of n cells: it removes the
// results and summaries an earlier run left there and starts an empty
// journal. Cell files of an earlier run are replaced as cells finish, and
// the ones this run does not write are removed when it ends (never any
// other file).
func openOutDir(dir string, n int, durable bool) (*outDir, error) {
	o, err := prepareOutDir(dir, durable)
	if err != nil {
		return nil, err
	}
	if o.j, err = newJournal(filepath.Join(dir, PartialResultsFile), n); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	o.queued = make([]bool, n)
	return o, nil
}

func prepareOutDir(dir string, durable bool) (*outDir, error) {
	if err := os.MkdirAll(filepath.Join(dir, CellsDir), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	if err := removeSummaries(dir); err != nil {
		return nil, err
	}
	return &outDir{dir: dir, durable: durable}, nil
}

// removeSummaries removes the files that mark a finished run, so that a
// directory with a summary.json always holds a finished run's files.
func removeSummaries(dir string) error {
	for _, name := range []string{SummaryFile, ResultsFile, SummaryMarkdownFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("output directory: %w", err)
		}
	}
	return nil
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

// cellEncoder encodes each cell's detail file and result line into
// buffers it keeps: a run encodes a file and a line per cell, and fresh
// buffers for them were a tenth of what a live run allocated.
type cellEncoder struct {
	compact bytes.Buffer // the detail, compact, as enc writes it
	enc     *json.Encoder
	file    []byte // the detail file: compact indented
	line    []byte
}

var cellEncoders = sync.Pool{New: func() any {
	e := &cellEncoder{}
	e.enc = json.NewEncoder(&e.compact)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledEncoding bounds the buffers kept for the next cell, so that one
// huge transcript does not stay in memory for the rest of the run.
const maxPooledEncoding = 1 << 20

func getCellEncoder() *cellEncoder { return cellEncoders.Get().(*cellEncoder) }

func (e *cellEncoder) release() {
	if e.compact.Cap() <= maxPooledEncoding && cap(e.file) <= maxPooledEncoding && cap(e.line) <= maxPooledEncoding {
		cellEncoders.Put(e)
	}
}

// encode encodes d's file as encodeJSON(d, true) does, with last, when
// given, in place of the object's closing "}\n" (see sharedGiven.member),
// and d's result line (without its newline) as encodeJSON(&d.Result,
// false) does, from one reflective encoding: an encoder that indents
// encodes compact and indents that, and the compact detail holds the
// result line as its "result" member. Both are e's until its next use.
func (e *cellEncoder) encode(d *CellDetail, last []byte) (file, result []byte, err error) {
	e.compact.Reset()
	if err := e.enc.Encode(d); err != nil {
		return nil, nil, err
	}
	e.file = appendIndented(e.file[:0], e.compact.Bytes())
	if last != nil {
		e.file = append(e.file[:len(e.file)-len("\n}\n")], last...)
	}
	result = resultMember(e.compact.Bytes())
	if result == nil {
		// Not where a CellDetail puts it: encoded on its own, as before.
		e.compact.Reset()
		if err := e.enc.Encode(&d.Result); err != nil {
			return nil, nil, err
		}
		result = bytes.TrimSuffix(e.compact.Bytes(), []byte("\n"))
	}
	return e.file, result, nil
}

// resultMember is the value of the "result" member of a compact encoded
// CellDetail, which encoding/json writes second, after the schema
// version; nil when detail does not begin so.
func resultMember(detail []byte) []byte {
	b, ok := bytes.CutPrefix(detail, []byte(`{"schema_version":`))
	if !ok {
		return nil
	}
	n := 0
	for n < len(b) && (b[n] >= '0' && b[n] <= '9' || b[n] == '-') {
		n++
	}
	if b, ok = bytes.CutPrefix(b[n:], []byte(`,"result":`)); !ok {
		return nil
	}
	if end := objectEnd(b); end > 0 {
		return b[:end]
	}
	return nil
}

// objectEnd is the length of the JSON object b begins with, which must be
// valid JSON as encoding/json writes it; 0 when b does not begin with an
// object or it is not closed.
func objectEnd(b []byte) int {
	if len(b) == 0 || b[0] != '{' {
		return 0
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return 0
			}
			i = end - 1
		}
	}
	return 0
}

// stringEnd is the index after the JSON string that begins at b[i], a
// quote; -1 when it is not closed. Only quotes matter within a string:
// one ends it unless an odd number of backslashes escapes it.
func stringEnd(b []byte, i int) int {
	for {
		q := bytes.IndexByte(b[i+1:], '"')
		if q < 0 {
			return -1
		}
		i += 1 + q
		k := i
		for b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
}

// indentStep is a newline and the indentation of the deepest members
// appendIndented writes without growing it.
var indentStep = "\n" + strings.Repeat("  ", 32)

// appendNewline appends a newline and the indentation of depth.
func appendNewline(dst []byte, depth int) []byte {
	n := 1 + 2*depth
	if n <= len(indentStep) {
		return append(dst, indentStep[:n]...)
	}
	dst = append(dst, indentStep...)
	for n -= len(indentStep); n > 0; n -= 2 {
		dst = append(dst, "  "...)
	}
	return dst
}

// appendIndented appends src, JSON as encoding/json's Encoder writes it
// compact (no space outside strings but a last newline), indented as
// json.Indent(dst, src, "", "  ") does: the Encoder indents so, with a
// scanner that steps through every byte, which was a sixth of encoding a
// cell's file. Strings are copied whole, and an empty object or array
// stays {} or [].
func appendIndented(dst, src []byte) []byte {
	depth := 0
	opened := false // the last byte opened an object or array
	for i := 0; i < len(src); i++ {
		c := src[i]
		if opened && c != '}' && c != ']' {
			opened = false
			depth++
			dst = appendNewline(dst, depth)
		}
		switch c {
		case '"':
			end := stringEnd(src, i)
			if end < 0 {
				return append(dst, src[i:]...)
			}
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			opened = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, ',')
			dst = appendNewline(dst, depth)
		case ':':
			dst = append(dst, ':', ' ')
		case '}', ']':
			if opened {
				opened = false
			} else {
				depth--
				dst = appendNewline(dst, depth)
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// cell writes a finished cell's detail file, then appends its result
// line (d.Result) to the journal with the file's sum: a cell whose line
// is there has had its file written, and resuming tells whether it is
// still there whole. Workers call it concurrently, each for its own cell.
func (o *outDir) cell(i int, d *CellDetail) error { return o.cellDecoded(i, d, nil) }

// cellDecoded is cell that also sets decoded, when given, to the result
// line it writes as decoded: what reading results.jsonl back would give,
// got by the worker instead of by the end of the run, one cell after
// another, and copied from d.Result rather than decoded when decodedCopy
// can.
func (o *outDir) cellDecoded(i int, d *CellDetail, decoded *CellResult) error {
	write := d
	var member []byte
	if d.shared.holds(d.Agent) {
		// The agent's description is the last member, encoded once for
		// all the cells that share it.
		cp := *d
		cp.Agent, member = nil, d.shared.member
		write = &cp
	}
	e := getCellEncoder()
	defer e.release()
	file, result, err := e.encode(write, member)
	if err != nil {
		return err
	}
	sum := sumOf(file)
	path := filepath.Join(o.dir, CellsDir, d.Result.ID+".json")
	// In place, over the previous run's file of the cell if there is
	// one, which on some file systems costs a fraction of creating a new
	// one; a file left half-written is told by its sum.
	if err := os.WriteFile(path, file, 0o644); err != nil {
		return err
	}
	if o.durable {
		o.queued[i] = true
		o.bg.Add(path)
	}
	if decoded != nil && !decodedCopy(&d.Result, decoded) {
		*decoded = CellResult{}
		if err := json.Unmarshal(result, decoded); err != nil {
			return err
		}
	}
	e.line = appendJournalLine(e.line[:0], result, sum)
	return o.j.add(i, e.line)
}

// pruneCells removes the cell files of cells that have no result line:
// an earlier run's, and those of cells that were in flight. A durable run
// first makes the files of the cells that have lines durable, with the
// journal: most were flushed in the background as they were written, the
// rest (the last cells', and a resumed run's earlier ones) are flushed
// now in one pass; so the results.jsonl and summary.json written after
// them never name a file a crash could still take.
func (o *outDir) pruneCells(cells []Cell) error {
	keep := make(map[string]bool)
	var paths []string
	cellsDir := filepath.Join(o.dir, CellsDir)
	for i, c := range cells {
		if o.j.has(i) {
			keep[c.ID+".json"] = true
			if o.durable && !o.queued[i] {
				paths = append(paths, filepath.Join(cellsDir, c.ID+".json"))
			}
		}
	}
	if o.durable {
		if err := o.bg.Flush(append(paths, o.j.path)...); err != nil {
			return fmt.Errorf("output directory: %w", err)
		}
	}
	if err := pruneExcept(cellsDir, keep); err != nil {
		return err
	}
	if !o.durable {
		return nil
	}
	return fileutil.SyncDir(cellsDir)
}

// writeResults writes results.jsonl: the journal's lines in matrix order,
// read back one at a time, each decoded for visit on the way (the
// summary's tally) unless mem holds the cell's result already. A cell
// without a line is visited with nil unless only finished cells count.
func (o *outDir) writeResults(cells []Cell, mem []*CellResult, onlyFinished bool, visit func(i int, r *CellResult)) error {
	if err := o.pruneCells(cells); err != nil {
		return err
	}
	f, err := fileutil.CreateAtomic(filepath.Join(o.dir, ResultsFile))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	var buf []byte
	for i := range cells {
		line, err := o.j.line(i, buf)
		if err != nil {
			f.Abort()
			return err
		}
		if line == nil {
			if !onlyFinished {
				visit(i, nil)
			}
			continue
		}
		buf = line
		line = resultLine(line)
		r := mem[i]
		if r == nil {
			r = new(CellResult)
			if err := json.Unmarshal(line, r); err != nil {
				f.Abort()
				return fmt.Errorf("%s: the line of cell %s: %w", o.j.path, cells[i].ID, err)
			}
		}
		visit(i, r)
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		f.Abort()
		return err
	}
	return f.Commit(o.durable)
}

// finish writes summary.json, which marks the run finished, and drops the
// journal, whose lines are all in results.jsonl.
func (o *outDir) finish(sum *Summary) error {
	data, err := encodeJSON(sum, true)
	if err != nil {
		return err
	}
	f, err := fileutil.CreateAtomic(filepath.Join(o.dir, SummaryFile))
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	if err := f.Commit(o.durable); err != nil {
		return err
	}
	if o.durable {
		if err := fileutil.SyncDir(o.dir); err != nil {
			return err
		}
	}
	o.j.close()
	return os.Remove(o.j.path)
}

// abort closes the journal, keeping it: the run ended before its results
// could be written, and can be resumed from it.
func (o *outDir) abort() {
	_ = o.bg.Flush() // no flushing left running past the run
	o.j.close()
}
