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
	t := newTable(ew, L, L, R, R, R, R, R, R, R, R, R, R, R)
	t.Header("model", "profile", "cells", "pass", "fail", "error", "missing", "pass rate", "CI95", "score", "pass@"+strconv.Itoa(k), "pass^"+strconv.Itoa(k), "cost")
	row := func(g Group) []string {
		m, p := groupLabel(g)
		return []string{m, p, strconv.Itoa(g.Expected), strconv.Itoa(g.Passed), strconv.Itoa(g.Failed), strconv.Itoa(g.Errors), strconv.Itoa(g.Missing),
			pct(g.PassRate), ci(g.CI95[0], g.CI95[1]), score(g.MeanScore), pct(g.PassAtK), pct(g.PassHatK), usd(g.CostUSD, g.CostKnown)}
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
			if err := t.Append([]string{m, p, rc.Role, thousands(rc.Tokens.Input), thousands(rc.Tokens.Output), thousands(rc.Tokens.CacheRead), thousands(rc.Tokens.CacheWrite), thousands(rc.Tokens.total())}); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
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
	if len(rep.Missing) > 0 {
		fmt.Fprintf(ew, "\nMissing cells (%d): no result was written; each counts as a failure\n", len(rep.Missing))
		for _, m := range rep.Missing {
			fmt.Fprintf(ew, "  %s\n", cellName(m))
		}
	}
	return ew.err
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
