package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
)

// Appending to a State file costs the appended bytes: over 200 appends the
// content is copied to a new place a logarithmic number of times (each
// time into a buffer half again as large), not on every append, and no
// version handed out earlier changes, including when an older version is
// appended to.
func TestStateAppendExtendsInPlace(t *testing.T) {
	const p, appends = "/conversation_history/s.md", 200
	st := backend.NewState()
	ctx, stage := backend.WithStateStage(t.Context(), &agent.State{})
	content := func(stage *backend.StateStage) string { return stage.Update().Files[p].Content }
	var versions, want []string
	var acc strings.Builder
	moves := 0
	var last *byte
	for i := range appends {
		chunk := fmt.Sprintf("## %d\n%s\n", i, strings.Repeat("y", 1000))
		if err := st.Append(ctx, p, chunk); err != nil {
			t.Fatal(err)
		}
		acc.WriteString(chunk)
		c := content(stage)
		if at := unsafe.StringData(c); at != last {
			moves++
			last = at
		}
		versions = append(versions, c)
		want = append(want, acc.String())
	}
	if moves > 20 {
		t.Errorf("the content moved %d times over %d appends; want at most 20", moves, appends)
	}

	// A second run that starts from version 50 appends to a copy.
	fctx, fork := backend.WithStateStage(t.Context(), &agent.State{Files: map[string]agent.FileData{p: {Content: versions[50], Encoding: backend.EncodingUTF8}}})
	if err := st.Append(fctx, p, "fork"); err != nil {
		t.Fatal(err)
	}
	if got := content(fork); got != want[50]+"fork" {
		t.Errorf("the fork has %d bytes, want %d", len(got), len(want[50])+4)
	}
	// The first run goes on appending to its latest version.
	if err := st.Append(ctx, p, "tail"); err != nil {
		t.Fatal(err)
	}
	if got := content(stage); got != want[appends-1]+"tail" {
		t.Errorf("after the fork the file has %d bytes, want %d", len(got), len(want[appends-1])+4)
	}
	for i := range versions {
		if versions[i] != want[i] {
			t.Fatalf("version %d changed after it was handed out", i)
		}
	}
}

// downloadCounter is a Filesystem that counts its downloads: an append
// that reads the file back (the fallback of a backend without Append)
// shows up in the count.
type downloadCounter struct {
	*backend.Filesystem
	downloads int
}

func (d *downloadCounter) Download(ctx context.Context, paths []string) []backend.DownloadResult {
	d.downloads++
	return d.Filesystem.Download(ctx, paths)
}

// Appending to a Filesystem file writes the added bytes to the end of the
// file on disk, without reading the file back and writing it whole.
func TestFilesystemAppendDoesNotReadBack(t *testing.T) {
	dir := t.TempDir()
	fs, err := backend.NewFilesystem(dir, backend.FilesystemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &downloadCounter{Filesystem: fs}
	var want strings.Builder
	for i := range 50 {
		chunk := fmt.Sprintf("## %d\n%s\n", i, strings.Repeat("z", 500))
		if err := backend.AppendFile(t.Context(), d, "/conversation_history/s.md", chunk); err != nil {
			t.Fatal(err)
		}
		want.WriteString(chunk)
	}
	if d.downloads != 0 {
		t.Errorf("50 appends downloaded the file %d times, want none", d.downloads)
	}
	got, err := os.ReadFile(filepath.Join(dir, "conversation_history", "s.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Errorf("the file on disk has %d bytes, want the %d appended", len(got), want.Len())
	}
}
