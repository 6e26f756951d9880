package reports

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/rubrics"
)

// errorGroupMin is how many cells errored for one cause before the text
// and markdown reports show them as one entry: sixteen replay misses are
// one problem with one fix, and their sixteen request diffs would bury the
// failures that are about behaviour.
const errorGroupMin = 3

// errorGroupNames caps the cells a grouped entry names; the JSON and HTML
// reports name all of them.
const errorGroupNames = 8

// failureGroup is failing cells shown as one entry: either the epochs of a
// case (model, profile) that failed the same way, or, when cause is set,
// every cell errored for that cause.
type failureGroup struct {
	cause string
	cells []FailingCell
}

// epochs lists the epochs of an epoch group.
func (g failureGroup) epochs() []int {
	out := make([]int, len(g.cells))
	for i, c := range g.cells {
		out[i] = c.Epoch
	}
	return out
}

// sameFailure reports whether two failing cells failed the same way.
func sameFailure(a, b FailingCell) bool {
	return a.Status == b.Status && a.Score == b.Score && a.RubricResult == b.RubricResult && a.Error == b.Error && a.Cause == b.Cause &&
		slices.Equal(a.Gaps, b.Gaps) && slices.EqualFunc(a.FailedChecks, b.FailedChecks, func(x, y rubrics.CheckVerdict) bool {
		return x.Name == y.Name && x.Detail == y.Detail && x.Passed == y.Passed
	})
}

// failureGroups folds the report's failing cells into the entries the text
// and markdown reports list, in the report's order: a group stands where
// its first cell would.
func (rep *Report) failureGroups() []failureGroup {
	perCause := map[string]int{}
	for _, f := range rep.Failing {
		if f.Status == string(evals.StatusError) {
			perCause[f.Cause]++
		}
	}
	var out []failureGroup
	at := map[string]int{}
	for _, f := range rep.Failing {
		if f.Status == string(evals.StatusError) && perCause[f.Cause] >= errorGroupMin {
			if i, ok := at[f.Cause]; ok {
				out[i].cells = append(out[i].cells, f)
				continue
			}
			at[f.Cause] = len(out)
			out = append(out, failureGroup{cause: f.Cause, cells: []FailingCell{f}})
			continue
		}
		if n := len(out); n > 0 && out[n-1].cause == "" {
			last := out[n-1].cells[0]
			if last.Case == f.Case && last.Model == f.Model && last.Profile == f.Profile && sameFailure(last, f) {
				out[n-1].cells = append(out[n-1].cells, f)
				continue
			}
		}
		out = append(out, failureGroup{cells: []FailingCell{f}})
	}
	return out
}

// epochList writes epochs as "epoch 2", "epochs 1–3" or "epochs 1, 3".
func epochList(es []int) string {
	if len(es) == 1 {
		return "epoch " + strconv.Itoa(es[0])
	}
	run := true
	for i := 1; i < len(es); i++ {
		run = run && es[i] == es[i-1]+1
	}
	if run && len(es) > 2 {
		return fmt.Sprintf("epochs %d–%d", es[0], es[len(es)-1])
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = strconv.Itoa(e)
	}
	return "epochs " + strings.Join(parts, ", ")
}

// cellsName names a case under a model and profile over some epochs.
func cellsName(k evals.CellKey, epochs []int) string {
	return fmt.Sprintf("%s · %s · %s · %s", k.Case, k.Model, k.Profile, epochList(epochs))
}

// byCell folds cells into one entry per case, model and profile with their
// epochs, in order.
func byCell(cells []FailingCell) []failureGroup {
	var out []failureGroup
	for _, c := range cells {
		if n := len(out); n > 0 {
			l := out[n-1].cells[0]
			if l.Case == c.Case && l.Model == c.Model && l.Profile == c.Profile {
				out[n-1].cells = append(out[n-1].cells, c)
				continue
			}
		}
		out = append(out, failureGroup{cells: []FailingCell{c}})
	}
	return out
}

// causeTitle is a grouped entry's title: "16 cells: replay misses (replay_miss)".
func causeTitle(cause string, n int) string {
	l := evals.Cause(cause).Label()
	if strings.HasSuffix(l, "s") {
		l += "es"
	} else {
		l += "s"
	}
	return fmt.Sprintf("%d cells: %s (%s)", n, l, cause)
}

func writeFailingText(w io.Writer, g failureGroup, pal palette, width int) {
	f := g.cells[0]
	x := pal.paint(ansiRed, "✗")
	if g.cause != "" {
		fmt.Fprintf(w, "\n  %s  %s; the first one's error is below\n", pal.status("error", "ERROR"), causeTitle(g.cause, len(g.cells)))
		cells := byCell(g.cells)
		for i, c := range cells {
			if i == errorGroupNames {
				fmt.Fprintf(w, "    … and %d more (every one is in the JSON and HTML reports)\n", len(cells)-i)
				break
			}
			fmt.Fprintf(w, "    %s\n", cellsName(c.cells[0].CellKey, c.epochs()))
		}
		fmt.Fprintf(w, "    error of %s:\n%s", cellName(f.CellKey), indentBlock(clipLines(f.Error, errorLines), "      "))
		if h := evals.Cause(g.cause).Hint(); h != "" {
			fmt.Fprint(w, wrap(h, width, "    to fix: ", "      "))
		}
		return
	}
	fmt.Fprintf(w, "\n  %s  %s  score %s\n", pal.status(f.Status, strings.ToUpper(f.Status)), cellsName(f.CellKey, g.epochs()), score(f.Score))
	if f.Error != "" {
		fmt.Fprintf(w, "    error:\n%s", indentBlock(clipLines(f.Error, errorLines), "      "))
	}
	if len(f.Gaps) > 0 {
		fmt.Fprintf(w, "    rubric %s:\n", f.RubricResult)
		for _, g := range f.Gaps {
			fmt.Fprint(w, wrap(g.Criterion+": "+oneLine(g.Gap), width, "      "+x+" ", "        "))
		}
	}
	if len(f.FailedChecks) > 0 {
		fmt.Fprintf(w, "    checks:\n")
		for _, c := range f.FailedChecks {
			fmt.Fprint(w, wrap(c.Name+": "+oneLine(c.Detail), width, "      "+x+" ", "        "))
		}
	}
}
