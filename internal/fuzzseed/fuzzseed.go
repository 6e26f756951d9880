// Package fuzzseed adds files from the repository to a fuzz target's seed corpus.
package fuzzseed

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Add adds the files matching each glob (relative to the test's
// package directory) to a fuzz target's corpus, the examples a fuzzer
// starts from; at most max files, in name order, so that the corpus is the
// same on every machine. A glob matching nothing fails the test: the seeds
// would be silently gone.
func Add(f *testing.F, max int, globs ...string) {
	f.Helper()
	var files []string
	for _, g := range globs {
		m, err := filepath.Glob(g)
		if err != nil || len(m) == 0 {
			f.Fatalf("fuzz seeds: %s matches no file", g)
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	for _, p := range files[:min(max, len(files))] {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}
