package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dageval/dageval/evals"
)

// pct formats a rate in [0, 1] as a percentage with one decimal.
func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

// ppDelta formats a difference of rates in percentage points, signed.
func ppDelta(x float64) string {
	s := strconv.FormatFloat(100*x, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	if !strings.HasPrefix(s, "-") && s != "0.0" {
		s = "+" + s
	}
	return s + " pp"
}

// signed formats a score difference with an explicit sign.
func signed(x float64) string {
	s := strconv.FormatFloat(x, 'f', 3, 64)
	if s == "-0.000" {
		s = "0.000"
	}
	if !strings.HasPrefix(s, "-") && s != "0.000" {
		s = "+" + s
	}
	return s
}

func ci(lo, hi float64) string { return pct(lo) + "–" + pct(hi) }

func score(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// usd formats a cost; an unknown price gets an asterisk the renderers explain.
func usd(x float64, known bool) string {
	s := "$" + strconv.FormatFloat(x, 'f', 4, 64)
	if !known {
		s += "*"
	}
	return s
}

// thousands formats an integer with comma separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// pvalue formats a p-value readably without hiding how small it is.
func pvalue(p float64) string {
	switch {
	case math.IsNaN(p):
		return "n/a"
	case p >= 0.001:
		return strconv.FormatFloat(p, 'f', 3, 64)
	default:
		return strconv.FormatFloat(p, 'e', 1, 64)
	}
}

func cellName(k evals.CellKey) string {
	return fmt.Sprintf("%s · %s · %s · epoch %d", k.Case, k.Model, k.Profile, k.Epoch)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// headline is the one-line verdict the terminal, markdown, HTML and JUnit
// reports open with. An errored run leads with the cause that decided it
// (the first reason), since its pass rate judges nothing.
func (rep *Report) headline() string {
	t := rep.Totals
	counts := fmt.Sprintf("%d of %d cells passed (%s, CI95 %s)", t.Passed, rep.ExpectedCells, pct(t.PassRate), ci(t.CI95[0], t.CI95[1]))
	var extra []string
	if t.Failed > 0 {
		extra = append(extra, plural(t.Failed, "failed", "failed"))
	}
	if rep.Verdict.Outcome == string(evals.OutcomeErrored) && len(rep.Verdict.Reasons) > 0 {
		if len(extra) > 0 {
			counts += ", " + strings.Join(extra, ", ")
		}
		return fmt.Sprintf("ERRORED: %s; %s", rep.Verdict.Reasons[0], counts)
	}
	tolerated := ""
	if rep.Verdict.ErrorsTolerated {
		tolerated = " (tolerated)"
	}
	if t.Errors > 0 {
		extra = append(extra, plural(t.Errors, "errored", "errored")+tolerated)
	}
	if n := rep.ExpectedCells - rep.ActualCells; n > 0 {
		extra = append(extra, plural(n, "missing", "missing")+tolerated)
	}
	verdict := "PASSED"
	if !rep.Verdict.Passed {
		verdict = "FAILED"
	}
	s := verdict + ": " + counts
	if len(extra) > 0 {
		s += "; " + strings.Join(extra, ", ")
	}
	return s
}

// moreReasons are the verdict's reasons the headline does not already give.
func (rep *Report) moreReasons() []string {
	if rep.Verdict.Outcome == string(evals.OutcomeErrored) && len(rep.Verdict.Reasons) > 0 {
		return rep.Verdict.Reasons[1:]
	}
	return rep.Verdict.Reasons
}

// costUnknown reports whether any figure in the report has an unpriced part.
func (rep *Report) costUnknown() bool {
	if !rep.Totals.CostKnown {
		return true
	}
	for _, g := range rep.Groups {
		if !g.CostKnown {
			return true
		}
	}
	return false
}

const costFootnote = "* a model had no price in the catalog; the cost counts only what could be priced"

func groupLabel(g Group) (string, string) {
	if g.Model == "" && g.Profile == "" {
		return "total", ""
	}
	return g.Model, g.Profile
}

// millis formats milliseconds readably: "812ms", "2.01s".
func millis(ms int64) string {
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', 2, 64) + "s"
}

// count formats a token count that some model calls may have left
// unreported: the count, "≥count" when it is a lower bound, "unknown" when
// nothing was reported, so that an unknown is never read as a zero.
func count(n, unknownCalls int) string {
	switch {
	case unknownCalls == 0:
		return thousands(n)
	case n == 0:
		return "unknown"
	}
	return "≥" + thousands(n)
}

// usageUnknown reports whether some model call of the run reported no usage.
func (rep *Report) usageUnknown() bool {
	for _, g := range append(append([]Group(nil), rep.Groups...), rep.Totals) {
		for _, rc := range roleCounts(g.Tokens) {
			if rc.Tokens.UnknownCalls > 0 {
				return true
			}
		}
	}
	return false
}

const usageFootnote = "≥ and unknown: some model calls reported no usage; their tokens are not counted"

// groupLatency is a group's mean model time per cell, or "unknown".
func groupLatency(l *GroupLatency) string {
	if l == nil {
		return "unknown"
	}
	return millis(l.MeanMS)
}

// cellLatency is a cell's model time, "≥…" when some calls were not timed,
// or "unknown".
func cellLatency(l *Latency) string {
	if l == nil {
		return "unknown"
	}
	if l.Timed < l.Calls {
		return "≥" + millis(l.ModelMS)
	}
	return millis(l.ModelMS)
}

// firstEvent is a mean time to first event, or "–" when nothing streamed.
func firstEvent(ms int64) string {
	if ms <= 0 {
		return "–"
	}
	return millis(ms)
}

// hasLatency reports whether any group or cell of the report has a known latency.
func (rep *Report) hasLatency() bool {
	if rep.Totals.Latency != nil {
		return true
	}
	for _, c := range rep.Cells {
		if c.Latency != nil {
			return true
		}
	}
	return false
}

const noLatencyNote = "Latency: unknown, no model call has recorded timings (cassettes recorded without them, such as imported vcrpy files)."

// latencySource says where the latencies of a report come from.
func (rep *Report) latencySource() string {
	if l := rep.Totals.Latency; l != nil && !l.Recorded {
		return "measured model time per cell"
	}
	return "recorded model time per cell"
}
