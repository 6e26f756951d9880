package backend_test

import (
	"fmt"
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
