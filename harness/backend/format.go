package backend

import (
	"path"
	"strings"
	"sync"
	"time"
)

// timeFormat is how backends stamp FileData and FileInfo: ISO-8601 in UTC
// with fixed microseconds, so that stamps sort as strings.
const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// FormatTime renders t the way backends stamp FileData and FileInfo, so
// that other stamps an agent sees read the same.
func FormatTime(t time.Time) string {
	lastStamp.mu.Lock()
	defer lastStamp.mu.Unlock()
	if lastStamp.text == "" || !lastStamp.t.Equal(t) {
		lastStamp.t, lastStamp.text = t, t.UTC().Format(timeFormat)
	}
	return lastStamp.text
}

// lastStamp is the last time FormatTime rendered, and how: a run on a
// fixed clock (a replay, a test) stamps every write with the same time, and
// formatting it was a tenth of writing a small file.
var lastStamp struct {
	mu   sync.Mutex
	t    time.Time
	text string
}

// sliceRead cuts the window [offset, offset+limit) out of a text file, the
// way every backend's Read does. Lines end at "\n", "\r\n" or "\r"; the
// window is returned with LF endings. Empty or whitespace-only content is
// returned as is with no window; limit <= 0 returns no content with
// NoLinesRequested; an offset past the end is an InvalidArgument error.
func sliceRead(fd FileData, offset, limit int) (ReadResult, error) {
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

// sliceLF is sliceRead for content with "\n" endings only, using the
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
	res.File.Content = content
	if start > 0 || end < len(content) {
		// A window of a larger file is copied so that it does not keep
		// the whole file alive; the whole file is shared as it is.
		res.File.Content = strings.Clone(content[start:end])
	}
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

// replaceString performs an exact replacement and reports how many
// occurrences it replaced. Without replaceAll, old must occur exactly once.
// Failures are InvalidArgument errors worded for the model, including a hint
// when old differs from the file's ending only by a trailing newline.
func replaceString(content, old, repl string, replaceAll bool) (string, int, error) {
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
