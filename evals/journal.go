package evals

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
)

// journal is a run's results.partial.jsonl: one line per finished cell,
// appended as cells finish. It remembers where each cell's line is, so
// that results.jsonl can be written in matrix order at the end by reading
// the lines back instead of keeping the results in memory.
//
// The journal is not fsynced while the run goes on, and no cell waits
// for its file to be (the files are flushed in the background, see
// outDir): each line ends in the size and SHA-256 of its cell's file
// (cellFileSum), and resuming keeps a line only when the file matches it,
// so a line that reached the disk without its file (a machine that
// crashed) makes its cell run again rather than count with a file that is
// missing or torn. The end of a run makes the journal and the files not
// yet flushed durable in one pass (outDir.pruneCells).
type journal struct {
	f    *os.File
	path string // where f is now: a resumed journal is renamed into place

	mu   sync.Mutex
	size int64
	off  []int64 // by cell index; -1 when the cell has no line
	n    []int32
}

// newJournal starts an empty journal at path for a matrix of n cells.
func newJournal(path string, n int) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j := &journal{f: f, path: path, off: make([]int64, n), n: make([]int32, n)}
	for i := range j.off {
		j.off[i] = -1
	}
	return j, nil
}

// add appends cell i's line (ending in a newline).
func (j *journal) add(i int, line []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(line); err != nil {
		return fmt.Errorf("writing %s: %w", j.path, err)
	}
	j.off[i], j.n[i] = j.size, int32(len(line))
	j.size += int64(len(line))
	return nil
}

// has reports whether cell i has a line.
func (j *journal) has(i int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.off[i] >= 0
}

// line reads cell i's line back (with its newline); nil when it has none.
func (j *journal) line(i int, buf []byte) ([]byte, error) {
	j.mu.Lock()
	off, n := j.off[i], j.n[i]
	j.mu.Unlock()
	if off < 0 {
		return nil, nil
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := j.f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("reading %s back: %w", j.path, err)
	}
	return buf, nil
}

func (j *journal) close() error { return j.f.Close() }

// cellFileSum is what a journal line records of its cell's file, to tell
// the file the line was written with from one that is missing, torn or
// another run's.
type cellFileSum struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// cellFileKey is the member a journal line adds to its cell's result
// line, last, so that results.jsonl gets the result line by cutting it off.
const cellFileKey = `,"cell_file":{`

// sumOf is the cellFileSum of a cell file's bytes.
func sumOf(data []byte) cellFileSum {
	h := sha256.Sum256(data)
	return cellFileSum{Bytes: int64(len(data)), SHA256: hex.EncodeToString(h[:])}
}

// appendJournalLine appends the journal line of a cell to dst: its result
// line (compact JSON ending in "}\n", or in "}" without the newline) with
// the cell file's sum as the last member.
func appendJournalLine(dst, result []byte, sum cellFileSum) []byte {
	body, ok := bytes.CutSuffix(result, []byte("}\n"))
	if !ok {
		body = bytes.TrimSuffix(result, []byte("}"))
	}
	dst = append(dst, body...)
	if len(body) > 1 {
		dst = append(dst, cellFileKey...)
	} else {
		dst = append(dst, cellFileKey[1:]...)
	}
	dst = append(dst, `"bytes":`...)
	dst = strconv.AppendInt(dst, sum.Bytes, 10)
	dst = append(dst, `,"sha256":"`...)
	dst = append(dst, sum.SHA256...)
	return append(dst, "\"}}\n"...)
}

// resultLine is the result line within a journal line: the line without
// its cell_file member, as results.jsonl holds it, made in line's own
// bytes. A line without one (of results.jsonl, or of a journal dageval
// wrote before lines had them) is its own result line. The member is found
// from the end: JSON escapes every quote inside a string, so cellFileKey
// cannot occur in a value.
func resultLine(line []byte) []byte {
	if !bytes.HasSuffix(line, []byte("}}\n")) {
		return line
	}
	k := bytes.LastIndex(line, []byte(cellFileKey))
	if k < 0 {
		if len(line) > 0 && bytes.HasPrefix(line[1:], []byte(cellFileKey[1:])) {
			return append(line[:1], "}\n"...)
		}
		return line
	}
	return append(line[:k], "}\n"...)
}

// scanLines calls fn with each complete line of path: its number (from
// 1), its offset, and its bytes with the newline. A last line without a
// newline is a write that its process died in: it is left out, since its
// cell never counted as finished. A missing file has no lines.
func scanLines(path string, fn func(n int, off int64, line []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	var off int64
	for n := 1; ; n++ {
		b, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = r.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if errors.Is(err, io.EOF) {
			return nil // the torn tail, or nothing
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if err := fn(n, off, b); err != nil {
				return err
			}
		}
		off += int64(len(b))
	}
}
