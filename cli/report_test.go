package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/reports"
	"github.com/dageval/dageval/rubrics"
)

const fixtureRun = "../reports/testdata/run"

func TestReportCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "report", fixtureRun)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ERRORED: 2 cells errored (1 replay miss, 1 missing result)")
	assert.Contains(t, out, "49 of 60 cells passed")
	assert.Contains(t, out, "| total ")

	// Flags may follow the directory.
	code, out, errOut = runCLI(t, "report", fixtureRun, "--format", "md")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "### ⚠️ dageval · quickstart"))

	code, out, errOut = runCLI(t, "report", "--format", "json", filepath.Join(fixtureRun, "summary.json"))
	require.Equal(t, 0, code, errOut)
	require.NoError(t, reports.ValidateReportJSON([]byte(out)))

	dir := t.TempDir()
	code, _, errOut = runCLI(t, "report", fixtureRun, "--format", "table,md,json,junit,html", "-o", dir+"/")
	require.Equal(t, 0, code, errOut)
	for _, name := range []string{"report.txt", "report.md", "report.json", "report.junit.xml", "report.html"} {
		assert.FileExists(t, filepath.Join(dir, name))
		assert.Contains(t, errOut, "wrote "+filepath.Join(dir, name))
	}
	// -o is always a directory, with or without a trailing slash, even
	// when its name looks like a file's.
	code, _, errOut = runCLI(t, "report", fixtureRun, "--format", "md,html", "-o", filepath.Join(dir, "out"))
	require.Equal(t, 0, code, errOut)
	assert.FileExists(t, filepath.Join(dir, "out", "report.md"))
	assert.FileExists(t, filepath.Join(dir, "out", "report.html"))
	assert.NoFileExists(t, filepath.Join(dir, "out.md"))
	code, _, errOut = runCLI(t, "report", fixtureRun, "--format", "html", "-o", filepath.Join(dir, "page.html"))
	require.Equal(t, 0, code, errOut)
	assert.FileExists(t, filepath.Join(dir, "page.html", "report.html"))
	assert.Contains(t, errOut, "note: -o names a directory")
	code, _, errOut = runCLI(t, "report", fixtureRun, "--format", "md", "-o", filepath.Join(dir, "report.txt"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "a file of that name exists")
}

func TestReportCommandErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "want one output directory"},
		{[]string{"report", fixtureRun, "--format", "pdf"}, `unknown report format "pdf"`},
		{[]string{"report", fixtureRun, "--format", "md,json"}, "2 formats need -o"},
		{[]string{"report", "no/such/dir"}, "no/such/dir"},
		{[]string{"report", t.TempDir()}, "summary.json: not found"},
	}
	for _, tc := range tests {
		code, _, errOut := runCLI(t, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// writeRun writes an output directory the way the runner does, for cases ×
// 2 profiles × epochs, with out deciding each cell.
func writeRun(t *testing.T, digest string, cases, epochs int, out func(k evals.CellKey) evals.Status) string {
	t.Helper()
	dir := t.TempDir()
	sum := evals.Summary{SchemaVersion: evals.SchemaVersion, Suite: "quickstart", SuiteDigest: digest, Mode: "live"}
	var lines []string
	for _, p := range []string{"baseline", "candidate"} {
		g := evals.GroupSummary{Model: "openai:gpt-5", Profile: p, Expected: cases * epochs, K: epochs}
		for c := 1; c <= cases; c++ {
			for e := 1; e <= epochs; e++ {
				k := evals.CellKey{Case: fmt.Sprintf("case-%02d", c), Model: "openai:gpt-5", Profile: p, Epoch: e}
				st := out(k)
				r := evals.CellResult{CellKey: k, ID: fmt.Sprintf("%s--%s--e%d", k.Case, p, e), Status: st, Score: 1, Checks: []rubrics.CheckVerdict{}}
				if st != evals.StatusPass {
					r.Score = 0
				}
				if st == evals.StatusError {
					r.Error = "replay: no recording matches request 1"
				}
				b, err := json.Marshal(r)
				require.NoError(t, err)
				lines = append(lines, string(b))
				g.Cells++
				if st == evals.StatusPass {
					g.Passed++
				}
			}
		}
		sum.Groups = append(sum.Groups, g)
		sum.ExpectedCells += g.Expected
		sum.ActualCells += g.Cells
	}
	sum.Complete = true
	require.NoError(t, os.WriteFile(filepath.Join(dir, evals.ResultsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	b, err := json.Marshal(sum)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, evals.SummaryFile), b, 0o644))
	return dir
}

func pass(evals.CellKey) evals.Status { return evals.StatusPass }

func TestCompareCommand(t *testing.T) {
	base := writeRun(t, "d1", 8, 2, pass)
	// The candidate profile excluded a tool: cases 1–6 fail.
	regressed := writeRun(t, "d1", 8, 2, func(k evals.CellKey) evals.Status {
		var n int
		fmt.Sscanf(k.Case, "case-%d", &n)
		if k.Profile == "candidate" && n <= 6 {
			return evals.StatusFail
		}
		return evals.StatusPass
	})
	code, out, errOut := runCLI(t, "compare", base, regressed)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "dageval compare: regression:")
	assert.Contains(t, out, "New failures (6)")
	assert.Contains(t, out, "case-01 · openai:gpt-5 · candidate 2/2 → 0/2 passed")

	code, out, errOut = runCLI(t, "compare", base, writeRun(t, "d1", 8, 2, pass))
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "dageval compare: unchanged: all 32 pairs")
	assert.Contains(t, out, "unchanged")

	// One flip is within noise: exit 0, and it says so.
	one := writeRun(t, "d1", 8, 2, func(k evals.CellKey) evals.Status {
		if k.Case == "case-02" && k.Epoch == 1 && k.Profile == "candidate" {
			return evals.StatusFail
		}
		return evals.StatusPass
	})
	code, _, errOut = runCLI(t, "compare", base, one)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "inconclusive")

	// Markdown and HTML into a directory, JSON to stdout.
	cmpDir := filepath.Join(t.TempDir(), "cmp")
	code, out, errOut = runCLI(t, "compare", "--format", "md,html", "-o", cmpDir, base, regressed)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "wrote "+filepath.Join(cmpDir, "compare.html"))
	b, err := os.ReadFile(filepath.Join(cmpDir, "compare.md"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "### ❌ dageval compare · quickstart: regression")
	b, err = os.ReadFile(filepath.Join(cmpDir, "compare.html"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `data-outcome="regression"`)
	code, out, _ = runCLI(t, "compare", base, regressed, "--format", "json", "--seed", "9", "--resamples", "500")
	assert.Equal(t, 1, code)
	require.NoError(t, reports.ValidateCompareJSON([]byte(out)))
	assert.Contains(t, out, `"seed": 9`)

	// A tolerance wider than the drop passes the gate.
	code, _, errOut = runCLI(t, "compare", base, regressed, "--tolerance", "0.9")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "not beyond the tolerance")

	// A JSON report serves as the baseline.
	repDir := t.TempDir()
	rep := filepath.Join(repDir, "report.json")
	code, _, errOut = runCLI(t, "report", base, "--format", "json", "-o", repDir)
	require.Equal(t, 0, code, errOut)
	code, _, _ = runCLI(t, "compare", rep, regressed)
	assert.Equal(t, 1, code)
}

