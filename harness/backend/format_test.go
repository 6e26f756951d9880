package backend_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
)

func TestFormatLineNumbers(t *testing.T) {
	assert.Equal(t, "1  one\n2  two", backend.FormatLineNumbers("one\ntwo\n", 1))
	assert.Equal(t, " 9  a\n10  \n11  c", backend.FormatLineNumbers("a\n\nc", 9))
	long := strings.Repeat("x", 5000) + "yy"
	assert.Equal(t, "  7  "+strings.Repeat("x", 5000)+"\n7.1  yy", backend.FormatLineNumbers(long, 7))
	multi := strings.Repeat("é", 5001)
	got := backend.FormatLineNumbers(multi, 1)
	assert.Equal(t, "  1  "+strings.Repeat("é", 5000)+"\n1.1  é", got, "lines are cut by characters, not bytes")
	assert.Equal(t, "", backend.FormatLineNumbers("", 1))
}

func TestSliceRead(t *testing.T) {
	fd := backend.FileData{Content: "a\r\nb\rc\nd", CreatedAt: "c", ModifiedAt: "m"}
	r, err := backend.SliceRead(fd, 1, 2)
	require.NoError(t, err)
	assert.Equal(t, backend.ReadResult{File: backend.FileData{Content: "b\nc\n", Encoding: "utf-8", CreatedAt: "c", ModifiedAt: "m"}, StartLine: 2, EndLine: 3, TotalLines: 4, NextOffset: 3}, r)
	r, err = backend.SliceRead(fd, 3, 5)
	require.NoError(t, err)
	assert.Equal(t, "d", r.File.Content)
	assert.Equal(t, 0, r.NextOffset)
	_, err = backend.SliceRead(fd, 4, 1)
	assert.EqualError(t, err, "Line offset 4 exceeds file length (4 lines)")
	assert.Equal(t, 4, backend.CountLines(fd.Content))
}

func TestReplaceString(t *testing.T) {
	out, n, err := backend.ReplaceString("a b a", "a", "c", true)
	require.NoError(t, err)
	assert.Equal(t, "c b c", out)
	assert.Equal(t, 2, n)
	_, _, err = backend.ReplaceString("a b a", "a", "c", false)
	assert.EqualError(t, err, "String 'a' appears 2 times in file. Set replace_all to true to replace every occurrence, or include more surrounding context so the string is unique.")
	_, _, err = backend.ReplaceString("x\ny", "y\n", "z", false)
	assert.ErrorContains(t, err, "without the trailing newline")
	_, _, err = backend.ReplaceString("ay\nby", "cy\n", "z", false)
	assert.EqualError(t, err, "String not found in file: 'cy\n'")
	_, _, err = backend.ReplaceString("yy", "y\n", "z", false)
	assert.ErrorContains(t, err, "would appear 2 times")
	_, _, err = backend.ReplaceString("abc", "", "z", true)
	assert.Error(t, err)
}

func TestFormatGrep(t *testing.T) {
	ms := []backend.GrepMatch{{Path: "/b", Line: 3, Text: "x"}, {Path: "/a", Line: 1, Text: "y"}, {Path: "/b", Line: 1, Text: "z"}}
	assert.Equal(t, "/a\n/b", backend.FormatGrep(ms, backend.GrepFilesWithMatches))
	assert.Equal(t, "/a: 1\n/b: 2", backend.FormatGrep(ms, backend.GrepCount))
	assert.Equal(t, "/a:\n  1: y\n/b:\n  3: x\n  1: z", backend.FormatGrep(ms, backend.GrepContent), "lines stay in match order")
	assert.Equal(t, "No matches found", backend.FormatGrep(nil, backend.GrepContent))
	for _, p := range []string{"a|b", "foo.*", `\d+`, `\bword`, `x.+y`, `\(`} {
		assert.NotEmpty(t, backend.RegexLiteralHint(p), p)
	}
	for _, p := range []string{"plain", "a.b", "C:\\path", "x+y"} {
		assert.Empty(t, backend.RegexLiteralHint(p), p)
	}
}

func TestTruncate(t *testing.T) {
	items := make([]string, 1000)
	for i := range items {
		items[i] = strings.Repeat("p", 99)
	}
	out := backend.TruncateList(items)
	assert.Len(t, out, 809, "1000*80000/99000 items plus the guidance")
	assert.Equal(t, backend.TruncationGuidance, out[len(out)-1])
	assert.Len(t, backend.TruncateList(items[:10]), 10)
	s := strings.Repeat("é", 80_001)
	cut := backend.TruncateText(s)
	assert.Equal(t, strings.Repeat("é", 80_000)+"\n"+backend.TruncationGuidance, cut)
	assert.Equal(t, "short", backend.TruncateText("short"))
}

func TestMediaKind(t *testing.T) {
	for p, want := range map[string][2]string{
		"/a.PNG": {"image", "image/png"}, "/v.mkv": {"video", "video/x-matroska"}, "/s.mp3": {"audio", "audio/mpeg"},
		"/d.pdf": {"file", "application/pdf"}, "/c.go": {"text", "text/plain"}, "/noext": {"text", "text/plain"},
	} {
		k, m := backend.MediaKind(p)
		assert.Equal(t, want, [2]string{k, m}, p)
	}
	assert.Equal(t, "application/octet-stream", backend.MIMEType("/x.bin"))
	assert.Equal(t, "application/zip", backend.MIMEType("/x.zip"))
}
