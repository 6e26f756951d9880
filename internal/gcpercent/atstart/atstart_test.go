package atstart_test

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/dageval/dageval/internal/gcpercent"
	_ "github.com/dageval/dageval/internal/gcpercent/atstart"
)

func TestTargetIsRaisedBeforeMain(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in the environment, which wins")
	}
	got := debug.SetGCPercent(100)
	debug.SetGCPercent(got)
	if got != gcpercent.Replay {
		t.Errorf("GC percent at the start of the test = %d, want %d", got, gcpercent.Replay)
	}
}
