package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/reports"
)

func init() {
	register(&command{
		name:    "run",
		summary: "run an eval suite and judge it",
		usage:   "SUITE [--mode M] [--out DIR] [--concurrency N] [--filter EXPR] [--epochs K] [--shard I/N] [--format table,md,json,junit,html|none] [--tolerate-errors] [--quiet]\n       [SUITE] --resume DIR | --retry-errors DIR",
		help: `Runs an eval suite: every case with every model and profile, each epoch
times (the cells of the matrix), through the assembled deep agent, with one
cassette per cell. Each cell is judged by the case's rubric (graded by the
suite's grader model) and checks. The run writes into --out:
  results.jsonl    one line per cell, in matrix order
  summary.json     pass rate (Wilson 95% interval), mean score, pass@k,
                   pass^k, cost and tokens per model × profile
  summary.md       the summary as markdown
  cells/<id>.json  each cell's transcript, subagent runs, gradings, files
and prints the summary table. On a terminal the table fits its width (a
compact layout under 120 columns) and is coloured unless NO_COLOR is set,
and a status line shows the elapsed time, the pass, fail and error counts
and the cells in flight; elsewhere each finished cell is one line. --quiet
prints neither: only warnings and, when the run does not pass, why; the
files are written all the same. dageval show DIR CELL prints one cell.

--mode: replay (the default: answers come from the cassettes, no network,
no API key), record (call the providers and rewrite the cassettes),
record-missing (record only cells whose cassette lacks an answer, or holds
only failures) or live (call the providers, keep nothing). Precedence:
--mode, then DAGEVAL_RECORD (1 = record, missing = record-missing), then the
suite's mode:, then replay. CI=true forces replay unless the mode is live.
A recording replaces a cell's cassette only when the cell ran without
provider errors; otherwise the previous cassette is kept, byte for byte,
and the cell's error says so.

--filter selects cells: terms field=glob or field!=glob separated by commas
or spaces, fields case, model, profile, epoch, tag; a bare glob is a case.

Big runs: each cell's result is appended to results.partial.jsonl as it
finishes, with the size and SHA-256 of its cell file, and run.json records
how the run was started. --resume DIR continues a run that was interrupted
(SIGINT, SIGTERM), killed or lost its machine: the cells it has results for
make no provider call, the cells that were in flight run again, and the
finished files are those of a run nobody stopped. Nothing waits for the
disk until the run ends (a run that calls providers flushes its files in
the background as it goes, and the rest when it ends, before results.jsonl
and summary.json), so a machine that crashes can lose cells: a cell whose
file is missing, truncated or does not match its line, or whose line is
torn, runs again. It takes the suite,
filter, epochs, shard and mode from DIR/run.json (give SUITE when the suite
is elsewhere now). --retry-errors DIR does the same and runs the errored
cells again too. --shard I/N runs the I-th of N deterministic parts of the
matrix, balanced by expected cost (models' prices, graders), into --out;
dageval merge OUT SHARD_DIR... joins the shards into the run one machine
would have written. The suite's rate_limits are shared out among the shards.

Every cell passes, fails (the agent's behaviour fell short) or errors (its
evidence is missing or broken: a replay miss, an unreadable cassette, a
provider error or stall, a grader error; results.jsonl names the cause).

Exit status:
  0  every cell was judged and the suite's thresholds hold (without
     thresholds: every cell passed);
  1  every cell was judged and the thresholds do not hold;
  2  a cell errored or is missing, so the run cannot be judged (unless the
     suite says errors: tolerate or --tolerate-errors is given, and then
     errored cells count as failures), or the suite is invalid, or the run
     could not be carried out (a missing cassette in replay mode, an agent
     that does not assemble, an interrupted run).`,
		run: runRun,
	})
}

