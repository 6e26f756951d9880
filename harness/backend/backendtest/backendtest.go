package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/dageval/dageval/harness/backend"
)

// Harness tells Run how to exercise one kind of backend.
type Harness struct {
	// New returns a fresh, empty backend for one subtest.
	New func(t *testing.T) backend.Backend
	// Within calls fn with a context in which the backend can be used.
	// Nil calls fn(t.Context()). The State backend needs a tool call of a
	// running agent: see StateHarness and InToolCall.
	Within func(t *testing.T, fn func(ctx context.Context))
	// Root is the directory the suite works in ("" means "/"), e.g. the
	// prefix of a Composite route to test the route rather than the
	// default backend.
	Root string
}

// Run checks that a backend honours the Backend contract: reads and
// windows, writes, edits, listings, deletes (when it is a Deleter), the
// glob semantics matrix, grep, uploads and downloads, appends (through
// Append when it is an Appender), and refusal of hostile paths. Backends must report virtual paths ("/dir/file").
func Run(t *testing.T, h Harness) {
	t.Helper()
	root := "/"
	if h.Root != "" {
		root = path.Clean("/" + h.Root)
	}
	s := &suite{h: h, root: root}
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, b backend.Backend)
	}{
		{"WriteRead", s.writeRead},
		{"ReadWindows", s.readWindows},
		{"ReadErrors", s.readErrors},
		{"EmptyFiles", s.emptyFiles},
		{"Edit", s.edit},
		{"Ls", s.ls},
		{"Shape", s.shape},
		{"Delete", s.delete},
		{"GlobMatrix", s.globMatrix},
		{"GlobErrors", s.globErrors},
		{"Grep", s.grep},
		{"UploadDownload", s.uploadDownload},
		{"Append", s.appendFile},
		{"HostilePaths", s.hostilePaths},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := h.New(t)
			run := h.Within
			if run == nil {
				run = func(t *testing.T, fn func(ctx context.Context)) { fn(t.Context()) }
			}
			run(t, func(ctx context.Context) { c.fn(t, ctx, b) })
		})
	}
}

type suite struct {
	h    Harness
	root string
}

// p returns a path under the suite's root.
// It does not clean rel, so hostile components reach the backend.
func (s *suite) p(rel string) string {
	if s.root == "/" {
		return "/" + rel
	}
	return s.root + "/" + rel
}

func mustWrite(t *testing.T, ctx context.Context, b backend.Backend, p, content string) {
	t.Helper()
	if err := b.Write(ctx, p, content); err != nil {
		t.Fatalf("Write(%q): %v", p, err)
	}
}

func wantCode(t *testing.T, what string, err error, codes ...backend.ErrorCode) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want %v", what, codes)
		return
	}
	if got := backend.CodeOf(err); !slices.Contains(codes, got) {
		t.Errorf("%s: error %q has code %q, want one of %v", what, err, got, codes)
	}
}

// checkRead verifies the ReadResult invariants.
func checkRead(t *testing.T, what string, r backend.ReadResult) {
	t.Helper()
	if (r.StartLine == 0) != (r.EndLine == 0) {
		t.Errorf("%s: StartLine %d and EndLine %d must both be set or both unset", what, r.StartLine, r.EndLine)
	}
	if r.NoLinesRequested && (r.StartLine != 0 || r.TotalLines != 0 || r.NextOffset != 0 || r.File.Content != "") {
		t.Errorf("%s: NoLinesRequested with a window or content: %+v", what, r)
	}
	if r.StartLine != 0 {
		if r.StartLine < 1 || r.StartLine > r.EndLine {
			t.Errorf("%s: window %d-%d is not 1 <= start <= end", what, r.StartLine, r.EndLine)
		}
		if r.TotalLines != 0 && r.TotalLines < r.EndLine {
			t.Errorf("%s: TotalLines %d < EndLine %d", what, r.TotalLines, r.EndLine)
		}
	}
	if r.NextOffset != 0 && r.NextOffset != r.EndLine {
		t.Errorf("%s: NextOffset %d != EndLine %d", what, r.NextOffset, r.EndLine)
	}
	if r.StartLine == 0 && (r.NextOffset != 0 || r.TotalLines != 0) {
		t.Errorf("%s: pagination fields without a window: %+v", what, r)
	}
}

