package backend

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TimeFormat is how backends stamp FileData and FileInfo: ISO-8601 in UTC
// with fixed microseconds, so that stamps sort as strings.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// FormatTime renders t with TimeFormat in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// SliceRead cuts the window [offset, offset+limit) out of a text file, the
// way every backend's Read does. Lines end at "\n", "\r\n" or "\r"; the
// window is returned with LF endings. Empty or whitespace-only content is
// returned as is with no window; limit <= 0 returns no content with
// NoLinesRequested; an offset past the end is an InvalidArgument error.
func SliceRead(fd FileData, offset, limit int) (ReadResult, error) {
	offset = max(offset, 0)
	res := ReadResult{File: FileData{Encoding: fd.Encoding, CreatedAt: fd.CreatedAt, ModifiedAt: fd.ModifiedAt}}
	if res.File.Encoding == "" {
		res.File.Encoding = EncodingUTF8
	}
	content := fd.Content
	if strings.TrimSpace(content) == "" {
		res.File.Content = content
		return res, nil
	}
	if limit <= 0 {
		res.NoLinesRequested = true
		return res, nil
	}
	if !strings.Contains(content, "\r") {
		return sliceLF(res, content, offset, limit)
	}
	total := 0
	var b strings.Builder
	for i := 0; i < len(content); {
		end, next := lineEnd(content, i)
		if total >= offset && total < offset+limit {
			b.WriteString(content[i:end])
			if next > end {
				b.WriteByte('\n')
			}
		}
		total++
		i = next
	}
	if offset >= total {
		return ReadResult{}, errf(InvalidArgument, "", "Line offset %d exceeds file length (%d lines)", offset, total)
	}
	res.File.Content = b.String()
	res.StartLine = offset + 1
	res.EndLine = min(offset+limit, total)
	res.TotalLines = total
	if res.EndLine < total {
		res.NextOffset = res.EndLine
	}
	return res, nil
}

// sliceLF is SliceRead for content with "\n" endings only, using the
// vectorised byte search of the strings package.
func sliceLF(res ReadResult, content string, offset, limit int) (ReadResult, error) {
	total := strings.Count(content, "\n")
	if !strings.HasSuffix(content, "\n") {
		total++
	}
	if offset >= total {
		return ReadResult{}, errf(InvalidArgument, "", "Line offset %d exceeds file length (%d lines)", offset, total)
	}
	start := 0
	for range offset {
		start += strings.IndexByte(content[start:], '\n') + 1
	}
	end := start
	n := min(limit, total-offset)
	for range n {
		i := strings.IndexByte(content[end:], '\n')
		if i < 0 {
			end = len(content)
			break
		}
		end += i + 1
	}
	res.File.Content = strings.Clone(content[start:end])
	res.StartLine = offset + 1
	res.EndLine = offset + n
	res.TotalLines = total
	if res.EndLine < total {
		res.NextOffset = res.EndLine
	}
	return res, nil
}

// lineEnd returns the end of the line starting at i (excluding its
// terminator) and the start of the next line.
func lineEnd(s string, i int) (end, next int) {
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\n':
			return j, j + 1
		case '\r':
			if j+1 < len(s) && s[j+1] == '\n' {
				return j, j + 2
			}
			return j, j + 1
		}
	}
	return len(s), len(s)
}

// CountLines counts lines the way SliceRead does.
func CountLines(s string) int {
	n := 0
	for i := 0; i < len(s); {
		_, i = lineEnd(s, i)
		n++
	}
	return n
}

// Row is one rendered line of FormatLineNumbers: Line is the source line it
// belongs to and Part numbers continuation rows (0 for the first row).
type Row struct {
	Line, Part int
	Text       string
}

