package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals/examples/quickstart"
	"github.com/dageval/dageval/fakes/llmserver"
)

// copyQuickstart copies the quickstart example into a new directory so a
// test can change its profiles the way a pull request would.
func copyQuickstart(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "evals", "examples", "quickstart")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	require.NoError(t, err)
	return dst
}

// pointAt makes the suite's anthropic and openai providers the local
// scripted server, for live runs.
func pointAt(t *testing.T, dir, base string) {
	t.Helper()
	p := filepath.Join(dir, "suite.yaml")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	providers := "providers:\n" +
		"  anthropic: {kind: anthropic, base_url: \"" + base + "\", api_key_env: ANTHROPIC_API_KEY}\n" +
		"  openai: {kind: openai, base_url: \"" + base + "/v1\", api_key_env: OPENAI_API_KEY}\n"
	require.NoError(t, os.WriteFile(p, append(b, []byte("\n"+providers)...), 0o644))
}

func setTerse(t *testing.T, dir, profile string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "profiles", "terse.yaml"), []byte(profile), 0o644))
}

const quickstartTerse = "system_prompt_suffix: \"Be terse: answer in one short sentence, without lists.\"\n"

// TestCompareGatesAProfileChange is the users' story end to end: a pull
// request changes a profile, CI runs the suite and compares with main.
func TestCompareGatesAProfileChange(t *testing.T) {
	srv := llmserver.NewServer(quickstart.Model())
	defer srv.Close()
	keys := mapEnv(map[string]string{"ANTHROPIC_API_KEY": "local-test-key", "OPENAI_API_KEY": "local-test-key", "CI": "true"})

	live := func(profile string) string {
		dir := copyQuickstart(t)
		pointAt(t, dir, srv.URL)
		setTerse(t, dir, profile)
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runCLIEnv(t, keys, "run", filepath.Join(dir, "suite.yaml"), "--mode", "live", "--out", out, "--format", "none")
		require.NotEqual(t, 2, code, "live run could not be carried out:\n%s", stderr)
		return out
	}
	base := live(quickstartTerse)

	t.Run("a candidate that hides a needed tool is a regression", func(t *testing.T) {
		head := live(quickstartTerse + "excluded_tools: [get_weather]\n")
		code, stdout, stderr := runCLIEnv(t, keys, "compare", base, head, "--format", "md")
		assert.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stdout, "paris-weather")
		assert.Contains(t, stdout, "two-cities")
		assert.Contains(t, stderr, "regression")
	})

	t.Run("an identical candidate passes", func(t *testing.T) {
		head := live(quickstartTerse)
		code, stdout, stderr := runCLIEnv(t, keys, "compare", base, head)
		assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	})

	t.Run("in replay the change misses the cassettes and compare refuses to call errors a regression", func(t *testing.T) {
		dir := copyQuickstart(t)
		setTerse(t, dir, quickstartTerse+"excluded_tools: [get_weather]\n")
		head := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runCLIEnv(t, keys, "run", filepath.Join(dir, "suite.yaml"), "--mode", "replay", "--out", head, "--format", "md")
		assert.Equal(t, 2, code, "the replayed run has errored cells, so it cannot be judged:\n%s", stderr)
		assert.Contains(t, stderr, "cells errored: replay misses — ")
		detail, err := os.ReadFile(filepath.Join(head, "results.jsonl"))
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(detail), "replay miss"), "a replay miss is reported")
		assert.True(t, strings.Contains(string(detail), `-      \"name\": \"get_weather\"`), "with the diff of the request that changed")

		code, stdout, stderr := runCLIEnv(t, keys, "compare", base, head)
		assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr+stdout, "errored")
	})
}