func TestCompareCommandExit2(t *testing.T) {
	base := writeRun(t, "d1", 4, 2, pass)
	errored := writeRun(t, "d1", 4, 2, func(k evals.CellKey) evals.Status {
		if k.Case == "case-03" && k.Epoch == 2 && k.Profile == "candidate" {
			return evals.StatusError
		}
		return evals.StatusPass
	})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"errored cell", []string{"compare", base, errored}, "1 cell errored, so the runs cannot be judged (errors are not regressions; fix or re-run them): head case-03 · openai:gpt-5 · candidate · epoch 2"},
		{"other suite", []string{"compare", base, writeRun(t, "d2", 4, 2, pass)}, "suite_digest differs (base d1, head d2)"},
		{"unreadable base", []string{"compare", filepath.Join(t.TempDir(), "nope"), base}, "base: "},
		{"newer schema", []string{"compare", base, func() string {
			d := writeRun(t, "d1", 4, 2, pass)
			p := filepath.Join(d, evals.SummaryFile)
			b, _ := os.ReadFile(p)
			require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), `"schema_version":1`, `"schema_version":2`, 1)), 0o644))
			return d
		}()}, "summary.json: field schema_version: unsupported schema version 2"},
		{"one argument", []string{"compare", base}, "want BASE and HEAD"},
		{"bad format", []string{"compare", base, base, "--format", "junit"}, "--format takes table, md, json and html"},
		{"formats without -o", []string{"compare", base, base, "--format", "md,html"}, "2 formats need -o DIR"},
		{"bad alpha", []string{"compare", base, base, "--alpha", "1.5"}, "--alpha must be between 0 and 1"},
		{"unreadable head profile", []string{"compare", base, base, "--head-profile", "p.yaml"}, "head: profile: open p.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			assert.Equal(t, 2, code, errOut)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

func TestCompareCommandAgentDiffHook(t *testing.T) {
	base := writeRun(t, "d1", 4, 1, pass)
	var got []string
	prev := agentDiff
	agentDiff = func(_ context.Context, _ *evals.Registry, baseAgent, headAgent string, bp, hp []string, baseModel, headModel string) (string, error) {
		got = append([]string{baseAgent, headAgent, baseModel, headModel}, append(bp, hp...)...)
		return "--- base\n+++ head\n-  tool: edit_file\n", nil
	}
	t.Cleanup(func() { agentDiff = prev })
	code, out, errOut := runCLI(t, "compare", base, base, "--format", "md", "--base-profile", "a.yaml", "--head-profile", "b.yaml", "--head-profile", "c.yaml", "--model", "openai:gpt-5")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"", "", "openai:gpt-5", "openai:gpt-5", "a.yaml", "b.yaml", "c.yaml"}, got)
	assert.Contains(t, out, "```diff\n--- base\n+++ head\n-  tool: edit_file\n```")
}
