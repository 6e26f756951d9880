package cli

import (
	"context"
	"fmt"

	"github.com/dageval/dageval/reports"
)

func init() {
	register(&command{
		name:    "show",
		summary: "print one cell of a run: verdict, checks, rubric, transcript",
		usage:   "RUN [CELL]",
		help: `Prints one cell of a finished run (the output directory of dageval run)
for a terminal: its verdict and score, the rubric's criteria with their
gaps, the checks (informational ones apart), the error with what to do about
its cause, tokens and model time, then the transcript with every subagent
run under the call that started it, and the files the agent wrote.

CELL is a cell's id as the reports print it
(budget-report--openai-gpt-5--terse--e1), or any part of an id that only
one cell has. Without CELL, lists the cells that did not pass, with their
ids. Exit status 0 when printed, 2 when the run or the cell cannot be found.`,
		run: runShow,
	})
}

func runShow(_ context.Context, e *env, args []string) error {
	c := commands["show"]
	fs := newFlags(c, e)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError("want RUN and a CELL, got %d arguments", len(pos))
	}
	run, err := reports.Load(pos[0])
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if !run.HasResults {
		return &exitError{code: exitBad, msg: pos[0] + " holds a summary only; show reads a run's output directory"}
	}
	o := terminal(e, e.stdout)
	if len(pos) == 1 {
		return listCells(e, run, pos[0])
	}
	cell, err := run.FindCell(pos[1])
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	return reports.WriteCell(e.stdout, run, cell, o)
}

// listCells lists the cells that did not pass, for picking one to show.
func listCells(e *env, run *reports.Run, dir string) error {
	n := 0
	for _, r := range reports.Build(run).Failing {
		if n == 0 {
			fmt.Fprintf(e.stdout, "Cells that did not pass (dageval show %s CELL):\n", dir)
		}
		n++
		fmt.Fprintf(e.stdout, "  %-5s %s\n", r.Status, r.ID)
	}
	if n == 0 {
		fmt.Fprintf(e.stdout, "Every cell passed; dageval show %s CELL prints any of the %d.\n", dir, len(run.Results))
	}
	return nil
}
