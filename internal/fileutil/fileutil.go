package fileutil

import (
	"os"
	"path/filepath"
	"strings"
)

// WriteFileAtomic writes data to path (mode 0644, creating missing parent
// directories) through a temporary file in the same directory and a
// rename, so a reader sees either the old file or the whole new one. The
// temporary file is hidden and ends in ".tmp", so it never matches a
// pattern such as "*.json"; it is removed if anything fails.
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

// AtomicFile is a file written through a hidden temporary file and
// renamed into place by Commit, for content too large to hold in memory
// and write with WriteFileAtomic.
type AtomicFile struct {
	*os.File
	path string
}

// CreateAtomic starts writing path (creating missing parent directories).
func CreateAtomic(path string) (*AtomicFile, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, "."+strings.TrimPrefix(filepath.Base(path), ".")+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &AtomicFile{File: tmp, path: path}, nil
}

// Commit closes the file and renames it into place; with sync it first
// flushes it to stable storage, so that a machine that crashes after the
// rename finds the whole file, not an empty one. It removes the temporary
// file if anything fails.
func (f *AtomicFile) Commit(sync bool) error {
	var err error
	if sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Abort closes and removes the temporary file.
func (f *AtomicFile) Abort() {
	f.Close()
	os.Remove(f.Name())
}

// SyncDir flushes a directory's entries to stable storage, so that files
// created or renamed in it survive a crash of the machine.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
