package cli

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
)

// victim is a cassette of a cell that passes, in a model × profile whose
// other cells all pass: with pass_rate 0.8 one errored cell there would
// still leave the suite above its threshold, which is how observation 2 of
// issue 12 went green.
const victim = "cassettes/two-cities--openai-gpt-5--baseline--e1.yaml"

// TestErroredCellsNeverPass is observation 2 of issue 12: a corrupt, empty,
// truncated or wrong-version cassette, or a replay miss, made an errored
// cell (as an unplayed recording does now), and the quickstart printed "PASSED: 29 of 32 … 1 errored" and
// exited 0. Now the run exits 2 with the cause in its headline, dageval
// validate names the broken cassette's file and line, and a deleted
// cassette gives the same class of verdict (exit 2).
func TestErroredCellsNeverPass(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(b []byte) []byte // nil deletes the cassette
		cause evals.Cause
		// validate is a regular expression over validate's stderr; empty
		// when validation cannot see the problem (a replay miss needs the run).
		validate string
	}{
		{"empty", func([]byte) []byte { return nil }, evals.CauseCassetteInvalid, `two-cities--openai-gpt-5--baseline--e1\.yaml:\d+: a cassette is a mapping`},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, evals.CauseCassetteInvalid, `two-cities--openai-gpt-5--baseline--e1\.yaml:\d+: `},
		{"wrong version", func(b []byte) []byte { return []byte(strings.Replace(string(b), "version: 2", "version: 3", 1)) }, evals.CauseCassetteInvalid, `two-cities--openai-gpt-5--baseline--e1\.yaml:2: version: got "3", want 2`},
		{"not YAML", func([]byte) []byte { return []byte("interactions: [\n  {id: 0\n") }, evals.CauseCassetteInvalid, `two-cities--openai-gpt-5--baseline--e1\.yaml:\d+:\d+: `},
		{"replay miss", func(b []byte) []byte {
			return []byte(strings.ReplaceAll(string(b), "Tokyo right now.", "Tokyo right now?"))
		}, evals.CauseReplayMiss, ""},
		{"unplayed", func(b []byte) []byte {
			// The last interaction twice: the agent plays it once.
			text := string(b)
			i := strings.LastIndex(text, "\n  - id: ")
			return []byte(text + strings.Replace(text[i+1:], "- id: 1", "- id: 2", 1))
		}, evals.CauseCassetteUnplayed, ""},
		{"deleted", nil, evals.CauseCassetteMissing, `1 of 32 cells have no cassette to replay .*two-cities--openai-gpt-5--baseline--e1\.yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyQuickstart(t)
			p := filepath.Join(dir, victim)
			if tt.edit == nil {
				require.NoError(t, os.Remove(p))
			} else {
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, tt.edit(b), 0o644))
			}
			suite := filepath.Join(dir, "suite.yaml")

			code, stdout, stderr := runCLI(t, "validate", suite)
			if tt.validate == "" {
				assert.Equal(t, 0, code, "validation cannot know the agent's requests:\n%s", stderr)
			} else {
				assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
				assert.Regexp(t, regexp.MustCompile(tt.validate), stderr)
			}

			out := t.TempDir()
			code, stdout, stderr = runCLI(t, "run", suite, "--out", out)
			require.Equal(t, 2, code, "an errored cell never exits 0\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			if tt.cause == evals.CauseCassetteMissing {
				assert.Contains(t, stderr, "have no cassette to replay", "the pre-flight check stops the run")
				return
			}
			label := map[evals.Cause]string{evals.CauseCassetteInvalid: "unreadable cassette", evals.CauseReplayMiss: "replay miss", evals.CauseCassetteUnplayed: "unplayed recording"}[tt.cause]
			assert.Contains(t, stdout, "ERRORED: 1 cell errored: "+label+" — ", "the headline names the cause that decided the verdict")
			assert.NotContains(t, stdout, "PASSED")
			assert.Contains(t, stderr, "suite quickstart cannot be judged: 1 cell errored: "+label)

			var r evals.CellResult
			for _, line := range strings.Split(readFile(t, filepath.Join(out, evals.ResultsFile)), "\n") {
				if strings.Contains(line, `"two-cities--openai-gpt-5--baseline--e1"`) {
					require.NoError(t, json.Unmarshal([]byte(line), &r))
				}
			}
			assert.Equal(t, evals.StatusError, r.Status)
			assert.Equal(t, tt.cause, r.Cause, "results.jsonl records the cause, machine-readably")
			var sum evals.Summary
			require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, evals.SummaryFile))), &sum))
			assert.Equal(t, evals.OutcomeErrored, sum.Outcome)
			assert.Equal(t, []evals.CauseCount{{Cause: tt.cause, Cells: 1}}, sum.Causes)

			// Only when the user says so do errored cells count as
			// failures, and then the thresholds decide.
			code, stdout, stderr = runCLI(t, "run", suite, "--out", t.TempDir(), "--tolerate-errors")
			assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, "PASSED: 29 of 32 cells passed")
			assert.Contains(t, stdout, "1 errored (tolerated)")
		})
	}
}

// The suite can tolerate errors itself, with errors: tolerate.
func TestSuiteToleratesErrors(t *testing.T) {
	dir := copyQuickstart(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, victim), nil, 0o644))
	suite := filepath.Join(dir, "suite.yaml")
	b, err := os.ReadFile(suite)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(suite, append(b, []byte("\nerrors: tolerate\n")...), 0o644))
	code, stdout, stderr := runCLI(t, "run", suite, "--out", t.TempDir(), "--format", "md")
	assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "### ✅ dageval · quickstart")
	assert.Contains(t, stdout, "1 errored (tolerated)")
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}
