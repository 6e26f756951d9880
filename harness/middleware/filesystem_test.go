package middleware_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// Case 36: ls renders a Python list of direct children.
func TestLs(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	out, isErr := oneShot(t, mw, files("/test.txt", "a", "/test2.txt", "b"), "ls", map[string]any{"path": "/"})
	assert.False(t, isErr)
	assert.Equal(t, "['/test.txt', '/test2.txt']", out)

	out, _ = oneShot(t, mw, nil, "ls", map[string]any{"path": "/"})
	assert.Equal(t, "No files found", out)

	poke := files("/pokemon/pikachu.txt", "e", "/pokemon/water/squirtle.txt", "w", "/pokemon/water/deep/lapras.txt", "w", "/other.txt", "o")
	out, _ = oneShot(t, mw, poke, "ls", map[string]any{"path": "/pokemon/"})
	assert.Equal(t, "['/pokemon/pikachu.txt', '/pokemon/water/']", out)

	out, isErr = oneShot(t, mw, poke, "ls", map[string]any{"path": "/nope"})
	assert.True(t, isErr)
	assert.Equal(t, "Error: File '/nope' not found", out)

	out, isErr = oneShot(t, mw, poke, "ls", map[string]any{"path": "/../etc"})
	assert.True(t, isErr)
	assert.Contains(t, out, "Path traversal not allowed")
}

func fiveLines() map[string]agent.FileData {
	return files("/five.txt", "one\ntwo\nthree\nfour\nfive\n", "/three.txt", "one\ntwo\nthree\n")
}

// Case 37: read_file windows, notices, reminders and media blocks.
func TestReadFile(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	png := []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d}
	fs := fiveLines()
	fs["/empty.txt"] = agent.FileData{Content: "", Encoding: "utf-8"}
	fs["/blank.txt"] = agent.FileData{Content: " \n\n", Encoding: "utf-8"}
	fs["/one.txt"] = agent.FileData{Content: "only\n", Encoding: "utf-8"}
	fs["/pic.png"] = agent.FileData{Content: base64.StdEncoding.EncodeToString(png), Encoding: "base64"}
	fs["/data.bin"] = agent.FileData{Content: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), Encoding: "base64"}
	fs["/doc.pdf"] = agent.FileData{Content: "%PDF-1.4 fake", Encoding: "utf-8"}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"partial window", map[string]any{"file_path": "/five.txt", "limit": 2}, "1  one\n2  two\n\n[Read 2 lines (lines 1-2 of 5 total). 3 lines remaining from offset 2.]"},
		{"offset window", map[string]any{"file_path": "/five.txt", "offset": 2, "limit": 2}, "3  three\n4  four\n\n[Read 2 lines (lines 3-4 of 5 total). 1 line remaining from offset 4.]"},
		{"singular", map[string]any{"file_path": "/five.txt", "offset": 3, "limit": 1}, "4  four\n\n[Read 1 line (lines 4-4 of 5 total). 1 line remaining from offset 4.]"},
		{"full window has no notice", map[string]any{"file_path": "/three.txt", "limit": 10}, "1  one\n2  two\n3  three"},
		{"default limit", map[string]any{"file_path": "/three.txt"}, "1  one\n2  two\n3  three"},
		{"negative offset", map[string]any{"file_path": "/three.txt", "offset": -1}, "1  one\n2  two\n3  three\n\n[Requested offset -1 is before the start of the file; read from line 1 instead.]"},
		{"limit 0", map[string]any{"file_path": "/three.txt", "limit": 0}, "System reminder: no lines were read because limit was 0. The file was not inspected and may have content; call read_file again with a limit of 1 or more."},
		{"empty file", map[string]any{"file_path": "/empty.txt"}, "System reminder: File exists but has empty contents"},
		{"empty file limit 0", map[string]any{"file_path": "/empty.txt", "limit": 0}, "System reminder: File exists but has empty contents"},
		{"blank file", map[string]any{"file_path": "/blank.txt"}, "System reminder: File exists but has empty contents"},
		{"single line", map[string]any{"file_path": "/one.txt"}, "1  only"},
	}
	var calls []llm.ToolCall
	for i, tt := range tests {
		calls = append(calls, call(fmt.Sprintf("c%d", i), "read_file", tt.args))
	}
	calls = append(calls,
		call("png", "read_file", map[string]any{"file_path": "/pic.png"}),
		call("bin", "read_file", map[string]any{"file_path": "/data.bin"}),
		call("pdf", "read_file", map[string]any{"file_path": "/doc.pdf"}),
		call("past", "read_file", map[string]any{"file_path": "/five.txt", "offset": 9}),
		call("missing", "read_file", map[string]any{"file_path": "/nope.txt"}),
	)
	s := drive(t, mw, fs, calls)
	for i, tt := range tests {
		got, isErr := s.text(t, fmt.Sprintf("c%d", i))
		assert.False(t, isErr, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
	}

	img := s.tool(t, "png")
	require.Len(t, img.Content, 1)
	assert.Equal(t, llm.BlockImage, img.Content[0].Type)
	assert.Equal(t, "image/png", img.Content[0].MediaType)
	assert.Equal(t, base64.StdEncoding.EncodeToString(png), img.Content[0].Data)
	assert.Equal(t, map[string]string{"read_file_path": "/pic.png", "read_file_media_type": "image"}, img.Metadata)

	bin := s.tool(t, "bin")
	require.Len(t, bin.Content, 1)
	assert.Equal(t, llm.BlockFile, bin.Content[0].Type)
	assert.Equal(t, "application/octet-stream", bin.Content[0].MediaType)

	pdf := s.tool(t, "pdf")
	require.Len(t, pdf.Content, 1)
	assert.Equal(t, llm.BlockFile, pdf.Content[0].Type)
	assert.Equal(t, "application/pdf", pdf.Content[0].MediaType)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 fake")), pdf.Content[0].Data, "utf-8 content of a media file is sent base64-encoded")

	out, isErr := s.text(t, "past")
	assert.True(t, isErr)
	assert.Equal(t, "Error: Line offset 9 exceeds file length (5 lines)", out)
	out, isErr = s.text(t, "missing")
	assert.True(t, isErr)
	assert.Equal(t, "Error: File '/nope.txt' not found", out)
}

