package reports_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
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
	"github.com/dageval/dageval/internal/netguard"
	"github.com/dageval/dageval/reports"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The quickstart goldens replay through the real provider adapters:
	// make sure nothing reaches past loopback.
	netguard.Install()
	v := netguard.Code(m.Run())
	// go-snaps cannot tell which standalone snapshot files a -run filter
	// skipped and would call them obsolete, so only a full run judges.
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		os.Exit(v)
	}
	dirty, err := snaps.Clean(m, snaps.CleanOpts{Sort: true})
	if err != nil {
		fmt.Println("snaps.Clean:", err)
		os.Exit(1)
	}
	if dirty {
		fmt.Println("obsolete snapshots; run UPDATE_SNAPS=clean go test ./reports")
		os.Exit(1)
	}
	os.Exit(v)
}

func loadFixture(t *testing.T) *reports.Run {
	t.Helper()
	r, err := reports.Load(fixtureDir)
	require.NoError(t, err)
	return r
}

func render(t *testing.T, r *reports.Run, f reports.Format) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, reports.Render(&b, r, f))
	return b.String()
}

// The goldens pin the exact output of each text format for the fixture run.
func TestGoldenReports(t *testing.T) {
	r := loadFixture(t)
	for _, tc := range []struct {
		format reports.Format
		ext    string
	}{
		{reports.FormatTable, ".txt"},
		{reports.FormatMD, ".md"},
		{reports.FormatJSON, ".json"},
		{reports.FormatJUnit, ".xml"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			out := render(t, r, tc.format)
			snaps.WithConfig(snaps.Ext(tc.ext)).MatchStandaloneSnapshot(t, out)
		})
	}
}

// Rendering twice, and rendering a run whose results.jsonl lines come in
// another order with other durations, gives the same bytes.
func TestReportsDeterministic(t *testing.T) {
	r := loadFixture(t)
	shuffled := loadFixture(t)
	for i, j := 0, len(shuffled.Results)-1; i < j; i, j = i+1, j-1 {
		shuffled.Results[i], shuffled.Results[j] = shuffled.Results[j], shuffled.Results[i]
	}
	for i := range shuffled.Results {
		shuffled.Results[i].DurationMS += 12345
	}
	for _, f := range reports.Formats {
		a, b := render(t, r, f), render(t, shuffled, f)
		assert.Equal(t, a, b, "format %s", f)
		assert.Equal(t, a, render(t, r, f), "format %s", f)
		assert.NotContains(t, a, "duration", "format %s", f)
		abs, _ := filepath.Abs(fixtureDir)
		assert.NotContains(t, a, abs, "format %s leaks the machine path", f)
	}
}

func TestJSONReportValidatesAgainstSchema(t *testing.T) {
	r := loadFixture(t)
	out := render(t, r, reports.FormatJSON)
	require.NoError(t, reports.ValidateReportJSON([]byte(out)))

	// A summary-only report (no cells) is valid too.
	summaryOnly, err := reports.Load(filepath.Join(fixtureDir, "summary.json"))
	require.NoError(t, err)
	summaryOnly.Results, summaryOnly.HasResults = nil, false
	require.NoError(t, reports.ValidateReportJSON([]byte(render(t, summaryOnly, reports.FormatJSON))))

	// The schema is strict enough to catch drift: an unknown field, a
	// wrong enum value and a missing field each fail validation.
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	for name, mutate := range map[string]func(map[string]any){
		"extra field":   func(d map[string]any) { d["surprise"] = 1 },
		"bad status":    func(d map[string]any) { d["cells"].([]any)[0].(map[string]any)["status"] = "flaky" },
		"missing field": func(d map[string]any) { delete(d["totals"].(map[string]any), "pass_rate") },
		"wrong schema":  func(d map[string]any) { d["schema"] = "dageval.report/v2" },
		"rate above 1":  func(d map[string]any) { d["groups"].([]any)[0].(map[string]any)["pass_rate"] = 1.5 },
	} {
		var cp map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &cp))
		mutate(cp)
		b, _ := json.Marshal(cp)
		assert.Error(t, reports.ValidateReportJSON(b), name)
	}
	// The embedded schema is the file in the repository.
	onDisk, err := os.ReadFile("schema/report.v1.json")
	require.NoError(t, err)
	assert.Equal(t, string(onDisk), string(reports.ReportSchemaJSON))
}

