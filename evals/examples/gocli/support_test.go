package gocli_test

import (
	"testing"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/gocli"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address.
func TestMain(m *testing.M) { netguard.Main(m) }

// The same suite under go test, with the same Go code registered.
func TestSupportSuite(t *testing.T) {
	oc := evals.Run(t, "evals/suite.yaml", evals.WithRegistry(gocli.Registry()), evals.WithGetenv(func(string) string { return "" }))
	if !oc.Summary.Passed {
		t.Errorf("the support suite does not pass: %v", oc.Summary.Reasons)
	}
}