// Case 38: continuation rows and a size cap that never splits a source line.
func TestReadFileLongLines(t *testing.T) {
	long := strings.Repeat("a", 5000) + strings.Repeat("b", 5000) + "c"
	mw := newMW(t, middleware.FilesystemOptions{})
	out, _ := oneShot(t, mw, files("/long.txt", "short\n"+long+"\nend\n"), "read_file", map[string]any{"file_path": "/long.txt"})
	want := "  1  short\n  2  " + strings.Repeat("a", 5000) + "\n2.1  " + strings.Repeat("b", 5000) + "\n2.2  c\n  3  end"
	assert.Equal(t, want, out)

	// A 1000-token cap is 4000 characters: lines of 900 characters fit four
	// at a time; the long line never does.
	capped := newMW(t, middleware.FilesystemOptions{ToolTokenLimit: 1000})
	line := strings.Repeat("x", 900)
	content := strings.Repeat(line+"\n", 10)
	out, _ = oneShot(t, capped, files("/wide.txt", content), "read_file", map[string]any{"file_path": "/wide.txt"})
	assert.LessOrEqual(t, len(out), 4000)
	assert.Contains(t, out, "[Output was cut to stay within the size limit")
	assert.Contains(t, out, "execute(command='jq . /wide.txt')")
	rows := strings.Count(out, line)
	assert.Equal(t, 4, rows, "four complete 900-character lines fit beside the notices")
	assert.True(t, strings.HasSuffix(out, "[Read 4 lines (lines 1-4 of 10 total). 6 lines remaining from offset 4.]"), out)

	// A wrapped line that does not fit is dropped whole and the notice
	// resumes at it.
	content = "first\n" + strings.Repeat("y", 6000) + "\nlast\n"
	out, _ = oneShot(t, capped, files("/wrap.txt", content), "read_file", map[string]any{"file_path": "/wrap.txt"})
	assert.NotContains(t, out, "yyyy")
	assert.True(t, strings.HasPrefix(out, "  1  first\n\n[Output was cut"), out)
	assert.True(t, strings.HasSuffix(out, "[Read 1 line (lines 1-1 of 3 total). 2 lines remaining from offset 1.]"), out)

	// Nothing fits: hard cut with the size message and no stale offset.
	content = strings.Repeat("z", 9000) + "\n"
	out, _ = oneShot(t, capped, files("/huge.txt", content), "read_file", map[string]any{"file_path": "/huge.txt"})
	assert.LessOrEqual(t, len(out), 4000)
	assert.NotContains(t, out, "remaining from offset")
	assert.Contains(t, out, "[Output was cut")
}

