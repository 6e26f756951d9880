package harness_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"

	"github.com/dageval/dageval/internal/netguard"
)

// TestMain keeps the package offline (any non-loopback dial fails the run)
// and fails it when a snapshot no longer belongs to any test.
func TestMain(m *testing.M) {
	http.DefaultTransport = netguard.Transport()
	code := m.Run()
	dirty, err := snaps.Clean(m, snaps.CleanOpts{Sort: true})
	if err != nil {
		fmt.Println("snaps.Clean:", err)
		code = 1
	}
	if dirty {
		fmt.Println("obsolete snapshots; run UPDATE_SNAPS=clean go test ./harness/")
		code = 1
	}
	for _, v := range netguard.Violations() {
		fmt.Fprintln(os.Stderr, v)
		code = 1
	}
	os.Exit(code)
}
