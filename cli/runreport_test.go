package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/reports"
)

// allRunFormats is every report dageval run prints or writes.
const allRunFormats = "table,md,json,junit,html"

// TestRunReportsTheRunAsLoadedBack runs suites through the CLI — one that
// passes with failures, one with errored cells, its --retry-errors (whose
// earlier cells come from the journal), a live one whose provider echoes
// the API key — and checks that what dageval run prints and writes (the
// report formats, summary.md, the warnings) is, byte for byte, what
// rendering its output directory as reports.LoadWith reads it gives: the
// run reports from the results it kept while writing results.jsonl, not
// from the file read back.
func TestRunReportsTheRunAsLoadedBack(t *testing.T) {
	errored := copyDir(t, "../evals/examples/quickstart")
	breakCassette(t, filepath.Join(errored, "cassettes", "convert-price--anthropic-claude-sonnet-4-6--baseline--e1.yaml"))
	srv := llmserver.NewServer(echoingProvider())
	defer srv.Close()
	live := writeFiles(t, map[string]string{"suite.yaml": `version: 1
name: canary
providers: {local: {kind: openai-compatible, base_url: "` + srv.OpenAIBaseURL() + `", api_key_env: LOCAL_KEY}}
models: [local:agent-model, local:other-model]
grader: {model: local:grader-model}
mode: live
agent: {name: echo, tools: [{name: whoami}]}
tools: {whoami: {mock: {result: "authenticated with Bearer ` + canaryKey + `"}}}
cases:
  - id: echo
    input: Who am I?
    rubric: [{name: answers, description: Answers the question.}]
    checks: [{tool_called: {name: whoami}}, {final_answer: {contains: nobody}}]
`})
	getenv := mapEnv(map[string]string{"LOCAL_KEY": canaryKey})
	erroredOut := filepath.Join(t.TempDir(), "errored")
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"quickstart", []string{"run", "../evals/examples/quickstart/suite.yaml", "--out", filepath.Join(t.TempDir(), "out"), "--format", allRunFormats}, 0},
		{"table only", []string{"run", "../evals/examples/quickstart/suite.yaml", "--out", filepath.Join(t.TempDir(), "out"), "--filter", "model=openai:*"}, 0},
		{"errored", []string{"run", filepath.Join(errored, "suite.yaml"), "--out", erroredOut, "--format", allRunFormats}, 2},
		{"retry errors", []string{"run", "--retry-errors", erroredOut, "--format", "md,table,junit"}, 2},
		{"tolerated", []string{"run", filepath.Join(errored, "suite.yaml"), "--out", filepath.Join(t.TempDir(), "out"), "--tolerate-errors", "--format", "html,md"}, 0},
		{"live with a secret", []string{"run", filepath.Join(live, "suite.yaml"), "--out", filepath.Join(t.TempDir(), "out"), "--format", allRunFormats}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLIEnv(t, getenv, tc.args...)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			out, format := argAfter(tc.args, "--out"), argAfter(tc.args, "--format")
			if out == "" {
				out = argAfter(tc.args, "--retry-errors")
			}
			if format == "" {
				format = "table"
			}
			assertReportsAsLoadedBack(t, out, format, stdout, stderr)
		})
	}
}

// assertReportsAsLoadedBack renders the run in out as reports.LoadWith
// reads it, into a copy of its run files, and compares the result with
// what dageval run printed and wrote.
func assertReportsAsLoadedBack(t *testing.T, out, format, stdout, stderr string) {
	t.Helper()
	ref := t.TempDir()
	for _, name := range []string{evals.SummaryFile, evals.ResultsFile} {
		require.NoError(t, os.WriteFile(filepath.Join(ref, name), readFileT(t, filepath.Join(out, name)), 0o644))
	}
	require.NoError(t, os.CopyFS(filepath.Join(ref, evals.CellsDir), os.DirFS(filepath.Join(out, evals.CellsDir))))
	run, err := reports.LoadWith(ref, reports.LoadOptions{})
	require.NoError(t, err)
	formats, err := parseRunFormats(format)
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, renderRun(&want, ref, run, formats, reports.TextOptions{}))
	assert.Equal(t, strings.ReplaceAll(want.String(), ref, out), stdout)

	var written []string
	require.NoError(t, filepath.WalkDir(ref, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (filepath.Dir(p) == ref && strings.HasPrefix(d.Name(), "report.") || d.Name() == evals.SummaryMarkdownFile) {
			written = append(written, d.Name())
		}
		return err
	}))
	require.Contains(t, written, evals.SummaryMarkdownFile)
	for _, name := range written {
		assert.Equal(t, string(readFileT(t, filepath.Join(ref, name))), string(readFileT(t, filepath.Join(out, name))), name)
	}

	var wantWarnings []string
	for _, r := range run.Results {
		for _, w := range r.Warnings {
			wantWarnings = append(wantWarnings, "dageval run: warning: "+r.ID+": "+w)
		}
	}
	cellWarning := regexp.MustCompile(`^dageval run: warning: [^ ]+--e\d+: `)
	var gotWarnings []string
	for _, l := range strings.Split(stderr, "\n") {
		if cellWarning.MatchString(l) {
			gotWarnings = append(gotWarnings, l)
		}
	}
	assert.Equal(t, wantWarnings, gotWarnings)
}

// argAfter is the value of flag in args, "" when not given.
func argAfter(args []string, flag string) string {
	for i, a := range args[:len(args)-1] {
		if a == flag {
			return args[i+1]
		}
	}
	return ""
}

// copyDir copies the directory src into a temporary one and returns it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// breakCassette makes the provider of the cassette's first answer answer
// 400, so that its cell errors.
func breakCassette(t *testing.T, path string) {
	t.Helper()
	data := readFileT(t, path)
	broken := bytes.Replace(bytes.Replace(data, []byte("status: 200 OK"), []byte("status: 400 Bad Request"), 1), []byte("code: 200"), []byte("code: 400"), 1)
	require.NotEqual(t, data, broken)
	require.NoError(t, os.WriteFile(path, broken, 0o644))
}
