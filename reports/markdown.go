package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dageval/dageval/evals"
)

// mdEscaper backslash-escapes what GitHub markdown would otherwise read as
// markup or raw HTML in free text such as rubric gaps and error messages.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "|", `\|`, "#", `\#`, "~", `\~`,
)

// mdMaxCells caps the cells listed in a markdown section: a pull-request
// comment has a size limit, and past a few dozen cells a reader wants the
// HTML report anyway.
const mdMaxCells = 40

func md(s string) string { return mdEscaper.Replace(oneLine(s)) }

// mdCode renders s as inline code, choosing a fence longer than any run of
// backticks inside it.
func mdCode(s string) string {
	s = oneLine(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(s, "|", `\|`) + pad + fence
}

// mdTable writes a GitHub table; align holds 'l' or 'r' per column. It is
// not tablewriter's renderer.NewMarkdown: that one pads every cell to its
// column's width and marks left-aligned columns ":---", bytes that render
// the same on GitHub but make a pull-request comment, which has a size
// limit, longer, and would change every markdown golden.
func mdTable(w io.Writer, align string, header []string, rows ...[]string) {
	fmt.Fprintf(w, "| %s |\n|", strings.Join(header, " | "))
	for _, a := range align {
		if a == 'r' {
			fmt.Fprint(w, "---:|")
		} else {
			fmt.Fprint(w, "---|")
		}
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}

func mdCellName(k evals.CellKey) string {
	return fmt.Sprintf("**%s** · %s · %s · epoch %d", md(k.Case), mdCode(k.Model), md(k.Profile), k.Epoch)
}

// WriteMarkdown writes the report shaped as a pull-request comment: the
// verdict first, the summary table, and the detail folded away.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	icon := "✅"
	switch {
	case rep.Verdict.Outcome == string(evals.OutcomeErrored):
		icon = "⚠️"
	case !rep.Verdict.Passed:
		icon = "❌"
	}
	fmt.Fprintf(ew, "### %s dageval · %s\n\n", icon, md(rep.Suite))
	fmt.Fprintf(ew, "**%s** (%s mode)\n", md(rep.headline()), md(rep.Mode))
	if more := rep.moreReasons(); len(more) > 0 {
		fmt.Fprintln(ew)
		for _, r := range more {
			fmt.Fprintf(ew, "- %s\n", md(r))
		}
	}
	fmt.Fprintln(ew)
	// Six columns fit a pull-request comment without hiding the cost;
	// pass@k, pass^k and latency are folded away below.
	k := strconv.Itoa(rep.Totals.K)
	var rows [][]string
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		m, p := groupLabel(g)
		if m == "total" {
			m = "**total**"
		} else {
			m = mdCode(m)
		}
		rows = append(rows, []string{m, md(p), pct(g.PassRate) + " (" + ci(g.CI95[0], g.CI95[1]) + ")", passedOf(g), score(g.MeanScore), md(usd(g.CostUSD, g.CostKnown))})
	}
	mdTable(ew, "llrrrr", []string{"Model", "Profile", "Pass rate (CI95)", "Passed", "Score", "Cost"}, rows...)
	if rep.costUnknown() {
		fmt.Fprintf(ew, "\n%s\n", md(costFootnote))
	}

	fmt.Fprintf(ew, "\n<details><summary>pass@%s, pass^%s and latency per group</summary>\n\n", k, k)
	rows = rows[:0]
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		m, p := groupLabel(g)
		if m != "total" {
			m = mdCode(m)
		}
		rows = append(rows, []string{m, md(p), strconv.Itoa(g.Expected), pct(g.PassAtK), pct(g.PassHatK), groupLatency(g.Latency)})
	}
	mdTable(ew, "llrrrr", []string{"Model", "Profile", "Cells", "pass@" + k, "pass^" + k, "Latency"}, rows...)
	fmt.Fprintf(ew, "\n</details>\n")

	fmt.Fprintf(ew, "\n<details><summary>Tokens per role</summary>\n\n")
	rows = rows[:0]
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		m, p := groupLabel(g)
		if m != "total" {
			m = mdCode(m)
		}
		io := func(c TokenCount) string {
			s := count(c.Input, c.UnknownCalls) + " / " + count(c.Output, c.UnknownCalls)
			if c.CacheRead+c.CacheWrite > 0 {
				s += fmt.Sprintf(" (cache %s / %s)", count(c.CacheRead, c.UnknownCalls), count(c.CacheWrite, c.UnknownCalls))
			}
			return s
		}
		rows = append(rows, []string{m, md(p), io(g.Tokens.Agent), io(g.Tokens.Subagents), io(g.Tokens.Grader), count(g.Tokens.Total.total(), g.Tokens.Total.UnknownCalls)})
	}
	mdTable(ew, "llrrrr", []string{"Model", "Profile", "Agent in / out", "Subagents in / out", "Grader in / out", "Total"}, rows...)
	if rep.usageUnknown() {
		fmt.Fprintf(ew, "\n%s\n", md(usageFootnote))
	}
	fmt.Fprintf(ew, "\n</details>\n")
	rep.writeLatencyMarkdown(ew)

	if !rep.CellsIncluded {
		fmt.Fprintf(ew, "\nCell results were not available (summary file only).\n")
		return ew.err
	}
	if len(rep.Failing) > 0 {
		// Open: the failures are what a reviewer came for.
		fmt.Fprintf(ew, "\n<details open><summary>Failing cells (%d)</summary>\n\n", len(rep.Failing))
		shown := 0
		for _, g := range rep.failureGroups() {
			if shown >= mdMaxCells {
				fmt.Fprintf(ew, "… and %d more; the JSON and HTML reports list every cell.\n\n", len(rep.Failing)-shown)
				break
			}
			writeFailingMarkdown(ew, g)
			shown += len(g.cells)
		}
		fmt.Fprintf(ew, "</details>\n")
	}
	if len(rep.Informational) > 0 {
		fmt.Fprintf(ew, "\n<details><summary>Informational checks that did not hold (%d, not gating)</summary>\n\n", len(rep.Informational))
		for _, ic := range rep.Informational {
			fmt.Fprintf(ew, "- ~ %s check %s: %s\n", mdCellName(ic.CellKey), mdCode(ic.Name), md(ic.Detail))
		}
		fmt.Fprintf(ew, "\n</details>\n")
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(ew, "\n<details><summary>Missing cells (%d)</summary>\n\n", len(rep.Missing))
		for _, m := range rep.Missing {
			fmt.Fprintf(ew, "- %s\n", mdCellName(m))
		}
		fmt.Fprintf(ew, "\n</details>\n")
	}
	return ew.err
}

