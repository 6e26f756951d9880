package reports_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/reports"
	"github.com/dageval/dageval/rubrics"
)

// TestInformationalChecksShownApart: an informational check that did not
// hold is listed on its own in every format, not among the failed checks
// of a failing cell, and its cell still passes.
func TestInformationalChecksShownApart(t *testing.T) {
	r := loadFixture(t)
	rep := reports.Build(r)
	require.Len(t, rep.Informational, 2, "paris-weather, terse, epoch 1, for each model")
	assert.Equal(t, "turns(exactly 2)", rep.Informational[0].Name)
	for _, f := range rep.Failing {
		for _, c := range f.FailedChecks {
			assert.True(t, c.Gating(), "%s lists informational %s among its failed checks", f.ID, c.Name)
		}
	}
	for _, c := range rep.Cells {
		if c.ID == rep.Informational[0].ID {
			assert.Equal(t, "pass", c.Status, "an informational check never fails its cell")
		}
	}
	want := map[reports.Format]string{
		reports.FormatTable: "Informational checks that did not hold (2; gating: false, so no cell failed for them)",
		reports.FormatMD:    "Informational checks that did not hold (2, not gating)",
		reports.FormatJSON:  `"gating": false`,
		reports.FormatJUnit: `informational check (not gating) turns(exactly 2) did not hold`,
		reports.FormatHTML:  `Informational checks <span class="muted">(gating: false; they decide nothing)</span>`,
	}
	for f, s := range want {
		out := render(t, r, f)
		assert.Contains(t, out, s, f)
	}
	html := render(t, r, reports.FormatHTML)
	assert.Contains(t, html, "· 1 informational not held")
}

// TestInformationalChecksDoNotMoveTheGate: a head run whose every cell has
// an informational check failing compares as unchanged.
func TestInformationalChecksDoNotMoveTheGate(t *testing.T) {
	base := makeRun(t, 10, 3, baseOutcome)
	head := makeRun(t, 10, 3, baseOutcome)
	for i := range head.Results {
		head.Results[i].Checks = append(head.Results[i].Checks, rubrics.CheckVerdict{Name: "turns(exactly 1)", Detail: "took 5", Informational: true})
	}
	c := compare(t, base, head, reports.CompareOptions{})
	assert.Equal(t, reports.OutcomeUnchanged, c.Verdict.Outcome)
	assert.Equal(t, 0, c.Verdict.ExitCode)
	rep := reports.Build(head)
	assert.Len(t, rep.Informational, len(head.Results))
	assert.Len(t, rep.Failing, len(reports.Build(base).Failing), "no cell fails for an informational check")
}
