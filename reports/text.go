package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TextOptions tune the terminal report.
type TextOptions struct {
	// Width is the terminal's width in columns. Tables leave out their
	// least important columns to fit it, and under CompactWidth the
	// compact layout is used: plain tables, tokens per group rather than
	// per role, no per-cell latency table. 0 means no limit: the wide
	// layout with every column, as files and CI logs get it.
	Width int
	// Color adds ANSI colours; the caller decides (a terminal, NO_COLOR unset).
	Color bool
}

// CompactWidth is the terminal width below which the compact layout is used.
const CompactWidth = 120

func (o TextOptions) compact() bool { return o.Width > 0 && o.Width < CompactWidth }

// palette colours terminal text when on.
type palette bool

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

func (p palette) paint(code, s string) string {
	if !p || s == "" {
		return s
	}
	return code + s + ansiReset
}

// status colours a cell status or verdict word: pass green, fail red,
// error yellow.
func (p palette) status(st, s string) string {
	switch strings.ToLower(st) {
	case "pass", "passed", "improvement", "unchanged":
		return p.paint(ansiGreen, s)
	case "fail", "failed", "regression", "underpowered", "new_failures":
		return p.paint(ansiRed, s)
	case "error", "errored", "missing", "incomplete":
		return p.paint(ansiYellow, s)
	}
	return s
}

// headlineColor colours a headline by the verdict word it starts with.
func (p palette) headline(s string) string {
	word, _, _ := strings.Cut(s, ":")
	return p.paint(ansiBold, p.status(word, s))
}

// nonZero paints a count when it is not zero.
func (p palette) nonZero(code, padded string) string {
	if t := strings.TrimSpace(padded); t == "0" || t == "" {
		return padded
	}
	return p.paint(code, padded)
}

// droppedNote says which columns a narrow terminal left out.
func droppedNote(w io.Writer, o TextOptions, dropped []string) {
	if len(dropped) > 0 {
		fmt.Fprint(w, wrap(fmt.Sprintf("(not shown at %d columns: %s)", o.Width, strings.Join(dropped, ", ")), o.Width, "", " "))
	}
}

// WriteText writes the terminal report in the wide layout without colour,
// as files and CI logs get it (see WriteTextWith).
func (rep *Report) WriteText(w io.Writer) error { return rep.WriteTextWith(w, TextOptions{}) }

