package backend_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
)

// requireBubblewrap skips the test, saying why, where the sandbox cannot
// run: bwrap or prlimit missing, or no unprivileged user namespaces.
// .ci/run installs bubblewrap, so CI runs these tests.
func requireBubblewrap(t *testing.T) {
	t.Helper()
	if err := backend.CheckBubblewrap(t.Context()); err != nil {
		t.Skipf("the bubblewrap sandbox cannot run here, skipping: %v (install the bubblewrap package and allow unprivileged user namespaces to run this test)", err)
	}
}

// newBubblewrap returns a started sandbox that the test's cleanup closes.
func newBubblewrap(t *testing.T, opts backend.BubblewrapOptions) *backend.Bubblewrap {
	t.Helper()
	requireBubblewrap(t)
	b, err := backend.NewBubblewrap(opts)
	require.NoError(t, err)
	require.NoError(t, b.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	return b
}

func run(t *testing.T, ex backend.Executor, cmd string) (string, int) {
	t.Helper()
	res, err := ex.Execute(t.Context(), backend.ExecuteRequest{Command: cmd})
	require.NoError(t, err, cmd)
	require.NotNil(t, res.ExitCode, cmd)
	return res.Output, *res.ExitCode
}

func TestBubblewrapConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{New: func(t *testing.T) backend.Backend {
		return newBubblewrap(t, backend.BubblewrapOptions{})
	}})
}

// The system is read-only, the workspace is the only writable host path,
// and /tmp is private to each command.
func TestBubblewrapReadOnlySystem(t *testing.T) {
	sb := newBubblewrap(t, backend.BubblewrapOptions{})
	out, code := run(t, sb, "pwd; ls -d /usr /etc; echo ok > in-workspace && cat in-workspace")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, backend.BubblewrapWorkdir+"\n/etc\n/usr\nok\n", out)
	for _, cmd := range []string{"touch /usr/pwned", "touch /etc/pwned", "touch /pwned", "mkdir /pwned", "touch /proc/pwned", "touch /var/pwned"} {
		out, code := run(t, sb, cmd)
		assert.NotEqual(t, 0, code, "%s: %s", cmd, out)
	}
	for _, p := range []string{"/usr/pwned", "/etc/pwned", "/pwned", "/var/pwned"} {
		assert.NoFileExists(t, p, "nothing reached the host")
	}
	// A host directory outside the workspace is not there at all, so
	// nothing can be written into it.
	host := t.TempDir()
	out, code = run(t, sb, "ls "+host+"; echo x > "+host+"/pwned")
	assert.NotEqual(t, 0, code, out)
	assert.NoFileExists(t, filepath.Join(host, "pwned"))

	out, code = run(t, sb, "echo scratch > /tmp/f && cat /tmp/f")
	assert.Equal(t, "scratch\n", out)
	assert.Equal(t, 0, code)
	out, code = run(t, sb, "cat /tmp/f")
	assert.NotEqual(t, 0, code, "a command's /tmp is gone with it: %s", out)
}

// The host's home directory (and every file in it) cannot be read.
func TestBubblewrapCannotReadHome(t *testing.T) {
	requireBubblewrap(t)
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		t.Skipf("no home directory: %v", err)
	}
	canary, err := os.CreateTemp(home, ".dageval-sandbox-canary-")
	if err != nil {
		t.Skipf("cannot write a canary into %s: %v", home, err)
	}
	t.Cleanup(func() { os.Remove(canary.Name()) })
	_, err = canary.WriteString("HOME SECRET\n")
	require.NoError(t, err)
	require.NoError(t, canary.Close())

	sb := newBubblewrap(t, backend.BubblewrapOptions{})
	for _, cmd := range []string{"cat " + canary.Name(), "ls -a " + home, "cat ~/" + filepath.Base(canary.Name()), "ls /home /root"} {
		out, code := run(t, sb, cmd)
		assert.NotEqual(t, 0, code, "%s: %s", cmd, out)
		assert.NotContains(t, out, "HOME SECRET", cmd)
		assert.NotContains(t, out, filepath.Base(canary.Name())+"\n", cmd)
	}
}