func (s *suite) read(t *testing.T, ctx context.Context, b backend.Backend, p string, off, lim int) backend.ReadResult {
	t.Helper()
	r, err := b.Read(ctx, p, off, lim)
	if err != nil {
		t.Fatalf("Read(%q, %d, %d): %v", p, off, lim, err)
	}
	checkRead(t, fmt.Sprintf("Read(%q, %d, %d)", p, off, lim), r)
	return r
}

// wholeFile is a read window larger than any file the suite writes (Deep
// Agents' default read limit).
const wholeFile = 2000

func (s *suite) writeRead(t *testing.T, ctx context.Context, b backend.Backend) {
	a := s.p("a.txt")
	mustWrite(t, ctx, b, a, "one\ntwo\nthree\n")
	r := s.read(t, ctx, b, a, 0, wholeFile)
	if r.File.Content != "one\ntwo\nthree\n" || r.StartLine != 1 || r.EndLine != 3 || r.TotalLines != 3 || r.NextOffset != 0 {
		t.Errorf("full read = %+v", r)
	}
	if r.File.Encoding != backend.EncodingUTF8 {
		t.Errorf("text file encoding = %q, want utf-8", r.File.Encoding)
	}
	mustWrite(t, ctx, b, a, "replaced")
	if r := s.read(t, ctx, b, a, 0, 10); r.File.Content != "replaced" {
		t.Errorf("after overwrite, content = %q", r.File.Content)
	}
	deep := s.p("dir/sub/deep.txt")
	mustWrite(t, ctx, b, deep, "deep")
	if r := s.read(t, ctx, b, deep, 0, 10); r.File.Content != "deep" {
		t.Errorf("nested file content = %q", r.File.Content)
	}
	// Paths are normalised: a missing leading slash, doubled slashes and
	// "." components name the same file.
	alias := strings.TrimPrefix(s.p("dir//./sub/deep.txt"), "/")
	if r := s.read(t, ctx, b, "/"+alias, 0, 10); r.File.Content != "deep" {
		t.Errorf("Read via %q = %q", "/"+alias, r.File.Content)
	}
	crlf := s.p("crlf.txt")
	mustWrite(t, ctx, b, crlf, "a\r\nb\rc\n")
	if r := s.read(t, ctx, b, crlf, 0, 10); r.File.Content != "a\nb\nc\n" || r.TotalLines != 3 {
		t.Errorf("CRLF/CR window = %q (%d lines), want LF endings and 3 lines", r.File.Content, r.TotalLines)
	}
}

func (s *suite) readWindows(t *testing.T, ctx context.Context, b backend.Backend) {
	f := s.p("five.txt")
	mustWrite(t, ctx, b, f, "one\ntwo\nthree\nfour\nfive\n")
	tests := []struct {
		off, lim                   int
		content                    string
		start, end, total, nextOff int
		noLines                    bool
	}{
		{0, 2, "one\ntwo\n", 1, 2, 5, 2, false},
		{2, 2, "three\nfour\n", 3, 4, 5, 4, false},
		{4, 1, "five\n", 5, 5, 5, 0, false},
		{3, 100, "four\nfive\n", 4, 5, 5, 0, false},
		{-3, 1, "one\n", 1, 1, 5, 1, false},
		{0, 0, "", 0, 0, 0, 0, true},
		{1, -4, "", 0, 0, 0, 0, true},
	}
	for _, tt := range tests {
		r := s.read(t, ctx, b, f, tt.off, tt.lim)
		got := []any{r.File.Content, r.StartLine, r.EndLine, r.TotalLines, r.NextOffset, r.NoLinesRequested}
		want := []any{tt.content, tt.start, tt.end, tt.total, tt.nextOff, tt.noLines}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Read(offset %d, limit %d) = %q, want %q", tt.off, tt.lim, got, want)
		}
	}
	_, err := b.Read(ctx, f, 5, 10)
	wantCode(t, "Read past the end", err, backend.InvalidArgument)
	if err != nil && !strings.Contains(err.Error(), "exceeds file length (5 lines)") {
		t.Errorf("Read past the end: %q does not say the file has 5 lines", err)
	}
}