// WriteTextWith writes the terminal report: the verdict, the model ×
// profile summary, tokens, latency, the failing cells with their rubric
// gaps and failed checks (epochs that failed alike, and cells errored for
// one cause, shown once), and the missing cells.
func (rep *Report) WriteTextWith(w io.Writer, o TextOptions) error {
	ew := &errWriter{w: w}
	pal := palette(o.Color)
	fmt.Fprintf(ew, "dageval report: suite %s (%s mode)\n", rep.Suite, rep.Mode)
	fmt.Fprintln(ew, pal.headline(strings.TrimSuffix(wrap(rep.headline(), o.Width, "", "  "), "\n")))
	for _, r := range rep.moreReasons() {
		fmt.Fprint(ew, wrap(r, o.Width, "  - ", "    "))
	}
	fmt.Fprintln(ew)
	if ew.err != nil {
		return ew.err
	}
	k := strconv.Itoa(rep.Totals.K)
	t := &textTable{plain: o.compact(), cols: []textColumn{
		{header: "model", cut: true}, {header: "profile", cut: true}, {header: "cells", right: true, prio: 6},
		{header: "pass", right: true}, {header: "fail", right: true, prio: 1}, {header: "error", right: true, prio: 1}, {header: "missing", right: true, prio: 2},
		{header: "pass rate", right: true}, {header: "CI95", right: true, prio: 3}, {header: "score", right: true, prio: 3},
		{header: "pass@" + k, right: true, prio: 5}, {header: "pass^" + k, right: true, prio: 5}, {header: "cost", right: true, prio: 2}, {header: "latency", right: true, prio: 4},
	}}
	if o.compact() {
		t.cols[5].header, t.cols[6].header, t.cols[7].header = "err", "miss", "rate"
	}
	row := func(g Group) []string {
		m, p := groupLabel(g)
		return []string{m, p, strconv.Itoa(g.Expected), strconv.Itoa(g.Passed), strconv.Itoa(g.Failed), strconv.Itoa(g.Errors), strconv.Itoa(g.Missing),
			pct(g.PassRate), ci(g.CI95[0], g.CI95[1]), score(g.MeanScore), pct(g.PassAtK), pct(g.PassHatK), usd(g.CostUSD, g.CostKnown), groupLatency(g.Latency)}
	}
	for _, g := range rep.Groups {
		t.rows = append(t.rows, row(g))
	}
	t.footer = row(rep.Totals)
	if pal {
		t.paint = func(r, c int, s string) string {
			switch {
			case r < 0:
				return pal.paint(ansiBold, s)
			case c == 4:
				return pal.nonZero(ansiRed, s)
			case c == 5 || c == 6:
				return pal.nonZero(ansiYellow, s)
			}
			return s
		}
	}
	dropped, err := t.render(ew, o.Width)
	if err != nil {
		return err
	}
	droppedNote(ew, o, dropped)
	if rep.costUnknown() {
		fmt.Fprint(ew, wrap(costFootnote, o.Width, "", "  "))
	}

	if o.compact() {
		fmt.Fprintf(ew, "\nTokens\n")
		t = &textTable{plain: true, cols: []textColumn{{header: "model", cut: true}, {header: "profile", cut: true},
			{header: "input", right: true}, {header: "output", right: true}, {header: "cache read", right: true, prio: 2}, {header: "cache write", right: true, prio: 1}, {header: "total", right: true}}}
		for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
			m, p := groupLabel(g)
			c := g.Tokens.Total
			t.rows = append(t.rows, []string{m, p, count(c.Input, c.UnknownCalls), count(c.Output, c.UnknownCalls), count(c.CacheRead, c.UnknownCalls), count(c.CacheWrite, c.UnknownCalls), count(c.total(), c.UnknownCalls)})
		}
		dropped, err := t.render(ew, o.Width)
		if err != nil {
			return err
		}
		droppedNote(ew, o, dropped)
		fmt.Fprintln(ew, "per role (agent, subagents, grader): --format md, json or html")
	} else {
		fmt.Fprintf(ew, "\nTokens per role\n")
		t = &textTable{cols: []textColumn{{header: "model", cut: true}, {header: "profile", cut: true}, {header: "role"},
			{header: "input", right: true}, {header: "output", right: true}, {header: "cache read", right: true, prio: 2}, {header: "cache write", right: true, prio: 1}, {header: "total", right: true}}}
		for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
			m, p := groupLabel(g)
			for _, rc := range roleCounts(g.Tokens) {
				c := rc.Tokens
				t.rows = append(t.rows, []string{m, p, rc.Role, count(c.Input, c.UnknownCalls), count(c.Output, c.UnknownCalls), count(c.CacheRead, c.UnknownCalls), count(c.CacheWrite, c.UnknownCalls), count(c.total(), c.UnknownCalls)})
			}
		}
		dropped, err := t.render(ew, o.Width)
		if err != nil {
			return err
		}
		droppedNote(ew, o, dropped)
	}
	if rep.usageUnknown() {
		fmt.Fprint(ew, wrap(usageFootnote, o.Width, "", "  "))
	}
	if err := rep.writeLatencyText(ew, o); err != nil {
		return err
	}

	if !rep.CellsIncluded {
		fmt.Fprintf(ew, "\nCell results were not available (summary file only).\n")
		return ew.err
	}
	if len(rep.Failing) > 0 {
		fmt.Fprintf(ew, "\nFailing cells (%d)\n", len(rep.Failing))
		for _, g := range rep.failureGroups() {
			writeFailingText(ew, g, pal, o.Width)
		}
	}
	if len(rep.Informational) > 0 {
		fmt.Fprint(ew, "\n"+wrap(fmt.Sprintf("Informational checks that did not hold (%d; gating: false, so no cell failed for them)", len(rep.Informational)), o.Width, "", "  "))
		for _, ic := range rep.Informational {
			fmt.Fprint(ew, wrap(fmt.Sprintf("%s  %s: %s", cellName(ic.CellKey), ic.Name, oneLine(ic.Detail)), o.Width, "  ~ ", "    "))
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

// writeLatencyText writes the latency per group and (in the wide layout)
// per cell, or one line saying that no call has a recorded duration.
func (rep *Report) writeLatencyText(ew *errWriter, o TextOptions) error {
	if !rep.hasLatency() {
		fmt.Fprint(ew, "\n"+wrap(noLatencyNote, o.Width, "", "  "))
		return ew.err
	}
	fmt.Fprintf(ew, "\nLatency (%s)\n", rep.latencySource())
	t := &textTable{plain: o.compact(), cols: []textColumn{{header: "model", cut: true}, {header: "profile", cut: true},
		{header: "cells timed", right: true, prio: 2}, {header: "mean", right: true}, {header: "p50", right: true, prio: 1}, {header: "p95", right: true}, {header: "first event", right: true, prio: 3}}}
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		m, p := groupLabel(g)
		row := []string{m, p, "0", "unknown", "unknown", "unknown", "–"}
		if l := g.Latency; l != nil {
			row = []string{m, p, strconv.Itoa(l.Cells), millis(l.MeanMS), millis(l.P50MS), millis(l.P95MS), firstEvent(l.FirstEventMS)}
		}
		t.rows = append(t.rows, row)
	}
	dropped, err := t.render(ew, o.Width)
	if err != nil {
		return err
	}
	droppedNote(ew, o, dropped)
	if !rep.CellsIncluded {
		return ew.err
	}
	if o.compact() {
		fmt.Fprintln(ew, "per cell: --format html, or dageval show RUN CELL")
		return ew.err
	}
	fmt.Fprintf(ew, "\nLatency per cell\n")
	t = &textTable{cols: []textColumn{{header: "case", cut: true}, {header: "model", cut: true}, {header: "profile", cut: true}, {header: "epoch", right: true},
		{header: "model time", right: true}, {header: "first event", right: true, prio: 2}, {header: "calls timed", right: true, prio: 1}}}
	for _, c := range rep.Cells {
		timed, first := "none", "–"
		if l := c.Latency; l != nil {
			timed, first = fmt.Sprintf("%d of %d", l.Timed, l.Calls), firstEvent(l.FirstEventMS)
		}
		t.rows = append(t.rows, []string{c.Case, c.Model, c.Profile, strconv.Itoa(c.Epoch), cellLatency(c.Latency), first, timed})
	}
	dropped, err = t.render(ew, o.Width)
	droppedNote(ew, o, dropped)
	return err
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
