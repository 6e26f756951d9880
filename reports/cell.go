package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/dageval/dageval/evals"
)

// FindCell finds a cell of the run by its id ("budget-report--openai-gpt-5--terse--e1"),
// or by a part of its id that only one cell has ("budget-report--openai-gpt-5--terse"
// when the case ran one epoch), so `dageval show` takes what a user
// copies from a report. The error lists the candidates when several cells
// match, and the nearest ids when none does.
func (r *Run) FindCell(query string) (evals.CellResult, error) {
	var hits []evals.CellResult
	for _, c := range r.sortedResults() {
		if c.ID == query {
			return c, nil
		}
		if strings.Contains(c.ID, query) {
			hits = append(hits, c)
		}
	}
	switch {
	case len(hits) == 1:
		return hits[0], nil
	case len(hits) > 1:
		var ids []string
		for i, c := range hits {
			if i == 8 {
				ids = append(ids, fmt.Sprintf("… and %d more", len(hits)-i))
				break
			}
			ids = append(ids, c.ID)
		}
		return evals.CellResult{}, fmt.Errorf("%q matches %d cells: %s", query, len(hits), strings.Join(ids, ", "))
	}
	for _, k := range r.Summary.Missing {
		if strings.Contains(cellID(k), query) {
			return evals.CellResult{}, fmt.Errorf("cell %s is missing: the run wrote no result for it", cellName(k))
		}
	}
	type near struct {
		id string
		d  int
	}
	var ns []near
	for _, c := range r.Results {
		ns = append(ns, near{c.ID, levenshtein.ComputeDistance(query, c.ID)})
	}
	slices.SortStableFunc(ns, func(a, b near) int { return a.d - b.d })
	msg := fmt.Sprintf("no cell %q in the run", query)
	if len(ns) > 0 {
		var ids []string
		for i := 0; i < len(ns) && i < 3; i++ {
			ids = append(ids, ns[i].id)
		}
		msg += "; did you mean " + strings.Join(ids, ", ") + "?"
	}
	return evals.CellResult{}, fmt.Errorf("%s", msg)
}

// cellID is the id a cell of this key would have (as evals names them),
// for finding missing cells by id.
func cellID(k evals.CellKey) string {
	m := strings.NewReplacer(":", "-", "/", "-", ".", "-").Replace(k.Model)
	return fmt.Sprintf("%s--%s--%s--e%d", k.Case, m, k.Profile, k.Epoch)
}

// WriteCell writes one cell for a terminal: its verdict, rubric criteria,
// checks (informational ones apart), error, usage and latency, then its
// transcript with subagent runs under the calls that started them, and
// the files it wrote. It is `dageval show RUN CELL`.
func WriteCell(w io.Writer, r *Run, c evals.CellResult, o TextOptions) error {
	return scrubbed(w, func(w io.Writer) error { return writeCell(w, r, c, o) })
}

