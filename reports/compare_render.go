package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dageval/dageval/evals"
)

// compareListMax caps the cases listed per section in text and markdown;
// the JSON output lists all of them.
const compareListMax = 25

// JSON renders the comparison as indented JSON (CompareSchema).
func (c *Comparison) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func outcomeLabel(o Outcome) string {
	return strings.ToUpper(strings.ReplaceAll(string(o), "_", " "))
}

func ciPP(ci [2]float64) string {
	return strings.TrimSuffix(ppDelta(ci[0]), " pp") + " to " + ppDelta(ci[1])
}

func ciScore(ci [2]float64) string { return signed(ci[0]) + " to " + signed(ci[1]) }

func passFrac(k, n int) string { return fmt.Sprintf("%d/%d", k, n) }

// modelName is a base model, with the head model it was paired with when
// the change swapped it.
func modelName(base, head string) string {
	if head == "" {
		return base
	}
	return base + " → " + head
}

// pairsLine says which models were compared across a swap, or "".
func (c *Comparison) pairsLine() string {
	if len(c.Pairs) == 0 {
		return ""
	}
	var parts []string
	for _, p := range c.Pairs {
		s := p.Base + " → " + p.Head
		if p.Alias != "" {
			s += " (alias " + p.Alias + ")"
		}
		parts = append(parts, s)
	}
	return "Models paired by role: " + strings.Join(parts, "; ")
}

func (c *Comparison) sides() string {
	return fmt.Sprintf("base %s mode, %d of %d cells; head %s mode, %d of %d cells",
		c.Base.Mode, c.Base.ActualCells, c.Base.ExpectedCells, c.Head.Mode, c.Head.ActualCells, c.Head.ExpectedCells)
}

// WriteText writes the comparison for a terminal in the wide layout
// without colour (see WriteTextWith).
func (c *Comparison) WriteText(w io.Writer) error { return c.WriteTextWith(w, TextOptions{}) }

// WriteTextWith writes the comparison for a terminal.
func (c *Comparison) WriteTextWith(w io.Writer, o TextOptions) error {
	ew := &errWriter{w: w}
	pal := palette(o.Color)
	fmt.Fprint(ew, wrap(fmt.Sprintf("dageval compare: suite %s (%s)", c.Suite, c.sides()), o.Width, "", "  "))
	verdict := strings.TrimSuffix(wrap(fmt.Sprintf("%s (exit %d)", c.Verdict.Reason, c.Verdict.ExitCode), o.Width, "", "  "), "\n")
	fmt.Fprintln(ew, pal.paint(ansiBold, pal.status(string(c.Verdict.Outcome), verdict)))
	if l := c.pairsLine(); l != "" {
		fmt.Fprint(ew, wrap(l, o.Width, "", "  "))
	}
	if len(c.Verdict.Details) > 0 {
		fmt.Fprintln(ew, "Supported changes:")
	}
	for _, d := range c.Verdict.Details {
		fmt.Fprint(ew, wrap(d, o.Width, "  - ", "    "))
	}
	fmt.Fprintln(ew)
	t := &textTable{plain: o.compact(), cols: []textColumn{
		{header: "model", cut: true}, {header: "profile", cut: true}, {header: "pairs", right: true, prio: 4},
		{header: "base pass", right: true, prio: 2}, {header: "head pass", right: true}, {header: "Δ pass", right: true}, {header: "CI", right: true, prio: 3},
		{header: "pass→fail", right: true}, {header: "fail→pass", right: true, prio: 1}, {header: "McNemar p", right: true, prio: 5}, {header: "Δ score", right: true, prio: 4}, {header: "score CI", right: true, prio: 6},
	}}
	row := func(e Effect, m, p string) []string {
		return []string{m, p, strconv.Itoa(e.Pairs), pct(e.BasePassRate), pct(e.HeadPassRate), ppDelta(e.PassDelta), ciPP(e.PassCI),
			strconv.Itoa(e.Regressions), strconv.Itoa(e.Improvements), pvalue(e.McNemarP), signed(e.ScoreDelta), ciScore(e.ScoreCI)}
	}
	for _, e := range c.Groups {
		t.rows = append(t.rows, row(e, modelName(e.Model, e.HeadModel), e.Profile))
	}
	t.footer = row(c.Overall, "overall", "")
	if pal {
		t.paint = func(r, col int, s string) string {
			switch {
			case r < 0:
				return pal.paint(ansiBold, s)
			case col == 7:
				return pal.nonZero(ansiRed, s)
			case col == 8:
				return pal.nonZero(ansiGreen, s)
			}
			return s
		}
	}
	dropped, err := t.render(ew, o.Width)
	if err != nil {
		return err
	}
	droppedNote(ew, o, dropped)
	fmt.Fprint(ew, wrap(c.costLine()+".", o.Width, "", "  "))
	fmt.Fprint(ew, "\n"+wrap(fmt.Sprintf("Gate tests (policy %s; Holm-adjusted over %d, α = %s, tolerance %s; intervals: %d-resample cluster bootstrap, seed %d)",
		c.Options.Policy, len(c.Tests), pvalueAlpha(c.Options.Alpha), ppAbs(c.Options.Tolerance), c.Options.Resamples, c.Options.Seed), o.Width, "", "  "))
	t = &textTable{plain: o.compact(), cols: []textColumn{{header: "scope", cut: true}, {header: "metric"}, {header: "Δ", right: true}, {header: "CI", right: true, prio: 2},
		{header: "down / up", right: true, prio: 3}, {header: "p", right: true, prio: 1}, {header: "p adjusted", right: true}, {header: "supported"}}}
	for _, x := range c.Tests {
		d, ci := ppDelta(x.Delta), ciPP(x.CI)
		if x.Metric == "score" {
			d, ci = signed(x.Delta), ciScore(x.CI)
		}
		sup := "no"
		if x.Significant {
			sup = "yes"
			if !x.BeyondTolerance {
				sup = "yes, within tolerance"
			}
		}
		t.rows = append(t.rows, []string{x.Scope, x.Metric, d, ci, fmt.Sprintf("%d / %d", x.Down, x.Up), pvalue(x.P), pvalue(x.PAdjusted), sup})
	}
	dropped, err = t.render(ew, o.Width)
	if err != nil {
		return err
	}
	droppedNote(ew, o, dropped)
	fmt.Fprint(ew, "\n"+wrap("Minimum detectable effect: "+c.mdeSentence()+".", o.Width, "", "  "))
	c.writeCaseLists(ew, false, o.Width)
	return ew.err
}

