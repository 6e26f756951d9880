package cli

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/dageval/dageval/internal/gcpercent"
)

func TestGCTargetIsRaisedUnlessGOGCIsSet(t *testing.T) {
	tuneGC()
	got := debug.SetGCPercent(100)
	debug.SetGCPercent(got)
	want := gcpercent.Replay
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in the environment, which wins")
	}
	if got != want {
		t.Errorf("GC percent = %d, want %d", got, want)
	}
}
