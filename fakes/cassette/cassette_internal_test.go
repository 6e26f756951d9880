package cassette

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const stampCassette = `---
version: 2
interactions:
  - id: 0
    request:
      method: POST
      url: https://api.anthropic.com/v1/messages
      body: '{"n":1}'
    response:
      body: '{"answer":"AAAA"}'
      code: 200
`

// TestReadSharedTrustsOnlyStableStamps: a file last modified long enough
// ago is not read again while its size and modification time stay the same;
// a changed stamp, or a file modified just now, is always read.
func TestReadSharedTrustsOnlyStableStamps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	old := time.Now().Add(-time.Hour)
	write := func(content string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	answer := func() string {
		t.Helper()
		c, err := ReadShared(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Path != path {
			t.Errorf("Path = %q", c.Path)
		}
		return c.Interactions[0].Response.Body
	}
	write(stampCassette, old)
	if got := answer(); got != `{"answer":"AAAA"}` {
		t.Fatalf("first load: %s", got)
	}
	// Same size, same time: the cached parse is used without reading.
	write(strings.Replace(stampCassette, "AAAA", "BBBB", 1), old)
	if got := answer(); got != `{"answer":"AAAA"}` {
		t.Fatalf("an unchanged stamp was read again: %s", got)
	}
	// A new modification time is read.
	write(strings.Replace(stampCassette, "AAAA", "CCCC", 1), old.Add(time.Second))
	if got := answer(); got != `{"answer":"CCCC"}` {
		t.Fatalf("a changed stamp was not read: %s", got)
	}
	// A file modified just now is read every time, even with the same size.
	now := time.Now()
	write(strings.Replace(stampCassette, "AAAA", "DDDD", 1), now)
	if got := answer(); got != `{"answer":"DDDD"}` {
		t.Fatalf("recent file: %s", got)
	}
	write(strings.Replace(stampCassette, "AAAA", "EEEE", 1), now)
	if got := answer(); got != `{"answer":"EEEE"}` {
		t.Fatalf("a recently modified file was trusted by its stamp: %s", got)
	}
}
