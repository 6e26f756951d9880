package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
)

// noDelete hides Delete (and everything but the Backend methods).
type noDelete struct{ backend.Backend }

func store() *backend.Store { return backend.NewStore(backend.NewMemoryKVStore(), nil) }

func write(t *testing.T, b backend.Backend, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		require.NoError(t, b.Write(t.Context(), kv[i], kv[i+1]), kv[i])
	}
}

func lsPaths(t *testing.T, b backend.Backend, p string) []string {
	t.Helper()
	entries, err := b.Ls(t.Context(), p)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Path)
	}
	return out
}

// Case 78: composite routing.
func TestCompositeRouting(t *testing.T) {
	def, mem, mem2, abcd := store(), store(), store(), store()
	c, err := backend.NewComposite(def, []backend.Route{
		{Prefix: "/memories/", Backend: mem},
		{Prefix: "/memories/deep/", Backend: mem2},
		{Prefix: "/abcd", Backend: abcd},
	}, backend.CompositeOptions{})
	require.NoError(t, err)
	routes := c.Routes()
	assert.Equal(t, "/abcd/", routes[2].Prefix, "prefixes are normalised to end with /")

	resolve := []struct {
		path  string
		want  backend.Backend
		inner string
	}{
		{"/memories", mem, "/"},
		{"/memories/", mem, "/"},
		{"/memories/notes.txt", mem, "/notes.txt"},
		{"/memories/deep/x", mem2, "/x"},
		{"/memories/deeper/x", mem, "/deeper/x"},
		{"/memories2/x", def, "/memories2/x"},
		{"/abcd/x", abcd, "/x"},
		{"/abcde/x", def, "/abcde/x"},
		{"/other.txt", def, "/other.txt"},
	}
	for _, r := range resolve {
		b, inner, err := c.Resolve(r.path)
		require.NoError(t, err)
		assert.Same(t, r.want, b, r.path)
		assert.Equal(t, r.inner, inner, r.path)
	}

	ctx := t.Context()
	require.NoError(t, c.Write(ctx, "/memories/notes.txt", "remember"))
	got, err := mem.Read(ctx, "/notes.txt", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, "remember", got.File.Content, "written through the route with the prefix removed")
	n, err := c.Edit(ctx, backend.EditRequest{Path: "/memories/notes.txt", Old: "remember", New: "recall"})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = c.Read(ctx, "/memories/missing.txt", 0, 10)
	assert.EqualError(t, err, "File '/memories/missing.txt' not found", "errors name the caller's path")

	write(t, c, "/top.txt", "t", "/abcd/a.txt", "a", "/memories/deep/d.txt", "d")
	assert.Equal(t, []string{"/abcd/", "/memories/", "/top.txt"}, lsPaths(t, c, "/"))
	assert.Equal(t, []string{"/memories/deep/", "/memories/notes.txt"}, lsPaths(t, c, "/memories"))
	assert.Equal(t, []string{"/memories/deep/d.txt"}, lsPaths(t, c, "/memories/deep/"))
}

