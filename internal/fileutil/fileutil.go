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
