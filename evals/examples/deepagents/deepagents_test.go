package deepagents_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/deepagents"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address: the
// suite must run offline.
func TestMain(m *testing.M) { netguard.Main(m) }

func noEnv(string) string { return "" }

// TestDeepAgents replays the mirrored evals: every case passes, and the one
// whose scripted model reads a file it was told not to read shows it only
// in its informational checks.
func TestDeepAgents(t *testing.T) {
	_, err := evals.ValidateFile(t.Context(), "suite.yaml", evals.Options{Getenv: noEnv})
	require.NoError(t, err)
	oc := evals.Run(t, "suite.yaml", evals.WithOutDir(t.TempDir()), evals.WithGetenv(noEnv))
	assert.True(t, oc.Summary.Passed, oc.Summary.Reasons)
	require.Len(t, oc.Results, 22)
	for _, r := range oc.Results {
		assert.Equal(t, evals.StatusPass, r.Status, "%s: %s", r.ID, r.Error)
		for _, c := range r.Checks {
			if c.Gating() {
				assert.True(t, c.Passed, "%s: %s: %s", r.Case, c.Name, c.Detail)
			} else if r.Case != "edit-in-place" {
				assert.True(t, c.Passed, "%s: informational %s: %s", r.Case, c.Name, c.Detail)
			}
		}
	}
	for _, r := range oc.Results {
		if r.Case != "edit-in-place" {
			continue
		}
		var missed []string
		for _, c := range r.Checks {
			if !c.Gating() && !c.Passed {
				missed = append(missed, c.Name)
			}
		}
		assert.Equal(t, []string{"turns(exactly 2)", "tool_call_count(exactly 1)"}, missed)
		assert.Equal(t, 1.0, r.Score)
	}
}

// TestEveryCaseMirrorsAnUpstreamEval: each case names the upstream eval it
// mirrors, and the suite covers Deep Agents' categories.
func TestEveryCaseMirrorsAnUpstreamEval(t *testing.T) {
	src, err := os.ReadFile("suite.yaml")
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^  # mirrors: (test_\w+\.py::test_\w+(?:\[\w+\])?)\n  - id: ([\w-]+)\n    tags: \[(\w+)\]`)
	cases := regexp.MustCompile(`(?m)^  - id: `).FindAllIndex(src, -1)
	found := re.FindAllSubmatch(src, -1)
	assert.Len(t, found, len(cases), "every case has a mirrors: line and a category tag")
	assert.GreaterOrEqual(t, len(found), 15)
	perCategory := map[string]int{}
	for _, m := range found {
		perCategory[string(m[3])]++
	}
	for _, cat := range []string{"file_operations", "retrieval", "tool_use", "memory", "summarization", "conversation", "unit_test"} {
		assert.Positive(t, perCategory[cat], cat)
	}
}

// TestCassettesAreUpToDate re-records the suite into a copy of this
// directory and checks that the committed cassettes are exactly what that
// produces. Run `go run ./evals/examples/deepagents/record` after changing
// the suite or the scripted model.
func TestCassettesAreUpToDate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "fixtures"), os.DirFS("fixtures")))
	suite, err := os.ReadFile("suite.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "suite.yaml"), suite, 0o644))

	oc, err := deepagents.Record(t.Context(), filepath.Join(dir, "suite.yaml"), nil)
	require.NoError(t, err)
	assert.True(t, oc.Summary.Passed, oc.Summary.Reasons)

	want, err := filepath.Glob(filepath.Join("cassettes", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, want, 22)
	for _, w := range want {
		committed, err := os.ReadFile(w)
		require.NoError(t, err)
		recorded, err := os.ReadFile(filepath.Join(dir, "cassettes", filepath.Base(w)))
		require.NoError(t, err, w)
		if string(committed) != string(recorded) {
			t.Errorf("%s is out of date: re-record with go run ./evals/examples/deepagents/record", w)
		}
	}
}