func (s *suite) readErrors(t *testing.T, ctx context.Context, b backend.Backend) {
	_, err := b.Read(ctx, s.p("missing.txt"), 0, 10)
	wantCode(t, "Read of a missing file", err, backend.FileNotFound)
	if !errors.Is(err, backend.ErrFileNotFound) {
		t.Errorf("errors.Is(%v, ErrFileNotFound) = false", err)
	}
	mustWrite(t, ctx, b, s.p("d/f.txt"), "x")
	_, err = b.Read(ctx, s.p("d"), 0, 10)
	wantCode(t, "Read of a directory", err, backend.IsDirectory)
	_, err = b.Read(ctx, s.p("../etc/passwd"), 0, 10)
	wantCode(t, "Read with ..", err, backend.InvalidPath)
}

func (s *suite) emptyFiles(t *testing.T, ctx context.Context, b backend.Backend) {
	for name, content := range map[string]string{"empty.txt": "", "blank.txt": "  \n\t\n"} {
		p := s.p(name)
		mustWrite(t, ctx, b, p, content)
		r := s.read(t, ctx, b, p, 0, 100)
		if r.File.Content != content || r.StartLine != 0 || r.NoLinesRequested {
			t.Errorf("Read(%s) = %+v, want the content back unchanged without a window", name, r)
		}
		// An empty file reads the same whatever the limit: it was inspected.
		if r := s.read(t, ctx, b, p, 0, 0); r.NoLinesRequested || r.File.Content != content {
			t.Errorf("Read(%s, limit 0) = %+v, want the empty content, not NoLinesRequested", name, r)
		}
	}
}

func (s *suite) edit(t *testing.T, ctx context.Context, b backend.Backend) {
	f := s.p("e.txt")
	mustWrite(t, ctx, b, f, "alpha beta\nbeta gamma\n")
	n, err := b.Edit(ctx, backend.EditRequest{Path: f, Old: "alpha", New: "ALPHA"})
	if err != nil || n != 1 {
		t.Fatalf("unique edit = %d, %v", n, err)
	}
	_, err = b.Edit(ctx, backend.EditRequest{Path: f, Old: "beta", New: "B"})
	wantCode(t, "ambiguous edit", err, backend.InvalidArgument)
	if err != nil && !strings.Contains(err.Error(), "appears 2 times") {
		t.Errorf("ambiguous edit error %q does not count the occurrences", err)
	}
	n, err = b.Edit(ctx, backend.EditRequest{Path: f, Old: "beta", New: "B", ReplaceAll: true})
	if err != nil || n != 2 {
		t.Fatalf("replace-all edit = %d, %v", n, err)
	}
	if r := s.read(t, ctx, b, f, 0, 10); r.File.Content != "ALPHA B\nB gamma\n" {
		t.Errorf("after edits content = %q", r.File.Content)
	}
	_, err = b.Edit(ctx, backend.EditRequest{Path: f, Old: "zeta", New: "z"})
	wantCode(t, "edit of an absent string", err, backend.InvalidArgument)
	if err != nil && !strings.Contains(err.Error(), "String not found in file: 'zeta'") {
		t.Errorf("absent-string error = %q", err)
	}
	mustWrite(t, ctx, b, f, "last line")
	_, err = b.Edit(ctx, backend.EditRequest{Path: f, Old: "last line\n", New: "x"})
	if err == nil || !strings.Contains(err.Error(), "trailing newline") {
		t.Errorf("edit with a spurious trailing newline: error %v, want the trailing-newline hint", err)
	}
	_, err = b.Edit(ctx, backend.EditRequest{Path: s.p("nope.txt"), Old: "a", New: "b"})
	wantCode(t, "edit of a missing file", err, backend.FileNotFound)
	if r := s.read(t, ctx, b, f, 0, 10); r.File.Content != "last line" {
		t.Errorf("failed edits changed the file: %q", r.File.Content)
	}
}