// NumberedRows splits content on "\n" (one trailing empty line dropped) and
// cuts lines longer than MaxLineLength characters into continuation rows.
func NumberedRows(content string, startLine int) []Row {
	lines := strings.Split(content, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	rows := make([]Row, 0, len(lines))
	for i, line := range lines {
		n := startLine + i
		if len(line) <= MaxLineLength || utf8.RuneCountInString(line) <= MaxLineLength {
			rows = append(rows, Row{Line: n, Text: line})
			continue
		}
		part := 0
		for line != "" {
			cut := runeOffset(line, MaxLineLength)
			rows = append(rows, Row{Line: n, Part: part, Text: line[:cut]})
			line = line[cut:]
			part++
		}
	}
	return rows
}

// Marker is the gutter label of a row: "12", or "12.1" for continuations.
func (r Row) Marker() string {
	if r.Part == 0 {
		return strconv.Itoa(r.Line)
	}
	return strconv.Itoa(r.Line) + "." + strconv.Itoa(r.Part)
}

// RenderRows formats rows as "<marker>  <text>" lines joined by "\n", with
// markers right-aligned to the widest one. The two-space separator is
// relied on by tools that parse the output.
func RenderRows(rows []Row) string {
	width := 0
	for _, r := range rows {
		width = max(width, len(r.Marker()))
	}
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		m := r.Marker()
		b.WriteString(strings.Repeat(" ", width-len(m)))
		b.WriteString(m)
		b.WriteString("  ")
		b.WriteString(r.Text)
	}
	return b.String()
}

