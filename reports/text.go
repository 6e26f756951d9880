package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// newTable returns an ASCII table that keeps its headers as written and never
// wraps cells, so output is stable for snapshots and plain terminals.
func newTable(w io.Writer, align ...tw.Align) *tablewriter.Table {
	return tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithFooterAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithFooterAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithFooterAlignmentConfig(tw.CellAlignment{PerColumn: align}),
	)
}

// WriteText writes the terminal report: the verdict, the model × profile
// summary, tokens per role, the failing cells with their rubric gaps and
// failed checks, and the missing cells.
func (rep *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "dageval report: suite %s (%s mode)\n", rep.Suite, rep.Mode)
	fmt.Fprintln(ew, rep.headline())
	for _, r := range rep.moreReasons() {
		fmt.Fprintf(ew, "  - %s\n", r)
	}
	fmt.Fprintln(ew)
	if ew.err != nil {
		return ew.err
	}
	k := rep.Totals.K
	L, R := tw.AlignLeft, tw.AlignRight
	t := newTable(ew, L, L, R, R, R, R, R, R, R, R, R, R, R, R)
	t.Header("model", "profile", "cells", "pass", "fail", "error", "missing", "pass rate", "CI95", "score", "pass@"+strconv.Itoa(k), "pass^"+strconv.Itoa(k), "cost", "latency")
	row := func(g Group) []string {
		m, p := groupLabel(g)
		return []string{m, p, strconv.Itoa(g.Expected), strconv.Itoa(g.Passed), strconv.Itoa(g.Failed), strconv.Itoa(g.Errors), strconv.Itoa(g.Missing),
			pct(g.PassRate), ci(g.CI95[0], g.CI95[1]), score(g.MeanScore), pct(g.PassAtK), pct(g.PassHatK), usd(g.CostUSD, g.CostKnown), groupLatency(g.Latency)}
	}
	for _, g := range rep.Groups {
		if err := t.Append(row(g)); err != nil {
			return err
		}
	}
	t.Footer(row(rep.Totals))
	if err := t.Render(); err != nil {
		return err
	}
	if rep.costUnknown() {
		fmt.Fprintln(ew, costFootnote)
	}

	fmt.Fprintf(ew, "\nTokens per role\n")
	t = newTable(ew, L, L, L, R, R, R, R, R)
	t.Header("model", "profile", "role", "input", "output", "cache read", "cache write", "total")
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		m, p := groupLabel(g)
		for _, rc := range roleCounts(g.Tokens) {
			c := rc.Tokens
			if err := t.Append([]string{m, p, rc.Role, count(c.Input, c.UnknownCalls), count(c.Output, c.UnknownCalls), count(c.CacheRead, c.UnknownCalls), count(c.CacheWrite, c.UnknownCalls), count(c.total(), c.UnknownCalls)}); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if rep.usageUnknown() {
		fmt.Fprintln(ew, usageFootnote)
	}
	if err := rep.writeLatencyText(ew); err != nil {
		return err
	}

	if !rep.CellsIncluded {
		fmt.Fprintf(ew, "\nCell results were not available (summary file only).\n")
		return ew.err
	}
	if len(rep.Failing) > 0 {
		fmt.Fprintf(ew, "\nFailing cells (%d)\n", len(rep.Failing))
		for _, f := range rep.Failing {
			writeFailingText(ew, f)
		}
	}
	if len(rep.Informational) > 0 {
		fmt.Fprintf(ew, "\nInformational checks that did not hold (%d; gating: false, so no cell failed for them)\n", len(rep.Informational))
		for _, ic := range rep.Informational {
			fmt.Fprintf(ew, "  ~ %s  %s: %s\n", cellName(ic.CellKey), ic.Name, oneLine(ic.Detail))
		}
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(ew, "\nMissing cells (%d): no result was written; each counts as a failure\n", len(rep.Missing))
		for _, m := range rep.Missing {
			fmt.Fprintf(ew, "  %s\n", cellName(m))
		}
	}
	return ew.err
}

// writeLatencyText writes the latency per group and per cell, or one line
// saying that no call has a recorded duration.
func (rep *Report) writeLatencyText(ew *errWriter) error {
	if !rep.hasLatency() {
		fmt.Fprintf(ew, "\n%s\n", noLatencyNote)
		return ew.err
	}
	L, R := tw.AlignLeft, tw.AlignRight
	fmt.Fprintf(ew, "\nLatency (%s)\n", rep.latencySource())
	t := newTable(ew, L, L, R, R, R, R, R)
	t.Header("model", "profile", "cells timed", "mean", "p50", "p95", "first event")
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		m, p := groupLabel(g)
		row := []string{m, p, "0", "unknown", "unknown", "unknown", "–"}
		if l := g.Latency; l != nil {
			row = []string{m, p, strconv.Itoa(l.Cells), millis(l.MeanMS), millis(l.P50MS), millis(l.P95MS), firstEvent(l.FirstEventMS)}
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if !rep.CellsIncluded {
		return ew.err
	}
	fmt.Fprintf(ew, "\nLatency per cell\n")
	t = newTable(ew, L, L, L, R, R, R, R)
	t.Header("case", "model", "profile", "epoch", "model time", "first event", "calls timed")
	for _, c := range rep.Cells {
		timed, first := "none", "–"
		if l := c.Latency; l != nil {
			timed, first = fmt.Sprintf("%d of %d", l.Timed, l.Calls), firstEvent(l.FirstEventMS)
		}
		if err := t.Append([]string{c.Case, c.Model, c.Profile, strconv.Itoa(c.Epoch), cellLatency(c.Latency), first, timed}); err != nil {
			return err
		}
	}
	return t.Render()
}

func writeFailingText(w io.Writer, f FailingCell) {
	fmt.Fprintf(w, "\n  %s  %s  score %s\n", strings.ToUpper(f.Status), cellName(f.CellKey), score(f.Score))
	if f.Error != "" {
		fmt.Fprintf(w, "    error:\n%s", indentBlock(clipLines(f.Error, errorLines), "      "))
	}
	if len(f.Gaps) > 0 {
		fmt.Fprintf(w, "    rubric %s:\n", f.RubricResult)
		for _, g := range f.Gaps {
			fmt.Fprintf(w, "      ✗ %s: %s\n", g.Criterion, oneLine(g.Gap))
		}
	}
	if len(f.FailedChecks) > 0 {
		fmt.Fprintf(w, "    checks:\n")
		for _, c := range f.FailedChecks {
			fmt.Fprintf(w, "      ✗ %s: %s\n", c.Name, oneLine(c.Detail))
		}
	}
}

// errorLines caps the lines of an error shown in text and markdown; a
// replay miss carries a request diff that can run long, and the HTML and
// JSON reports keep all of it.
const errorLines = 30

// clipLines keeps the first n lines of s and says how many were cut.
func clipLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… %d more lines in the JSON and HTML reports", len(lines)-n)
}

func indentBlock(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

// firstLine is the first line of s, for one-line summaries of long errors.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// oneLine folds whitespace so a multi-line detail stays on its bullet.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (c TokenCount) total() int { return c.Input + c.Output + c.CacheRead + c.CacheWrite }

func roleCounts(t Tokens) []RoleTotals {
	return []RoleTotals{{"agent", t.Agent}, {"subagents", t.Subagents}, {"grader", t.Grader}, {"total", t.Total}}
}

// errWriter remembers the first write error so a renderer can check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