func paths(fis []backend.FileInfo) []string {
	out := make([]string, len(fis))
	for i, fi := range fis {
		out[i] = fi.Path
	}
	return out
}

func (s *suite) ls(t *testing.T, ctx context.Context, b backend.Backend) {
	for _, f := range []string{"b.txt", "a.txt", "sub/c.txt", "sub/deeper/d.txt", "other/e.txt"} {
		mustWrite(t, ctx, b, s.p(f), "content "+f)
	}
	got, err := b.Ls(ctx, s.root)
	if err != nil {
		t.Fatalf("Ls(%s): %v", s.root, err)
	}
	want := []string{s.p("a.txt"), s.p("b.txt"), s.p("other") + "/", s.p("sub") + "/"}
	if !slices.Equal(paths(got), want) {
		t.Errorf("Ls(%s) = %q, want %q", s.root, paths(got), want)
	}
	for _, fi := range got {
		if strings.HasSuffix(fi.Path, "/") != fi.IsDir {
			t.Errorf("entry %q: IsDir %v disagrees with the trailing slash", fi.Path, fi.IsDir)
		}
		if fi.Path == s.p("a.txt") && fi.Size != int64(len("content a.txt")) {
			t.Errorf("size of a.txt = %d", fi.Size)
		}
	}
	got, err = b.Ls(ctx, s.p("sub")+"/")
	if err != nil {
		t.Fatalf("Ls(sub/): %v", err)
	}
	if want := []string{s.p("sub/c.txt"), s.p("sub/deeper") + "/"}; !slices.Equal(paths(got), want) {
		t.Errorf("Ls(sub/) = %q, want %q", paths(got), want)
	}
	_, err = b.Ls(ctx, s.p("missing"))
	wantCode(t, "Ls of a missing directory", err, backend.FileNotFound)
	_, err = b.Ls(ctx, s.p("a.txt"))
	wantCode(t, "Ls of a file", err, backend.NotADirectory)
}

func (s *suite) shape(t *testing.T, ctx context.Context, b backend.Backend) {
	mustWrite(t, ctx, b, s.p("d/f.txt"), "x")
	wantCode(t, "Write over a directory", b.Write(ctx, s.p("d"), "y"), backend.IsDirectory)
	wantCode(t, "Write below a file", b.Write(ctx, s.p("d/f.txt/g.txt"), "y"), backend.NotADirectory, backend.InvalidPath)
	if r := s.read(t, ctx, b, s.p("d/f.txt"), 0, 10); r.File.Content != "x" {
		t.Errorf("refused writes changed d/f.txt: %q", r.File.Content)
	}
}

func (s *suite) delete(t *testing.T, ctx context.Context, b backend.Backend) {
	d, ok := b.(backend.Deleter)
	if !ok {
		t.Skip("backend does not implement Deleter")
	}
	for _, f := range []string{"keep.txt", "gone.txt", "work/a.txt", "work/sub/b.txt", "workshop/c.txt"} {
		mustWrite(t, ctx, b, s.p(f), f)
	}
	if err := d.Delete(ctx, s.p("gone.txt")); err != nil {
		t.Fatalf("Delete(gone.txt): %v", err)
	}
	if err := d.Delete(ctx, s.p("work")); err != nil {
		t.Fatalf("Delete(work): %v", err)
	}
	for _, gone := range []string{"gone.txt", "work/a.txt", "work/sub/b.txt"} {
		if _, err := b.Read(ctx, s.p(gone), 0, 1); !errors.Is(err, backend.ErrFileNotFound) {
			t.Errorf("after delete, Read(%s) error = %v, want file_not_found", gone, err)
		}
	}
	for _, kept := range []string{"keep.txt", "workshop/c.txt"} {
		if r := s.read(t, ctx, b, s.p(kept), 0, 1); r.File.Content != kept {
			t.Errorf("Delete removed or changed %s", kept)
		}
	}
	wantCode(t, "Delete of a missing file", d.Delete(ctx, s.p("gone.txt")), backend.FileNotFound)
	wantCode(t, "Delete with ..", d.Delete(ctx, s.p("../x")), backend.InvalidPath)
	if s.root == "/" {
		wantCode(t, "Delete of /", d.Delete(ctx, "/"), backend.InvalidPath)
	}
}