// A JSON report loads back as a run and renders the same report again, so a
// single file can be compare's baseline.
func TestJSONReportRoundTrip(t *testing.T) {
	r := loadFixture(t)
	out := render(t, r, reports.FormatJSON)
	p := filepath.Join(t.TempDir(), "base.json")
	require.NoError(t, os.WriteFile(p, []byte(out), 0o644))
	back, err := reports.Load(p)
	require.NoError(t, err)
	assert.Equal(t, out, render(t, back, reports.FormatJSON))
	assert.Equal(t, render(t, r, reports.FormatMD), render(t, back, reports.FormatMD))
}

func TestJUnitShape(t *testing.T) {
	r := loadFixture(t)
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Error *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(render(t, r, reports.FormatJUnit)), &doc))
	tot := r.Summary.Totals
	assert.Equal(t, r.Summary.ExpectedCells+1, doc.Tests, "a test case per cell, and the verdict")
	assert.Equal(t, tot.Failed, doc.Failures)
	assert.Equal(t, tot.Errors+tot.Missing+1, doc.Errors, "errored and missing cells, and the errored verdict")
	require.Len(t, doc.Suites, 5)
	verdict := doc.Suites[0]
	assert.Equal(t, "verdict", verdict.Name)
	require.Len(t, verdict.Cases, 1)
	require.NotNil(t, verdict.Cases[0].Error, "the fixture has an errored and a missing cell")
	assert.Equal(t, "replay_miss", verdict.Cases[0].Error.Type, "typed by the first cause")
	assert.True(t, strings.HasPrefix(verdict.Cases[0].Error.Message, "ERRORED: 2 cells errored (1 replay miss, 1 missing result)"), verdict.Cases[0].Error.Message)
	assert.Equal(t, "anthropic:claude-sonnet-4-6 × terse", doc.Suites[2].Name)
	var found bool
	for _, c := range doc.Suites[2].Cases {
		if c.Name == "budget-report [epoch 1]" {
			found = true
			require.NotNil(t, c.Failure)
			assert.Contains(t, c.Failure.Text, "never states the total")
			assert.Contains(t, c.Failure.Text, `check final_answer contains: final answer does not contain "$1,234.50"`)
		}
	}
	assert.True(t, found)
	var missing int
	for _, c := range doc.Suites[4].Cases {
		if c.Error != nil && c.Error.Type == "missing" {
			missing++
			assert.Equal(t, "todo-plan [epoch 3]", c.Name)
		}
	}
	assert.Equal(t, 1, missing)
}

func TestHTMLSelfContained(t *testing.T) {
	r := loadFixture(t)
	out := render(t, r, reports.FormatHTML)
	// Nothing the browser would fetch: no src or href attribute at all
	// (links to anchors aside), no stylesheet links, imports or CSS urls.
	// Transcript text may mention URLs; it is text, not a reference.
	for _, bad := range []string{`\ssrc=`, `\shref="[^#]`, `<link\b`, `@import`, `url\(`} {
		if loc := regexp.MustCompile(bad).FindStringIndex(out); loc != nil {
			t.Errorf("HTML report references an outside resource (%s): …%s…", bad, out[max(0, loc[0]-80):min(len(out), loc[1]+80)])
		}
	}
	assert.Contains(t, out, "Content-Security-Policy")
	// Content from the transcript is escaped, never markup.
	d := r.Details["budget-report--anthropic-claude-sonnet-4-6--terse--e1"]
	require.NotNil(t, d)
	d.Messages[0].Content[0].Text = `<script>alert(1)</script>`
	out = render(t, r, reports.FormatHTML)
	assert.NotContains(t, out, `<script>alert(1)</script>`)
	assert.Contains(t, out, `&lt;script&gt;alert(1)&lt;/script&gt;`)
	// Subagent runs hang under the call that started them.
	i := strings.Index(out, `id="cell-research-moons--anthropic-claude-sonnet-4-6--baseline--e1"`)
	require.Positive(t, i)
	cell := out[i:]
	cell = cell[:strings.Index(cell, "</details>\n\n<details class=\"cell\"")]
	assert.Regexp(t, `(?s)<code>task</code>.*<details class="subagent"><summary>subagent <code>main/task:researcher</code>.*web_search`, cell)
	assert.Contains(t, cell, "/notes/moons.md")
}

