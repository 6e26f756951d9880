// Package gcpercent holds the garbage collector's target for dageval's commands.
package gcpercent

import (
	"os"
	"runtime/debug"
)

// Replay is the collector's target when GOGC is not set. Replaying agent
// runs allocates short-lived request and response encodings over a small
// live heap, so at the default of 100 the collector ran every few runs and
// took a quarter of the CPU; at 400 the 10-turn replay benchmark
// (fakes/replay) ran 1.5 to 2 times as many runs per second on two cores.
// Peak heap grows with the target: GOGC in the environment replaces it, and
// GOMEMLIMIT still bounds the heap.
const Replay = 400

// Raise sets the target to Replay unless GOGC is set.
func Raise() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Replay)
	}
}
