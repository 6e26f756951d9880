package backend_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
)

// Case 79, LocalShell's own part (TestExecuteContract has the rest): a
// stable id, the environment it is given, the root as working directory.
func TestLocalShellExecute(t *testing.T) {
	root := t.TempDir()
	sh, err := backend.NewLocalShell(root, backend.LocalShellOptions{Env: map[string]string{"GREETING": "hi"}})
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^local-[0-9a-f]{8}$`), sh.ID())
	again, err := backend.NewLocalShell(root, backend.LocalShellOptions{})
	require.NoError(t, err)
	assert.Equal(t, sh.ID(), again.ID(), "the id is stable for a root")

	for _, tt := range []struct{ name, cmd, output string }{
		{"env is given, not inherited", `echo "$GREETING $HOME $PATH"`, "hi /tmp /usr/local/bin:/usr/bin:/bin\n"},
		{"runs in the root", "pwd", sh.Root() + "\n"},
	} {
		res, err := sh.Execute(t.Context(), backend.ExecuteRequest{Command: tt.cmd})
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.output, res.Output, tt.name)
	}

	_, err = backend.NewLocalShell(root, backend.LocalShellOptions{Timeout: -time.Second})
	assert.Error(t, err)
	_, err = backend.NewLocalShell(filepath.Join(root, "missing"), backend.LocalShellOptions{})
	assert.Error(t, err)
}

func TestLocalShellInheritEnv(t *testing.T) {
	t.Setenv("DAGEVAL_SHELL_TEST", "inherited")
	sh, err := backend.NewLocalShell(t.TempDir(), backend.LocalShellOptions{InheritEnv: true, Env: map[string]string{"EXTRA": "x"}})
	require.NoError(t, err)
	res, err := sh.Execute(t.Context(), backend.ExecuteRequest{Command: `echo "$DAGEVAL_SHELL_TEST $EXTRA"`})
	require.NoError(t, err)
	assert.Equal(t, "inherited x\n", res.Output)
}

// envOf runs env in ex and returns its variables.
func envOf(t *testing.T, ex backend.Executor) map[string]string {
	t.Helper()
	out, code := run(t, ex, "env")
	require.Equal(t, 0, code, out)
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, line)
		vars[k] = v
	}
	return vars
}

// hostValues are values of this process's environment that must not reach
// a command: its working directory, the user's home and paths, a variable
// set for the test.
func hostValues(t *testing.T) []string {
	t.Helper()
	t.Setenv("DAGEVAL_HOST_CANARY", "host-canary-value-7f3a")
	wd, err := os.Getwd()
	require.NoError(t, err)
	vals := []string{wd, "host-canary-value-7f3a"}
	for _, k := range []string{"HOME", "GOPATH", "GOCACHE", "USER"} {
		if v := os.Getenv(k); len(v) > 1 && v != "/tmp" {
			vals = append(vals, v)
		}
	}
	return vals
}

// The shell's commands get CommandEnv's fixed environment and the
// variables given, nothing of the host's: env shows neither dageval's
// working directory nor the host's variables, and PWD is the root the
// commands run in.
func TestLocalShellEnvIsFixed(t *testing.T) {
	host := hostValues(t)
	root := t.TempDir()
	sh, err := backend.NewLocalShell(root, backend.LocalShellOptions{Env: map[string]string{"SUITE_VAR": "given"}})
	require.NoError(t, err)
	want := backend.CommandEnv(sh.Root())
	want["SUITE_VAR"] = "given"
	assert.Equal(t, want, envOf(t, sh))
	out, _ := run(t, sh, "env")
	for _, v := range host {
		assert.NotContains(t, out, v)
	}
}