func TestParseFormats(t *testing.T) {
	got, err := reports.ParseFormats("table, markdown,json,md,junit,html")
	require.NoError(t, err)
	assert.Equal(t, []reports.Format{"table", "md", "json", "junit", "html"}, got)
	_, err = reports.ParseFormats("table,pdf")
	assert.ErrorContains(t, err, `unknown report format "pdf"`)
	_, err = reports.ParseFormats(" , ")
	assert.Error(t, err)
}

func TestWriteFiles(t *testing.T) {
	r := loadFixture(t)
	dir := t.TempDir()
	all := []reports.Format{reports.FormatTable, reports.FormatMD, reports.FormatJSON, reports.FormatJUnit, reports.FormatHTML}

	paths, err := reports.WriteFiles(r, all, dir)
	require.NoError(t, err)
	want := []string{"report.txt", "report.md", "report.json", "report.junit.xml", "report.html"}
	for i, p := range paths {
		assert.Equal(t, filepath.Join(dir, want[i]), p)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, render(t, r, all[i]), string(b))
	}

	paths, err = reports.WriteFiles(r, all[:2], filepath.Join(dir, "pr-42"))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "pr-42.txt"), filepath.Join(dir, "pr-42.md")}, paths)

	paths, err = reports.WriteFiles(r, []reports.Format{reports.FormatHTML}, filepath.Join(dir, "sub", "run.html"))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "sub", "run.html")}, paths)

	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), "."), "temporary file %s left behind", e.Name())
	}
}

// copyFixture copies the fixture run into a temporary directory to be broken.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, os.CopyFS(dst, os.DirFS(fixtureDir)))
	return dst
}

func editFile(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(edit(string(b))), 0o644))
}

func TestLoadErrors(t *testing.T) {
	firstLine := func(s string) string { return s[:strings.IndexByte(s, '\n')] }
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string) string // returns the path to load
		want   []string
	}{
		{"no summary", func(t *testing.T, dir string) string {
			require.NoError(t, os.Remove(filepath.Join(dir, "summary.json")))
			return dir
		}, []string{"summary.json: not found"}},
		{"newer summary schema", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "summary.json"), func(s string) string {
				return strings.Replace(s, `"schema_version": 1`, `"schema_version": 2`, 1)
			})
			return dir
		}, []string{"summary.json: field schema_version: unsupported schema version 2: this dageval reads version 1"}},
		{"summary without version", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "summary.json"), func(s string) string {
				return strings.Replace(s, `"schema_version": 1,`, ``, 1)
			})
			return dir
		}, []string{"summary.json: field schema_version: missing"}},
		{"summary wrong type", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "summary.json"), func(s string) string {
				return strings.Replace(s, `"expected_cells": 60`, `"expected_cells": "sixty"`, 1)
			})
			return dir
		}, []string{"summary.json:6:", "field expected_cells: got JSON string, want int"}},
		{"results line not JSON", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "results.jsonl"), func(s string) string {
				lines := strings.SplitAfter(s, "\n")
				lines[2] = "{\"case\": oops}\n"
				return strings.Join(lines, "")
			})
			return dir
		}, []string{"results.jsonl:3:10: invalid character 'o'"}},
		{"results bad status", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "results.jsonl"), func(s string) string {
				return strings.Replace(s, `"status":"pass"`, `"status":"flaky"`, 1)
			})
			return dir
		}, []string{"results.jsonl:1: field status: \"flaky\" is not pass, fail or error"}},
		{"results score out of range", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "results.jsonl"), func(s string) string {
				return strings.Replace(s, `"score":1,`, `"score":7,`, 1)
			})
			return dir
		}, []string{"results.jsonl:1: field score: 7 is outside [0, 1]"}},
		{"duplicate cell", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "results.jsonl"), func(s string) string { return s + firstLine(s) + "\n" })
			return dir
		}, []string{"results.jsonl:60: cell", "repeats line 1"}},
		{"results from another run", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "results.jsonl"), func(s string) string { return s[len(firstLine(s))+1:] })
			return dir
		}, []string{"58 cell results, but summary.json says actual_cells is 59"}},
		{"detail of another cell", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "cells", "budget-report--openai-gpt-5--terse--e1.json")
			editFile(t, p, func(s string) string { return strings.Replace(s, `"epoch": 1`, `"epoch": 2`, 1) })
			return dir
		}, []string{"budget-report--openai-gpt-5--terse--e1.json: field result: describes cell budget-report × openai:gpt-5 × terse epoch 2"}},
		{"cell outside every group", func(t *testing.T, dir string) string {
			editFile(t, filepath.Join(dir, "results.jsonl"), func(s string) string {
				return strings.Replace(s, `"profile":"terse"`, `"profile":"verbose"`, 1)
			})
			return dir
		}, []string{"belongs to no model × profile of summary.json"}},
		{"no results beside summary in a directory", func(t *testing.T, dir string) string {
			require.NoError(t, os.Remove(filepath.Join(dir, "results.jsonl")))
			return dir
		}, []string{"results.jsonl: not found beside summary.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t)
			path := tc.break_(t, dir)
			_, err := reports.Load(path)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			var le *reports.Error
			if !strings.Contains(tc.name, "no summary") {
				assert.ErrorAs(t, err, &le)
			}
			if lines, ok := decodeLines(t, filepath.Join(dir, evals.ResultsFile)); ok {
				_, given := reports.LoadWithResults(path, lines, reports.LoadOptions{})
				require.Error(t, given, "results given are checked as the file's lines")
				assert.Equal(t, err.Error(), given.Error())
			}
		})
	}
}

