package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const diffVictim = "../evals/examples/quickstart/cassettes/paris-weather--anthropic-claude-sonnet-4-6--terse--e1.yaml"

// promptEdited is the cassette as a prompt edit re-records it.
func promptEdited(t *testing.T) (orig, edited []byte) {
	t.Helper()
	orig, err := os.ReadFile(diffVictim)
	require.NoError(t, err)
	return orig, []byte(strings.ReplaceAll(string(orig), "You are a travel and research assistant.", "You are a travel assistant."))
}

func TestCassetteDiffFiles(t *testing.T) {
	orig, edited := promptEdited(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	require.NoError(t, os.WriteFile(a, orig, 0o644))
	require.NoError(t, os.WriteFile(b, edited, 0o644))

	code, out, errOut := runCLI(t, "cassette", "diff", a, a)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "no change in model terms (4 interactions)")

	code, out, errOut = runCLI(t, "cassette", "diff", a, b)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "[1] POST /v1/messages lane assistant: changed\n  system prompt:\n")
	assert.Contains(t, out, "    +You are a travel assistant. Use your tools for facts: never\n")
	assert.Contains(t, out, "  system prompt: as in [1]\n")
	assert.Contains(t, errOut, "1 of 1 cassettes changed in model terms")

	code, out, _ = runCLI(t, "cassette", "diff", "--format", "json", a, b)
	assert.Equal(t, 1, code)
	var reports []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &reports))
	require.Len(t, reports, 1)
	assert.Equal(t, float64(4), reports[0]["new_interactions"])

	// git's external diff driver: seven arguments, exit 0 whatever changed.
	code, out, errOut = runCLI(t, "cassette", "diff", "cassettes/x.yaml", a, "abc", "100644", b, "def", "100644")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "cassettes/x.yaml: 4 interactions → 4: ")
	code, out, _ = runCLI(t, "cassette", "diff", "cassettes/x.yaml", os.DevNull, ".", ".", b, "def", "100644")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "cassettes/x.yaml: added, 4 interactions")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cassette", "diff", a}, "want OLD and NEW (files or REV:PATH), or --git REV [PATH...]; got 1 arguments"},
		{[]string{"cassette", "diff", a, filepath.Join(dir, "nope.yaml")}, "no such file"},
		{[]string{"cassette", "diff", "--format", "yaml", a, b}, `--format "yaml": want text or json`},
		{[]string{"cassette", "diff", a, "../go.mod"}, "go.mod"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, errOut, tc.want, tc.args)
	}
}

// gitRepo makes a repository with one commit of files, and moves into it.
func gitRepo(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "-m", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	t.Chdir(dir)
	return dir
}

// On a pull request: REV:PATH reads the base's cassette, and --git REV
// compares every cassette the change touches, added and deleted ones
// included, and nothing else.
func TestCassetteDiffGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	orig, edited := promptEdited(t)
	dir := gitRepo(t, map[string][]byte{
		"evals/cassettes/a.yaml":    orig,
		"evals/cassettes/gone.yaml": orig,
		"evals/suite.yaml":          []byte("version: 1\nname: s\n"),
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evals/cassettes/a.yaml"), edited, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "evals/cassettes/gone.yaml")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evals/cassettes/new.yaml"), orig, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evals/suite.yaml"), []byte("version: 1\nname: t\n"), 0o644))

	code, out, errOut := runCLI(t, "cassette", "diff", "main:evals/cassettes/a.yaml", "evals/cassettes/a.yaml")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "main:evals/cassettes/a.yaml → evals/cassettes/a.yaml: 4 interactions → 4")
	code, out, errOut = runCLI(t, "cassette", "diff", "main:evals/cassettes/new.yaml", "evals/cassettes/new.yaml")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "added, 4 interactions")

	code, out, errOut = runCLI(t, "cassette", "diff", "--git", "main")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "main:evals/cassettes/a.yaml → evals/cassettes/a.yaml: 4 interactions → 4: 3 changed, 1 the same\n")
	assert.Contains(t, out, "main:evals/cassettes/gone.yaml → evals/cassettes/gone.yaml: removed, 4 interactions\n")
	assert.Contains(t, out, "main:evals/cassettes/new.yaml → evals/cassettes/new.yaml: added, 4 interactions\n")
	assert.NotContains(t, out, "suite.yaml", "only cassettes")
	assert.Contains(t, errOut, "3 of 3 cassettes changed in model terms")

	// From a subdirectory, paths are relative to it, as git's are.
	t.Chdir(filepath.Join(dir, "evals", "cassettes"))
	code, out, _ = runCLI(t, "cassette", "diff", "--git", "main", "a.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "main:a.yaml → a.yaml: 4 interactions → 4")
	code, out, _ = runCLI(t, "cassette", "diff", "main:a.yaml", "a.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "main:a.yaml → a.yaml")

	code, _, errOut = runCLI(t, "cassette", "diff", "--git", "no-such-branch")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--git no-such-branch: not a revision of this repository")

	// Request ids and headers are not model terms.
	require.NoError(t, os.WriteFile("a.yaml", []byte(strings.ReplaceAll(string(orig), "req_", "req_X")), 0o644))
	code, out, _ = runCLI(t, "cassette", "diff", "--git", "main", "a.yaml")
	assert.Equal(t, 0, code)
	assert.Equal(t, "main:a.yaml → a.yaml: no change in model terms (4 interactions)\n", out)
	require.NoError(t, os.WriteFile("a.yaml", orig, 0o644))
	code, out, _ = runCLI(t, "cassette", "diff", "--git", "main", "a.yaml")
	assert.Equal(t, 0, code)
	assert.Equal(t, "no cassette differs from main\n", out)
}
