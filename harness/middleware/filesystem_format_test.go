package middleware

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dageval/dageval/harness/backend"
)

func TestNumberedRows(t *testing.T) {
	lineNumbers := func(content string, start int) string { return renderRows(numberedRows(content, start)) }
	assert.Equal(t, "1  one\n2  two", lineNumbers("one\ntwo\n", 1))
	assert.Equal(t, " 9  a\n10  \n11  c", lineNumbers("a\n\nc", 9))
	long := strings.Repeat("x", 5000) + "yy"
	assert.Equal(t, "  7  "+strings.Repeat("x", 5000)+"\n7.1  yy", lineNumbers(long, 7))
	multi := strings.Repeat("é", 5001)
	got := lineNumbers(multi, 1)
	assert.Equal(t, "  1  "+strings.Repeat("é", 5000)+"\n1.1  é", got, "lines are cut by characters, not bytes")
	assert.Equal(t, "", lineNumbers("", 1))
}

func TestFormatGrep(t *testing.T) {
	ms := []backend.GrepMatch{{Path: "/b", Line: 3, Text: "x"}, {Path: "/a", Line: 1, Text: "y"}, {Path: "/b", Line: 1, Text: "z"}}
	assert.Equal(t, "/a\n/b", formatGrep(ms, grepFilesWithMatches))
	assert.Equal(t, "/a: 1\n/b: 2", formatGrep(ms, grepCount))
	assert.Equal(t, "/a:\n  1: y\n/b:\n  3: x\n  1: z", formatGrep(ms, grepContent), "lines stay in match order")
	assert.Equal(t, "No matches found", formatGrep(nil, grepContent))
	for _, p := range []string{"a|b", "foo.*", `\d+`, `\bword`, `x.+y`, `\(`} {
		assert.NotEmpty(t, regexLiteralHint(p), p)
	}
	for _, p := range []string{"plain", "a.b", "C:\\path", "x+y"} {
		assert.Empty(t, regexLiteralHint(p), p)
	}
}

func TestTruncate(t *testing.T) {
	items := make([]string, 1000)
	for i := range items {
		items[i] = strings.Repeat("p", 99)
	}
	out := truncateList(items)
	assert.Len(t, out, 809, "1000*80000/99000 items plus the guidance")
	assert.Equal(t, truncationGuidance, out[len(out)-1])
	assert.Len(t, truncateList(items[:10]), 10)
	s := strings.Repeat("é", 80_001)
	cut := truncateText(s)
	assert.Equal(t, strings.Repeat("é", 80_000)+"\n"+truncationGuidance, cut)
	assert.Equal(t, "short", truncateText("short"))
}

func TestSanitizeToolCallID(t *testing.T) {
	assert.Equal(t, "call_1_x_y", sanitizeToolCallID(`call.1/x\y`))
	assert.Equal(t, "unknown", sanitizeToolCallID(""))
}