func runRun(ctx context.Context, e *env, args []string) error {
	c := commands["run"]
	fs := newFlags(c, e)
	mode := fs.String("mode", "", "replay, record, record-missing or live (default: DAGEVAL_RECORD, else the suite's mode)")
	out := fs.String("out", "dageval-out", "output directory")
	conc := fs.Int("concurrency", 0, "cells run at once (default: the suite's concurrency)")
	filter := fs.String("filter", "", "select cells, e.g. \"case=paris-* model=openai:*\"")
	epochs := fs.Int("epochs", 0, "run every case this many times (default: the suite's epochs)")
	format := fs.String("format", "table", "reports: table and md are printed, json, junit and html are written to --out as report.*; none prints nothing (comma-separated)")
	tolerate := fs.Bool("tolerate-errors", false, "let errored cells count as failures instead of making the run errored (exit 2)")
	quiet := fs.Bool("quiet", false, "print no progress and no report: only warnings and why the run did not pass (the files are written)")
	shardFlag := fs.String("shard", "", "run the I-th of N parts of the matrix, as I/N (e.g. 2/4); join the parts with dageval merge")
	resume := fs.String("resume", "", "continue the run in `DIR`: its finished cells are kept, the others run")
	retry := fs.String("retry-errors", "", "continue the run in `DIR` as --resume does, running its errored cells again too")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	formats, err := parseRunFormats(*format)
	if err != nil {
		return usageError("%v", err)
	}
	if *conc < 0 || *epochs < 0 {
		return usageError("--concurrency and --epochs must not be negative")
	}
	var shard evals.Shard
	if *shardFlag != "" {
		if shard, err = evals.ParseShard(*shardFlag); err != nil {
			return usageError("--shard: %v", err)
		}
	}
	resumeDir := *resume
	switch {
	case *resume != "" && *retry != "":
		return usageError("give --resume DIR or --retry-errors DIR, not both")
	case *retry != "":
		resumeDir = *retry
	}
	suitePath := ""
	if resumeDir != "" {
		// A resumed run is the run in DIR, as it was started.
		if set["out"] && filepath.Clean(*out) != filepath.Clean(resumeDir) {
			return usageError("--resume and --retry-errors write into DIR; leave out --out")
		}
		if len(pos) > 1 {
			return usageError("want at most one suite file with --resume or --retry-errors, got %d arguments", len(pos))
		}
		m, err := evals.ReadManifest(resumeDir)
		if err != nil {
			return &exitError{code: exitBad, msg: err.Error()}
		}
		suitePath = m.Suite
		if len(pos) == 1 {
			suitePath = pos[0]
		}
		if !set["filter"] {
			*filter = m.Filter
		}
		if !set["epochs"] {
			*epochs = m.Epochs
		}
		if !set["shard"] && m.Shard != nil {
			shard = *m.Shard
		}
		if !set["mode"] {
			*mode = m.Mode
		}
		*tolerate = *tolerate || m.TolerateErrors
		*out = resumeDir
	} else {
		if len(pos) != 1 {
			return usageError("want exactly one suite file, got %d arguments", len(pos))
		}
		suitePath = pos[0]
	}
	opts := evals.Options{
		OutDir: *out, Concurrency: *conc, Filter: *filter, Epochs: *epochs, Shard: shard,
		Resume: *resume != "", RetryErrors: *retry != "",
		// The cells' details stay in --out, so that memory does not grow
		// with their transcripts; the results are kept as the summary is
		// tallied from results.jsonl's lines (a resumed run's earlier
		// cells too), so the reports need not decode every line again.
		ResultsOnDisk:  true,
		KeepResults:    true,
		Getenv:         e.getenv,
		Progress:       e.stderr,
		TolerateErrors: *tolerate,
		Logger:         slog.New(newOnceHandler(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if *mode != "" {
		m, err := recorder.ParseMode(*mode)
		if err != nil {
			return usageError("--mode: %v", err)
		}
		opts.Mode = m
	}
	switch {
	case *quiet:
		opts.Progress = nil
	case isTerminal(e.stderr) && e.getenv("CI") == "":
		opts.ProgressBar = true
		opts.ProgressWidth = terminal(e, e.stderr).Width
	}
	suite, err := e.reg.Load(suitePath)
	if err != nil {
		if resumeDir != "" && errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w (named by %s; give the suite file: dageval run SUITE --resume %s)", err, filepath.Join(resumeDir, evals.ManifestFile), resumeDir)
		}
		return &exitError{code: exitBad, msg: err.Error()}
	}
	for _, w := range suite.Warnings {
		fmt.Fprintf(e.stderr, "dageval run: warning: %s\n", w)
	}
	if resumeDir == "" {
		if _, err := os.Stat(filepath.Join(*out, evals.PartialResultsFile)); err == nil {
			fmt.Fprintf(e.stderr, "dageval run: note: %s holds an unfinished run; starting over (dageval run --resume %s continues it instead)\n", *out, *out)
		}
	}
	rr, err := suite.Run(ctx, opts)
	if rr == nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if strings.HasPrefix(rr.ModeReason, "CI=") || strings.HasPrefix(rr.ModeReason, "DAGEVAL_RECORD=") {
		fmt.Fprintf(e.stderr, "dageval run: mode %s: %s\n", rr.Mode, rr.ModeReason)
	}
	run := reports.NewRun(rr.Summary, nil, nil)
	lo := reports.LoadOptions{SkipDetails: !slices.Contains(formats, reports.FormatHTML)}
	var loaded *reports.Run
	var lerr error
	if err == nil {
		// rr.Results are results.jsonl's lines, decoded as it was written.
		loaded, lerr = reports.LoadWithResults(*out, rr.Results, lo)
	} else {
		// Whatever a run that failed to finish left in --out.
		loaded, lerr = reports.LoadWith(*out, lo)
	}
	if lerr == nil {
		run = loaded
	} else if err == nil {
		err = lerr
	}
	for _, r := range run.Results {
		for _, w := range r.Warnings {
			fmt.Fprintf(e.stderr, "dageval run: warning: %s: %s\n", r.ID, w)
		}
	}
	printRateLimits(e.stderr, "run", rr.Summary)
	show := io.Writer(e.stdout)
	if *quiet {
		show = io.Discard
	}
	if rerr := renderRun(show, *out, run, formats, terminal(e, e.stdout)); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return &exitError{code: exitBad, msg: fmt.Sprintf("interrupted: %d of %d cells finished; the results so far are in %s (dageval run --resume %s continues the run)", rr.Summary.ActualCells, rr.Summary.ExpectedCells, *out, *out)}
		}
		return &exitError{code: exitBad, msg: err.Error()}
	}
	return runVerdict(suite.Name, rr.Summary)
}