// GlobTree is the file tree of the reference glob matrix.
var GlobTree = []string{"a.py", "sub/b.py", "sub/nested/c.py", "readme.md", ".hidden.py", ".hidden/x.py", ".github/workflows/ci.yml"}

// GlobCase is one row of the reference glob matrix: files (relative to the
// tree root) that Pattern matches when searching from Dir.
type GlobCase struct {
	Pattern string
	Dir     string // relative to the tree root; "" is the root
	Want    []string
}

// GlobMatrix is the glob semantics contract every backend honours.
var GlobMatrix = []GlobCase{
	{"*.py", "", []string{"a.py", "sub/b.py", "sub/nested/c.py", ".hidden/x.py"}},
	{"**/*.py", "", []string{"a.py", "sub/b.py", "sub/nested/c.py"}},
	{"*.md", "", []string{"readme.md"}},
	{"sub/*.py", "", []string{"sub/b.py"}},
	{"sub/**/*.py", "", []string{"sub/b.py", "sub/nested/c.py"}},
	{"/*.py", "", []string{"a.py"}},
	{"a.py/**", "", nil},
	{"*.py", "sub", []string{"sub/b.py", "sub/nested/c.py"}},
	{"*.yml", "", []string{".github/workflows/ci.yml"}},
	{"**/*.yml", "", nil},
	{".github/**/*.yml", "", []string{".github/workflows/ci.yml"}},
	{".hidden.py", "", []string{".hidden.py"}},
	{".*.py", "", []string{".hidden.py"}},
	{"*", "", []string{"a.py", "sub/b.py", "sub/nested/c.py", "readme.md", ".hidden/x.py", ".github/workflows/ci.yml"}},
	{"*.{py,md}", "", []string{"a.py", "sub/b.py", "sub/nested/c.py", ".hidden/x.py", "readme.md"}},
	{"*.{yml,yaml}", "", []string{".github/workflows/ci.yml"}},
	{"?.py", "", []string{"a.py", "sub/b.py", "sub/nested/c.py", ".hidden/x.py"}},
	{"[ab].py", "", []string{"a.py", "sub/b.py"}},
	{"[!a].py", "", []string{"sub/b.py", "sub/nested/c.py", ".hidden/x.py"}},
	{"[^a].py", "", []string{"sub/b.py", "sub/nested/c.py", ".hidden/x.py"}},
	{"sub", "", nil},
	{"sub/", "", nil},
}

func (s *suite) globMatrix(t *testing.T, ctx context.Context, b backend.Backend) {
	for _, f := range GlobTree {
		mustWrite(t, ctx, b, s.p(f), "file "+f)
	}
	for _, c := range GlobMatrix {
		dir := s.root
		if c.Dir != "" {
			dir = s.p(c.Dir)
		}
		res, err := b.Glob(ctx, c.Pattern, dir)
		if err != nil {
			t.Errorf("Glob(%q, %q): %v", c.Pattern, dir, err)
			continue
		}
		got := paths(res.Matches)
		if res.Truncated {
			t.Errorf("Glob(%q, %q) truncated on a tiny tree", c.Pattern, dir)
		}
		want := make([]string, len(c.Want))
		for i, w := range c.Want {
			want[i] = s.p(w)
		}
		if dup := duplicates(got); len(dup) > 0 {
			t.Errorf("Glob(%q, %q) lists %q more than once", c.Pattern, dir, dup)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("Glob(%q, %q) = %q, want %q", c.Pattern, dir, got, want)
		}
	}
	// A missing search root is an empty result, not an error.
	if res, err := b.Glob(ctx, "*", s.p("missing")); err != nil || len(res.Matches) != 0 {
		t.Errorf("Glob under a missing directory = %v, %v; want nothing", paths(res.Matches), err)
	}
}

func duplicates(ss []string) []string {
	seen := map[string]bool{}
	var dup []string
	for _, s := range ss {
		if seen[s] {
			dup = append(dup, s)
		}
		seen[s] = true
	}
	return dup
}

