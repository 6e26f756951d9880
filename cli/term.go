package cli

import (
	"io"
	"os"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"golang.org/x/term"

	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/reports"
)

// terminal says how to print tables on w: the terminal's width, and colour
// unless NO_COLOR is set (https://no-color.org) or TERM is dumb, when w is
// a terminal; the wide layout without colour otherwise, as files and CI
// logs want it.
func terminal(e *env, w io.Writer) reports.TextOptions {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return reports.TextOptions{}
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		width = 0
	}
	return reports.TextOptions{Width: width, Color: e.getenv("NO_COLOR") == "" && e.getenv("TERM") != "dumb"}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// nearest is the candidate closest to s, when it is close enough to be a
// typo (a few characters off, or s a prefix of it); "" otherwise.
func nearest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if s != "" && strings.HasPrefix(c, s) && len(s) >= 3 || swapped(s, c) {
			return c
		}
		if d := levenshtein.ComputeDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > 2 || bestD*3 > len(s)+1 {
		return ""
	}
	return best
}

// commandNames lists the commands in order.
func commandNames() []string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// warnModel warns when a --model flag names a model the catalog does not
// know: its context window, output limit and prices are then unknown, and
// a typo would otherwise only show as a provider error or a missing cost.
func warnModel(e *env, cmd, flagName, spec string) {
	if spec == "" {
		return
	}
	c := catalog.Default()
	if c.Knows(spec) {
		return
	}
	msg := "dageval " + cmd + ": warning: --" + flagName + " " + spec + " is not in the model catalog"
	if s, ok := c.Suggest(spec); ok {
		msg += " (did you mean " + s + "?)"
	}
	msg += "; its context window and prices are unknown unless an agent file or suite declares it\n"
	io.WriteString(e.stderr, msg)
}

// swapped reports whether a and b differ by two neighbouring letters
// swapped ("rnu" for "run"), the commonest typo, which edit distance
// counts as two.
func swapped(a, b string) bool {
	if len(a) != len(b) || a == b {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
}
