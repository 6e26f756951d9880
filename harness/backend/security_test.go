package backend_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
)

// sandbox is a root directory with a sibling "outside" directory that no
// operation may touch, and symlinks inside the root that point out of it.
type sandbox struct {
	parent, root, outside string
}

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	parent := t.TempDir()
	s := sandbox{parent: parent, root: filepath.Join(parent, "root"), outside: filepath.Join(parent, "outside")}
	for _, d := range []string{s.root, s.outside, filepath.Join(s.root, "sub")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.outside, "secret.txt"), []byte("TOP SECRET\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "sub", "ok.txt"), []byte("fine\n"), 0o644))
	require.NoError(t, os.Symlink("../outside", filepath.Join(s.root, "link")))
	require.NoError(t, os.Symlink(s.outside, filepath.Join(s.root, "abslink")))
	require.NoError(t, os.Symlink("../outside/secret.txt", filepath.Join(s.root, "evil.txt")))
	require.NoError(t, os.Symlink("../../outside", filepath.Join(s.root, "sub", "up")))
	require.NoError(t, os.Symlink("loop", filepath.Join(s.root, "loop")))
	return s
}

// snapshot records every file outside the root (and the parent's entries).
func (s sandbox) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(s.parent)
	require.NoError(t, err)
	for _, e := range entries {
		out["parent:"+e.Name()] = ""
	}
	require.NoError(t, filepath.WalkDir(s.outside, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

// symlinkEscapes are paths that are well-formed but lead out of the root
// through a symlink.
var symlinkEscapes = []string{"/link/secret.txt", "/link/new.txt", "/abslink/secret.txt", "/sub/up/secret.txt", "/evil.txt", "/loop/x", "/link/deeper/new.txt"}

// The security table: hostile paths against Filesystem (both modes),
// LocalShell and Composite. Nothing outside the root is read, written or
// deleted, and every operation answers InvalidPath or PermissionDenied.
func TestHostilePathsCannotEscape(t *testing.T) {
	type target struct {
		name string
		b    backend.Backend
		sb   sandbox
		// extra paths refused only by this backend (absolute host paths)
		extra []string
	}
	var targets []target
	{
		sb := newSandbox(t)
		fsb, err := backend.NewFilesystem(sb.root, backend.FilesystemOptions{})
		require.NoError(t, err)
		targets = append(targets, target{name: "Filesystem", b: fsb, sb: sb})
	}
	{
		sb := newSandbox(t)
		fsb, err := backend.NewFilesystem(sb.root, backend.FilesystemOptions{HostPaths: true})
		require.NoError(t, err)
		secret := filepath.Join(sb.outside, "secret.txt")
		targets = append(targets, target{name: "FilesystemHostPaths", b: fsb, sb: sb,
			extra: []string{secret, sb.outside + "/new.txt", "/etc/passwd", "/", sb.root + "/../outside/secret.txt", sb.root + "x/a.txt"}})
	}
	{
		sb := newSandbox(t)
		sh, err := backend.NewLocalShell(sb.root, backend.LocalShellOptions{})
		require.NoError(t, err)
		targets = append(targets, target{name: "LocalShell", b: sh, sb: sb})
	}
	{
		sb := newSandbox(t)
		fsb, err := backend.NewFilesystem(sb.root, backend.FilesystemOptions{})
		require.NoError(t, err)
		c := mustComposite(t, fsb, backend.Route{Prefix: "/mnt/", Backend: fsb})
		var routed []string
		for _, p := range symlinkEscapes {
			routed = append(routed, "/mnt"+p)
		}
		routed = append(routed, "/mnt/../link/secret.txt", "/mnt/../../outside/secret.txt", `/mnt\..\..\outside\secret.txt`)
		targets = append(targets, target{name: "Composite", b: c, sb: sb, extra: routed})
	}

	if err := backend.CheckBubblewrap(t.Context()); err == nil {
		// The sandbox's workspace is a copy of the root, made next to
		// "outside", so the same links lead out of it.
		sb := newSandbox(t)
		bw, err := backend.NewBubblewrap(backend.BubblewrapOptions{Workspace: sb.root, Dir: sb.parent})
		require.NoError(t, err)
		require.NoError(t, bw.Start(t.Context()))
		t.Cleanup(func() { assert.NoError(t, bw.Close()) })
		targets = append(targets, target{name: "Bubblewrap", b: bw, sb: sb})
	} else {
		t.Run("Bubblewrap", func(t *testing.T) { requireBubblewrap(t) })
	}

	allowed := []backend.ErrorCode{backend.InvalidPath, backend.PermissionDenied}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx := t.Context()
			before := tg.sb.snapshot(t)
			paths := append(slices.Clone(backendtest.HostilePaths), symlinkEscapes...)
			paths = append(paths, tg.extra...)
			require.GreaterOrEqual(t, len(paths), 25)
			check := func(op, p string, err error) {
				t.Helper()
				if code := backend.CodeOf(err); !slices.Contains(allowed, code) {
					t.Errorf("%s %q: error %v (code %q), want invalid_path or permission_denied", op, p, err, code)
				}
			}
			for _, p := range paths {
				_, err := tg.b.Read(ctx, p, 0, 100)
				check("Read", p, err)
				check("Write", p, tg.b.Write(ctx, p, "pwned"))
				_, err = tg.b.Edit(ctx, backend.EditRequest{Path: p, Old: "TOP", New: "pwned"})
				check("Edit", p, err)
				check("Upload", p, tg.b.Upload(ctx, []backend.UploadFile{{Path: p, Content: []byte("pwned")}})[0].Err)
				d := tg.b.Download(ctx, []string{p})[0]
				check("Download", p, d.Err)
				assert.NotContains(t, string(d.Content), "SECRET")
				if strings.HasSuffix(p, "/evil.txt") {
					// Deleting the link itself is fine: it lives in the root.
					continue
				}
				check("Delete", p, tg.b.(backend.Deleter).Delete(ctx, p))
				entries, err := tg.b.Ls(ctx, p)
				if err == nil {
					t.Errorf("Ls %q listed %v", p, entries)
				}
				g, _ := tg.b.Grep(ctx, backend.GrepRequest{Pattern: "SECRET", Path: p})
				assert.Empty(t, g.Matches, "Grep %q", p)
				gl, _ := tg.b.Glob(ctx, "*", p)
				assert.Empty(t, gl.Matches, "Glob %q", p)
			}
			// Whole-tree searches do not follow links out of the root either.
			g, err := tg.b.Grep(ctx, backend.GrepRequest{Pattern: "SECRET"})
			require.NoError(t, err)
			assert.Empty(t, g.Matches)
			gl, err := tg.b.Glob(ctx, "**/*.txt", "")
			require.NoError(t, err)
			for _, m := range gl.Matches {
				assert.NotContains(t, m.Path, "secret", "glob followed a link out of the root")
			}
			root := "/"
			if tg.name == "FilesystemHostPaths" {
				root = tg.sb.root
			}
			entries, err := tg.b.Ls(ctx, root)
			require.NoError(t, err)
			for _, e := range entries {
				assert.NotContains(t, []string{"/link/", "/abslink/", "/evil.txt", "/loop"}, e.Path, "links out of the root are not listed")
			}
			assert.Equal(t, before, tg.sb.snapshot(t), "something outside the root changed")
			// The in-root link can be removed without touching its target.
			require.NoError(t, tg.b.(backend.Deleter).Delete(ctx, strings.TrimSuffix(root, "/")+"/evil.txt"))
			assert.Equal(t, before, tg.sb.snapshot(t))
		})
	}
}

// Legitimate names that look suspicious still work.
func TestUnusualButValidNames(t *testing.T) {
	fsb := newFS(t)
	ctx := t.Context()
	for _, p := range []string{"/foo..bar.txt", "/100%.txt", "/a%20b.txt", "/...", "/~tilde-inside/x", "/ünïcödé.md", "/spaces in name.txt"} {
		require.NoError(t, fsb.Write(ctx, p, "ok"), p)
		r, err := fsb.Read(ctx, p, 0, 1)
		require.NoError(t, err, p)
		assert.Equal(t, "ok", r.File.Content, p)
	}
}
