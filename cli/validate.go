package cli

import (
	"context"
	"fmt"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/recorder"
)

func init() {
	register(&command{
		name:    "validate",
		summary: "check an eval suite without running it",
		usage:   "SUITE [--mode M] [--filter EXPR] [--epochs K]",
		help: `Checks an eval suite and everything it refers to without calling a model:
the suite file itself, its agent file, profile files, rubric files and
checks; that every tool the agent declares has a behaviour (mock, exec or
a Go tool) in every case; that the agent assembles with every model and
profile; and, in replay mode, that every cell has its cassette.

Every problem is reported at once, sorted by file and line, each with its
file, line, column and key. Exit status:
0 when the suite is valid, 2 when it is not.`,
		run: runValidate,
	})
}

func runValidate(ctx context.Context, e *env, args []string) error {
	c := commands["validate"]
	fs := newFlags(c, e)
	mode := fs.String("mode", "", "check cassettes as for this mode (default: the suite's mode)")
	filter := fs.String("filter", "", "check only the cells the filter selects")
	epochs := fs.Int("epochs", 0, "override every case's epochs")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("want exactly one suite file, got %d arguments", len(pos))
	}
	opts := evals.Options{Filter: *filter, Epochs: *epochs, Getenv: e.getenv}
	if *mode != "" {
		m, err := recorder.ParseMode(*mode)
		if err != nil {
			return usageError("--mode: %v", err)
		}
		opts.Mode = m
	}
	suite, err := e.reg.ValidateFile(ctx, pos[0], opts)
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	cells, err := suite.Cells(*filter, *epochs)
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	for _, w := range suite.Warnings {
		fmt.Fprintf(e.stderr, "dageval validate: warning: %s\n", w)
	}
	fmt.Fprintf(e.stdout, "%s: valid: %d cases × %d models × %d profiles, %d cells\n",
		pos[0], len(suite.Cases), len(suite.Models), len(suite.Profiles), len(cells))
	return nil
}
