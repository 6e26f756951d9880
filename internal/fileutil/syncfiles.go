package fileutil

import (
	"os"
	"sync"
)

// syncWorkers is how many fsyncs SyncFiles keeps in flight: the file
// system commits its journal once for all that wait together, where one
// after the other each waits for a commit of its own.
const syncWorkers = 8

// SyncFiles flushes the named files to stable storage, many at once,
// each file's data on its way to the disk before the first fsync waits
// (see startWriteback): a run that writes hundreds of files and makes them
// durable once at its end pays about one journal commit instead of one
// per file. It returns the first error, naming its file.
func SyncFiles(paths []string) error {
	files := make(chan *os.File, len(paths))
	var firstErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range min(syncWorkers, len(paths)) {
		wg.Go(func() {
			for f := range files {
				if err := f.Sync(); err != nil {
					fail(err)
				}
				f.Close()
			}
		})
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			fail(err)
			continue
		}
		startWriteback(f)
		files <- f
	}
	close(files)
	wg.Wait()
	return firstErr
}
