package backend_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
)

// executors are the backends that run commands, each built with a 64-byte
// output cap (and a 300 ms default timeout for the second one returned),
// so that every one is held to the same contract.
func executors(t *testing.T) map[string]func(t *testing.T, maxOut int, timeout time.Duration) backend.Executor {
	return map[string]func(t *testing.T, maxOut int, timeout time.Duration) backend.Executor{
		"LocalShell": func(t *testing.T, maxOut int, timeout time.Duration) backend.Executor {
			sh, err := backend.NewLocalShell(t.TempDir(), backend.LocalShellOptions{MaxOutputBytes: maxOut, Timeout: timeout})
			require.NoError(t, err)
			return sh
		},
		"Bubblewrap": func(t *testing.T, maxOut int, timeout time.Duration) backend.Executor {
			return newBubblewrap(t, backend.BubblewrapOptions{MaxOutputBytes: maxOut, Timeout: timeout})
		},
	}
}

// Case 79 for every backend that executes: output, stderr, exit codes,
// empty commands, timeouts that kill the whole pipeline, output caps, and
// files that commands write being visible to the file operations.
func TestExecuteContract(t *testing.T) {
	for name, mk := range executors(t) {
		t.Run(name, func(t *testing.T) {
			ex := mk(t, 64, 0)
			ctx := t.Context()
			tests := []struct {
				name, cmd string
				timeout   time.Duration
				output    string
				code      int
			}{
				{"echo", "echo hello", 0, "hello\n", 0},
				{"stderr and exit code", "echo out; echo bad >&2; echo worse >&2; exit 3", 0, "out\n\n[stderr] bad\n[stderr] worse\n\nExit code: 3", 3},
				{"no output", "true", 0, "<no output>", 0},
				{"empty command", "   ", 0, "Error: Command must be a non-empty string.", 1},
				{"custom timeout", "sleep 5", 200 * time.Millisecond, "Error: Command timed out after 0.2 seconds (the timeout given for this call) and was stopped. It may be stuck, or it may need more time.", 124},
				{"stdin is closed", "cat", 0, "<no output>", 0},
			}
			for _, tt := range tests {
				res, err := ex.Execute(ctx, backend.ExecuteRequest{Command: tt.cmd, Timeout: tt.timeout})
				require.NoError(t, err, tt.name)
				assert.Equal(t, tt.output, res.Output, tt.name)
				require.NotNil(t, res.ExitCode, tt.name)
				assert.Equal(t, tt.code, *res.ExitCode, tt.name)
				assert.False(t, res.Truncated, tt.name)
			}

			res, err := ex.Execute(ctx, backend.ExecuteRequest{Command: "yes abcdefgh | head -c 100000"})
			require.NoError(t, err)
			assert.True(t, res.Truncated)
			assert.Equal(t, strings.Repeat("abcdefgh\n", 8)[:64]+"\n\n... Output truncated at 64 bytes.", res.Output)

			_, err = ex.Execute(ctx, backend.ExecuteRequest{Command: "echo x", Timeout: backend.NoTimeout})
			assert.ErrorIs(t, err, backend.ErrInvalidArgument)

			// A timeout kills the whole pipeline, not only the shell.
			short := mk(t, 0, 300*time.Millisecond)
			res, err = short.Execute(ctx, backend.ExecuteRequest{Command: "sleep 30 | cat; echo never"})
			require.NoError(t, err)
			assert.Equal(t, 124, *res.ExitCode)
			assert.Contains(t, res.Output, "timed out after 0.3 seconds")
			assert.Contains(t, res.Output, "Re-run it with a larger timeout")

			// Commands write files the file operations then see, and the
			// other way round.
			_, err = ex.Execute(ctx, backend.ExecuteRequest{Command: "mkdir -p d && printf 'made' > d/f.txt"})
			require.NoError(t, err)
			got, err := ex.Read(ctx, "/d/f.txt", 0, 10)
			require.NoError(t, err)
			assert.Equal(t, "made", got.File.Content)
			require.NoError(t, ex.Write(ctx, "/w/deep/g.txt", "written"))
			res, err = ex.Execute(ctx, backend.ExecuteRequest{Command: "echo ' more' >> w/deep/g.txt && cat w/deep/g.txt && rm -r w && echo removed"})
			require.NoError(t, err)
			assert.Equal(t, "written more\nremoved\n", res.Output, "a command may change and remove what the file operations wrote")
		})
	}
}

// The command reaches the shell as written: quotes, substitutions,
// separators and newlines mean what they mean to sh, and nothing in
// between (a sandbox's wrapper included) reinterprets or splits it.
func TestExecuteShellEscapes(t *testing.T) {
	tests := []struct {
		name, cmd, output string
		code              int
	}{
		{"quotes", `printf '%s\n' "it's" 'say "hi"'`, "it's\nsay \"hi\"\n", 0},
		{"substitutions", "echo $((6*7)) $(echo sub) `echo tick`", "42 sub tick\n", 0},
		{"word splitting", `x='a b'; printf '[%s]' $x "$x"`, "[a][b][a b]", 0},
		{"newlines", "echo one\necho two", "one\ntwo\n", 0},
		{"separators", `echo 'a;b' && echo "c|d" || echo no`, "a;b\nc|d\n", 0},
		{"a quoted command is only text", `printf '%s' '$(echo pwned) ; exit 7'`, "$(echo pwned) ; exit 7", 0},
		{"globs in quotes", `echo '*' "?"`, "* ?\n", 0},
		{"unicode", "echo héllo wörld ✓", "héllo wörld ✓\n", 0},
		{"dollar and backslash", `printf '%s\n' '$HOME \n \\'`, "$HOME \\n \\\\\n", 0},
		{"a long argument", `printf 'x%.0s' $(seq 1 5000) | wc -c`, "5000\n", 0},
		{"exit status", "(exit 42)", "<no output>\n\nExit code: 42", 42},
	}
	for name, mk := range executors(t) {
		t.Run(name, func(t *testing.T) {
			ex := mk(t, 0, 0)
			for _, tt := range tests {
				res, err := ex.Execute(t.Context(), backend.ExecuteRequest{Command: tt.cmd})
				require.NoError(t, err, tt.name)
				assert.Equal(t, tt.output, strings.TrimLeft(res.Output, " "), tt.name)
				assert.Equal(t, tt.code, *res.ExitCode, tt.name)
			}
			// An unbalanced quote is a syntax error of that command, not a
			// way into the wrapper around it.
			res, err := ex.Execute(t.Context(), backend.ExecuteRequest{Command: `'; echo injected; '`})
			require.NoError(t, err)
			assert.NotEqual(t, 0, *res.ExitCode)
			assert.NotContains(t, res.Output, "injected\n")
			res, err = ex.Execute(t.Context(), backend.ExecuteRequest{Command: `echo "unterminated`})
			require.NoError(t, err)
			assert.NotEqual(t, 0, *res.ExitCode)
		})
	}
}
