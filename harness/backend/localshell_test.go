package backend_test

import (
	"path/filepath"
	"regexp"
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
		{"env is given, not inherited", `echo "$GREETING ${HOME:-nohome}"`, "hi nohome\n"},
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
