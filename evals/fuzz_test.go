package evals_test

import (
	"path/filepath"
	"testing"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/internal/fuzzseed"
)

// FuzzParseSuite feeds the suite parser mutations of the example suites: it
// may refuse them, but with a positioned error, never a panic or a hang.
func FuzzParseSuite(f *testing.F) {
	fuzzseed.Add(f, 20, "examples/*/suite.yaml")
	f.Add([]byte("version: 1\nname: x\nagent: a.yaml\nmodels: [anthropic:claude-sonnet-4-6]\nepochs: 2.9\ncases: [{id: a, input: hi, tags: *t}]\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := evals.Parse(filepath.Join(dir, "suite.yaml"), data)
		if err == nil && s == nil {
			t.Fatal("no suite and no error")
		}
	})
}
