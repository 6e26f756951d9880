package fileutil_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/internal/fileutil"
)

// entries lists the names in dir, so a test can see leftover temporary files.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomic(t *testing.T) {
	tests := []struct {
		name     string
		rel      string // path to write, under a fresh directory
		existing string // content already there, if any
	}{
		{name: "new file in a new directory", rel: filepath.Join("a", "b", "report.json")},
		{name: "replaces an existing file", rel: "summary.json", existing: "old content that is longer"},
		{name: "hidden file", rel: ".state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, tt.rel)
			if tt.existing != "" {
				require.NoError(t, os.WriteFile(path, []byte(tt.existing), 0o600))
			}
			require.NoError(t, fileutil.WriteFileAtomic(path, []byte("new")))

			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "new", string(got))
			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())
			assert.Equal(t, []string{filepath.Base(path)}, entries(t, filepath.Dir(path)))
		})
	}
}

func TestWriteFileAtomicFailureLeavesNothing(t *testing.T) {
	root := t.TempDir()
	// A directory where the file should go makes the final rename fail.
	target := filepath.Join(root, "out.json")
	require.NoError(t, os.Mkdir(target, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(target, "keep"), nil, 0o644))

	err := fileutil.WriteFileAtomic(target, []byte("x"))
	require.Error(t, err)
	assert.Equal(t, []string{"out.json"}, entries(t, root), "temporary file left behind")
}

func TestWriteFileAtomicParentIsAFile(t *testing.T) {
	root := t.TempDir()
	parent := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(parent, nil, 0o644))
	assert.Error(t, fileutil.WriteFileAtomic(filepath.Join(parent, "x.json"), []byte("x")))
}

// SyncFiles flushes every file it is given and names a file it cannot
// open; the files' content is left as it was.
func TestSyncFiles(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 20 {
		p := filepath.Join(dir, "f"+string(rune('a'+i)))
		require.NoError(t, os.WriteFile(p, []byte{byte(i)}, 0o644))
		paths = append(paths, p)
	}
	require.NoError(t, fileutil.SyncFiles(paths))
	require.NoError(t, fileutil.SyncFiles(nil))
	for i, p := range paths {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, []byte{byte(i)}, got)
	}
	missing := filepath.Join(dir, "missing")
	err := fileutil.SyncFiles(append(paths, missing))
	assert.ErrorContains(t, err, missing)
}

// A Syncer flushes the files added to it, in batches in the background
// and the rest with Flush, from any number of goroutines, and names a file
// it could not open, whether in a batch or in Flush.
func TestSyncer(t *testing.T) {
	dir := t.TempDir()
	var s fileutil.Syncer
	require.NoError(t, s.Flush(), "a Syncer given nothing")
	var paths []string
	for i := range 150 {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("f%03d", i)))
	}
	var wg sync.WaitGroup
	for i, p := range paths[:140] {
		wg.Go(func() {
			require.NoError(t, os.WriteFile(p, []byte{byte(i)}, 0o644))
			s.Add(p)
		})
	}
	wg.Wait()
	for _, p := range paths[140:] {
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	require.NoError(t, s.Flush(paths[140:]...))

	missing := filepath.Join(dir, "missing")
	var inBatch fileutil.Syncer
	inBatch.Add(missing)
	for _, p := range paths[:140] {
		inBatch.Add(p)
	}
	assert.ErrorContains(t, inBatch.Flush(), missing)
	var inFlush fileutil.Syncer
	inFlush.Add(paths[0])
	assert.ErrorContains(t, inFlush.Flush(missing), missing)
}