func (s *suite) globErrors(t *testing.T, ctx context.Context, b backend.Backend) {
	mustWrite(t, ctx, b, s.p("a.py"), "x")
	_, err := b.Glob(ctx, "../*.py", s.root)
	wantCode(t, "Glob with ..", err, backend.InvalidPath)
	huge := strings.Repeat("{a,b,c}", 8) // 3^8 alternatives
	_, err = b.Glob(ctx, huge, s.root)
	wantCode(t, "Glob with a huge brace expansion", err, backend.InvalidArgument)
	_, err = b.Glob(ctx, "*.py", s.p("../up"))
	wantCode(t, "Glob under ..", err, backend.InvalidPath)
}

func (s *suite) grep(t *testing.T, ctx context.Context, b backend.Backend) {
	files := map[string]string{
		"src/main.go":   "package main\n\nfunc main() { todo() }\n// TODO: a.c\n",
		"src/util.go":   "package main\n// TODO one\n// TODO two\n",
		"docs/notes.md": "TODO in docs\nabc\n",
		"root.txt":      "no match here\n",
	}
	for _, f := range slices.Sorted(mapsKeys(files)) {
		mustWrite(t, ctx, b, s.p(f), files[f])
	}
	res, err := b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.root})
	if err != nil {
		t.Fatalf("Grep: %v", err)
	}
	want := []backend.GrepMatch{
		{Path: s.p("docs/notes.md"), Line: 1, Text: "TODO in docs"},
		{Path: s.p("src/main.go"), Line: 4, Text: "// TODO: a.c"},
		{Path: s.p("src/util.go"), Line: 2, Text: "// TODO one"},
		{Path: s.p("src/util.go"), Line: 3, Text: "// TODO two"},
	}
	if got := sortedMatches(res.Matches); fmt.Sprint(got) != fmt.Sprint(want) || res.Truncated {
		t.Errorf("Grep(TODO) = %v (truncated %v), want %v", got, res.Truncated, want)
	}
	// Literal, not a regular expression.
	res, _ = b.Grep(ctx, backend.GrepRequest{Pattern: "a.c", Path: s.root})
	if got := sortedMatches(res.Matches); len(got) != 1 || got[0].Path != s.p("src/main.go") {
		t.Errorf("Grep(a.c) = %v, want only the literal a.c in src/main.go", got)
	}
	res, _ = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.root, Glob: "*.md"})
	if got := sortedMatches(res.Matches); len(got) != 1 || got[0].Path != s.p("docs/notes.md") {
		t.Errorf("Grep(TODO, glob *.md) = %v", got)
	}
	res, _ = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.root, Glob: "src/*.go"})
	if got := sortedMatches(res.Matches); len(got) != 3 {
		t.Errorf("Grep(TODO, glob src/*.go) = %v, want the 3 matches in src", got)
	}
	res, _ = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.p("src")})
	if got := sortedMatches(res.Matches); len(got) != 3 {
		t.Errorf("Grep(TODO, path src) = %v", got)
	}
	res, _ = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.p("src/util.go")})
	if got := sortedMatches(res.Matches); len(got) != 2 {
		t.Errorf("Grep(TODO, path src/util.go) = %v, want the file's 2 matches", got)
	}
	res, _ = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.root, MaxCount: 4})
	if len(res.Matches) != 4 || res.Truncated {
		t.Errorf("Grep with MaxCount equal to the match count = %d matches, truncated %v; want 4, not truncated", len(res.Matches), res.Truncated)
	}
	res, _ = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.root, MaxCount: 2})
	if len(res.Matches) != 2 || !res.Truncated {
		t.Errorf("Grep with MaxCount 2 = %d matches, truncated %v; want 2, truncated", len(res.Matches), res.Truncated)
	}
	res, err = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.p("missing")})
	if err != nil || len(res.Matches) != 0 {
		t.Errorf("Grep under a missing directory = %v, %v; want nothing", res.Matches, err)
	}
	_, err = b.Grep(ctx, backend.GrepRequest{Pattern: "TODO", Path: s.p("../x")})
	wantCode(t, "Grep under ..", err, backend.InvalidPath)
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func sortedMatches(ms []backend.GrepMatch) []backend.GrepMatch {
	out := slices.Clone(ms)
	slices.SortStableFunc(out, func(a, b backend.GrepMatch) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return out
}

func (s *suite) uploadDownload(t *testing.T, ctx context.Context, b backend.Backend) {
	bin := []byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe, 0x01}
	up := b.Upload(ctx, []backend.UploadFile{
		{Path: s.p("up/text.txt"), Content: []byte("hello\n")},
		{Path: s.p("../escape.txt"), Content: []byte("nope")},
		{Path: s.p("up/blob.bin"), Content: bin},
	})
	if len(up) != 3 {
		t.Fatalf("Upload returned %d results for 3 files", len(up))
	}
	if up[0].Err != nil || up[2].Err != nil {
		t.Errorf("Upload errors = %v, %v", up[0].Err, up[2].Err)
	}
	wantCode(t, "Upload with ..", up[1].Err, backend.InvalidPath)
	if up[1].Path != s.p("../escape.txt") {
		t.Errorf("Upload result 1 path = %q, want the caller's path", up[1].Path)
	}
	mustWrite(t, ctx, b, s.p("up/dir/x.txt"), "x")
	down := b.Download(ctx, []string{s.p("up/blob.bin"), s.p("up/missing"), s.p("up/text.txt"), s.p("up/dir")})
	if len(down) != 4 {
		t.Fatalf("Download returned %d results for 4 paths", len(down))
	}
	if down[0].Err != nil || !bytes.Equal(down[0].Content, bin) {
		t.Errorf("binary round trip = %v, %v", down[0].Content, down[0].Err)
	}
	wantCode(t, "Download of a missing file", down[1].Err, backend.FileNotFound)
	if down[2].Err != nil || string(down[2].Content) != "hello\n" {
		t.Errorf("text round trip = %q, %v", down[2].Content, down[2].Err)
	}
	wantCode(t, "Download of a directory", down[3].Err, backend.IsDirectory)
	for i, want := range []string{"up/blob.bin", "up/missing", "up/text.txt", "up/dir"} {
		if down[i].Path != s.p(want) {
			t.Errorf("Download result %d path = %q, want %q", i, down[i].Path, s.p(want))
		}
	}
	r := s.read(t, ctx, b, s.p("up/blob.bin"), 0, 10)
	if r.File.Encoding != backend.EncodingBase64 || r.StartLine != 0 {
		t.Errorf("Read of a binary file = encoding %q, window %d; want base64, no window", r.File.Encoding, r.StartLine)
	}
	if r := s.read(t, ctx, b, s.p("up/text.txt"), 0, 10); r.File.Content != "hello\n" {
		t.Errorf("uploaded text reads as %q", r.File.Content)
	}
}