// Case 45: allowlist, read_file mandatory, description overrides verbatim.
func TestToolAllowlistAndDescriptions(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{Tools: []string{"read_file", "ls"}, ToolDescriptions: map[string]string{"ls": "my own ls words"}})
	var names []string
	for _, tl := range mw.Tools() {
		names = append(names, tl.Spec().Name)
	}
	assert.Equal(t, []string{"ls", "read_file"}, names)
	s := drive(t, mw, files("/a.txt", "x"), []llm.ToolCall{call("w", "write_file", map[string]any{"file_path": "/b.txt", "content": "y"})})
	out, isErr := s.text(t, "w")
	assert.True(t, isErr)
	assert.Contains(t, out, `tool "write_file" does not exist`)
	assert.NotContains(t, s.res.State.Files, "/b.txt")
	req := s.model.Requests()[0]
	require.Len(t, req.Tools, 2)
	assert.Equal(t, "my own ls words", req.Tools[0].Description)
	assert.Equal(t, middleware.DefaultToolDescription("read_file"), req.Tools[1].Description)

	_, err := middleware.NewFilesystem(middleware.FilesystemOptions{Tools: []string{"ls"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read_file")
	_, err = middleware.NewFilesystem(middleware.FilesystemOptions{Tools: []string{"read_file", "cat"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"cat"`)

	all := newMW(t, middleware.FilesystemOptions{})
	names = nil
	for _, tl := range all.Tools() {
		names = append(names, tl.Spec().Name)
	}
	assert.Equal(t, middleware.FilesystemToolNames, names)
	assert.Equal(t, "FilesystemMiddleware", all.Name())
}

// Case 43 and 45: execute and delete are hidden when the backend cannot do
// them; grep and execute descriptions follow what is visible; custom ones
// are never rewritten; the agent's specs are not mutated.
func TestRequestTimeFiltering(t *testing.T) {
	shell := newShellBackend(t)
	cases := []struct {
		name        string
		opts        middleware.FilesystemOptions
		wantTools   []string
		grepRegex   bool
		execSearch  string
		grepCustom  string
		routingPart string
	}{
		{"state", middleware.FilesystemOptions{}, []string{"ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep"}, false, "", "", ""},
		{"no delete", middleware.FilesystemOptions{Backend: only{backend.NewState()}}, []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep"}, false, "", "", ""},
		{"shell", middleware.FilesystemOptions{Backend: shell}, middleware.FilesystemToolNames, true, "use the glob and grep tools", "", ""},
		{"shell without glob", middleware.FilesystemOptions{Backend: shell, Tools: []string{"read_file", "grep", "execute"}}, []string{"read_file", "grep", "execute"}, true, "use the grep tool rather than grep", "", ""},
		{"shell without grep", middleware.FilesystemOptions{Backend: shell, Tools: []string{"read_file", "glob", "execute"}}, []string{"read_file", "glob", "execute"}, false, "use the glob tool rather than find", "", ""},
		{"shell without search", middleware.FilesystemOptions{Backend: shell, Tools: []string{"read_file", "execute"}}, []string{"read_file", "execute"}, false, "-none-", "", ""},
		{"custom grep", middleware.FilesystemOptions{Backend: shell, ToolDescriptions: map[string]string{"grep": "custom grep"}}, middleware.FilesystemToolNames, false, "use the glob and grep tools", "custom grep", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mw := newMW(t, tc.opts)
			before := agentSpecs(t, mw)
			s := drive(t, mw, nil)
			req := s.model.Requests()[0]
			var got []string
			desc := map[string]string{}
			for _, spec := range req.Tools {
				got = append(got, spec.Name)
				desc[spec.Name] = spec.Description
			}
			assert.Equal(t, tc.wantTools, got)
			if g, ok := desc["grep"]; ok {
				switch {
				case tc.grepCustom != "":
					assert.Equal(t, tc.grepCustom, g)
				case tc.grepRegex:
					assert.Contains(t, g, "rg (ripgrep) through the execute tool")
				default:
					assert.NotContains(t, g, "ripgrep")
				}
			}
			if e, ok := desc["execute"]; ok {
				if tc.execSearch == "-none-" {
					assert.NotContains(t, e, "rather than")
				} else {
					assert.Contains(t, e, tc.execSearch)
				}
			}
			assert.Equal(t, before, agentSpecs(t, mw), "tool specs were mutated")
		})
	}

	// Calling execute anyway on a backend without it.
	mw := newMW(t, middleware.FilesystemOptions{})
	out, isErr := oneShot(t, mw, nil, "execute", map[string]any{"command": "ls"})
	assert.True(t, isErr)
	assert.True(t, strings.HasPrefix(out, "Error: Execution not available."), out)
	out, isErr = oneShot(t, newMW(t, middleware.FilesystemOptions{Backend: only{backend.NewState()}}), files("/a", "x"), "delete", map[string]any{"file_path": "/a"})
	assert.True(t, isErr)
	assert.Contains(t, out, "deletion is not supported")
}

func agentSpecs(t *testing.T, mw *middleware.Filesystem) []llm.ToolSpec {
	var out []llm.ToolSpec
	for _, tl := range mw.Tools() {
		out = append(out, tl.Spec())
	}
	return out
}

func newShellBackend(t *testing.T) *backend.LocalShell {
	t.Helper()
	sh, err := backend.NewLocalShell(t.TempDir(), backend.LocalShellOptions{})
	require.NoError(t, err)
	return sh
}

// Case 46: delete through the agent.
func TestDelete(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	fs := files("/keep.txt", "k", "/gone.txt", "g", "/work/a.txt", "a", "/work/sub/b.txt", "b", "/workshop/c.txt", "c")
	s := drive(t, mw, fs,
		[]llm.ToolCall{call("f", "delete", map[string]any{"file_path": "/gone.txt"})},
		[]llm.ToolCall{call("d", "delete", map[string]any{"file_path": "/work"})},
		[]llm.ToolCall{call("m", "delete", map[string]any{"file_path": "/gone.txt"})},
	)
	out, _ := s.text(t, "f")
	assert.Equal(t, "Deleted /gone.txt", out)
	out, _ = s.text(t, "d")
	assert.Equal(t, "Deleted /work", out)
	out, isErr := s.text(t, "m")
	assert.True(t, isErr)
	assert.Contains(t, out, "not found")
	var left []string
	for p := range s.res.State.Files {
		left = append(left, p)
	}
	assert.ElementsMatch(t, []string{"/keep.txt", "/workshop/c.txt"}, left)

	denied := newMW(t, middleware.FilesystemOptions{Permissions: []middleware.Permission{{Operations: []middleware.Operation{"write"}, Paths: []string{"/keep.txt"}, Mode: "deny"}}})
	out, isErr = oneShot(t, denied, fs, "delete", map[string]any{"file_path": "/keep.txt"})
	assert.True(t, isErr)
	assert.Equal(t, "Error: permission denied for write on /keep.txt (matches deny rule(s): /keep.txt)", out)
}

func TestWriteAndEdit(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	s := drive(t, mw, nil,
		[]llm.ToolCall{call("w", "write_file", map[string]any{"file_path": "notes/a.md", "content": "alpha beta beta\n"})},
		[]llm.ToolCall{call("e1", "edit_file", map[string]any{"file_path": "/notes/a.md", "old_string": "alpha", "new_string": "ALPHA"})},
		[]llm.ToolCall{call("e2", "edit_file", map[string]any{"file_path": "/notes/a.md", "old_string": "beta", "new_string": "B"})},
		[]llm.ToolCall{call("e3", "edit_file", map[string]any{"file_path": "/notes/a.md", "old_string": "beta", "new_string": "B", "replace_all": true})},
		[]llm.ToolCall{call("e4", "edit_file", map[string]any{"file_path": "/notes/none.md", "old_string": "x", "new_string": "y"})},
		[]llm.ToolCall{call("w2", "write_file", map[string]any{"file_path": "/notes/a.md"})},
	)
	out, _ := s.text(t, "w")
	assert.Equal(t, "Updated file /notes/a.md", out)
	out, _ = s.text(t, "e1")
	assert.Equal(t, "Successfully replaced 1 instance(s) of the string in '/notes/a.md'", out)
	out, isErr := s.text(t, "e2")
	assert.True(t, isErr)
	assert.Contains(t, out, "Error: String 'beta' appears 2 times in file.")
	out, _ = s.text(t, "e3")
	assert.Equal(t, "Successfully replaced 2 instance(s) of the string in '/notes/a.md'", out)
	out, isErr = s.text(t, "e4")
	assert.True(t, isErr)
	assert.Equal(t, "Error: File '/notes/none.md' not found", out)
	out, isErr = s.text(t, "w2")
	assert.True(t, isErr)
	assert.Contains(t, out, "invalid arguments for tool write_file")
	fd := s.res.State.Files["/notes/a.md"]
	assert.Equal(t, "ALPHA B B\n", fd.Content)
	assert.Equal(t, "utf-8", fd.Encoding)
	assert.NotEmpty(t, fd.CreatedAt)
}

// recorder wraps a backend and records grep and glob requests.
type recorder struct {
	backend.Backend
	mu      sync.Mutex
	greps   []backend.GrepRequest
	grepRes *backend.GrepResult
	grepErr error
	glob    func(ctx context.Context, pattern, path string) (backend.GlobResult, error)
}

func (r *recorder) Grep(ctx context.Context, req backend.GrepRequest) (backend.GrepResult, error) {
	r.mu.Lock()
	r.greps = append(r.greps, req)
	r.mu.Unlock()
	if r.grepRes != nil || r.grepErr != nil {
		var res backend.GrepResult
		if r.grepRes != nil {
			res = *r.grepRes
		}
		return res, r.grepErr
	}
	return r.Backend.Grep(ctx, req)
}

func (r *recorder) Glob(ctx context.Context, pattern, path string) (backend.GlobResult, error) {
	if r.glob != nil {
		return r.glob(ctx, pattern, path)
	}
	return r.Backend.Glob(ctx, pattern, path)
}

// Case 41: grep caps, modes, notes and partial errors.
func TestGrep(t *testing.T) {
	fs := files("/src/a.go", "x := 1 // TODO\nTODO again\n", "/src/b.go", "nothing\n", "/docs/c.md", "TODO docs\n", "/secret/s.txt", "TODO secret\n")
	rec := &recorder{Backend: backend.NewState()}
	mw := newMW(t, middleware.FilesystemOptions{Backend: rec})
	s := drive(t, mw, fs, []llm.ToolCall{
		call("files", "grep", map[string]any{"pattern": "TODO"}),
		call("content", "grep", map[string]any{"pattern": "TODO", "path": "/src", "output_mode": "content"}),
		call("count", "grep", map[string]any{"pattern": "TODO", "output_mode": "count"}),
		call("capped", "grep", map[string]any{"pattern": "TODO", "max_count": 2}),
		call("regex", "grep", map[string]any{"pattern": "TODO|FIXME"}),
		call("zero", "grep", map[string]any{"pattern": "TODO", "max_count": 0}),
		call("glob", "grep", map[string]any{"pattern": "TODO", "glob": "*.md"}),
	})
	out, _ := s.text(t, "files")
	assert.Equal(t, "/docs/c.md\n/secret/s.txt\n/src/a.go", out)
	out, _ = s.text(t, "content")
	assert.Equal(t, "/src/a.go:\n  1: x := 1 // TODO\n  2: TODO again", out)
	out, _ = s.text(t, "count")
	assert.Equal(t, "/docs/c.md: 1\n/secret/s.txt: 1\n/src/a.go: 2", out)
	out, isErr := s.text(t, "capped")
	assert.False(t, isErr)
	assert.True(t, strings.HasPrefix(out, "/docs/c.md\n/secret/s.txt\n\nNote: the search stopped early"), out)
	out, _ = s.text(t, "regex")
	assert.True(t, strings.HasPrefix(out, "No matches found\n\nNote: grep matches the pattern as literal text"), out)
	out, isErr = s.text(t, "zero")
	assert.True(t, isErr)
	assert.Contains(t, out, "invalid arguments for tool grep")
	out, _ = s.text(t, "glob")
	assert.Equal(t, "/docs/c.md", out)

	caps := map[int]int{}
	for _, r := range rec.greps {
		caps[r.MaxCount]++
	}
	assert.Equal(t, map[int]int{1000: 5, 2: 1}, caps, "the default cap is forwarded; max_count overrides it; the schema rejected max_count 0 before the backend")

	// NoLimit forwards no cap.
	rec2 := &recorder{Backend: backend.NewState()}
	none := newMW(t, middleware.FilesystemOptions{Backend: rec2, GrepMaxCount: middleware.NoLimit})
	oneShot(t, none, fs, "grep", map[string]any{"pattern": "TODO"})
	require.Len(t, rec2.greps, 1)
	assert.Equal(t, 0, rec2.greps[0].MaxCount)

	for _, bad := range []int{-2, -100} {
		_, err := middleware.NewFilesystem(middleware.FilesystemOptions{GrepMaxCount: bad})
		assert.Error(t, err, "GrepMaxCount %d", bad)
	}

	// Permission filtering: matches all denied → no regex hint.
	deny := []middleware.Permission{{Operations: []middleware.Operation{"read"}, Paths: []string{"/secret/**"}, Mode: "deny"}}
	pm := newMW(t, middleware.FilesystemOptions{Permissions: deny})
	out, _ = oneShot(t, pm, fs, "grep", map[string]any{"pattern": "TODO secret|x"})
	assert.Equal(t, "No matches found\n\nNote: grep matches the pattern as literal text, not as a regular expression. To find alternatives, run one search per alternative with the plain text of each.", out, "the backend found nothing: hint")
	out, _ = oneShot(t, pm, fs, "grep", map[string]any{"pattern": "TODO secret"})
	assert.Equal(t, "No matches found", out, "all matches were filtered: no hint")
	out, _ = oneShot(t, pm, fs, "grep", map[string]any{"pattern": "TODO"})
	assert.NotContains(t, out, "/secret")
	out, isErr = oneShot(t, pm, fs, "grep", map[string]any{"pattern": "TODO", "path": "/secret/s.txt"})
	assert.True(t, isErr)
	assert.Equal(t, "Error: permission denied for read on /secret/s.txt", out)
	out, isErr = oneShot(t, pm, fs, "grep", map[string]any{"pattern": "TODO", "path": "/secret"})
	assert.False(t, isErr, "/secret/** does not cover /secret itself, but its files are filtered")
	assert.Equal(t, "No matches found", out)

	// Backend errors, with and without partial matches.
	failing := &recorder{Backend: backend.NewState(), grepErr: &backend.Error{Msg: "grep timed out after 35s"}}
	out, isErr = oneShot(t, newMW(t, middleware.FilesystemOptions{Backend: failing}), fs, "grep", map[string]any{"pattern": "TODO"})
	assert.True(t, isErr)
	assert.Equal(t, "Error: grep timed out after 35s", out)
	failing.grepRes = &backend.GrepResult{Matches: []backend.GrepMatch{{Path: "/src/a.go", Line: 2, Text: "TODO again"}}}
	out, isErr = oneShot(t, newMW(t, middleware.FilesystemOptions{Backend: failing}), fs, "grep", map[string]any{"pattern": "TODO"})
	assert.True(t, isErr)
	assert.Equal(t, "Error: grep timed out after 35s\n\nPartial matches:\n/src/a.go", out)
	// A backend that ignores the cap is capped afterwards.
	many := &recorder{Backend: backend.NewState(), grepRes: &backend.GrepResult{Matches: []backend.GrepMatch{{Path: "/a", Line: 1}, {Path: "/b", Line: 1}, {Path: "/c", Line: 1}}}}
	out, _ = oneShot(t, newMW(t, middleware.FilesystemOptions{Backend: many}), nil, "grep", map[string]any{"pattern": "x", "max_count": 2})
	assert.True(t, strings.HasPrefix(out, "/a\n/b\n\nNote: the search stopped early"), out)
}

// Case 42: glob timeouts, failures and worker saturation.
func TestGlobLimits(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	blocking := &recorder{Backend: backend.NewState(), glob: func(ctx context.Context, pattern, path string) (backend.GlobResult, error) {
		switch pattern {
		case "block":
			started.Done()
			select {
			case <-release:
			case <-ctx.Done():
			}
			return backend.GlobResult{}, ctx.Err()
		case "hang":
			<-release
			return backend.GlobResult{}, nil
		case "inner-timeout":
			return backend.GlobResult{}, context.DeadlineExceeded
		case "boom":
			return backend.GlobResult{}, errors.New("disk on fire")
		case "refused":
			return backend.GlobResult{}, &backend.Error{Code: backend.InvalidArgument, Msg: "Invalid glob pattern: nope"}
		}
		return backend.GlobResult{Matches: []backend.FileInfo{{Path: "/a.py"}}, Truncated: pattern == "slow"}, nil
	}}
	mw := newMW(t, middleware.FilesystemOptions{Backend: blocking, GlobTimeout: 50 * time.Millisecond, GlobWorkers: 2})
	started.Add(1)
	s := drive(t, mw, nil,
		[]llm.ToolCall{call("t", "glob", map[string]any{"pattern": "block"})},
		[]llm.ToolCall{call("ok", "glob", map[string]any{"pattern": "*.py"})},
		[]llm.ToolCall{call("slow", "glob", map[string]any{"pattern": "slow"})},
		[]llm.ToolCall{call("inner", "glob", map[string]any{"pattern": "inner-timeout"})},
		[]llm.ToolCall{call("boom", "glob", map[string]any{"pattern": "boom"})},
		[]llm.ToolCall{call("refused", "glob", map[string]any{"pattern": "refused"})},
	)
	out, isErr := s.text(t, "t")
	assert.True(t, isErr)
	assert.Equal(t, "Error: glob timed out after 0.1s. Try a more specific pattern or a narrower path.", out)
	out, isErr = s.text(t, "ok")
	assert.False(t, isErr, "later calls still work")
	assert.Equal(t, "['/a.py']", out)
	out, _ = s.text(t, "slow")
	assert.True(t, strings.HasPrefix(out, "['/a.py']\n\nNote: the search stopped early because it ran out of time"), out)
	out, _ = s.text(t, "inner")
	assert.Equal(t, "Error: glob failed: context deadline exceeded", out, "a timeout inside the backend is a failure, not our timeout")
	out, _ = s.text(t, "boom")
	assert.Equal(t, "Error: glob failed: disk on fire", out)
	out, _ = s.text(t, "refused")
	assert.Equal(t, "Error: Invalid glob pattern: nope", out)

	// Saturation: two hanging globs hold both workers; the third is refused.
	sat := newMW(t, middleware.FilesystemOptions{Backend: blocking, GlobTimeout: 20 * time.Millisecond, GlobWorkers: 2})
	s = drive(t, sat, nil,
		[]llm.ToolCall{call("h1", "glob", map[string]any{"pattern": "hang"})},
		[]llm.ToolCall{call("h2", "glob", map[string]any{"pattern": "hang"})},
		[]llm.ToolCall{call("h3", "glob", map[string]any{"pattern": "*.py"})},
	)
	close(release)
	out, _ = s.text(t, "h3")
	assert.Equal(t, "Error: too many glob calls are already running. Try again later with a more specific pattern or a narrower path.", out)
}

// Case 44: execute output formatting, timeouts and artifacts.
func TestExecute(t *testing.T) {
	fake := &fakeShell{Backend: backend.NewState()}
	mw := newMW(t, middleware.FilesystemOptions{Backend: fake, MaxExecuteTimeout: 100 * time.Second})
	s := drive(t, mw, nil, []llm.ToolCall{
		call("ok", "execute", map[string]any{"command": "exit 0"}),
		call("fail", "execute", map[string]any{"command": "exit 3"}),
		call("unknown", "execute", map[string]any{"command": "unknown"}),
		call("trunc", "execute", map[string]any{"command": "trunc"}),
		call("zero", "execute", map[string]any{"command": "exit 0", "timeout": 0}),
		call("neg", "execute", map[string]any{"command": "exit 0", "timeout": -5}),
		call("big", "execute", map[string]any{"command": "exit 0", "timeout": 101}),
		call("invalid", "execute", map[string]any{"command": "invalid"}),
	})
	cases := []struct {
		id, text string
		isErr    bool
		artifact string
	}{
		{"ok", "out\n[Command succeeded with exit code 0]", false, `{"exit_code":0}`},
		{"fail", "out\n[Command failed with exit code 3]", false, `{"exit_code":3}`},
		{"unknown", "out", false, `{}`},
		{"trunc", "out\n[Command succeeded with exit code 0]\n[Output was truncated due to size limits]", false, `{"exit_code":0}`},
		{"zero", "out\n[Command succeeded with exit code 0]", false, `{"exit_code":0}`},
		{"neg", "Error: timeout must be non-negative, got -5.", true, ""},
		{"big", "Error: timeout 101s exceeds maximum allowed (100s).", true, ""},
		{"invalid", "Error: Invalid parameter. bad timeout", true, ""},
	}
	for _, c := range cases {
		m := s.tool(t, c.id)
		assert.Equal(t, c.text, m.Text(), c.id)
		assert.Equal(t, c.isErr, m.IsError, c.id)
		assert.Equal(t, c.artifact, string(m.Artifact), c.id)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	assert.Contains(t, fake.timeouts, backend.NoTimeout, "timeout 0 is forwarded as NoTimeout")

	_, err := middleware.NewFilesystem(middleware.FilesystemOptions{MaxExecuteTimeout: -time.Second})
	assert.Error(t, err)

	// A real shell: exit codes and the failure line.
	real := newMW(t, middleware.FilesystemOptions{Backend: newShellBackend(t)})
	s = drive(t, real, nil, []llm.ToolCall{
		call("echo", "execute", map[string]any{"command": "echo hello"}),
		call("false", "execute", map[string]any{"command": "echo oops >&2; exit 2"}),
		call("notimeout", "execute", map[string]any{"command": "echo hi", "timeout": 0}),
	})
	out, _ := s.text(t, "echo")
	assert.Equal(t, "hello\n\n[Command succeeded with exit code 0]", out)
	out, _ = s.text(t, "false")
	assert.Equal(t, "[stderr] oops\n\nExit code: 2\n[Command failed with exit code 2]", out)
	out, isErr := s.text(t, "notimeout")
	assert.True(t, isErr)
	assert.True(t, strings.HasPrefix(out, "Error: Invalid parameter. timeout must be positive"), out)
}

// fakeShell answers execute from the command text.
type fakeShell struct {
	backend.Backend
	mu       sync.Mutex
	timeouts []time.Duration
}

func (f *fakeShell) ID() string { return "fake-1" }

func (f *fakeShell) Execute(_ context.Context, req backend.ExecuteRequest) (backend.ExecuteResult, error) {
	f.mu.Lock()
	f.timeouts = append(f.timeouts, req.Timeout)
	f.mu.Unlock()
	switch req.Command {
	case "exit 0":
		return backend.ExecuteResult{Output: "out", ExitCode: backend.ExitCode(0)}, nil
	case "exit 3":
		return backend.ExecuteResult{Output: "out", ExitCode: backend.ExitCode(3)}, nil
	case "unknown":
		return backend.ExecuteResult{Output: "out"}, nil
	case "trunc":
		return backend.ExecuteResult{Output: "out", ExitCode: backend.ExitCode(0), Truncated: true}, nil
	case "invalid":
		return backend.ExecuteResult{}, &backend.Error{Code: backend.InvalidArgument, Msg: "bad timeout"}
	case "huge":
		return backend.ExecuteResult{Output: numberedText(3000, 40), ExitCode: backend.ExitCode(0)}, nil
	}
	return backend.ExecuteResult{}, fmt.Errorf("unexpected command %q", req.Command)
}

func TestGlobTool(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	fs := files("/a.py", "1", "/sub/b.py", "2", "/.hidden/x.py", "3", "/readme.md", "4")
	fs["/a.py"] = agent.FileData{Content: "1", ModifiedAt: "2026-01-01T00:00:09.000000Z"}
	s := drive(t, mw, fs, []llm.ToolCall{
		call("all", "glob", map[string]any{"pattern": "*.py"}),
		call("sub", "glob", map[string]any{"pattern": "*.py", "path": "/sub"}),
		call("none", "glob", map[string]any{"pattern": "*.rs"}),
		call("bad", "glob", map[string]any{"pattern": "../*.py"}),
	})
	out, _ := s.text(t, "all")
	assert.Equal(t, "['/a.py', '/.hidden/x.py', '/sub/b.py']", out, "most recently modified first, then by path")
	out, _ = s.text(t, "sub")
	assert.Equal(t, "['/sub/b.py']", out)
	out, _ = s.text(t, "none")
	assert.Equal(t, "No files found", out)
	out, isErr := s.text(t, "bad")
	assert.True(t, isErr)
	assert.Contains(t, out, "must not contain '..'")
}

func TestSchemas(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	for _, tl := range mw.Tools() {
		spec := tl.Spec()
		var schema map[string]any
		require.NoError(t, json.Unmarshal(spec.Parameters, &schema), spec.Name)
		assert.Equal(t, "object", schema["type"], spec.Name)
		assert.NotEmpty(t, spec.Description, spec.Name)
	}
	read := mustSpec(t, mw, "read_file")
	assert.JSONEq(t, `{"type":"integer","default":100,"description":"Maximum number of lines to read (default 100)."}`, string(prop(t, read, "limit")))
	grep := mustSpec(t, mw, "grep")
	assert.JSONEq(t, `["files_with_matches","content","count"]`, string(field(t, prop(t, grep, "output_mode"), "enum")))
}

func mustSpec(t *testing.T, mw *middleware.Filesystem, name string) llm.ToolSpec {
	for _, tl := range mw.Tools() {
		if tl.Spec().Name == name {
			return tl.Spec()
		}
	}
	t.Fatalf("no tool %s", name)
	return llm.ToolSpec{}
}

func prop(t *testing.T, spec llm.ToolSpec, name string) json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(spec.Parameters, &s))
	return s.Properties[name]
}

func field(t *testing.T, raw json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[name]
}
