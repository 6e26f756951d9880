package rubrics_test

import (
	"testing"

	"github.com/dageval/dageval/internal/fuzzseed"
	"github.com/dageval/dageval/rubrics"
)

// FuzzParseRubric feeds the rubric parser mutations of the example rubrics.
func FuzzParseRubric(f *testing.F) {
	fuzzseed.Add(f, 20, "../evals/examples/quickstart/rubrics/*.yaml")
	f.Add([]byte("name: r\ncriteria:\n  - {name: a, description: b, weight: .nan}\n  - {name: c, description: d, weight: 1e308}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := rubrics.ParseRubric("rubric.yaml", data)
		if err == nil && r == nil {
			t.Fatal("no rubric and no error")
		}
	})
}
