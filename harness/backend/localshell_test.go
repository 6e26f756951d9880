package backend_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
)

// Case 79: LocalShell execution.
func TestLocalShellExecute(t *testing.T) {
	root := t.TempDir()
	sh, err := backend.NewLocalShell(root, backend.LocalShellOptions{MaxOutputBytes: 64, Env: map[string]string{"GREETING": "hi"}})
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^local-[0-9a-f]{8}$`), sh.ID())
	again, err := backend.NewLocalShell(root, backend.LocalShellOptions{})
	require.NoError(t, err)
	assert.Equal(t, sh.ID(), again.ID(), "the id is stable for a root")
	ctx := t.Context()

	tests := []struct {
		name, cmd string
		timeout   time.Duration
		output    string
		code      int
		truncated bool
	}{
		{"echo", "echo hello", 0, "hello\n", 0, false},
		{"env is given, not inherited", `echo "$GREETING ${HOME:-nohome}"`, 0, "hi nohome\n", 0, false},
		{"runs in the root", "pwd", 0, sh.Root() + "\n", 0, false},
		{"stderr and exit code", "echo out; echo bad >&2; echo worse >&2; exit 3", 0, "out\n\n[stderr] bad\n[stderr] worse\n\nExit code: 3", 3, false},
		{"no output", "true", 0, "<no output>", 0, false},
		{"empty command", "   ", 0, "Error: Command must be a non-empty string.", 1, false},
		{"custom timeout", "sleep 5", 200 * time.Millisecond, "Error: Command timed out after 0.2 seconds (the timeout given for this call) and was stopped. It may be stuck, or it may need more time.", 124, false},
		{"stdin is closed", "cat", 0, "<no output>", 0, false},
	}
	for _, tt := range tests {
		res, err := sh.Execute(ctx, backend.ExecuteRequest{Command: tt.cmd, Timeout: tt.timeout})
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.output, res.Output, tt.name)
		require.NotNil(t, res.ExitCode, tt.name)
		assert.Equal(t, tt.code, *res.ExitCode, tt.name)
		assert.Equal(t, tt.truncated, res.Truncated, tt.name)
	}

	res, err := sh.Execute(ctx, backend.ExecuteRequest{Command: "yes abcdefgh | head -c 100000"})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Equal(t, strings.Repeat("abcdefgh\n", 8)[:64]+"\n\n... Output truncated at 64 bytes.", res.Output)

	_, err = sh.Execute(ctx, backend.ExecuteRequest{Command: "echo x", Timeout: backend.NoTimeout})
	assert.ErrorIs(t, err, backend.ErrInvalidArgument)

	// A timeout kills the whole pipeline, not only the shell.
	short, err := backend.NewLocalShell(root, backend.LocalShellOptions{Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	res, err = short.Execute(ctx, backend.ExecuteRequest{Command: "sleep 30 | cat; echo never"})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, 124, *res.ExitCode)
	assert.Contains(t, res.Output, "timed out after 0.3 seconds")
	assert.Contains(t, res.Output, "Re-run it with a larger timeout")

	// Commands can write files the file operations then see.
	_, err = sh.Execute(ctx, backend.ExecuteRequest{Command: "mkdir -p d && printf 'made' > d/f.txt"})
	require.NoError(t, err)
	got, err := sh.Read(ctx, "/d/f.txt", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, "made", got.File.Content)

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