func TestCompositeSearch(t *testing.T) {
	def, mem, docs := store(), store(), store()
	c, err := backend.NewComposite(def, []backend.Route{
		{Prefix: "/memories/", Backend: mem},
		{Prefix: "/docs/", Backend: docs},
	}, backend.CompositeOptions{})
	require.NoError(t, err)
	ctx := t.Context()
	write(t, def, "/a.py", "needle", "/b.py", "needle", "/memories/shadow.py", "needle hidden by the route")
	write(t, mem, "/top.py", "needle", "/sub/deep.py", "needle", "/notes.md", "needle")
	write(t, docs, "/guide.md", "needle\nneedle")

	// Glob: merged, sorted by path; anchored patterns reach into routes.
	res, err := c.Glob(ctx, "*.py", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"/a.py", "/b.py", "/memories/sub/deep.py", "/memories/top.py"}, globPaths(res))
	res, err = c.Glob(ctx, "/memories/*.py", "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/memories/top.py"}, globPaths(res), "only top-level files of the route")
	res, err = c.Glob(ctx, "*/*.md", "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/docs/guide.md", "/memories/notes.md"}, globPaths(res), "a wildcard segment can match a route")
	res, err = c.Glob(ctx, "**/*.md", "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/docs/guide.md", "/memories/notes.md"}, globPaths(res))
	res, err = c.Glob(ctx, "*.py", "/memories")
	require.NoError(t, err)
	assert.Equal(t, []string{"/memories/sub/deep.py", "/memories/top.py"}, globPaths(res))

	// Grep: default first, then routes in the order given; a global cap.
	g, err := c.Grep(ctx, backend.GrepRequest{Pattern: "needle"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/a.py", "/b.py", "/memories/notes.md", "/memories/sub/deep.py", "/memories/top.py", "/docs/guide.md", "/docs/guide.md"}, grepPaths(g))
	assert.False(t, g.Truncated)
	g, err = c.Grep(ctx, backend.GrepRequest{Pattern: "needle", MaxCount: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"/a.py", "/b.py", "/memories/notes.md"}, grepPaths(g))
	assert.True(t, g.Truncated)
	g, err = c.Grep(ctx, backend.GrepRequest{Pattern: "needle", MaxCount: 7})
	require.NoError(t, err)
	assert.Len(t, g.Matches, 7)
	assert.False(t, g.Truncated, "exactly MaxCount matches is not truncation")
	g, err = c.Grep(ctx, backend.GrepRequest{Pattern: "needle", MaxCount: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"/a.py", "/b.py"}, grepPaths(g), "the budget ran out before the routes")
	assert.True(t, g.Truncated)
	g, err = c.Grep(ctx, backend.GrepRequest{Pattern: "needle", Glob: "memories/*.py"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/memories/top.py"}, grepPaths(g))
	g, err = c.Grep(ctx, backend.GrepRequest{Pattern: "needle", Path: "/docs"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/docs/guide.md", "/docs/guide.md"}, grepPaths(g))

	// The first error stops the aggregation.
	broken := &failingGrep{Backend: store()}
	c2, err := backend.NewComposite(def, []backend.Route{{Prefix: "/x/", Backend: broken}, {Prefix: "/y/", Backend: mem}}, backend.CompositeOptions{})
	require.NoError(t, err)
	g, err = c2.Grep(ctx, backend.GrepRequest{Pattern: "needle"})
	assert.EqualError(t, err, "route exploded")
	assert.Equal(t, []string{"/a.py", "/b.py", "/memories/shadow.py"}, grepPaths(g), "matches found before the error are kept")
}

type failingGrep struct{ backend.Backend }

func (failingGrep) Grep(context.Context, backend.GrepRequest) (backend.GrepResult, error) {
	return backend.GrepResult{}, errors.New("route exploded")
}

func globPaths(r backend.GlobResult) []string {
	var out []string
	for _, m := range r.Matches {
		out = append(out, m.Path)
	}
	return out
}

func grepPaths(r backend.GrepResult) []string {
	var out []string
	for _, m := range r.Matches {
		out = append(out, m.Path)
	}
	return out
}

func TestCompositeDeleteUploadDownload(t *testing.T) {
	def, mem := store(), store()
	ro := noDelete{store()}
	c, err := backend.NewComposite(def, []backend.Route{{Prefix: "/memories/", Backend: mem}, {Prefix: "/ro/", Backend: ro}}, backend.CompositeOptions{ArtifactsRoot: "/scratch/"})
	require.NoError(t, err)
	assert.Equal(t, "/scratch", backend.ArtifactsRoot(c))
	assert.Equal(t, "/", backend.ArtifactsRoot(def))
	assert.True(t, backend.CanDelete(c), "a composite always offers delete")
	ctx := t.Context()
	write(t, c, "/ro/x.txt", "x", "/memories/m.txt", "m")
	err = c.Delete(ctx, "/ro/x.txt")
	assert.EqualError(t, err, "deletion is not supported for '/ro/x.txt'")
	assert.ErrorIs(t, err, backend.ErrUnsupported)
	require.NoError(t, c.Delete(ctx, "/memories/m.txt"))
	assert.ErrorIs(t, c.Delete(ctx, "/"), backend.ErrUnsupported, "deleting a directory that holds mounts is refused")

	up := c.Upload(ctx, []backend.UploadFile{
		{Path: "/memories/a.bin", Content: []byte{0xff, 0}},
		{Path: "/plain.txt", Content: []byte("p")},
		{Path: "/memories/../x", Content: []byte("no")},
		{Path: "/ro/b.txt", Content: []byte("b")},
	})
	require.Len(t, up, 4)
	assert.Equal(t, []string{"/memories/a.bin", "/plain.txt", "/memories/../x", "/ro/b.txt"}, []string{up[0].Path, up[1].Path, up[2].Path, up[3].Path})
	assert.NoError(t, up[0].Err)
	assert.NoError(t, up[1].Err)
	assert.ErrorIs(t, up[2].Err, backend.ErrInvalidPath)
	assert.NoError(t, up[3].Err)
	down := c.Download(ctx, []string{"/ro/b.txt", "/memories/nope", "/plain.txt", "/memories/a.bin"})
	require.Len(t, down, 4)
	assert.Equal(t, "b", string(down[0].Content))
	assert.ErrorIs(t, down[1].Err, backend.ErrFileNotFound)
	assert.Equal(t, "File '/memories/nope' not found", down[1].Err.Error())
	assert.Equal(t, "p", string(down[2].Content))
	assert.Equal(t, []byte{0xff, 0}, down[3].Content)
	fd, err := mem.Read(ctx, "/a.bin", 0, 1)
	require.NoError(t, err)
	assert.Equal(t, backend.EncodingBase64, fd.File.Encoding)
}

func TestCompositeExecute(t *testing.T) {
	shell := newShell(t)
	c := mustComposite(t, shell, backend.Route{Prefix: "/mem/", Backend: store()})
	assert.True(t, backend.CanExecute(c))
	assert.Equal(t, shell.ID(), c.ID())
	res, err := c.Execute(t.Context(), backend.ExecuteRequest{Command: "echo routed"})
	require.NoError(t, err)
	assert.Equal(t, "routed\n", res.Output)

	plain := mustComposite(t, store(), backend.Route{Prefix: "/sh/", Backend: shell})
	assert.False(t, backend.CanExecute(plain), "only the default backend runs commands")
	_, err = plain.Execute(t.Context(), backend.ExecuteRequest{Command: "echo x"})
	assert.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Empty(t, plain.ID())
}

func TestCompositeConstruction(t *testing.T) {
	for _, bad := range [][]backend.Route{
		{{Prefix: "memories/", Backend: store()}},
		{{Prefix: "/", Backend: store()}},
		{{Prefix: "/a/", Backend: store()}, {Prefix: "/a", Backend: store()}},
		{{Prefix: "/a/../b/", Backend: store()}},
		{{Prefix: "/a/", Backend: nil}},
	} {
		_, err := backend.NewComposite(store(), bad, backend.CompositeOptions{})
		assert.Error(t, err, "%v", bad)
	}
	_, err := backend.NewComposite(nil, nil, backend.CompositeOptions{})
	assert.Error(t, err)
	_, err = backend.NewComposite(store(), nil, backend.CompositeOptions{ArtifactsRoot: "../x"})
	assert.True(t, err != nil && strings.Contains(err.Error(), "artifacts root"), "%v", err)
}
