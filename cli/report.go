package cli

import (
	"context"
	"fmt"

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

Without -o a single format goes to standard output. With -o PATH:
  - PATH is an existing directory or ends in "/": each format is written
    inside it as report.txt, report.md, report.json, report.junit.xml,
    report.html;
  - otherwise PATH is a prefix: PATH.txt, PATH.md, ... — except that a single
    format whose extension PATH already has is written to PATH itself
    ("-o out/run.html --format html").
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
	out := fs.String("o", "", "output directory or path prefix (see above); standard output when empty")
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
		return usageError("%d formats need -o (a directory or a path prefix)", len(formats))
	}
	run, err := reports.Load(pos[0])
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if *out == "" {
		return reports.Render(e.stdout, run, formats[0])
	}
	paths, err := reports.WriteFiles(run, formats, *out)
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	for _, p := range paths {
		fmt.Fprintf(e.stderr, "wrote %s\n", p)
	}
	return nil
}