// HostilePaths are paths every backend refuses with InvalidPath (or
// PermissionDenied).
var HostilePaths = []string{
	"../escape.txt",
	"/../escape.txt",
	"/a/../../escape.txt",
	"/a/b/../../../escape.txt",
	`..\escape.txt`,
	`/a\..\..\escape.txt`,
	"~/escape.txt",
	"~root/escape.txt",
	`C:\Windows\win.ini`,
	"c:/windows/win.ini",
	`\\server\share\escape.txt`,
	"/a\x00/escape.txt",
	"/ok.txt\x00.png",
	"/%2e%2e/escape.txt",
	"/%2E%2E%2fescape.txt",
	"/a/%2e%2e/%2e%2e/escape.txt",
	"/%252e%252e/escape.txt",
	"/..%2fescape.txt",
	"/%2e%2e%5cescape.txt",
	"/\xc0\xae\xc0\xae/escape.txt",
	"/\xe0\x80\xae\xe0\x80\xae/escape.txt",
	"/%c0%ae%c0%ae/escape.txt",
	"/a/\x7f/escape.txt",
	"/new\nline.txt",
	"/" + strings.Repeat("a/", backend.MaxPathLength/2) + "escape.txt",
}

func (s *suite) hostilePaths(t *testing.T, ctx context.Context, b backend.Backend) {
	allowed := []backend.ErrorCode{backend.InvalidPath, backend.PermissionDenied}
	for _, hp := range HostilePaths {
		p := hp
		if s.root != "/" && strings.HasPrefix(p, "/") {
			p = s.root + p
		}
		name := fmt.Sprintf("%q", p)
		_, err := b.Read(ctx, p, 0, 10)
		wantCode(t, "Read "+name, err, allowed...)
		wantCode(t, "Write "+name, b.Write(ctx, p, "x"), allowed...)
		_, err = b.Edit(ctx, backend.EditRequest{Path: p, Old: "a", New: "b"})
		wantCode(t, "Edit "+name, err, allowed...)
		_, err = b.Ls(ctx, p)
		wantCode(t, "Ls "+name, err, allowed...)
		if d, ok := b.(backend.Deleter); ok {
			wantCode(t, "Delete "+name, d.Delete(ctx, p), allowed...)
		}
		wantCode(t, "Upload "+name, b.Upload(ctx, []backend.UploadFile{{Path: p, Content: []byte("x")}})[0].Err, allowed...)
		wantCode(t, "Download "+name, b.Download(ctx, []string{p})[0].Err, allowed...)
	}
}