// Without Network a command cannot reach even a listener on the host's
// loopback; with it, the same probe connects (so the probe is sound).
func TestBubblewrapNetwork(t *testing.T) {
	requireBubblewrap(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	exe, err := os.Executable()
	require.NoError(t, err)
	probe, err := os.ReadFile(exe)
	require.NoError(t, err)

	for _, tt := range []struct {
		network bool
		code    int
		output  string
	}{
		{false, 3, "dial failed"},
		{true, 0, "connected\n"},
	} {
		t.Run(fmt.Sprintf("network=%v", tt.network), func(t *testing.T) {
			sb := newBubblewrap(t, backend.BubblewrapOptions{Network: tt.network, Env: map[string]string{dialEnv: ln.Addr().String()}})
			up := sb.Upload(t.Context(), []backend.UploadFile{{Path: "/probe", Content: probe}})
			require.NoError(t, up[0].Err)
			out, code := run(t, sb, "chmod +x probe && ./probe")
			assert.Equal(t, tt.code, code, out)
			assert.Contains(t, out, tt.output)
		})
	}
}

// sleeping reports whether a process running `sleep <arg>` exists on the
// host.
func sleeping(t *testing.T, arg string) bool {
	t.Helper()
	want := []byte("sleep\x00" + arg + "\x00")
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, want) {
			return true
		}
	}
	return false
}

// Nothing a command starts outlives it, however it detaches, and a
// command still running when the sandbox closes is stopped with it.
func TestBubblewrapNothingOutlivesItsRun(t *testing.T) {
	sb := newBubblewrap(t, backend.BubblewrapOptions{})
	// Unique arguments find exactly these processes on the host.
	bg, detached, fg := uniqueSleep(1), uniqueSleep(2), uniqueSleep(3)
	out, code := run(t, sb, "sleep "+bg+" >/dev/null 2>&1 & setsid nohup sleep "+detached+" >/dev/null 2>&1 & echo started")
	assert.Equal(t, "started\n", out)
	assert.Equal(t, 0, code)
	assert.False(t, sleeping(t, bg), "a background process ends with its command")
	assert.False(t, sleeping(t, detached), "so does one that left the session")

	done := make(chan error, 1)
	go func() {
		_, err := sb.Execute(context.Background(), backend.ExecuteRequest{Command: "touch running; exec sleep " + fg})
		done <- err
	}()
	// Wait for the command to be under way (a condition, not a duration).
	waitFor(t, func() bool { return sleeping(t, fg) })
	ws := sb.Workspace()
	require.NoError(t, sb.Close())
	assert.ErrorIs(t, <-done, backend.ErrUnavailable, "the command was stopped by Close")
	assert.False(t, sleeping(t, fg), "nothing runs after Close")
	assert.NoDirExists(t, ws, "the workspace is removed")
}

// uniqueSleep is a sleep duration no other process on the machine uses.
func uniqueSleep(n int) string {
	return fmt.Sprintf("%d.%d%d", 86000+n, os.Getpid(), n)
}

// waitFor polls cond until it holds; the deadline only keeps a broken
// sandbox from hanging the test run.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
	}
}

// The process, file-size and open-file limits hold inside a command.
func TestBubblewrapLimits(t *testing.T) {
	sb := newBubblewrap(t, backend.BubblewrapOptions{MaxProcesses: 16, MaxFileSize: 4096, MaxOpenFiles: 32})
	out, code := run(t, sb, "i=0; while [ $i -lt 100 ]; do sleep 60 & i=$((i+1)); done; echo forked all")
	assert.NotEqual(t, 0, code, out)
	assert.NotContains(t, out, "forked all")
	assert.Regexp(t, regexp.MustCompile(`(?i)fork`), out, "the shell could not fork past the limit")

	out, code = run(t, sb, "head -c 100000 /dev/zero > big")
	assert.NotEqual(t, 0, code, out)
	fi, err := os.Stat(filepath.Join(sb.Workspace(), "big"))
	require.NoError(t, err)
	assert.LessOrEqual(t, fi.Size(), int64(4096), "the file stopped at the size limit")

	out, _ = run(t, sb, "grep 'open files' /proc/self/limits")
	assert.Regexp(t, regexp.MustCompile(`Max open files\s+32\s+32`), out)
}

