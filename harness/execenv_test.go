package harness_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
)

// An agent that runs env through its execute tool reads the fixed
// environment (backend.CommandEnv) in the tool's result: not the
// directory dageval runs in, not the user's home, not a variable of the
// host's (an API key would be one).
func TestAgentExecuteSeesNoHostEnvironment(t *testing.T) {
	t.Setenv("DAGEVAL_HOST_CANARY", "host-canary-value-9c1e")
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := t.TempDir()
	shell, err := backend.NewLocalShell(root, backend.LocalShellOptions{})
	require.NoError(t, err)
	m := fakeModel("anthropic", "claude-sonnet-4-6",
		fakes.Calls("", fakes.Call("execute", map[string]any{"command": "env"})), fakes.Reply("done"))
	a := newAgent(t, harness.Config{Model: m, Backend: shell})
	invoke(t, a)
	reqs := m.Requests()
	require.Len(t, reqs, 2)
	var result string
	for _, msg := range reqs[1].Messages {
		if msg.Role == llm.RoleTool {
			result = msg.Text()
		}
	}
	require.NotEmpty(t, result)
	assert.Contains(t, result, "PATH="+backend.CommandPath)
	assert.Contains(t, result, "PWD="+shell.Root())
	assert.NotContains(t, result, "host-canary-value-9c1e")
	assert.NotContains(t, result, wd)
	if home := os.Getenv("HOME"); len(home) > 1 && home != "/tmp" {
		assert.NotContains(t, result, "="+home+"\n")
	}
	vars := 0
	for _, line := range strings.Split(strings.TrimSpace(result), "\n") {
		if strings.Contains(line, "=") {
			vars++
		}
	}
	assert.Equal(t, len(backend.CommandEnv("")), vars, result)
}
