package scrub_test

import (
	"testing"

	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address: the
// walk is checked on the eval's cell types, which link the provider
// adapters.
func TestMain(m *testing.M) { netguard.Main(m) }
