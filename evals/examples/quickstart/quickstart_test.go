package quickstart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/quickstart"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address: the
// quickstart must run offline.
func TestMain(m *testing.M) { netguard.Main(m) }

// TestQuickstart replays the suite under go test, one subtest per cell.
func TestQuickstart(t *testing.T) {
	out := t.TempDir()
	oc := evals.Run(t, "suite.yaml", evals.GateOnThresholds(), evals.WithOutDir(out), evals.WithGetenv(func(string) string { return "" }))

	s := oc.Summary
	assert.Equal(t, "replay", s.Mode)
	assert.Equal(t, 32, s.ExpectedCells)
	assert.True(t, s.Complete)
	assert.True(t, s.Passed, s.Reasons)
	assert.Equal(t, 30, s.Totals.Passed)
	assert.True(t, s.Totals.CostKnown)
	assert.Positive(t, s.Totals.CostUSD)
	assert.Positive(t, s.Totals.Tokens.Grader.InputTokens)
	assert.Positive(t, s.Totals.Tokens.Subagents.InputTokens)

	var failed []string
	for _, r := range oc.Results {
		assert.NotEqual(t, evals.StatusError, r.Status, "%s: %s", r.ID, r.Error)
		if r.Status == evals.StatusFail {
			failed = append(failed, r.ID)
		}
	}
	assert.Equal(t, []string{"packing-list--anthropic-claude-sonnet-4-6--terse--e1", "packing-list--openai-gpt-5--terse--e1"}, failed,
		"the terse profile leaves the umbrella out of the packing list")

	// The refund policy passes only through a revision the grader asked for.
	var d evals.CellDetail
	readJSON(t, filepath.Join(out, "cells", "refund-policy--openai-gpt-5--baseline--e1.json"), &d)
	require.Len(t, d.Evaluations, 2)
	assert.Equal(t, "needs_revision", d.Evaluations[0].Result)
	assert.Contains(t, d.Evaluations[0].Criteria[1].Gap, "does not name the document")
	assert.Equal(t, "satisfied", d.Evaluations[1].Result)
	assert.Equal(t, 2, d.Result.Rubric.Iterations)

	// The researcher's run is kept with the cell.
	readJSON(t, filepath.Join(out, "cells", "delegate-research--anthropic-claude-sonnet-4-6--baseline--e1.json"), &d)
	require.Len(t, d.Subagents, 1)
	assert.Equal(t, "assistant/task:researcher", d.Subagents[0].Path, "paths start with the agent's name")
	assert.NotEmpty(t, d.Subagents[0].ToolCallID)
	assert.Equal(t, "cassettes/delegate-research--anthropic-claude-sonnet-4-6--baseline--e1.yaml", d.Cassette)

	readJSON(t, filepath.Join(out, "cells", "paris-weather--openai-gpt-5--terse--e2.json"), &d)
	assert.Contains(t, d.Files["/notes/paris.md"], "sunny, 21C")
	assert.NotContains(t, d.Files, "/notes/README.md", "seeded files the agent left alone are not listed")
}

var duration = regexp.MustCompile(`"duration_ms": ?\d+`)

// normalised reads a run file with its durations zeroed: the only field
// allowed to differ between two replays.
func normalised(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return duration.ReplaceAllString(string(data), `"duration_ms":0`)
}

// TestReplayIsDeterministic replays the suite twice, with different
// concurrency, and compares every file the runs wrote.
func TestReplayIsDeterministic(t *testing.T) {
	s, err := evals.Load("suite.yaml")
	require.NoError(t, err)
	a, b := t.TempDir(), t.TempDir()
	env := func(string) string { return "" }
	_, err = s.Run(t.Context(), evals.Options{OutDir: a, Concurrency: 8, Getenv: env})
	require.NoError(t, err)
	_, err = s.Run(t.Context(), evals.Options{OutDir: b, Concurrency: 1, Getenv: env})
	require.NoError(t, err)
	for _, name := range []string{evals.ResultsFile, evals.SummaryFile} {
		assert.Equal(t, normalised(t, filepath.Join(a, name)), normalised(t, filepath.Join(b, name)), name)
	}
	cells, err := filepath.Glob(filepath.Join(a, "cells", "*.json"))
	require.NoError(t, err)
	require.Len(t, cells, 32)
	for _, c := range cells {
		assert.Equal(t, normalised(t, c), normalised(t, filepath.Join(b, "cells", filepath.Base(c))), filepath.Base(c))
	}
	assert.NoFileExists(t, filepath.Join(a, evals.PartialResultsFile))
}

// TestCassettesAreUpToDate re-records the suite into a copy of this
// directory, through the real recording path against the scripted local
// provider, and checks that the committed cassettes are exactly what that
// produces. Run `go run ./evals/examples/quickstart/record` after changing
// the suite, the agent, the profiles or the scripted model.
func TestCassettesAreUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("records 32 cells")
	}
	dir := t.TempDir()
	for _, name := range []string{"agents", "profiles", "rubrics", "tools"} {
		require.NoError(t, os.CopyFS(filepath.Join(dir, name), os.DirFS(name)), name)
	}
	suite, err := os.ReadFile("suite.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "suite.yaml"), suite, 0o644))

	oc, err := quickstart.Record(t.Context(), filepath.Join(dir, "suite.yaml"), nil)
	require.NoError(t, err)
	assert.Equal(t, 32, oc.Summary.ActualCells)

	want, err := filepath.Glob(filepath.Join("cassettes", "*.yaml"))
	require.NoError(t, err)
	got, err := filepath.Glob(filepath.Join(dir, "cassettes", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for _, w := range want {
		committed, err := os.ReadFile(w)
		require.NoError(t, err)
		recorded, err := os.ReadFile(filepath.Join(dir, "cassettes", filepath.Base(w)))
		require.NoError(t, err, w)
		if string(committed) != string(recorded) {
			t.Errorf("%s is out of date: re-record with go run ./evals/examples/quickstart/record", w)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), path)
}

// BenchmarkQuickstartReplay replays the 32 cells of the quickstart from
// their cassettes, offline, writing the run's files.
func BenchmarkQuickstartReplay(b *testing.B) {
	s, err := evals.Load("suite.yaml")
	require.NoError(b, err)
	out := b.TempDir()
	for b.Loop() {
		oc, err := s.Run(b.Context(), evals.Options{OutDir: out, Getenv: func(string) string { return "" }})
		require.NoError(b, err)
		require.Equal(b, 30, oc.Summary.Totals.Passed)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32/1e6, "ms/cell")
}
