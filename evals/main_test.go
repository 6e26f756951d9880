package evals_test

import (
	"os"
	"testing"

	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address. Run as
// a child of a test (DAGEVAL_EVALS_CHILD set), the binary is a run of a
// suite instead, for the tests that kill runs.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childRun())
	}
	netguard.Main(m)
}