// FormatLineNumbers renders content with a 1-based (from startLine) gutter
// and continuation rows for long lines: "1  one\n2  two".
func FormatLineNumbers(content string, startLine int) string {
	return RenderRows(NumberedRows(content, startLine))
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

// CutChars returns the first n characters (runes) of s.
func CutChars(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	return s[:runeOffset(s, n)]
}

// ReplaceString performs an exact replacement and reports how many
// occurrences it replaced. Without replaceAll, old must occur exactly once.
// Failures are InvalidArgument errors worded for the model, including a hint
// when old differs from the file's ending only by a trailing newline.
func ReplaceString(content, old, repl string, replaceAll bool) (string, int, error) {
	if old == "" {
		return "", 0, errf(InvalidArgument, "", "old_string must not be empty")
	}
	n := strings.Count(content, old)
	if n == 0 {
		if len(old) > 1 && strings.HasSuffix(old, "\n") {
			stripped := strings.TrimSuffix(old, "\n")
			if strings.HasSuffix(content, stripped) {
				if k := strings.Count(content, stripped); k == 1 {
					return "", 0, errf(InvalidArgument, "", "String not found in file: '%s'. The file ends with this text but without the trailing newline; drop the final newline from old_string and try again.", old)
				} else if !replaceAll {
					return "", 0, errf(InvalidArgument, "", "String not found in file: '%s'. Without its trailing newline the text would appear %d times; drop the final newline and add surrounding context to make it unique.", old, k)
				}
			}
		}
		return "", 0, errf(InvalidArgument, "", "String not found in file: '%s'", old)
	}
	if n > 1 && !replaceAll {
		return "", 0, errf(InvalidArgument, "", "String '%s' appears %d times in file. Set replace_all to true to replace every occurrence, or include more surrounding context so the string is unique.", old, n)
	}
	return strings.ReplaceAll(content, old, repl), n, nil
}

// GrepMode is the output shape of the grep tool.
type GrepMode string

// Grep output modes.
const (
	GrepFilesWithMatches GrepMode = "files_with_matches"
	GrepContent          GrepMode = "content"
	GrepCount            GrepMode = "count"
)

// FormatGrep renders matches: sorted unique paths, "<path>: <n>" counts, or
// per-path blocks of "  <line>: <text>" rows. No matches renders
// "No matches found".
func FormatGrep(matches []GrepMatch, mode GrepMode) string {
	if len(matches) == 0 {
		return "No matches found"
	}
	byPath := map[string][]GrepMatch{}
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
		case GrepCount:
			fmt.Fprintf(&b, "%s: %d", p, len(byPath[p]))
		case GrepContent:
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

// RegexLiteralHint returns a note for a grep pattern that looks like a
// regular expression ("a|b", ".*", "\d", …), since grep is literal; "" otherwise.
func RegexLiteralHint(pattern string) string {
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

// ToolResultCharLimit is the size (characters) above which list and text
// tool results are cut by TruncateList and TruncateText.
const ToolResultCharLimit = 80_000

// TruncationGuidance ends a result cut by TruncateList or TruncateText.
const TruncationGuidance = "... [results truncated, try being more specific with your parameters]"

// TruncateList keeps a proportional prefix of items when their total size
// exceeds ToolResultCharLimit and appends TruncationGuidance.
func TruncateList(items []string) []string {
	total := 0
	for _, it := range items {
		total += utf8.RuneCountInString(it)
	}
	if total <= ToolResultCharLimit {
		return items
	}
	keep := len(items) * ToolResultCharLimit / total
	return append(slices.Clone(items[:keep]), TruncationGuidance)
}

// TruncateText cuts text longer than ToolResultCharLimit characters and
// appends TruncationGuidance on its own line.
func TruncateText(s string) string {
	if len(s) <= ToolResultCharLimit || utf8.RuneCountInString(s) <= ToolResultCharLimit {
		return s
	}
	return CutChars(s, ToolResultCharLimit) + "\n" + TruncationGuidance
}

// MediaKind classifies a path by extension for multimodal reads: "image",
// "audio", "video" or "file" with its MIME type, or "text" for everything
// else (including unknown extensions).
func MediaKind(p string) (kind, mime string) {
	ext := strings.ToLower(path.Ext(p))
	if m, ok := mediaTypes[ext]; ok {
		return m[0], m[1]
	}
	return "text", "text/plain"
}

// IsBinaryPath reports whether files at p are read whole (base64) rather
// than as text windows.
func IsBinaryPath(p string) bool {
	k, _ := MediaKind(p)
	return k != "text"
}

// MIMEType guesses a MIME type from the extension; unknown binary files are
// application/octet-stream.
func MIMEType(p string) string {
	ext := strings.ToLower(path.Ext(p))
	if m, ok := mediaTypes[ext]; ok {
		return m[1]
	}
	if m, ok := otherMIME[ext]; ok {
		return m
	}
	return "application/octet-stream"
}

// mediaTypes lists the extensions read as media (the formats multimodal
// model APIs accept), with their block kind and MIME type.
var mediaTypes = map[string][2]string{
	".png": {"image", "image/png"}, ".jpg": {"image", "image/jpeg"}, ".jpeg": {"image", "image/jpeg"},
	".webp": {"image", "image/webp"}, ".gif": {"image", "image/gif"}, ".heic": {"image", "image/heic"},
	".heif": {"image", "image/heif"},
	".mp4":  {"video", "video/mp4"}, ".mpeg": {"video", "video/mpeg"}, ".mpg": {"video", "video/mpeg"},
	".mov": {"video", "video/quicktime"}, ".avi": {"video", "video/x-msvideo"}, ".flv": {"video", "video/x-flv"},
	".webm": {"video", "video/webm"}, ".wmv": {"video", "video/x-ms-wmv"}, ".3gpp": {"video", "video/3gpp"},
	".mkv": {"video", "video/x-matroska"},
	".wav": {"audio", "audio/wav"}, ".mp3": {"audio", "audio/mpeg"}, ".aiff": {"audio", "audio/aiff"},
	".aac": {"audio", "audio/aac"}, ".ogg": {"audio", "audio/ogg"}, ".flac": {"audio", "audio/flac"},
	".pdf": {"file", "application/pdf"}, ".ppt": {"file", "application/vnd.ms-powerpoint"},
	".pptx": {"file", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
}

var otherMIME = map[string]string{
	".zip": "application/zip", ".gz": "application/gzip", ".tar": "application/x-tar",
	".json": "application/json", ".txt": "text/plain", ".csv": "text/csv", ".html": "text/html",
}
