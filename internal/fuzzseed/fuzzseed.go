// Package fuzzseed adds files from the repository to a fuzz target's seed corpus.
package fuzzseed

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// MaxSeedBytes is the largest file used as a seed. The fuzzer minimizes
// every input that reaches new code before it counts it, one byte removed
// an execution, so the work grows with the square of the input's size: a
// 100 KB cassette seed, at milliseconds an execution under coverage
// instrumentation, kept both workers minimizing for the whole run and the
// fuzzer at 0 execs/s. Small seeds reach the same parser paths.
const MaxSeedBytes = 8 << 10

// Add adds the files matching each glob (relative to the test's
// package directory) to a fuzz target's corpus, the examples a fuzzer
// starts from; at most max files of at most MaxSeedBytes, in name order, so
// that the corpus is the same on every machine. A glob matching no such
// file fails the test: the seeds would be silently gone.
func Add(f *testing.F, max int, globs ...string) {
	f.Helper()
	var files []string
	for _, g := range globs {
		m, err := filepath.Glob(g)
		if err != nil {
			f.Fatalf("fuzz seeds: %s: %v", g, err)
		}
		n := 0
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() <= MaxSeedBytes {
				files = append(files, p)
				n++
			}
		}
		if n == 0 {
			f.Fatalf("fuzz seeds: %s matches no file of at most %d bytes", g, MaxSeedBytes)
		}
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
