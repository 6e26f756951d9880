package evals_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/llm"
)

// TestRunReportsTheCase runs a failing suite under evals.Run in a child
// test process and reads its go test output: the failure names the case's
// file and line, not dageval's; subtest names keep a suite name with a
// slash as one level; the run's files stay where the log says.
func TestRunReportsTheCase(t *testing.T) {
	if os.Getenv("DAGEVAL_RUN_CHILD") != "" {
		failingSuite(t)
		return
	}
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunReportsTheCase$", "-test.v")
	cmd.Env = append(os.Environ(), "DAGEVAL_RUN_CHILD=1", "DAGEVAL_TEST_OUT="+out)
	b, err := cmd.CombinedOutput()
	output := string(b)
	require.Error(t, err, "the child test fails:\n%s", output)
	assert.Regexp(t, regexp.MustCompile(`(?m)^ +\S*suite\.yaml:8: case weather: local:m default e1: fail \(score 0\.00\)\n +check final_answer: .*does not contain "rain"`), output)
	assert.NotRegexp(t, `testing\.go:\d+`, output, "no location in dageval's own files")
	assert.Contains(t, output, "--- FAIL: TestRunReportsTheCase/team_weather/weather/local:m/default/e1")
	assert.Contains(t, output, "--- PASS: TestRunReportsTheCase/team_weather/sunny/local:m/default/e1")
	dir := filepath.Join(out, "dageval-test")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Regexp(t, `^TestRunReportsTheCase-[0-9a-f]{8}$`, entries[0].Name())
	assert.Contains(t, output, "the run's files are in "+filepath.Join(dir, entries[0].Name()))
	assert.FileExists(t, filepath.Join(dir, entries[0].Name(), "summary.json"))
}

func failingSuite(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{"weather": {say("It is sunny.")}, "sunny": {say("It is sunny.")}}}
	srv := llmserver.NewServer(m)
	defer srv.Close()
	path := writeSuite(t, map[string]string{"suite.yaml": "version: 1\nname: team/weather\n" +
		`providers: {local: {kind: openai-compatible, base_url: "` + srv.URL + `/v1", api_key_env: TEST_KEY}}
models: [local:m]
agent: {name: a}
cases:
  - {id: sunny, input: sunny, checks: [{final_answer: {contains: sunny}}]}
  - id: weather
    input: weather
    checks: [{final_answer: {contains: rain}}]
`})
	evals.Run(t, path, evals.WithMode(recorder.ModeLive), evals.WithGetenv(func(k string) string {
		if k == "DAGEVAL_TEST_OUT" {
			return os.Getenv(k)
		}
		return testEnv(k)
	}))
}
