package reports_test

import (
	"io"
	"testing"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/reports"
)

// BenchmarkCompare compares two runs of 2 models × 2 profiles × 200 cases ×
// 3 epochs (2 400 pairs) with the default 10 000 bootstrap resamples.
func BenchmarkCompare(b *testing.B) {
	base := makeRun(b, 200, 3, baseOutcome)
	head := makeRun(b, 200, 3, func(k evals.CellKey) (evals.Status, float64) {
		if caseNum(k)%17 == 0 {
			return evals.StatusFail, 0.25
		}
		return baseOutcome(k)
	})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reports.Compare(base, head, reports.CompareOptions{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadAndRender loads the fixture run (60 cells with transcripts)
// and renders every format.
func BenchmarkLoadAndRender(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := reports.Load(fixtureDir)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range reports.Formats {
			if err := reports.Render(io.Discard, r, f); err != nil {
				b.Fatal(err)
			}
		}
	}
}
