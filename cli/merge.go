package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/reports"
)

func init() {
	register(&command{
		name:    "merge",
		summary: "join the output directories of a run's shards into one run",
		usage:   "OUT SHARD_DIR... [--suite FILE] [--format table,md,json,junit,html|none]",
		help: `Joins the output directories of the shards of one run (dageval run
--shard I/N, one per machine: the jobs of a CI matrix, the pods of a
Kubernetes Indexed Job) into OUT, which then holds what one machine running
the whole matrix would have written: results.jsonl in matrix order, cells/,
summary.json, summary.md and the reports --format asks for. dageval
compare and dageval report take OUT like any run.

The suite is the one the shards' run.json names (give --suite when it is
elsewhere here). Merge refuses shards of another suite, or of the same
suite run with another filter, epochs or mode, and shards that overlap,
naming the files and lines. Cells no shard has (a shard not given, or one
that did not finish: its finished cells are merged, with a warning) are
missing, as in an interrupted run, and the run cannot be judged.

Exit status: as dageval run's for the merged run — 0 it passes, 1 its
thresholds do not hold, 2 a cell errored or is missing, or the shards
cannot be merged.`,
		run: runMerge,
	})
}

func runMerge(_ context.Context, e *env, args []string) error {
	c := commands["merge"]
	fs := newFlags(c, e)
	suitePath := fs.String("suite", "", "the suite file (default: the one the shards' run.json names)")
	format := fs.String("format", "table", "reports: table and md are printed, json, junit and html are written to OUT as report.*; none prints nothing (comma-separated)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageError("want OUT and at least one shard directory, got %d arguments", len(pos))
	}
	formats, err := parseRunFormats(*format)
	if err != nil {
		return usageError("%v", err)
	}
	out, shards := pos[0], pos[1:]
	path := *suitePath
	if path == "" {
		m, err := evals.ReadManifest(shards[0])
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		path = m.Suite
	}
	suite, err := e.reg.Load(path)
	if err != nil {
		if *suitePath == "" && errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w (named by %s; give the suite with --suite)", err, filepath.Join(shards[0], evals.ManifestFile))
		}
		return &exitError{code: exitBad, msg: err.Error()}
	}
	rr, err := suite.Merge(out, shards, evals.MergeOptions{ResultsOnDisk: true, Warn: func(w string) {
		fmt.Fprintf(e.stderr, "dageval merge: warning: %s\n", w)
	}})
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if n := len(rr.Summary.Missing); n > 0 {
		var names []string
		for _, k := range rr.Summary.Missing[:min(n, 5)] {
			names = append(names, fmt.Sprintf("%s/%s/%s/e%d", k.Case, k.Model, k.Profile, k.Epoch))
		}
		if n > 5 {
			names = append(names, fmt.Sprintf("… and %d more", n-5))
		}
		fmt.Fprintf(e.stderr, "dageval merge: %d of %d cells are in no shard given: %s\n", n, rr.Summary.ExpectedCells, strings.Join(names, ", "))
	}
	run, err := reports.LoadWith(out, reports.LoadOptions{SkipDetails: !slices.Contains(formats, reports.FormatHTML)})
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	printRateLimits(e.stderr, "merge", rr.Summary)
	if err := renderRun(e.stdout, out, run, formats, terminal(e, e.stdout)); err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	return runVerdict(suite.Name, rr.Summary)
}
