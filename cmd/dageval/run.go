package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes"
)

func init() {
	register(&command{
		name:    "run",
		summary: "run an eval suite and judge it",
		usage:   "SUITE [--mode M] [--out DIR] [--concurrency N] [--filter EXPR] [--epochs K] [--format table,md]",
		help: `Runs an eval suite: every case with every model and profile, each epoch
times (the cells of the matrix), through the assembled deep agent, with one
cassette per cell. Each cell is judged by the case's rubric (graded by the
suite's grader model) and checks. The run writes into --out:
  results.jsonl    one line per cell, in matrix order
  summary.json     pass rate (Wilson 95% interval), mean score, pass@k,
                   pass^k, cost and tokens per model × profile
  summary.md       the summary as markdown
  cells/<id>.json  each cell's transcript, subagent runs, gradings, files
and prints the summary table.

--mode: replay (the default: answers come from the cassettes, no network,
no API key), record (call the providers and rewrite the cassettes),
record-missing (record only cells whose cassette lacks an answer) or live
(call the providers, keep nothing). CI=true forces replay unless the mode
is live.

--filter selects cells: terms field=glob or field!=glob separated by commas
or spaces, fields case, model, profile, epoch, tag; a bare glob is a case.

Exit status: 0 when the suite's thresholds hold (without thresholds: every
cell passed), 1 when they do not, 2 when the suite is invalid or the run
could not be carried out (a missing cassette in replay mode, an agent that
does not assemble, an interrupted run).`,
		run: runRun,
	})
}

func runRun(ctx context.Context, e *env, args []string) error {
	c := commands["run"]
	fs := newFlags(c, e)
	mode := fs.String("mode", "", "replay, record, record-missing or live (default: the suite's mode)")
	out := fs.String("out", "dageval-out", "output directory")
	conc := fs.Int("concurrency", 0, "cells run at once (default: the suite's concurrency)")
	filter := fs.String("filter", "", "select cells, e.g. \"case=paris-* model=openai:*\"")
	epochs := fs.Int("epochs", 0, "run every case this many times (default: the suite's epochs)")
	format := fs.String("format", "table", "what to print: table, md or none (comma-separated)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("want exactly one suite file, got %d arguments", len(pos))
	}
	formats, err := parseRunFormats(*format)
	if err != nil {
		return usageError("%v", err)
	}
	if *conc < 0 || *epochs < 0 {
		return usageError("--concurrency and --epochs must not be negative")
	}
	opts := evals.Options{
		OutDir: *out, Concurrency: *conc, Filter: *filter, Epochs: *epochs,
		Getenv:   e.getenv,
		Progress: e.stderr,
		Logger:   slog.New(newOnceHandler(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if *mode != "" {
		m, err := fakes.ParseMode(*mode)
		if err != nil {
			return usageError("--mode: %v", err)
		}
		opts.Mode = m
	}
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && e.getenv("CI") == "" {
		opts.ProgressBar = true
	}
	suite, err := evals.Load(pos[0])
	if err != nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	for _, w := range suite.Warnings {
		fmt.Fprintf(e.stderr, "dageval run: warning: %s\n", w)
	}
	oc, err := suite.Run(ctx, opts)
	if oc == nil {
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if strings.HasPrefix(oc.ModeReason, "CI=") {
		fmt.Fprintf(e.stderr, "dageval run: mode %s: %s\n", oc.Mode, oc.ModeReason)
	}
	if rerr := renderRun(e.stdout, *out, oc, formats); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return &exitError{code: exitBad, msg: fmt.Sprintf("interrupted: %d of %d cells finished; the partial results are in %s", oc.Summary.ActualCells, oc.Summary.ExpectedCells, *out)}
		}
		return &exitError{code: exitBad, msg: err.Error()}
	}
	if !oc.Summary.Passed {
		return failures("suite %s does not pass: %s", suite.Name, strings.Join(oc.Summary.Reasons, "; "))
	}
	return nil
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

func parseRunFormats(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "":
		case "table", "md", "none":
			out = append(out, f)
		case "markdown":
			out = append(out, "md")
		default:
			return nil, fmt.Errorf("--format: unknown format %q (want table, md or none)", f)
		}
	}
	return out, nil
}

// renderRun prints the run's report in the formats asked for and writes
// summary.md into the output directory.
//
// This is the interim renderer of the runner. The reports package (issue
// 8) replaces it: swap the body for reports.Load(outDir) (or a reports.Run
// built from oc) followed by reports.Render for each printed format and
// reports.WriteFiles for summary.md, and let --format accept its json,
// junit and html formats.
func renderRun(w io.Writer, outDir string, oc *evals.Outcome, formats []string) error {
	md := summaryMarkdown(oc)
	if outDir != "" {
		if err := evals.WriteFileAtomic(filepath.Join(outDir, evals.SummaryMarkdownFile), []byte(md)); err != nil {
			return err
		}
	}
	for _, f := range formats {
		switch f {
		case "table":
			if err := summaryTable(w, oc); err != nil {
				return err
			}
		case "md":
			if _, err := io.WriteString(w, md); err != nil {
				return err
			}
		}
	}
	return nil
}

func pct(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }

func costText(usd float64, known bool) string {
	s := "$" + strconv.FormatFloat(usd, 'f', 4, 64)
	if !known {
		s += "?"
	}
	return s
}

func groupRow(g evals.GroupSummary, model, prof string) []string {
	tokens := g.Tokens.Total().Total()
	return []string{
		model, prof,
		fmt.Sprintf("%d/%d", g.Passed, g.Expected),
		strconv.Itoa(g.Failed), strconv.Itoa(g.Errors), strconv.Itoa(g.Missing),
		fmt.Sprintf("%s [%s–%s]", pct(g.PassRate), pct(g.CI95[0]), pct(g.CI95[1])),
		strconv.FormatFloat(g.MeanScore, 'f', 2, 64),
		fmt.Sprintf("%s / %s (k=%d)", pct(g.PassAtK), pct(g.PassHatK), g.K),
		costText(g.CostUSD, g.CostKnown),
		strconv.Itoa(tokens),
	}
}

var summaryHeader = []string{"model", "profile", "passed", "failed", "errors", "missing", "pass rate [95% CI]", "score", "pass@k / pass^k", "cost", "tokens"}

func summaryTable(w io.Writer, oc *evals.Outcome) error {
	s := oc.Summary
	fmt.Fprintf(w, "%s: %d of %d cells ran (mode %s)\n", s.Suite, s.ActualCells, s.ExpectedCells, s.Mode)
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithFooterAutoFormat(tw.Off),
		tablewriter.WithFooterAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft}),
	)
	t.Header(summaryHeader)
	for _, g := range s.Groups {
		if err := t.Append(groupRow(g, g.Model, g.Profile)); err != nil {
			return err
		}
	}
	t.Footer(groupRow(s.Totals, "all", ""))
	if err := t.Render(); err != nil {
		return err
	}
	for _, r := range oc.Results {
		if r.Status == evals.StatusPass {
			continue
		}
		fmt.Fprintf(w, "%s %s %s %s e%d (score %.2f)\n", strings.ToUpper(string(r.Status)), r.Case, r.Model, r.Profile, r.Epoch, r.Score)
		for _, line := range failureLines(r) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	for _, k := range s.Missing {
		fmt.Fprintf(w, "MISSING %s %s %s e%d\n", k.Case, k.Model, k.Profile, k.Epoch)
	}
	fmt.Fprintln(w, verdictLine(s))
	return nil
}