// Start gives each run a fresh copy of the template; operations need a
// running sandbox; Close is final and idempotent.
func TestBubblewrapLifecycle(t *testing.T) {
	requireBubblewrap(t)
	tmpl := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tmpl, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmpl, "src", "main.sh"), []byte("echo template\n"), 0o755))
	require.NoError(t, os.Symlink("src/main.sh", filepath.Join(tmpl, "link.sh")))
	ctx := t.Context()

	b, err := backend.NewBubblewrap(backend.BubblewrapOptions{Workspace: tmpl})
	require.NoError(t, err)
	assert.Regexp(t, `^bwrap-[0-9a-f]{8}$`, b.ID())
	again, err := backend.NewBubblewrap(backend.BubblewrapOptions{Workspace: tmpl})
	require.NoError(t, err)
	assert.Equal(t, b.ID(), again.ID(), "the id is stable for a template")
	assert.True(t, backend.CanExecute(b))
	assert.True(t, backend.CanDelete(b))

	_, err = b.Read(ctx, "/src/main.sh", 0, 10)
	assert.ErrorIs(t, err, backend.ErrUnavailable, "not started")
	_, err = b.Execute(ctx, backend.ExecuteRequest{Command: "true"})
	assert.ErrorIs(t, err, backend.ErrUnavailable)
	assert.ErrorIs(t, b.Upload(ctx, []backend.UploadFile{{Path: "/x", Content: []byte("x")}})[0].Err, backend.ErrUnavailable)
	assert.Empty(t, b.Workspace())

	require.NoError(t, b.Start(ctx))
	assert.Error(t, b.Start(ctx), "a sandbox serves one run")
	out, code := run(t, b, "sh src/main.sh && sh link.sh && echo changed > src/main.sh && ls")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, "template\ntemplate\nlink.sh\nsrc\n", out)
	tmplContent, err := os.ReadFile(filepath.Join(tmpl, "src", "main.sh"))
	require.NoError(t, err)
	assert.Equal(t, "echo template\n", string(tmplContent), "the template is never changed")

	ws := b.Workspace()
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "closing twice is harmless")
	assert.NoDirExists(t, ws)
	assert.ErrorIs(t, b.Start(ctx), backend.ErrUnavailable, "a closed sandbox stays closed")
	_, err = b.Ls(ctx, "/")
	assert.ErrorIs(t, err, backend.ErrUnavailable)

	// The next run starts from the template again.
	require.NoError(t, again.Start(ctx))
	t.Cleanup(func() { again.Close() })
	got, err := again.Read(ctx, "/src/main.sh", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, "echo template\n", got.File.Content)
	assert.NotEqual(t, ws, again.Workspace())

	for _, bad := range []backend.BubblewrapOptions{{Workspace: filepath.Join(tmpl, "missing")}, {Workspace: filepath.Join(tmpl, "link.sh")}, {ReadOnly: []string{"relative"}}, {Timeout: -time.Second}} {
		_, err := backend.NewBubblewrap(bad)
		assert.Error(t, err, "%+v", bad)
	}
	missing, err := backend.NewBubblewrap(backend.BubblewrapOptions{Bwrap: "/nonexistent/bwrap"})
	require.NoError(t, err, "bwrap is looked for when the sandbox starts")
	err = missing.Start(ctx)
	assert.ErrorIs(t, err, backend.ErrUnavailable)
	assert.Contains(t, err.Error(), "needs bwrap (Debian package bubblewrap)")
}

// A composite starts and closes the sandbox it holds, and commands run
// there.
func TestCompositeLifecycle(t *testing.T) {
	requireBubblewrap(t)
	sb, err := backend.NewBubblewrap(backend.BubblewrapOptions{})
	require.NoError(t, err)
	notes := backend.NewState()
	c := mustComposite(t, sb, backend.Route{Prefix: "/notes/", Backend: notes}, backend.Route{Prefix: "/more/", Backend: sb})
	require.NoError(t, backend.Start(t.Context(), c))
	res, err := c.Execute(t.Context(), backend.ExecuteRequest{Command: "echo " + strconv.Quote("in the sandbox")})
	require.NoError(t, err)
	assert.Equal(t, "in the sandbox\n", res.Output)
	require.NoError(t, backend.Close(c))
	_, err = c.Execute(t.Context(), backend.ExecuteRequest{Command: "true"})
	assert.ErrorIs(t, err, backend.ErrUnavailable)
	assert.NoError(t, backend.Start(t.Context(), notes), "backends without a lifecycle need nothing")
	assert.True(t, strings.HasPrefix(sb.ID(), "bwrap-"))
}

// A sandboxed command sees the fixed environment with the sandbox's own
// paths: PWD is BubblewrapWorkdir, and no host path or variable is there.
func TestBubblewrapEnvIsFixed(t *testing.T) {
	host := hostValues(t)
	sb := newBubblewrap(t, backend.BubblewrapOptions{Env: map[string]string{"SUITE_VAR": "given"}})
	want := backend.CommandEnv(backend.BubblewrapWorkdir)
	want["SUITE_VAR"] = "given"
	assert.Equal(t, want, envOf(t, sb))
	out, _ := run(t, sb, "env")
	for _, v := range host {
		assert.NotContains(t, out, v)
	}
}
