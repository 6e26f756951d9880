package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSliceRead(t *testing.T) {
	fd := FileData{Content: "a\r\nb\rc\nd", CreatedAt: "c", ModifiedAt: "m"}
	r, err := sliceRead(fd, 1, 2)
	require.NoError(t, err)
	assert.Equal(t, ReadResult{File: FileData{Content: "b\nc\n", Encoding: "utf-8", CreatedAt: "c", ModifiedAt: "m"}, StartLine: 2, EndLine: 3, TotalLines: 4, NextOffset: 3}, r)
	r, err = sliceRead(fd, 3, 5)
	require.NoError(t, err)
	assert.Equal(t, "d", r.File.Content)
	assert.Equal(t, 0, r.NextOffset)
	_, err = sliceRead(fd, 4, 1)
	assert.EqualError(t, err, "Line offset 4 exceeds file length (4 lines)")
}

func TestReplaceString(t *testing.T) {
	out, n, err := replaceString("a b a", "a", "c", true)
	require.NoError(t, err)
	assert.Equal(t, "c b c", out)
	assert.Equal(t, 2, n)
	_, _, err = replaceString("a b a", "a", "c", false)
	assert.EqualError(t, err, "String 'a' appears 2 times in file. Set replace_all to true to replace every occurrence, or include more surrounding context so the string is unique.")
	_, _, err = replaceString("x\ny", "y\n", "z", false)
	assert.ErrorContains(t, err, "without the trailing newline")
	_, _, err = replaceString("ay\nby", "cy\n", "z", false)
	assert.EqualError(t, err, "String not found in file: 'cy\n'")
	_, _, err = replaceString("yy", "y\n", "z", false)
	assert.ErrorContains(t, err, "would appear 2 times")
	_, _, err = replaceString("abc", "", "z", true)
	assert.Error(t, err)
}

func TestMediaKind(t *testing.T) {
	for p, want := range map[string][2]string{
		"/a.PNG": {"image", "image/png"}, "/v.mkv": {"video", "video/x-matroska"}, "/s.mp3": {"audio", "audio/mpeg"},
		"/d.pdf": {"file", "application/pdf"}, "/c.go": {"text", "text/plain"}, "/noext": {"text", "text/plain"},
	} {
		k, m := MediaKind(p)
		assert.Equal(t, want, [2]string{k, m}, p)
	}
	assert.Equal(t, "application/octet-stream", MIMEType("/x.bin"))
	assert.Equal(t, "application/zip", MIMEType("/x.zip"))
}