// runVerdict is the exit of a run (or merge) with this summary.
func runVerdict(suite string, sum evals.Summary) error {
	switch sum.RunOutcome() {
	case evals.OutcomePassed:
		return nil
	case evals.OutcomeErrored:
		return &exitError{code: exitBad, msg: fmt.Sprintf("suite %s cannot be judged: %s", suite, strings.Join(sum.Reasons, "; "))}
	}
	return failures("suite %s does not pass: %s", suite, strings.Join(sum.Reasons, "; "))
}

// printRateLimits says what the run's rate limiters did, when they did
// anything: the waits are the run's, the summary counts them.
func printRateLimits(w io.Writer, cmd string, sum evals.Summary) {
	for _, rl := range sum.RateLimits {
		fmt.Fprintf(w, "dageval %s: rate limits: %s throttled %d calls; %d calls waited %.1fs in all\n", cmd, rl.Provider, rl.Throttled, rl.Waits, float64(rl.WaitMS)/1000)
	}
}

// onceHandler logs each distinct message once: every cell assembles its
// own agent, and a warning about the suite (a grader grading its own
// model) would otherwise repeat for every cell.
type onceHandler struct {
	slog.Handler
	seen *onceSet
}

type onceSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

func newOnceHandler(h slog.Handler) *onceHandler {
	return &onceHandler{Handler: h, seen: &onceSet{seen: map[string]bool{}}}
}

func (h *onceHandler) Handle(ctx context.Context, r slog.Record) error {
	h.seen.mu.Lock()
	dup := h.seen.seen[r.Message]
	h.seen.seen[r.Message] = true
	h.seen.mu.Unlock()
	if dup {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *onceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &onceHandler{Handler: h.Handler.WithAttrs(as), seen: h.seen}
}

func (h *onceHandler) WithGroup(name string) slog.Handler {
	return &onceHandler{Handler: h.Handler.WithGroup(name), seen: h.seen}
}

// parseRunFormats reads --format: report formats, or "none".
func parseRunFormats(s string) ([]reports.Format, error) {
	if strings.TrimSpace(strings.ToLower(s)) == "none" {
		return nil, nil
	}
	return reports.ParseFormats(s)
}

// renderRun prints the table and markdown reports asked for, writes the
// other formats (json, junit, html) into the output directory as report.*,
// and always writes summary.md there. It renders the run as its output
// directory holds it (results.jsonl's lines, as written, and summary.json),
// so that a resumed or merged run reports exactly as one that ran in one go.
func renderRun(w io.Writer, outDir string, run *reports.Run, formats []reports.Format, o reports.TextOptions) error {
	if outDir != "" {
		if _, err := reports.WriteFiles(run, []reports.Format{reports.FormatMD}, filepath.Join(outDir, evals.SummaryMarkdownFile)); err != nil {
			return err
		}
	}
	var files []reports.Format
	for _, f := range formats {
		switch f {
		case reports.FormatTable, reports.FormatMD:
			if err := reports.RenderWith(w, run, f, o); err != nil {
				return err
			}
		default:
			files = append(files, f)
		}
	}
	if len(files) > 0 {
		if outDir == "" {
			return fmt.Errorf("--format %s writes files; give --out", files[0])
		}
		paths, err := reports.WriteFiles(run, files, outDir+string(filepath.Separator))
		if err != nil {
			return err
		}
		for _, p := range paths {
			fmt.Fprintf(w, "wrote %s\n", p)
		}
	}
	return nil
}
