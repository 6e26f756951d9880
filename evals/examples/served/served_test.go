package served_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/served"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address.
func TestMain(m *testing.M) { netguard.Main(m) }

// replay runs one case against a freshly served researcher, offline but
// for the loopback server, and returns its result.
func replay(t *testing.T, id string) (evals.CellResult, *evals.CellDetail) {
	t.Helper()
	oc, err := served.RunCase(t.Context(), "suite.yaml", id, func(url string) (*evals.RunResult, error) {
		s, err := evals.Load("suite.yaml")
		if err != nil {
			return nil, err
		}
		return s.Run(t.Context(), evals.Options{Filter: "case=" + id, Getenv: func(k string) string {
			if k == served.URLEnv {
				return url
			}
			return ""
		}})
	})
	require.NoError(t, err)
	require.Len(t, oc.Results, 1)
	r := oc.Results[0]
	return r, oc.Details[r.ID]
}

// toolResults is what each tool call of the main agent answered, in order.
func toolResults(d *evals.CellDetail) []string {
	var out []string
	for _, m := range d.Messages {
		if m.Role == "tool" {
			out = append(out, m.Text())
		}
	}
	return out
}

// Every case replays and passes: the lead's calls come from the
// cassettes, the researcher's tasks run on the served agent, and the
// async tools' answers are what was recorded.
func TestServedSuite(t *testing.T) {
	ids, err := served.Cases("suite.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"start-and-check", "update-running", "cancel-and-list"}, ids)
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			r, d := replay(t, id)
			require.Equal(t, evals.StatusPass, r.Status, "%s", r.Error)
			for _, c := range r.Checks {
				assert.True(t, c.Passed, "%s: %s", c.Name, c.Detail)
			}
			require.NotNil(t, d)
			results := toolResults(d)
			require.NotEmpty(t, results)
			assert.Regexp(t, `^Launched async subagent\. task_id: [0-9a-f-]{36}$`, results[0])
		})
	}
}

// The cancelled task's run is interrupted on the served side, and the
// update's first run too: the lead's view and the server's agree.
func TestUpdateAndCancelReachTheServer(t *testing.T) {
	_, d := replay(t, "update-running")
	results := toolResults(d)
	require.Len(t, results, 4)
	var first, last map[string]any
	require.NoError(t, json.Unmarshal([]byte(results[1]), &first))
	require.NoError(t, json.Unmarshal([]byte(results[3]), &last))
	assert.Equal(t, "running", first["status"], "an exhaustive task runs until it is updated")
	assert.Equal(t, "success", last["status"])
	assert.Contains(t, last["result"], "net/http and chi are within 5%")
	assert.Equal(t, first["thread_id"], last["thread_id"], "the update continues on the task's thread")

	_, d = replay(t, "cancel-and-list")
	results = toolResults(d)
	require.Len(t, results, 5)
	assert.Contains(t, results[2], "status: running")
	assert.Contains(t, results[2], "status: success")
	assert.Regexp(t, `^1 tracked task\(s\):\n- task_id: \S+  agent: researcher  status: cancelled$`, results[4])
}

// Replays are the same every time: each case's transcript is identical
// across runs (durations aside), so the statuses read from the served
// agent do not depend on timing.
func TestReplayIsDeterministic(t *testing.T) {
	for _, id := range []string{"update-running", "cancel-and-list"} {
		_, a := replay(t, id)
		for range 3 {
			_, b := replay(t, id)
			ja, err := json.Marshal(a.Messages)
			require.NoError(t, err)
			jb, err := json.Marshal(b.Messages)
			require.NoError(t, err)
			assert.JSONEq(t, string(ja), string(jb), id)
		}
	}
}

// TestCassettesAreUpToDate re-records the suite into a copy of this
// directory and checks that the committed cassettes are exactly what that
// produces, and that the researcher's random port is in none of them. Run
// `go run ./evals/examples/served/record` after changing the suite, the
// agents or the scripted models.
func TestCassettesAreUpToDate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "agents"), os.DirFS("agents")))
	suite, err := os.ReadFile("suite.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "suite.yaml"), suite, 0o644))

	oc, err := served.Record(t.Context(), filepath.Join(dir, "suite.yaml"), nil)
	require.NoError(t, err)
	assert.True(t, oc.Summary.Passed, oc.Summary.Reasons)

	want, err := filepath.Glob(filepath.Join("cassettes", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, want, 3)
	loopback := regexp.MustCompile(`127\.0\.0\.1|localhost`)
	for _, w := range want {
		committed, err := os.ReadFile(w)
		require.NoError(t, err)
		assert.False(t, loopback.Match(committed), "%s names the served researcher's address", w)
		assert.True(t, strings.Contains(string(committed), "start_async_task"), w)
		recorded, err := os.ReadFile(filepath.Join(dir, "cassettes", filepath.Base(w)))
		require.NoError(t, err, w)
		if string(committed) != string(recorded) {
			t.Errorf("%s is out of date: re-record with go run ./evals/examples/served/record", w)
		}
	}
}