func (c *Comparison) writeCaseLists(w io.Writer, markdown bool, width int) {
	name := func(cc CaseChange) string {
		if markdown {
			return fmt.Sprintf("**%s** · %s · %s", md(cc.Case), mdCode(modelName(cc.Model, cc.HeadModel)), md(cc.Profile))
		}
		return fmt.Sprintf("%s · %s · %s", cc.Case, modelName(cc.Model, cc.HeadModel), cc.Profile)
	}
	change := func(cc CaseChange) string {
		return fmt.Sprintf("%s %s → %s passed, score %s → %s", name(cc), passFrac(cc.BasePassed, cc.Epochs), passFrac(cc.HeadPassed, cc.Epochs), score(cc.BaseScore), score(cc.HeadScore))
	}
	because := func(cc CaseChange) string {
		switch {
		case cc.Reason == "":
			return ""
		case markdown:
			return " — " + md(cc.Reason)
		}
		return " — " + cc.Reason
	}
	section := func(title string, note string, items []string) {
		if len(items) == 0 {
			return
		}
		if markdown {
			open := ""
			if title == "New failures" {
				open = " open" // what a reviewer came for
			}
			fmt.Fprintf(w, "\n<details%s><summary>%s (%d)</summary>\n\n", open, title, len(items))
			if note != "" {
				fmt.Fprintf(w, "%s\n\n", note)
			}
		} else {
			head := fmt.Sprintf("%s (%d)", title, len(items))
			if note != "" {
				head += ": " + note
			}
			fmt.Fprint(w, "\n"+wrap(head, width, "", "  "))
		}
		for i, it := range items {
			if i == compareListMax {
				fmt.Fprintf(w, "%s… and %d more (see --format json)\n", map[bool]string{true: "- ", false: "  "}[markdown], len(items)-i)
				break
			}
			if markdown {
				fmt.Fprintf(w, "- %s\n", it)
			} else {
				fmt.Fprint(w, wrap(it, width, "  ", "    "))
			}
		}
		if markdown {
			fmt.Fprintf(w, "\n</details>\n")
		}
	}
	var items []string
	for _, cc := range c.NewFailures {
		items = append(items, change(cc)+because(cc))
	}
	section("New failures", "passed every epoch in base, failed every epoch in head", items)
	items = nil
	for _, cc := range c.NewPasses {
		items = append(items, change(cc)+because(cc))
	}
	section("New passes", "failed every epoch in base, passed every epoch in head", items)
	items = nil
	for _, cc := range c.Flaky {
		side := "both"
		switch {
		case cc.BaseFlaky && !cc.HeadFlaky:
			side = "base"
		case cc.HeadFlaky && !cc.BaseFlaky:
			side = "head"
		}
		items = append(items, change(cc)+" (flaky in "+side+")"+because(cc))
	}
	section("Flaky cases", "pass^k < pass@k: some epochs passed and some failed, so their flips are listed apart", items)
	items = nil
	for _, cc := range c.ScoreChanges {
		items = append(items, fmt.Sprintf("%s score %s (%s → %s)", name(cc), signed(cc.ScoreDelta), score(cc.BaseScore), score(cc.HeadScore)))
	}
	section("Score changes", "mean over paired epochs, largest drop first", items)
	keyItems := func(ks []evals.CellKey) []string {
		var out []string
		for _, k := range ks {
			if markdown {
				out = append(out, mdCellName(k))
			} else {
				out = append(out, cellName(k))
			}
		}
		return out
	}
	section("Missing in base", "", keyItems(c.MissingInBase))
	section("Missing in head", "", keyItems(c.MissingInHead))
	items = nil
	for _, e := range c.Errored {
		if markdown {
			items = append(items, fmt.Sprintf("%s %s: %s", e.Side, mdCellName(e.sideKey()), mdCode(e.Error)))
		} else {
			items = append(items, fmt.Sprintf("%s %s: %s", e.Side, cellName(e.sideKey()), e.Error))
		}
	}
	section("Errored cells", "errors are not regressions; they make the comparison impossible to judge", items)
}

