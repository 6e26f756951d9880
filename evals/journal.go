package evals

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/dageval/dageval/internal/fileutil"
)

// journal is a run's results.partial.jsonl: one line per finished cell,
// appended as cells finish, each line durable before its cell counts as
// finished when the journal is durable. It remembers where each cell's
// line is, so that results.jsonl can be written in matrix order at the end
// by reading the lines back instead of keeping the results in memory.
//
// Durable journals fsync with group commit: a cell's worker appends its
// line and waits for an fsync that started after the write; one fsync
// covers every line appended before it began, so many cells finishing
// together share one instead of queueing for their own.
type journal struct {
	f       *os.File
	path    string // where f is now: a resumed journal is renamed into place
	durable bool
	// syncDirs are fsynced with the journal, so that the cell files whose
	// lines it holds have their directory entries on disk too.
	syncDirs []string

	mu   sync.Mutex
	size int64
	seq  uint64  // lines appended
	off  []int64 // by cell index; -1 when the cell has no line
	n    []int32

	smu     sync.Mutex
	cond    *sync.Cond
	synced  uint64 // lines known to be on disk
	syncing bool
	syncErr error
}

// newJournal starts an empty journal at path for a matrix of n cells.
func newJournal(path string, n int, durable bool, syncDirs ...string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j := &journal{f: f, path: path, durable: durable, syncDirs: syncDirs, off: make([]int64, n), n: make([]int32, n)}
	for i := range j.off {
		j.off[i] = -1
	}
	j.cond = sync.NewCond(&j.smu)
	return j, nil
}

// add appends cell i's line (ending in a newline) without waiting for it
// to reach the disk.
func (j *journal) add(i int, line []byte) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(line); err != nil {
		return 0, fmt.Errorf("writing %s: %w", j.path, err)
	}
	j.off[i], j.n[i] = j.size, int32(len(line))
	j.size += int64(len(line))
	j.seq++
	return j.seq, nil
}

// append appends cell i's line and, when the journal is durable, returns
// once it is on disk.
func (j *journal) append(i int, line []byte) error {
	seq, err := j.add(i, line)
	if err != nil || !j.durable {
		return err
	}
	return j.syncTo(seq)
}

// syncTo waits until the first seq lines are on disk, leading an fsync
// when none that would cover them is under way.
func (j *journal) syncTo(seq uint64) error {
	j.smu.Lock()
	defer j.smu.Unlock()
	for j.synced < seq && j.syncErr == nil {
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		j.mu.Lock()
		target := j.seq
		j.mu.Unlock()
		j.smu.Unlock()
		err := j.syncNow()
		j.smu.Lock()
		j.syncing = false
		if err != nil {
			j.syncErr = fmt.Errorf("syncing %s: %w", j.path, err)
		} else {
			j.synced = target
		}
		j.cond.Broadcast()
	}
	return j.syncErr
}

func (j *journal) syncNow() error {
	for _, d := range j.syncDirs {
		if err := fileutil.SyncDir(d); err != nil {
			return err
		}
	}
	return j.f.Sync()
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
