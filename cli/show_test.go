package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShowCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "show", fixtureRun)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "fail  budget-report--anthropic-claude-sonnet-4-6--terse--e1")
	assert.Contains(t, out, "error research-moons--openai-gpt-5--baseline--e3")

	code, out, errOut = runCLI(t, "show", fixtureRun, "research-moons--openai-gpt-5--baseline--e3")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"ERROR  score 0.000", "replay miss (replay_miss): the agent's requests changed", "transcript", "┆ subagent main/task:researcher"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "\x1b[", "no colour off a terminal")

	code, _, errOut = runCLI(t, "show", fixtureRun, "budget-report--anthropic")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "matches 6 cells")
	code, _, errOut = runCLI(t, "show", fixtureRun, "budget-reprot--openai-gpt-5--terse--e1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "did you mean budget-report--openai-gpt-5--terse--e1")
}

func TestRunQuiet(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "../evals/examples/quickstart/suite.yaml", "--out", out, "--quiet", "--format", "table,html")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout, "no report")
	assert.False(t, strings.Contains(stderr, "[32/32]"), "no progress: %s", stderr)
	assert.FileExists(t, out+"/report.html", "the files are written all the same")
}
