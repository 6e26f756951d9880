package cli

import (
	"fmt"
	"os"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"

	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address or leaves
// an obsolete snapshot behind. With DAGEVAL_CLI_CHILD=1 the test binary is
// the dageval command instead, for the tests that run it as processes.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	netguard.Install()
	code := m.Run()
	dirty, err := snaps.Clean(m, snaps.CleanOpts{Sort: true})
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "snaps.Clean:", err)
		code = 1
	case dirty && code == 0:
		fmt.Fprintln(os.Stderr, "obsolete snapshots: run UPDATE_SNAPS=clean go test ./cli")
		code = 1
	}
	os.Exit(netguard.Code(code))
}
