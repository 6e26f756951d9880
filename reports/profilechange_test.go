package reports_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/evals/examples/quickstart"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/reports"
)

// profileChange is the comparison a pull request that changes a profile
// gets: the quickstart as committed (base) against a copy whose terse
// profile hides get_weather (head), recorded against the scripted
// provider the quickstart was recorded with, without timings so that the
// bytes are the same on every run.
func profileChange(t *testing.T) (base, head *reports.Run) {
	t.Helper()
	base = runQuickstart(t)
	srv := llmserver.NewServer(quickstart.Model())
	t.Cleanup(srv.Close)
	src := filepath.Join("..", "evals", "examples", "quickstart")
	dir := t.TempDir()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		if strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	}))
	suite := filepath.Join(dir, "suite.yaml")
	b, err := os.ReadFile(suite)
	require.NoError(t, err)
	providers := "\nproviders:\n" +
		"  anthropic: {kind: anthropic, base_url: \"" + srv.URL + "\", api_key_env: ANTHROPIC_API_KEY}\n" +
		"  openai: {kind: openai, base_url: \"" + srv.URL + "/v1\", api_key_env: OPENAI_API_KEY}\n"
	require.NoError(t, os.WriteFile(suite, append(b, providers...), 0o644))
	terse := "system_prompt_suffix: \"Be terse: answer in one short sentence, without lists.\"\nexcluded_tools: [get_weather]\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "profiles", "terse.yaml"), []byte(terse), 0o644))
	s, err := evals.Load(suite)
	require.NoError(t, err)
	out := t.TempDir()
	keys := map[string]string{"ANTHROPIC_API_KEY": "local-test-key", "OPENAI_API_KEY": "local-test-key"}
	_, err = s.Run(t.Context(), evals.Options{OutDir: out, Mode: recorder.ModeRecord, Getenv: func(k string) string { return keys[k] },
		Recorder: []recorder.Option{recorder.WithoutLatency()}})
	require.NoError(t, err)
	head, err = reports.Load(out)
	require.NoError(t, err)
	return base, head
}

func renderComparison(t *testing.T, c *reports.Comparison, f reports.Format) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, reports.RenderComparison(&b, c, f))
	return b.String()
}

// The changed-profile comparison in markdown, as a pull-request comment
// shows it, and in HTML: each new failure with its reason and both
// transcripts, byte-identical for the same runs.
func TestProfileChangeComparison(t *testing.T) {
	base, head := profileChange(t)
	c, err := reports.Compare(base, head, reports.CompareOptions{Seed: 1, AgentDiff: "--- base\n+++ head\n@@ tools @@\n   convert_currency\n-  get_weather\n"})
	require.NoError(t, err)
	require.NotEmpty(t, c.NewFailures)
	md := renderComparison(t, c, reports.FormatMD)
	assert.Contains(t, md, "<details open><summary>New failures")
	assert.Regexp(t, `\*\*paris-weather\*\* · `+"`anthropic:claude-sonnet-4-6`"+` · terse 2/2 → 0/2 passed, score [0-9.]+ → [0-9.]+ — rubric `, md)
	assert.Contains(t, md, "```diff\n--- base")
	snaps.WithConfig(snaps.Ext(".md")).MatchStandaloneSnapshot(t, md)

	out := renderComparison(t, c, reports.FormatHTML)
	again, err := reports.Compare(base, head, reports.CompareOptions{Seed: 1, AgentDiff: "--- base\n+++ head\n@@ tools @@\n   convert_currency\n-  get_weather\n"})
	require.NoError(t, err)
	assert.Equal(t, out, renderComparison(t, again, reports.FormatHTML), "the same runs give the same bytes")
	for _, bad := range []string{`\ssrc=`, `\shref="[^#]`, `<link\b`, `@import`, `url\(`} {
		assert.NotRegexp(t, regexp.MustCompile(bad), out)
	}
	assert.Contains(t, out, `id="new-failures" open`)
	assert.Contains(t, out, "diff, base → head")
	assert.Contains(t, out, `<span class="del">-  get_weather</span>`)
	assert.NotContains(t, out, "were loaded without their cells")
}