// appendFile checks backend.AppendFile, which uses Append when the backend
// has one: the file ends up as Write of the old bytes followed by the new
// ones would leave it, whatever was stored before.
func (s *suite) appendFile(t *testing.T, ctx context.Context, b backend.Backend) {
	download := func(p string) string {
		t.Helper()
		res := b.Download(ctx, []string{p})
		if len(res) != 1 || res[0].Err != nil {
			t.Fatalf("Download(%q) = %+v", p, res)
		}
		return string(res[0].Content)
	}
	h := s.p("hist/log.md")
	want := ""
	for i := range 40 {
		section := fmt.Sprintf("## section %d\n\n%s\n", i, strings.Repeat("x", 37*i))
		if err := backend.AppendFile(ctx, b, h, section); err != nil {
			t.Fatalf("AppendFile #%d: %v", i, err)
		}
		want += section
	}
	if got := download(h); got != want {
		t.Errorf("after 40 appends the file has %d bytes, want %d", len(got), len(want))
	}
	if r := s.read(t, ctx, b, h, 0, 2); r.File.Content != "## section 0\n\n" {
		t.Errorf("read of the appended file = %q", r.File.Content)
	}
	// An overwrite starts the file over; appending goes on from there.
	mustWrite(t, ctx, b, h, "fresh\n")
	if err := backend.AppendFile(ctx, b, h, "more\n"); err != nil {
		t.Fatal(err)
	}
	if got := download(h); got != "fresh\nmore\n" {
		t.Errorf("append after overwrite = %q", got)
	}
	if err := backend.AppendFile(ctx, b, h, ""); err != nil {
		t.Fatal(err)
	}
	if got := download(h); got != "fresh\nmore\n" {
		t.Errorf("empty append = %q", got)
	}
	// Appending to a binary upload is writing its bytes and the new ones
	// (which a backend may store as it stores any text that is not UTF-8).
	bin, written := s.p("hist/raw.bin"), s.p("hist/written.bin")
	if res := b.Upload(ctx, []backend.UploadFile{{Path: bin, Content: []byte{0xff, 0x00}}}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if err := backend.AppendFile(ctx, b, bin, "tail"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, ctx, b, written, "\xff\x00tail")
	if got, want := download(bin), download(written); got != want {
		t.Errorf("append to binary = %q, Write of the same bytes gives %q", got, want)
	}
	wantCode(t, "AppendFile to a directory", backend.AppendFile(ctx, b, s.p("hist"), "x"), backend.IsDirectory)
	wantCode(t, "AppendFile below a file", backend.AppendFile(ctx, b, h+"/under", "x"), backend.NotADirectory, backend.FileNotFound)
	wantCode(t, "AppendFile to a hostile path", backend.AppendFile(ctx, b, s.p("../escape"), "x"), backend.InvalidPath)
}
