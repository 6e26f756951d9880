package fileutil

import (
	"os"
	"sync"
)

// syncWorkers is how many fsyncs SyncFiles keeps in flight: the file
// system commits its journal once for all the fsyncs waiting together,
// where one after another each would wait for a commit of its own.
const syncWorkers = 16

// SyncFiles flushes the named files to stable storage, many at once: a
// run that writes hundreds of files and makes them durable once at its end
// pays for a few journal commits instead of one per file (on ext4 on this
// project's 2-core VM, 400 files: about 0.1 s, against 0.45 s for an fsync
// per file as each was written). It returns the first error, naming its
// file.
func SyncFiles(paths []string) error {
	jobs := make(chan string)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(syncWorkers, len(paths)) {
		wg.Go(func() {
			for p := range jobs {
				if err := syncFile(p); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range paths {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncBatch is how many files a Syncer gathers before it flushes them
// together in the background: flushed one by one as they come, each fsync
// forces a journal commit of its own, and the commits stall the writers
// (on ext4 a run's cells took longer, with more system time, than with
// all the fsyncs at its end).
const syncBatch = 64

// Syncer flushes files to stable storage in batches, in the background,
// as they are handed to it, so that a run that writes its files as it
// goes makes most of them durable while it waits on other things (a
// provider's answers), leaving only the last batch for its end. Add must
// not be called once Flush has been; the zero Syncer is ready for use.
type Syncer struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	pending []string
	err     error
}

// Add queues path to be flushed; every syncBatch files a batch is
// flushed in the background, as SyncFiles does.
func (s *Syncer) Add(path string) {
	s.mu.Lock()
	s.pending = append(s.pending, path)
	var batch []string
	if len(s.pending) >= syncBatch {
		batch, s.pending = s.pending, nil
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if batch != nil {
		go func() {
			defer s.wg.Done()
			if err := SyncFiles(batch); err != nil {
				s.mu.Lock()
				if s.err == nil {
					s.err = err
				}
				s.mu.Unlock()
			}
		}()
	}
}

// Flush waits for the batches in flight and flushes the files added since
// together with more, in one pass; it returns the first error, naming its
// file.
func (s *Syncer) Flush(more ...string) error {
	s.wg.Wait()
	s.mu.Lock()
	err, rest := s.err, append(s.pending, more...)
	s.pending = nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return SyncFiles(rest)
}