func TestLoadSummaryFileAlone(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "summary.json"))
	require.NoError(t, err)
	p := filepath.Join(dir, "summary.json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	r, err := reports.Load(p)
	require.NoError(t, err)
	assert.False(t, r.HasResults)
	assert.Equal(t, "quickstart", r.Summary.Suite)
	out := render(t, r, reports.FormatTable)
	assert.Contains(t, out, "Cell results were not available")
	assert.Contains(t, out, "| total")
}

func TestLoadFromSummaryPathReadsSiblings(t *testing.T) {
	r, err := reports.Load(filepath.Join(fixtureDir, evals.SummaryFile))
	require.NoError(t, err)
	assert.True(t, r.HasResults)
	assert.Len(t, r.Results, 59)
	assert.Len(t, r.Details, 59)
}

// decodeLines decodes each line of a results.jsonl, as the runner does
// when it writes one; false when the file is missing or a line is not a
// result.
func decodeLines(t *testing.T, path string) ([]evals.CellResult, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	require.NoError(t, err)
	var out []evals.CellResult
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l == "" {
			continue
		}
		var r evals.CellResult
		if json.Unmarshal([]byte(l), &r) != nil {
			return nil, false
		}
		out = append(out, r)
	}
	return out, true
}

// A run that holds its results as it wrote them reports as one loaded
// from its files.
func TestLoadWithResultsMatchesLoad(t *testing.T) {
	r := loadFixture(t)
	lines, ok := decodeLines(t, filepath.Join(fixtureDir, evals.ResultsFile))
	require.True(t, ok)
	given, err := reports.LoadWithResults(fixtureDir, lines, reports.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, r, given)
	for _, f := range reports.Formats {
		assert.Equal(t, render(t, r, f), render(t, given, f), "format %s", f)
	}
	skipped, err := reports.LoadWithResults(fixtureDir, lines, reports.LoadOptions{SkipDetails: true})
	require.NoError(t, err)
	assert.Empty(t, skipped.Details)
}

// The runner renders from memory: NewRun gives the same reports as loading
// the files it wrote.
func TestNewRunMatchesLoad(t *testing.T) {
	r := loadFixture(t)
	mem := reports.NewRun(r.Summary, r.Results, r.Details)
	for _, f := range reports.Formats {
		assert.Equal(t, render(t, r, f), render(t, mem, f), "format %s", f)
	}
}
