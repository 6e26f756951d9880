package coding_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/coding"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address: the
// suite must run offline.
func TestMain(m *testing.M) { netguard.Main(m) }

// requireSandbox skips, saying why, where bubblewrap cannot run; .ci/run
// installs it, so CI runs these tests.
func requireSandbox(t *testing.T) {
	t.Helper()
	if err := backend.CheckBubblewrap(t.Context()); err != nil {
		t.Skipf("the coding suite runs its agent in a bubblewrap sandbox, which cannot run here, skipping: %v", err)
	}
}

// TestCoding replays the suite: the model's answers come from the
// cassettes, the agent's commands really run in the sandbox, and their
// output must be what was recorded.
func TestCoding(t *testing.T) {
	requireSandbox(t)
	before, err := os.ReadFile(filepath.Join("project", "calc.sh"))
	require.NoError(t, err)
	out := t.TempDir()
	oc := evals.Run(t, "suite.yaml", evals.GateOnThresholds(), evals.WithOutDir(out), evals.WithGetenv(func(string) string { return "" }))
	assert.True(t, oc.Summary.Passed, oc.Summary.Reasons)
	require.Len(t, oc.Results, 2)
	for _, r := range oc.Results {
		assert.Equal(t, evals.StatusPass, r.Status, "%s: %s", r.ID, r.Error)
	}
	after, err := os.ReadFile(filepath.Join("project", "calc.sh"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the agent fixed its own copy, never the template")
}

// TestCassettesAreUpToDate re-records the suite into a copy of this
// directory and checks that the committed cassettes are exactly what that
// produces. Run `go run ./evals/examples/coding/record` after changing the
// suite, the project or the scripted model.
func TestCassettesAreUpToDate(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "project"), os.DirFS("project")))
	suite, err := os.ReadFile("suite.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "suite.yaml"), suite, 0o644))

	oc, err := coding.Record(t.Context(), filepath.Join(dir, "suite.yaml"), nil)
	require.NoError(t, err)
	assert.True(t, oc.Summary.Passed, oc.Summary.Reasons)

	want, err := filepath.Glob(filepath.Join("cassettes", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, want)
	for _, w := range want {
		committed, err := os.ReadFile(w)
		require.NoError(t, err)
		recorded, err := os.ReadFile(filepath.Join(dir, "cassettes", filepath.Base(w)))
		require.NoError(t, err, w)
		if string(committed) != string(recorded) {
			t.Errorf("%s is out of date: re-record with go run ./evals/examples/coding/record", w)
		}
	}
}
