package middleware

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/backend"
)

// How the filesystem tools render backend results for the model. Tools
// that parse this output rely on its exact shape.

// maxLineLength is where read_file cuts long lines into continuation rows.
const maxLineLength = 5000

// row is one rendered line of read_file: line is the source line it
// belongs to and part numbers continuation rows (0 for the first row).
type row struct {
	line, part int
	text       string
}

// numberedRows splits content on "\n" (one trailing empty line dropped) and
// cuts lines longer than maxLineLength characters into continuation rows.
func numberedRows(content string, startLine int) []row {
	if content == "" {
		return []row{}
	}
	content = strings.TrimSuffix(content, "\n") // the empty line after a final "\n"
	rows := make([]row, 0, strings.Count(content, "\n")+1)
	for i, rest, more := 0, content, true; more; i++ {
		var line string
		line, rest, more = strings.Cut(rest, "\n")
		n := startLine + i
		if len(line) <= maxLineLength || utf8.RuneCountInString(line) <= maxLineLength {
			rows = append(rows, row{line: n, text: line})
			continue
		}
		part := 0
		for line != "" {
			cut := runeOffset(line, maxLineLength)
			rows = append(rows, row{line: n, part: part, text: line[:cut]})
			line = line[cut:]
			part++
		}
	}
	return rows
}

// marker is the gutter label of a row: "12", or "12.1" for continuations.
func (r row) marker() string { return string(r.appendMarker(nil)) }

func (r row) appendMarker(b []byte) []byte {
	b = strconv.AppendInt(b, int64(r.line), 10)
	if r.part == 0 {
		return b
	}
	return strconv.AppendInt(append(b, '.'), int64(r.part), 10)
}

// renderRows formats rows as "<marker>  <text>" lines joined by "\n", with
// markers right-aligned to the widest one. The two-space separator is
// relied on by tools that parse the output.
func renderRows(rows []row) string {
	var buf [48]byte // markers are built here, not on the heap
	width, size := 0, 0
	for _, r := range rows {
		width = max(width, len(r.appendMarker(buf[:0])))
		size += len(r.text) + 3
	}
	var b strings.Builder
	b.Grow(size + width*len(rows))
	for i, r := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		m := r.appendMarker(buf[:0])
		for range width - len(m) {
			b.WriteByte(' ')
		}
		b.Write(m)
		b.WriteString("  ")
		b.WriteString(r.text)
	}
	return b.String()
}

// runeOffset returns the byte offset of the n-th rune of s (len(s) if s is shorter).
func runeOffset(s string, n int) int {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return i
}

// cutChars returns the first n characters (runes) of s.
func cutChars(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	return s[:runeOffset(s, n)]
}

// grepMode is the output shape of the grep tool (its output_mode argument).
type grepMode string

const (
	grepFilesWithMatches grepMode = "files_with_matches"
	grepContent          grepMode = "content"
	grepCount            grepMode = "count"
)

// formatGrep renders matches: sorted unique paths, "<path>: <n>" counts, or
// per-path blocks of "  <line>: <text>" rows. No matches renders
// "No matches found".
func formatGrep(matches []backend.GrepMatch, mode grepMode) string {
	if len(matches) == 0 {
		return "No matches found"
	}
	byPath := map[string][]backend.GrepMatch{}
	var paths []string
	for _, m := range matches {
		if _, ok := byPath[m.Path]; !ok {
			paths = append(paths, m.Path)
		}
		byPath[m.Path] = append(byPath[m.Path], m)
	}
	slices.Sort(paths)
	var b strings.Builder
	for i, p := range paths {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch mode {
		case grepCount:
			fmt.Fprintf(&b, "%s: %d", p, len(byPath[p]))
		case grepContent:
			b.WriteString(p)
			b.WriteByte(':')
			for _, m := range byPath[p] {
				fmt.Fprintf(&b, "\n  %d: %s", m.Line, m.Text)
			}
		default:
			b.WriteString(p)
		}
	}
	return b.String()
}

// regexLiteralHint returns a note for a grep pattern that looks like a
// regular expression ("a|b", ".*", "\d", …), since grep is literal; "" otherwise.
func regexLiteralHint(pattern string) string {
	looksRegex := strings.Contains(pattern, "|") || strings.Contains(pattern, ".*") || strings.Contains(pattern, ".+")
	if !looksRegex {
		for i := 0; i+1 < len(pattern); i++ {
			if pattern[i] == '\\' && strings.IndexByte(`.wdsbWDSB()[]{}*+?^$|`, pattern[i+1]) >= 0 {
				looksRegex = true
				break
			}
		}
	}
	if !looksRegex {
		return ""
	}
	return "Note: grep matches the pattern as literal text, not as a regular expression. " +
		"To find alternatives, run one search per alternative with the plain text of each."
}

// toolResultCharLimit is the size (characters) above which list and text
// tool results are cut by truncateList and truncateText.
const toolResultCharLimit = 80_000

// truncationGuidance ends a result cut by truncateList or truncateText.
const truncationGuidance = "... [results truncated, try being more specific with your parameters]"

// truncateList keeps a proportional prefix of items when their total size
// exceeds toolResultCharLimit and appends truncationGuidance.
func truncateList(items []string) []string {
	total := 0
	for _, it := range items {
		total += utf8.RuneCountInString(it)
	}
	if total <= toolResultCharLimit {
		return items
	}
	keep := len(items) * toolResultCharLimit / total
	return append(slices.Clone(items[:keep]), truncationGuidance)
}

// truncateText cuts text longer than toolResultCharLimit characters and
// appends truncationGuidance on its own line.
func truncateText(s string) string {
	if len(s) <= toolResultCharLimit || utf8.RuneCountInString(s) <= toolResultCharLimit {
		return s
	}
	return cutChars(s, toolResultCharLimit) + "\n" + truncationGuidance
}

// sanitizeToolCallID makes a tool call id safe to use as a file name by
// replacing ".", "/" and "\" with "_". An empty id becomes "unknown".
func sanitizeToolCallID(id string) string {
	if id == "" {
		return "unknown"
	}
	return strings.NewReplacer(".", "_", "/", "_", `\`, "_").Replace(id)
}