func failureLines(r evals.CellResult) []string {
	var out []string
	if r.Error != "" {
		msg := r.Error
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i] + " …"
		}
		out = append(out, "error: "+msg)
	}
	if rb := r.Rubric; rb != nil && rb.Result != "satisfied" {
		for _, c := range rb.Criteria {
			if !c.Passed {
				out = append(out, fmt.Sprintf("rubric %s: %s: %s", rb.Result, c.Name, c.Gap))
			}
		}
	}
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, fmt.Sprintf("check %s: %s", c.Name, c.Detail))
		}
	}
	return out
}

func verdictLine(s evals.Summary) string {
	if s.Passed {
		if s.Thresholds != nil {
			return "PASS: the thresholds hold"
		}
		return "PASS: every cell passed"
	}
	return "FAIL: " + strings.Join(s.Reasons, "; ")
}

func summaryMarkdown(oc *evals.Outcome) string {
	s := oc.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n%d of %d cells ran (mode %s).\n\n", s.Suite, s.ActualCells, s.ExpectedCells, s.Mode)
	b.WriteString("| " + strings.Join(summaryHeader, " | ") + " |\n")
	b.WriteString(strings.Repeat("|---", len(summaryHeader)) + "|\n")
	rows := [][]string{}
	for _, g := range s.Groups {
		rows = append(rows, groupRow(g, g.Model, g.Profile))
	}
	tot := groupRow(s.Totals, "**all**", "")
	rows = append(rows, tot)
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	var failing []string
	for _, r := range oc.Results {
		if r.Status == evals.StatusPass {
			continue
		}
		item := fmt.Sprintf("- **%s** `%s` %s %s e%d (score %.2f)", r.Status, r.Case, r.Model, r.Profile, r.Epoch, r.Score)
		for _, line := range failureLines(r) {
			item += "\n  - " + line
		}
		failing = append(failing, item)
	}
	for _, k := range s.Missing {
		failing = append(failing, fmt.Sprintf("- **missing** `%s` %s %s e%d", k.Case, k.Model, k.Profile, k.Epoch))
	}
	if len(failing) > 0 {
		b.WriteString("\n### Cells that did not pass\n\n" + strings.Join(failing, "\n") + "\n")
	}
	b.WriteString("\n" + verdictLine(s) + "\n")
	return b.String()
}
