package reports_test

import (
	"bytes"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/reports"
)

// runQuickstart replays the quickstart example into a fresh directory and
// loads it the way `dageval report` does.
func runQuickstart(t *testing.T) *reports.Run {
	t.Helper()
	suite, err := evals.Load("../evals/examples/quickstart/suite.yaml")
	require.NoError(t, err)
	out := t.TempDir()
	_, err = suite.Run(t.Context(), evals.Options{OutDir: out, Mode: recorder.ModeReplay, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	r, err := reports.Load(out)
	require.NoError(t, err)
	return r
}

// The goldens of the real quickstart run: what a user sees for the example
// the README points at.
func TestGoldenQuickstartReports(t *testing.T) {
	r := runQuickstart(t)
	again := runQuickstart(t)
	for _, tc := range []struct {
		format reports.Format
		ext    string
	}{
		{reports.FormatTable, ".txt"},
		{reports.FormatMD, ".md"},
		{reports.FormatJSON, ".json"},
		{reports.FormatJUnit, ".xml"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			out := render(t, r, tc.format)
			assert.Equal(t, out, render(t, again, tc.format), "two replays render the same bytes")
			if tc.format == reports.FormatJSON {
				require.NoError(t, reports.ValidateReportJSON([]byte(out)))
			}
			snaps.WithConfig(snaps.Ext(tc.ext)).MatchStandaloneSnapshot(t, out)
		})
	}
	var html, html2 bytes.Buffer
	require.NoError(t, reports.WriteHTML(&html, r))
	require.NoError(t, reports.WriteHTML(&html2, again))
	assert.Contains(t, html.String(), "refund-policy")
	assert.Equal(t, html.String(), html2.String(), "two replays render the same HTML")
	assert.Contains(t, html.String(), `class="given"`, "the cells show what their model was given")
}