func writeCell(w io.Writer, r *Run, c evals.CellResult, o TextOptions) error {
	ew := &errWriter{w: w}
	pal := palette(o.Color)
	rc := cellOf(c)
	x, ok := pal.paint(ansiRed, "✗"), pal.paint(ansiGreen, "✓")
	fmt.Fprintf(ew, "%s  %s\n", pal.paint(ansiBold, cellName(c.CellKey)), pal.paint(ansiDim, c.ID))
	line := fmt.Sprintf("score %s · %s · cost %s · model time %s", score(c.Score), plural(c.Steps, "step", "steps"), usd(c.CostUSD, c.CostKnown), cellLatency(rc.Latency))
	if l := rc.Latency; l != nil {
		src := "live"
		if l.Recorded {
			src = "recorded"
		}
		line += fmt.Sprintf(" (%d of %d calls timed, %s)", l.Timed, l.Calls, src)
	}
	fmt.Fprint(ew, wrap(line, o.Width, pal.status(string(c.Status), strings.ToUpper(string(c.Status)))+"  ", "      "))
	if rc.Cause != "" {
		fmt.Fprint(ew, wrap(evals.Cause(rc.Cause).Label()+" ("+rc.Cause+"): "+evals.Cause(rc.Cause).Hint(), o.Width, "  ", "    "))
	}
	if c.Error != "" {
		fmt.Fprintf(ew, "\nerror:\n%s", indentBlock(strings.TrimRight(c.Error, "\n"), "  "))
	}
	if ru := c.Rubric; ru != nil {
		fmt.Fprintf(ew, "\nrubric %s (%s, score %s)\n", ru.Result, plural(ru.Iterations, "iteration", "iterations"), score(ru.Score))
		if ru.Explanation != "" {
			fmt.Fprint(ew, wrap(oneLine(ru.Explanation), o.Width, "  ", "  "))
		}
		for _, cr := range ru.Criteria {
			if cr.Passed {
				fmt.Fprintf(ew, "  %s %s\n", ok, cr.Name)
			} else {
				fmt.Fprint(ew, wrap(cr.Name+": "+oneLine(cr.Gap), o.Width, "  "+x+" ", "    "))
			}
		}
	}
	for _, gating := range []bool{true, false} {
		cs := checksWhere(rc.Checks, gating)
		if len(cs) == 0 {
			continue
		}
		if gating {
			fmt.Fprintf(ew, "\nchecks\n")
		} else {
			fmt.Fprintf(ew, "\ninformational checks (gating: false; they decide nothing)\n")
		}
		for _, ch := range cs {
			mark := ok
			if !ch.Passed {
				mark = x
				if !gating {
					mark = "~"
				}
			}
			s := ch.Name
			if ch.Detail != "" {
				s += ": " + oneLine(ch.Detail)
			}
			fmt.Fprint(ew, wrap(s, o.Width, "  "+mark+" ", "    "))
		}
	}
	fmt.Fprintf(ew, "\ntokens\n")
	for _, rt := range roleCounts(rc.Tokens) {
		t := rt.Tokens
		if t.total() == 0 && t.UnknownCalls == 0 {
			continue
		}
		fmt.Fprintf(ew, "  %-9s %s in / %s out", rt.Role, count(t.Input, t.UnknownCalls), count(t.Output, t.UnknownCalls))
		if t.CacheRead+t.CacheWrite > 0 {
			fmt.Fprintf(ew, " (cache %s read, %s written)", count(t.CacheRead, t.UnknownCalls), count(t.CacheWrite, t.UnknownCalls))
		}
		fmt.Fprintln(ew)
	}
	for _, wn := range c.Warnings {
		fmt.Fprint(ew, wrap(wn, o.Width, "warning: ", "  "))
	}
	d := r.Details[c.ID]
	if d == nil {
		fmt.Fprintf(ew, "\nNo transcript: the run wrote no cells/%s.json.\n", c.ID)
		return ew.err
	}
	fmt.Fprintf(ew, "\ntranscript\n")
	writeTranscriptText(ew, d, pal)
	if len(d.Files) > 0 {
		fmt.Fprintf(ew, "\nfiles written (%d)\n", len(d.Files))
		for _, p := range slices.Sorted(maps.Keys(d.Files)) {
			fmt.Fprintf(ew, "── %s\n%s", pal.paint(ansiBold, p), indentBlock(clipLines(d.Files[p], errorLines), "  "))
		}
	}
	if d.Cassette != "" {
		fmt.Fprintf(ew, "\ncassette %s\n", d.Cassette)
	}
	return ew.err
}

// TranscriptText is a cell's transcript as plain text, subagent runs
// indented under the calls that started them: what `dageval show` prints
// and what compare diffs between base and head.
func TranscriptText(d *evals.CellDetail) string {
	var b strings.Builder
	writeTranscriptText(&b, d, false)
	return b.String()
}

func writeTranscriptText(w io.Writer, d *evals.CellDetail, pal palette) {
	msgs, orphans := transcript(d)
	var write func(msgs []htmlMsg, indent string)
	write = func(msgs []htmlMsg, indent string) {
		for _, m := range msgs {
			head := m.Role
			if m.Name != "" {
				head += " " + m.Name
			}
			if m.Source != "" {
				head += " (from " + m.Source + ")"
			}
			if m.IsError {
				head += " " + pal.paint(ansiRed, "(error)")
			}
			if u := m.Usage; u != nil {
				head += pal.paint(ansiDim, fmt.Sprintf("  [%s in / %s out]", thousands(u.InputTokens), thousands(u.OutputTokens)))
			}
			fmt.Fprintf(w, "%s── %s\n", indent, pal.paint(ansiBold, head))
			for _, t := range m.Thinking {
				fmt.Fprint(w, indentBlock(pal.paint(ansiDim, "thinking: "+strings.TrimSpace(t)), indent+"  "))
			}
			if m.Text != "" {
				fmt.Fprint(w, indentBlock(strings.TrimRight(m.Text, "\n"), indent+"  "))
			}
			for _, o := range m.Other {
				fmt.Fprintf(w, "%s  [%s]\n", indent, o)
			}
			for _, c := range m.Calls {
				fmt.Fprintf(w, "%s  → %s %s\n", indent, pal.paint(ansiBold, c.Name), compactJSON(c.Args))
				for _, s := range c.Subagents {
					fmt.Fprintf(w, "%s    ┆ subagent %s (%s)\n", indent, s.Path, plural(len(s.Messages), "message", "messages"))
					write(s.Messages, indent+"    ┆ ")
				}
			}
		}
	}
	write(msgs, "")
	for _, s := range orphans {
		fmt.Fprintf(w, "┆ subagent %s (%s), its call not in the transcript\n", s.Path, plural(len(s.Messages), "message", "messages"))
		write(s.Messages, "┆ ")
	}
}

// compactJSON writes JSON on one line, or s folded onto one line when it
// is not JSON (an invalid call's raw arguments).
func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return oneLine(s)
	}
	return b.String()
}