// writeLatencyMarkdown folds the latency per group and per cell away, or
// says in one line that no call has a recorded duration.
func (rep *Report) writeLatencyMarkdown(w io.Writer) {
	if !rep.hasLatency() {
		fmt.Fprintf(w, "\n%s\n", md(noLatencyNote))
		return
	}
	fmt.Fprintf(w, "\n<details><summary>Latency (%s)</summary>\n\n", rep.latencySource())
	var rows [][]string
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		m, p := groupLabel(g)
		if m != "total" {
			m = mdCode(m)
		}
		row := []string{m, md(p), "0", "unknown", "unknown", "unknown", "–"}
		if l := g.Latency; l != nil {
			row = []string{m, md(p), strconv.Itoa(l.Cells), millis(l.MeanMS), millis(l.P50MS), millis(l.P95MS), firstEvent(l.FirstEventMS)}
		}
		rows = append(rows, row)
	}
	mdTable(w, "llrrrrr", []string{"Model", "Profile", "Cells timed", "Mean", "p50", "p95", "First event"}, rows...)
	if rep.CellsIncluded {
		rows = rows[:0]
		for i, c := range rep.Cells {
			if i == mdMaxCells {
				break
			}
			timed, first := "none", "–"
			if l := c.Latency; l != nil {
				timed, first = fmt.Sprintf("%d of %d", l.Timed, l.Calls), firstEvent(l.FirstEventMS)
			}
			rows = append(rows, []string{mdCellName(c.CellKey), cellLatency(c.Latency), first, timed})
		}
		fmt.Fprintln(w)
		mdTable(w, "lrrr", []string{"Cell", "Model time", "First event", "Calls timed"}, rows...)
		if n := len(rep.Cells) - mdMaxCells; n > 0 {
			fmt.Fprintf(w, "\n… and %d more; the JSON and HTML reports list every cell.\n", n)
		}
	}
	fmt.Fprintf(w, "\n</details>\n")
}

// passedOf is a group's passed cells with what became of the others:
// "7/8, 1 failed".
func passedOf(g Group) string {
	s := fmt.Sprintf("%d/%d", g.Passed, g.Expected)
	for _, x := range []struct {
		n    int
		what string
	}{{g.Failed, "failed"}, {g.Errors, "errored"}, {g.Missing, "missing"}} {
		if x.n > 0 {
			s += fmt.Sprintf(", %d %s", x.n, x.what)
		}
	}
	return s
}

// mdCellsName names a case under a model and profile over some epochs.
func mdCellsName(k evals.CellKey, epochs []int) string {
	return fmt.Sprintf("**%s** · %s · %s · %s", md(k.Case), mdCode(k.Model), md(k.Profile), epochList(epochs))
}

// mdBlock fences an error, as a diff when it holds one (a replay miss's
// request diff), so GitHub colours the changed lines.
func mdBlock(w io.Writer, s string) {
	block := clipLines(s, errorLines)
	fence := "```"
	for strings.Contains(block, fence) {
		fence += "`"
	}
	lang := "text"
	if strings.Contains(block, "\n--- ") && strings.Contains(block, "\n+++ ") {
		lang = "diff"
	}
	fmt.Fprintf(w, "\n%s%s\n%s\n%s\n", fence, lang, block, fence)
}

func writeFailingMarkdown(w io.Writer, g failureGroup) {
	f := g.cells[0]
	if g.cause != "" {
		fmt.Fprintf(w, "⚠️ **%s**; the first one's error is below\n\n", md(causeTitle(g.cause, len(g.cells))))
		cells := byCell(g.cells)
		for i, c := range cells {
			if i == errorGroupNames {
				fmt.Fprintf(w, "- … and %d more\n", len(cells)-i)
				break
			}
			fmt.Fprintf(w, "- %s\n", mdCellsName(c.cells[0].CellKey, c.epochs()))
		}
		fmt.Fprintf(w, "\nError of %s:\n", mdCellName(f.CellKey))
		mdBlock(w, f.Error)
		if h := evals.Cause(g.cause).Hint(); h != "" {
			fmt.Fprintf(w, "\nTo fix: %s\n", md(h))
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "%s — %s, score %s\n", mdCellsName(f.CellKey, g.epochs()), strings.ToUpper(f.Status), score(f.Score))
	if f.Error != "" {
		mdBlock(w, f.Error)
	}
	for _, g := range f.Gaps {
		fmt.Fprintf(w, "- ✗ rubric (%s) **%s**: %s\n", md(f.RubricResult), md(g.Criterion), md(g.Gap))
	}
	for _, c := range f.FailedChecks {
		fmt.Fprintf(w, "- ✗ check %s: %s\n", mdCode(c.Name), md(c.Detail))
	}
	fmt.Fprintln(w)
}
