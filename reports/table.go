package reports

import (
	"io"
	"strings"
	"unicode/utf8"
)

// textTable is a terminal table that fits a width: it drops its least
// important columns first and then shortens the columns that may be cut,
// so a report never wraps in a terminal. Boxed tables draw ASCII borders
// (the wide layout); plain ones separate columns with two spaces, which
// saves a column's worth of characters for every three columns (the
// compact layout).
type textTable struct {
	cols   []textColumn
	rows   [][]string
	footer []string
	plain  bool
	// paint colours a cell's text before it is padded (row -1 is the
	// header, len(rows) the footer); nil paints nothing. Widths are measured before painting,
	// so colour never shifts a column.
	paint func(row, col int, padded string) string
}

// textColumn is one column. Prio 0 is never dropped; higher numbers go
// first, the rightmost of equal ones first. Cut columns lose their tail to
// an ellipsis when dropping columns was not enough.
type textColumn struct {
	header string
	right  bool
	prio   int
	cut    bool
}

// textWidth is the width of s in terminal cells, colour codes left out.
// Every character the reports print (≥, –, →, ×, ✓, ✗, ·) takes one cell.
func textWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

// minCut is the narrowest a cut column gets.
const minCut = 10

// fit decides which columns to show and how wide each is, for a total
// width of at most max (0: no limit). It returns the kept column indexes,
// their widths and the headers of the columns dropped.
func (t *textTable) fit(max int) (keep []int, widths []int, dropped []string) {
	natural := make([]int, len(t.cols))
	for i, c := range t.cols {
		natural[i] = textWidth(c.header)
	}
	for _, r := range append(append([][]string(nil), t.rows...), t.footer) {
		for i := range t.cols {
			if i < len(r) {
				natural[i] = max2(natural[i], textWidth(r[i]))
			}
		}
	}
	on := make([]bool, len(t.cols))
	for i := range on {
		on[i] = true
	}
	total := func() int {
		n, w := 0, 0
		for i := range t.cols {
			if on[i] {
				n++
				w += natural[i]
			}
		}
		if t.plain {
			return w + 2*(n-1)
		}
		return w + 3*n + 1
	}
	for max > 0 && total() > max {
		drop := -1
		for i, c := range t.cols {
			if on[i] && c.prio > 0 && (drop < 0 || c.prio >= t.cols[drop].prio) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		on[drop] = false
		dropped = append(dropped, t.cols[drop].header)
	}
	for max > 0 && total() > max {
		// Cut the widest cut column by what is missing, down to minCut.
		widest := -1
		for i, c := range t.cols {
			if on[i] && c.cut && natural[i] > minCut && (widest < 0 || natural[i] > natural[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		natural[widest] = max2(minCut, natural[widest]-(total()-max))
	}
	for i := range t.cols {
		if on[i] {
			keep = append(keep, i)
			widths = append(widths, natural[i])
		}
	}
	// Dropped in order of importance is how they were found; list them
	// left to right as the table had them.
	var ordered []string
	for i, c := range t.cols {
		if !on[i] {
			ordered = append(ordered, c.header)
		}
	}
	return keep, widths, ordered
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// clip shortens s to width w with an ellipsis.
func clip(s string, w int) string {
	if textWidth(s) <= w {
		return s
	}
	r := []rune(s)
	return string(r[:w-1]) + "…"
}

// render writes the table in at most max columns (0: no limit) and returns
// the headers of the columns it left out.
func (t *textTable) render(w io.Writer, max int) ([]string, error) {
	keep, widths, dropped := t.fit(max)
	var b strings.Builder
	rule := func(ch byte) {
		if t.plain {
			for j, wd := range widths {
				if j > 0 {
					b.WriteString("  ")
				}
				b.WriteString(strings.Repeat(string(ch), wd))
			}
			b.WriteByte('\n')
			return
		}
		b.WriteByte('+')
		for _, wd := range widths {
			b.WriteString(strings.Repeat("-", wd+2))
			b.WriteByte('+')
		}
		b.WriteByte('\n')
	}
	line := func(row int, cells []string, header bool) {
		var parts []string
		for j, i := range keep {
			s := ""
			if i < len(cells) {
				s = clip(cells[i], widths[j])
			}
			pad := strings.Repeat(" ", widths[j]-textWidth(s))
			if t.paint != nil {
				s = t.paint(row, i, s)
			}
			if t.cols[i].right && !header {
				s = pad + s
			} else {
				s += pad
			}
			parts = append(parts, s)
		}
		if t.plain {
			b.WriteString(strings.TrimRight(strings.Join(parts, "  "), " "))
		} else {
			b.WriteString("| " + strings.Join(parts, " | ") + " |")
		}
		b.WriteByte('\n')
	}
	headers := make([]string, len(t.cols))
	for i, c := range t.cols {
		headers[i] = c.header
	}
	if !t.plain {
		rule('-')
	}
	line(-1, headers, true)
	rule('-')
	for r, cells := range t.rows {
		line(r, cells, false)
	}
	if t.footer != nil {
		rule('-')
		line(len(t.rows), t.footer, false)
	}
	if !t.plain {
		rule('-')
	}
	_, err := io.WriteString(w, b.String())
	return dropped, err
}

// wrap breaks prose at spaces to fit width (0: never), starting with first
// and indenting the lines after it with rest, and ends it with a newline.
// A word longer than the width keeps its line to itself.
func wrap(s string, width int, first, rest string) string {
	if width <= 0 || textWidth(first)+textWidth(s) <= width {
		return first + s + "\n"
	}
	var b strings.Builder
	b.WriteString(first)
	col := textWidth(first)
	start := true
	for _, word := range strings.Fields(s) {
		n := textWidth(word)
		if !start && col+1+n > width {
			b.WriteString("\n" + rest)
			col = textWidth(rest)
			start = true
		}
		if !start {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
		start = false
	}
	b.WriteByte('\n')
	return b.String()
}
