package reports

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// textTable is a terminal table that fits a width: it drops its least
// important columns first and then shortens the columns that may be cut,
// so a report never wraps in a terminal. That decision is ours (fit);
// tablewriter draws the table. Boxed tables draw ASCII borders (the wide
// layout); plain ones separate columns with two spaces, which saves a
// column's worth of characters for every three columns (the compact
// layout).
type textTable struct {
	cols   []textColumn
	rows   [][]string
	footer []string
	plain  bool
	// paint colours a cell's text before it is padded (row -1 is the
	// header, len(rows) the footer); nil paints nothing. Widths are
	// measured without the colour codes, so colour never shifts a column.
	paint func(row, col int, text string) string
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

// textWidth is the width of s in terminal cells, colour codes left out,
// measured as tablewriter measures it, so that the widths fit plans are
// the widths tablewriter draws.
func textWidth(s string) int { return twwidth.Width(s) }

// minCut is the narrowest a cut column gets (or its header, when wider).
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
	}
	for max > 0 && total() > max {
		// Cut the widest cut column by what is missing, down to minCut
		// (never narrower than its header, which is not cut).
		widest := -1
		for i, c := range t.cols {
			if on[i] && c.cut && natural[i] > cutFloor(c) && (widest < 0 || natural[i] > natural[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		natural[widest] = max2(cutFloor(t.cols[widest]), natural[widest]-(total()-max))
	}
	for i, c := range t.cols {
		if on[i] {
			keep = append(keep, i)
			widths = append(widths, natural[i])
		} else {
			// Listed left to right as the table had them, not in the
			// order they were dropped.
			dropped = append(dropped, c.header)
		}
	}
	return keep, widths, dropped
}

func cutFloor(c textColumn) int { return max2(minCut, textWidth(c.header)) }

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// plainSymbols draw the compact layout: no borders, two spaces between
// columns, the rules under the header and above the footer in dashes.
var plainSymbols = tw.NewSymbolCustom("dageval-plain").WithRow("-").WithColumn("  ").WithCenter("  ")

// render writes the table in at most max columns (0: no limit) and returns
// the headers of the columns it left out. fit chooses the columns and caps
// the width of the cut ones; tablewriter draws the table, aligns and pads
// the cells and truncates what is wider than a cap with an ellipsis.
func (t *textTable) render(w io.Writer, max int) ([]string, error) {
	keep, widths, dropped := t.fit(max)
	rendition := tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)}
	padding := tw.Padding{Left: " ", Right: " "}
	if t.plain {
		rendition = tw.Rendition{Borders: tw.BorderNone, Symbols: plainSymbols}
		padding = tw.PaddingNone
	}
	align := make([]tw.Align, len(keep))
	caps := tw.NewMapper[int, int]()
	for j, i := range keep {
		align[j] = tw.AlignLeft
		if t.cols[i].right {
			align[j] = tw.AlignRight
		}
		if t.cols[i].cut {
			// A cap counts the padding.
			caps.Set(j, widths[j]+textWidth(padding.Left)+textWidth(padding.Right))
		}
	}
	var b bytes.Buffer
	table := tablewriter.NewTable(&b,
		tablewriter.WithRenderer(renderer.NewBlueprint(rendition)),
		tablewriter.WithPadding(padding),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithFooterAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapTruncate),
		tablewriter.WithFooterAutoWrap(tw.WrapTruncate),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithFooterAlignmentConfig(tw.CellAlignment{PerColumn: align}),
	).Configure(func(c *tablewriter.Config) {
		c.Row.ColMaxWidths.PerColumn = caps
		c.Footer.ColMaxWidths.PerColumn = caps
	})
	cells := func(row int, src []string) []string {
		out := make([]string, len(keep))
		for j, i := range keep {
			if i < len(src) {
				out[j] = src[i]
			}
			if t.paint != nil {
				out[j] = t.paint(row, i, out[j])
			}
		}
		return out
	}
	headers := make([]string, len(t.cols))
	for i, c := range t.cols {
		headers[i] = c.header
	}
	table.Header(cells(-1, headers))
	for r, row := range t.rows {
		if err := table.Append(cells(r, row)); err != nil {
			return dropped, err
		}
	}
	if t.footer != nil {
		table.Footer(cells(len(t.rows), t.footer))
	}
	if err := table.Render(); err != nil {
		return dropped, err
	}
	out := b.String()
	if t.plain {
		// The last column is padded like the others; a plain line ends
		// where its text does.
		lines := strings.SplitAfter(out, "\n")
		for k, l := range lines {
			if body, ok := strings.CutSuffix(l, "\n"); ok {
				lines[k] = strings.TrimRight(body, " ") + "\n"
			}
		}
		out = strings.Join(lines, "")
	}
	_, err := io.WriteString(w, out)
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
