package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dageval/dageval/internal/fileutil"
	"github.com/dageval/dageval/internal/scrub"
)

// Format is a report format.
type Format string

// The report formats.
const (
	FormatTable Format = "table" // terminal text with ASCII tables
	FormatMD    Format = "md"    // GitHub markdown, shaped as a pull-request comment
	FormatJSON  Format = "json"  // the versioned JSON report (ReportSchema)
	FormatJUnit Format = "junit" // JUnit XML
	FormatHTML  Format = "html"  // one self-contained HTML page with transcripts
)

// Formats lists every format in a fixed order.
var Formats = []Format{FormatTable, FormatMD, FormatJSON, FormatJUnit, FormatHTML}

// Ext is the file name suffix used when a format is written to a file.
func (f Format) Ext() string {
	switch f {
	case FormatTable:
		return ".txt"
	case FormatMD:
		return ".md"
	case FormatJSON:
		return ".json"
	case FormatJUnit:
		return ".junit.xml"
	case FormatHTML:
		return ".html"
	}
	return ""
}

// ParseFormats parses a comma-separated list such as "table,md,html",
// accepting "markdown", "text" and "xml" as aliases, dropping repeats and
// keeping the order given.
func ParseFormats(s string) ([]Format, error) {
	var out []Format
	seen := map[Format]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		f := Format(p)
		switch p {
		case "markdown":
			f = FormatMD
		case "text", "txt", "terminal":
			f = FormatTable
		case "xml":
			f = FormatJUnit
		case "":
			continue
		}
		if f.Ext() == "" {
			return nil, fmt.Errorf("unknown report format %q (want table, md, json, junit or html)", p)
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no report format given")
	}
	return out, nil
}

// Render writes one format of a run's report to w.
func Render(w io.Writer, r *Run, f Format) error { return RenderWith(w, r, f, TextOptions{}) }

// RenderWith writes one format of a run's report to w, the table for a
// terminal as o says. Every report is scrubbed on its way out (see
// scrubbed).
func RenderWith(w io.Writer, r *Run, f Format, o TextOptions) error {
	return scrubbed(w, func(w io.Writer) error { return renderWith(w, r, f, o) })
}

// scrubbed renders into memory and writes the result with the secrets of
// the environment (scrub.SecretEnv) and key-shaped strings replaced. The
// runner scrubs results and cell files with the run's own secrets as it
// writes them, so this only matters for runs written before, or by other
// means: no report carries a key, whatever it was rendered from.
func scrubbed(w io.Writer, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	_, err := w.Write(scrub.FromEnv(nil).Bytes(buf.Bytes()))
	return err
}

func renderWith(w io.Writer, r *Run, f Format, o TextOptions) error {
	rep := Build(r)
	switch f {
	case FormatTable:
		return rep.WriteTextWith(w, o)
	case FormatMD:
		return rep.WriteMarkdown(w)
	case FormatJSON:
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case FormatJUnit:
		return rep.WriteJUnit(w)
	case FormatHTML:
		return WriteHTML(w, r)
	}
	return fmt.Errorf("unknown report format %q", f)
}

// OutputPaths decides where each format goes when written to files. dest is
// a directory when it exists as one or ends in a path separator, and then
// every format is written as report<ext> inside it; otherwise dest is a path
// prefix and each format is written to dest<ext> — except that a single
// format whose extension dest already has is written to dest itself, so
// "-o report.html --format html" does what it says.
func OutputPaths(dest string, formats []Format) []string {
	isDir := strings.HasSuffix(dest, "/") || strings.HasSuffix(dest, string(filepath.Separator))
	if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
		isDir = true
	}
	paths := make([]string, len(formats))
	for i, f := range formats {
		switch {
		case isDir:
			paths[i] = filepath.Join(dest, "report"+f.Ext())
		case len(formats) == 1 && strings.HasSuffix(dest, f.Ext()):
			paths[i] = dest
		case len(formats) == 1 && f == FormatJUnit && strings.HasSuffix(dest, ".xml"):
			paths[i] = dest
		default:
			paths[i] = dest + f.Ext()
		}
	}
	return paths
}

// WriteFiles renders each format to its file (see OutputPaths) and returns
// the paths written. Every format is rendered in memory first and written
// through a temporary file and a rename, so a failure leaves no half-written
// report behind. The runner calls it at the end of `dageval run`.
func WriteFiles(r *Run, formats []Format, dest string) ([]string, error) {
	paths := OutputPaths(dest, formats)
	bufs := make([]bytes.Buffer, len(formats))
	for i, f := range formats {
		if err := Render(&bufs[i], r, f); err != nil {
			return nil, fmt.Errorf("%s report: %w", f, err)
		}
	}
	for i, p := range paths {
		if err := fileutil.WriteFileAtomic(p, bufs[i].Bytes()); err != nil {
			return paths[:i], err
		}
	}
	return paths, nil
}
