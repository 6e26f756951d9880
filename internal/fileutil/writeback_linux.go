package fileutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing f's dirty pages out without waiting for
// them, so that the fsyncs that follow find their data under way.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