// flipMark marks a pass-rate change for a reader skimming a comment: red
// for a drop, green for a gain.
func flipMark(d float64) string {
	switch {
	case d < -1e-12:
		return "🔴 "
	case d > 1e-12:
		return "🟢 "
	}
	return ""
}

// usdDelta formats a signed cost difference.
func usdDelta(x float64) string {
	s := strconv.FormatFloat(x, 'f', 4, 64)
	if s == "-0.0000" {
		s = "0.0000"
	}
	if strings.HasPrefix(s, "-") {
		return "-$" + s[1:]
	}
	return "+$" + s
}

// signedInt formats a signed count with thousands separators.
func signedInt(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	return "+" + thousands(n)
}

// costLine sums up what the change did to cost, tokens and model time.
func (c *Comparison) costLine() string {
	s := fmt.Sprintf("Cost $%s → $%s (%s), tokens %s → %s (%s)", strconv.FormatFloat(c.Base.CostUSD, 'f', 4, 64), strconv.FormatFloat(c.Head.CostUSD, 'f', 4, 64),
		usdDelta(c.Head.CostUSD-c.Base.CostUSD), thousands(c.Base.Tokens), thousands(c.Head.Tokens), signedInt(c.Head.Tokens-c.Base.Tokens))
	if d := c.Overall.LatencyDeltaMS; d != nil {
		sign := "+"
		if *d < 0 {
			sign = "-"
		}
		s += fmt.Sprintf(", model time %s%s per cell over %s timed on both sides", sign, millis(abs64(*d)), plural(c.Overall.LatencyPairs, "pair", "pairs"))
	} else {
		s += ", model time unknown (no pair timed on both sides)"
	}
	return s
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// icon marks the verdict in markdown. A comparison that passed although it
// shows a drop (inconclusive, under the significant policy) gets a
// question mark, never the green check: passing it was the policy's
// choice, not evidence that nothing got worse.
func (c *Comparison) icon() string {
	switch {
	case c.Verdict.ExitCode == 1:
		return "❌"
	case c.Verdict.ExitCode == 2:
		return "⚠️"
	case c.Verdict.Outcome == OutcomeInconclusive && c.showsDrop():
		return "❔"
	}
	return "✅"
}

// WriteMarkdown writes the comparison as a pull-request comment, with the
// assembled-agent diff when one was given.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	icon := c.icon()
	fmt.Fprintf(ew, "### %s dageval compare · %s: %s\n\n", icon, md(c.Suite), strings.ToLower(outcomeLabel(c.Verdict.Outcome)))
	fmt.Fprintf(ew, "%s\n", md(c.Verdict.Reason))
	if len(c.Verdict.Details) > 0 {
		fmt.Fprintf(ew, "\nSupported changes:\n\n")
	}
	for _, d := range c.Verdict.Details {
		fmt.Fprintf(ew, "- %s\n", md(d))
	}
	if l := c.pairsLine(); l != "" {
		fmt.Fprintf(ew, "\n%s.\n", md(l))
	}
	fmt.Fprintf(ew, "\n%s. Gate: exit %d.\n\n", md(c.sides()), c.Verdict.ExitCode)
	// Six columns fit a pull-request comment; the p-values and score
	// intervals are in the gate tests below.
	var rows [][]string
	row := func(e Effect, m, p string) []string {
		return []string{m, p, pct(e.BasePassRate) + " → " + pct(e.HeadPassRate), flipMark(e.PassDelta) + ppDelta(e.PassDelta) + " (" + ciPP(e.PassCI) + ")",
			fmt.Sprintf("%d / %d", e.Regressions, e.Improvements), signed(e.ScoreDelta)}
	}
	for _, e := range c.Groups {
		rows = append(rows, row(e, mdCode(modelName(e.Model, e.HeadModel)), md(e.Profile)))
	}
	rows = append(rows, row(c.Overall, "**overall**", ""))
	mdTable(ew, "llrrrr", []string{"Model", "Profile", "Pass rate", "Δ (CI)", "pass→fail / fail→pass", "Δ score"}, rows...)
	fmt.Fprintf(ew, "\n%s. Minimum detectable effect: %s.\n", md(c.costLine()), md(c.mdeSentence()))

	fmt.Fprintf(ew, "\n<details><summary>Gate tests</summary>\n\nPolicy %s; Holm-adjusted over %d tests, α = %s, tolerance %s; intervals from a %d-resample cluster bootstrap (seed %d).\n\n",
		mdCode(string(c.Options.Policy)), len(c.Tests), pvalueAlpha(c.Options.Alpha), ppAbs(c.Options.Tolerance), c.Options.Resamples, c.Options.Seed)
	rows = rows[:0]
	for _, x := range c.Tests {
		d, ci := ppDelta(x.Delta), ciPP(x.CI)
		if x.Metric == "score" {
			d, ci = signed(x.Delta), ciScore(x.CI)
		}
		sup := "no"
		if x.Significant {
			sup = "**yes**"
			if !x.BeyondTolerance {
				sup = "yes, within tolerance"
			}
		}
		rows = append(rows, []string{md(x.Scope), md(x.Metric), d, ci, fmt.Sprintf("%d / %d", x.Down, x.Up), pvalue(x.P), pvalue(x.PAdjusted), sup})
	}
	mdTable(ew, "llrrrrrl", []string{"Scope", "Metric", "Δ", "CI", "Down / up", "p", "p adjusted", "Supported"}, rows...)
	fmt.Fprintf(ew, "\n</details>\n")
	c.writeCaseLists(ew, true, 0)
	if c.AgentDiff != "" {
		fence := "```"
		for strings.Contains(c.AgentDiff, fence) {
			fence += "`"
		}
		fmt.Fprintf(ew, "\n<details><summary>Assembled agent: base → head (dageval assemble --diff)</summary>\n\n%sdiff\n%s\n%s\n\n</details>\n", fence, strings.TrimRight(c.AgentDiff, "\n"), fence)
	}
	return ew.err
}

// RenderComparison writes a comparison in one of table, md, json or html.
func RenderComparison(w io.Writer, c *Comparison, f Format) error {
	return RenderComparisonWith(w, c, f, TextOptions{})
}

// RenderComparisonWith writes a comparison, the table for a terminal as o
// says, scrubbed as every report is (see RenderWith).
func RenderComparisonWith(w io.Writer, c *Comparison, f Format, o TextOptions) error {
	return scrubbed(w, func(w io.Writer) error { return renderComparisonWith(w, c, f, o) })
}

func renderComparisonWith(w io.Writer, c *Comparison, f Format, o TextOptions) error {
	switch f {
	case FormatTable:
		return c.WriteTextWith(w, o)
	case FormatMD:
		return c.WriteMarkdown(w)
	case FormatJSON:
		b, err := c.JSON()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case FormatHTML:
		return c.WriteHTML(w)
	}
	return fmt.Errorf("compare renders table, md, json or html, not %q", f)
}
