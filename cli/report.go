package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dageval/dageval/reports"
)

func init() {
	register(&command{
		name:    "report",
		summary: "render a run's output directory as table, markdown, JSON, JUnit or HTML",
		usage:   "DIR [--format table,md,json,junit,html] [-o PATH]",
		help: `Renders the results of a finished run (the output directory of dageval run,
its summary.json, or a JSON report) in one or more formats:

  table  terminal summary, failing cells with rubric gaps and failed checks,
         tokens per role
  md     the same as a GitHub pull-request comment
  json   the versioned JSON report (schema: reports/schema/report.v1.json)
  junit  JUnit XML, one test case per cell, one suite per model × profile
  html   one self-contained page with every transcript (no network needed)

Without -o a single format goes to standard output (the table fitted to a
terminal's width and coloured unless NO_COLOR is set). With -o DIR every
format is written into the directory DIR, created when missing, as
report.txt, report.md, report.json, report.junit.xml and report.html.
Several formats need -o. Files are written whole or not at all.

Reports hold no timestamps or machine paths: the same results give the same
bytes. Exit status 0 when rendered (whatever the run's verdict), 2 when the
results cannot be read.`,
		run: runReport,
	})
}

func runReport(_ context.Context, e *env, args []string) error {
	c := commands["report"]
	fs := newFlags(c, e)
	format := fs.String("format", "table", "comma-separated formats: table, md, json, junit, html")
	out := fs.String("o", "", "output directory for the report files; standard output when empty")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("want one output directory (or summary.json, or JSON report), got %d arguments", len(pos))
	}
	formats, err := reports.ParseFormats(*format)
	if err != nil {
		return usageError("--format: %v", err)
	}
	if *out == "" && len(formats) > 1 {
		return usageError("%d formats need -o DIR", len(formats))
	}
	run, err := reports.Load(pos[0])
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if *out == "" {
		return reports.RenderWith(e.stdout, run, formats[0], terminal(e, e.stdout))
	}
	paths, err := writeInDir(e, "report", *out, func(dir string) ([]string, error) { return reports.WriteFiles(run, formats, dir) })
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	for _, p := range paths {
		fmt.Fprintf(e.stderr, "wrote %s\n", p)
	}
	return nil
}

// writeInDir writes files into the directory -o names, whatever it looks
// like: "-o out" makes out/report.html, never out.html beside it. A name
// that looks like a file gets a note, since the files go inside it.
func writeInDir(e *env, cmd, dir string, write func(dir string) ([]string, error)) ([]string, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("-o %s: a file of that name exists; -o names a directory to write the files into", dir)
	}
	switch filepath.Ext(dir) {
	case ".txt", ".md", ".json", ".xml", ".html":
		fmt.Fprintf(e.stderr, "dageval %s: note: -o names a directory; the files go inside %s/\n", cmd, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return write(strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator))
}
