package backend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BubblewrapWorkdir is where a Bubblewrap sandbox's workspace appears to
// the commands it runs, and the directory they start in.
const BubblewrapWorkdir = "/workspace"

// BubblewrapOptions configure a Bubblewrap sandbox. The zero value works:
// an empty workspace, no network, the default limits.
type BubblewrapOptions struct {
	// Workspace is a directory copied into every run's fresh workspace at
	// Start (the template of a coding task); the directory itself is never
	// changed. Empty starts each run with an empty workspace.
	Workspace string
	// Dir is where workspaces are created (os.TempDir() when empty). The
	// sandbox's user must be able to reach it; see UID.
	Dir string
	// Network lets commands use the host's network. Without it they have
	// none, the host's loopback included.
	Network bool
	// Timeout is the default time limit of a command (120 s when 0);
	// MaxOutputBytes caps its combined output (100 000 when 0).
	Timeout        time.Duration
	MaxOutputBytes int
	// MaxProcesses caps the processes and threads a command may have at
	// once (256 when 0), MaxFileSize the size of a file it writes (1 GiB
	// when 0), MaxOpenFiles its open files (1024 when 0), MaxMemory its
	// address space (no limit when 0) and TmpSize its private /tmp (256 MiB
	// when 0).
	MaxProcesses int
	MaxFileSize  int64
	MaxOpenFiles int
	MaxMemory    int64
	TmpSize      int64
	// ReadOnly lists further host paths commands may read, mounted where
	// they are (a toolchain outside /usr, say).
	ReadOnly []string
	// Env is laid over the commands' environment (CommandEnv's, with PWD
	// the workspace, BubblewrapWorkdir); the host's is never passed on.
	Env map[string]string
	// Bwrap is the bubblewrap binary ("bwrap" on PATH when empty).
	Bwrap string
	// UID and GID are the user commands run as when dageval runs as root
	// (65534, nobody, when 0): the kernel exempts root from the process
	// limit, and a plain user cannot read root's files. Files the sandbox's
	// own file operations create are given to that user. Otherwise
	// commands run as the user running dageval.
	UID, GID int
	// ID overrides the identifier; by default it is "bwrap-" followed by 8
	// hex digits derived from Workspace, so it is stable.
	ID string
}

// Bubblewrap is a Sandbox on the local machine, built on bubblewrap
// (bwrap) and unprivileged user namespaces, without cgroups. Every command
// runs in namespaces of its own with the host's system directories
// read-only, the run's workspace (at BubblewrapWorkdir) as the only
// writable host path, a private /tmp, /proc and /dev, no network unless
// Network is set, an empty environment of its own, and limits on
// processes, file sizes, open files and time; it is killed with everything
// it started when it ends, times out or the sandbox closes, so no process
// outlives its command, let alone its run. Background processes therefore
// do not survive from one command to the next. The file operations act on
// the workspace directly, through a Filesystem backend.
//
// Start creates a fresh workspace (a copy of Workspace) for a run; Close
// stops every command still running and removes the workspace.
type Bubblewrap struct {
	opts    BubblewrapOptions
	bwrap   string
	prlimit string
	id      string
	// asUser is set when commands run as opts.UID/GID rather than as us.
	asUser bool

	mu      sync.Mutex
	state   int // sandboxNew, sandboxStarted or sandboxClosed
	fs      *Filesystem
	dir     string // the run's workspace on the host
	stop    context.CancelFunc
	stopped context.Context
	active  sync.WaitGroup
}

const (
	sandboxNew = iota
	sandboxStarted
	sandboxClosed
)

// Default limits of Bubblewrap.
const (
	defaultSandboxProcesses = 256
	defaultSandboxFileSize  = 1 << 30
	defaultSandboxOpenFiles = 1024
	defaultSandboxTmpSize   = 256 << 20
	nobodyID                = 65534
)

// NewBubblewrap returns a sandbox that is not started yet; it fails only on
// bad options (Workspace not a directory, say), so an agent using it can be
// assembled and described anywhere. Start checks that bwrap and prlimit
// (util-linux, which applies the limits) are installed and that the kernel
// lets bubblewrap create its namespaces (see CheckBubblewrap).
func NewBubblewrap(opts BubblewrapOptions) (*Bubblewrap, error) {
	for name, v := range map[string]int64{"Timeout": int64(opts.Timeout), "MaxOutputBytes": int64(opts.MaxOutputBytes), "MaxProcesses": int64(opts.MaxProcesses),
		"MaxFileSize": opts.MaxFileSize, "MaxOpenFiles": int64(opts.MaxOpenFiles), "MaxMemory": opts.MaxMemory, "TmpSize": opts.TmpSize} {
		if v < 0 {
			return nil, fmt.Errorf("backend: bubblewrap %s must not be negative", name)
		}
	}
	b := &Bubblewrap{opts: opts, id: opts.ID}
	o := &b.opts
	if o.Timeout == 0 {
		o.Timeout = defaultExecuteTimeout
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = defaultMaxOutputBytes
	}
	if o.MaxProcesses == 0 {
		o.MaxProcesses = defaultSandboxProcesses
	}
	if o.MaxFileSize == 0 {
		o.MaxFileSize = defaultSandboxFileSize
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = defaultSandboxOpenFiles
	}
	if o.TmpSize == 0 {
		o.TmpSize = defaultSandboxTmpSize
	}
	if o.UID == 0 {
		o.UID = nobodyID
	}
	if o.GID == 0 {
		o.GID = nobodyID
	}
	b.asUser = os.Geteuid() == 0
	if o.Workspace != "" {
		abs, err := filepath.Abs(o.Workspace)
		if err != nil {
			return nil, fmt.Errorf("backend: bubblewrap workspace %s: %w", o.Workspace, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("backend: bubblewrap workspace: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("backend: bubblewrap workspace %s is not a directory", o.Workspace)
		}
		o.Workspace = abs
	}
	for _, p := range o.ReadOnly {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("backend: bubblewrap read-only path %q must be absolute", p)
		}
	}
	if b.id == "" {
		sum := sha256.Sum256([]byte(o.Workspace))
		b.id = "bwrap-" + hex.EncodeToString(sum[:4])
	}
	return b, nil
}

func lookTool(given, name, pkg string) (string, error) {
	if given == "" {
		given = name
	}
	p, err := exec.LookPath(given)
	if err != nil {
		return "", errf(Unavailable, "", "backend: the bubblewrap sandbox needs %s (Debian package %s): %v", name, pkg, err)
	}
	return filepath.Abs(p)
}

// ID implements Executor.
func (b *Bubblewrap) ID() string { return b.id }

// Workspace returns the host directory of the running workspace, or "" when
// the sandbox is not started.
func (b *Bubblewrap) Workspace() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != sandboxStarted {
		return ""
	}
	return b.dir
}

// Start implements Lifecycle: it checks that bubblewrap works here and
// creates the run's workspace, a copy of Workspace.
func (b *Bubblewrap) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case sandboxStarted:
		return errors.New("backend: bubblewrap sandbox already started (use a new one for each run)")
	case sandboxClosed:
		return errUnavailable("backend: bubblewrap sandbox is closed (use a new one for each run)")
	}
	if err := b.check(ctx); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(b.opts.Dir, "dageval-sandbox-")
	if err != nil {
		return fmt.Errorf("backend: bubblewrap workspace: %w", err)
	}
	if err := b.fill(dir); err != nil {
		_ = removeTree(dir)
		return fmt.Errorf("backend: bubblewrap workspace: %w", err)
	}
	fsb, err := NewFilesystem(dir, FilesystemOptions{})
	if err != nil {
		_ = removeTree(dir)
		return err
	}
	if b.asUser {
		fsb.owner = &fileOwner{uid: b.opts.UID, gid: b.opts.GID}
	}
	b.fs, b.dir, b.state = fsb, dir, sandboxStarted
	b.stopped, b.stop = context.WithCancel(context.Background())
	return nil
}

// fill copies the template into the new workspace dir and, when commands
// run as another user, gives that user the whole tree.
func (b *Bubblewrap) fill(dir string) error {
	if b.opts.Workspace != "" {
		if err := copyTree(b.opts.Workspace, dir); err != nil {
			return err
		}
	}
	if !b.asUser {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, b.opts.UID, b.opts.GID)
	})
}

// copyTree copies directories, regular files and symlinks (as links, never
// followed) from src into the existing directory dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			return copyFile(p, to, info.Mode().Perm())
		}
		return nil // devices, sockets and pipes are not part of a workspace
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeTree removes dir even where a command took away its own write
// permission on directories inside it.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// Close implements Lifecycle: it kills every command still running (with
// all it started), waits for the operations under way, and removes the
// workspace.
func (b *Bubblewrap) Close() error {
	b.mu.Lock()
	if b.state != sandboxStarted {
		b.state = sandboxClosed
		b.mu.Unlock()
		return nil
	}
	b.state = sandboxClosed
	b.stop()
	dir := b.dir
	b.mu.Unlock()
	b.active.Wait()
	if err := removeTree(dir); err != nil {
		return fmt.Errorf("backend: bubblewrap: removing the workspace: %w", err)
	}
	return nil
}

// enter returns the workspace's file backend for one operation, which the
// caller ends with done; Close waits for it.
func (b *Bubblewrap) enter() (fsb *Filesystem, done func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case sandboxNew:
		return nil, nil, errUnavailable("The sandbox is not started: its workspace does not exist yet.")
	case sandboxClosed:
		return nil, nil, errUnavailable("The sandbox is closed: its workspace was removed.")
	}
	b.active.Add(1)
	return b.fs, b.active.Done, nil
}

// Ls implements Backend.
func (b *Bubblewrap) Ls(ctx context.Context, p string) ([]FileInfo, error) {
	fsb, done, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return fsb.Ls(ctx, p)
}

// Read implements Backend.
func (b *Bubblewrap) Read(ctx context.Context, p string, offset, limit int) (ReadResult, error) {
	fsb, done, err := b.enter()
	if err != nil {
		return ReadResult{}, err
	}
	defer done()
	return fsb.Read(ctx, p, offset, limit)
}

// Write implements Backend.
func (b *Bubblewrap) Write(ctx context.Context, p, content string) error {
	fsb, done, err := b.enter()
	if err != nil {
		return err
	}
	defer done()
	return fsb.Write(ctx, p, content)
}

// Edit implements Backend.
func (b *Bubblewrap) Edit(ctx context.Context, req EditRequest) (int, error) {
	fsb, done, err := b.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	return fsb.Edit(ctx, req)
}

// Delete implements Deleter.
func (b *Bubblewrap) Delete(ctx context.Context, p string) error {
	fsb, done, err := b.enter()
	if err != nil {
		return err
	}
	defer done()
	return fsb.Delete(ctx, p)
}

// Glob implements Backend.
func (b *Bubblewrap) Glob(ctx context.Context, pattern, p string) (GlobResult, error) {
	fsb, done, err := b.enter()
	if err != nil {
		return GlobResult{}, err
	}
	defer done()
	return fsb.Glob(ctx, pattern, p)
}

// Grep implements Backend.
func (b *Bubblewrap) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	fsb, done, err := b.enter()
	if err != nil {
		return GrepResult{}, err
	}
	defer done()
	return fsb.Grep(ctx, req)
}

// Upload implements Backend.
func (b *Bubblewrap) Upload(ctx context.Context, files []UploadFile) []UploadResult {
	fsb, done, err := b.enter()
	if err != nil {
		out := make([]UploadResult, len(files))
		for i, f := range files {
			out[i] = UploadResult{Path: f.Path, Err: err}
		}
		return out
	}
	defer done()
	return fsb.Upload(ctx, files)
}

// Download implements Backend.
func (b *Bubblewrap) Download(ctx context.Context, paths []string) []DownloadResult {
	fsb, done, err := b.enter()
	if err != nil {
		out := make([]DownloadResult, len(paths))
		for i, p := range paths {
			out[i] = DownloadResult{Path: p, Err: err}
		}
		return out
	}
	defer done()
	return fsb.Download(ctx, paths)
}

// Execute implements Executor, reporting like LocalShell.Execute: the
// command runs in BubblewrapWorkdir, with the limits of the options, and
// is killed with everything it started when it ends, times out, ctx ends
// or the sandbox closes.
func (b *Bubblewrap) Execute(ctx context.Context, req ExecuteRequest) (ExecuteResult, error) {
	fsb, done, err := b.enter()
	if err != nil {
		return ExecuteResult{}, err
	}
	defer done()
	// A command ends with the sandbox: Close cancels what is still running.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.stopped, cancel)()
	res, err := runCommand(ctx, req, b.opts.Timeout, b.opts.MaxOutputBytes, func(ctx context.Context) (*exec.Cmd, error) {
		return b.command(ctx, fsb.Root(), b.inner(req.Command)), nil
	})
	if err != nil && b.stopped.Err() != nil && ctx.Err() != nil {
		return ExecuteResult{}, errUnavailable("The sandbox was closed while the command ran; the command was stopped.")
	}
	return res, err
}

// inner is what runs inside the namespaces: prlimit sets the limits and
// execs the shell, which gets the command as one argument, never
// reinterpreted by a wrapper.
func (b *Bubblewrap) inner(command string) []string {
	o := b.opts
	lim := func(flag string, v int64) string { return fmt.Sprintf("--%s=%d:%d", flag, v, v) }
	args := []string{b.prlimit,
		lim("nproc", int64(o.MaxProcesses)), lim("fsize", o.MaxFileSize), lim("nofile", int64(o.MaxOpenFiles)), lim("core", 0)}
	if o.MaxMemory > 0 {
		args = append(args, lim("as", o.MaxMemory))
	}
	return append(args, "--", "/bin/sh", "-c", command)
}

// systemPaths are the host directories a command sees, read-only. Home
// directories, /tmp, /var, /run, /srv, /opt and /mnt are not among them.
var systemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// command builds the bwrap invocation of argv with workspace (a host
// directory, "" for none) at BubblewrapWorkdir.
func (b *Bubblewrap) command(ctx context.Context, workspace string, argv []string) *exec.Cmd {
	o := b.opts
	// --as-pid-1 makes the command's own process the namespace's init, so
	// that its exit kills everything else in the namespace before bwrap
	// exits: once Execute returns, nothing the command started is left.
	// (With bwrap's own init, bwrap exits as soon as the command does and
	// the rest is killed a moment later.)
	args := []string{"--die-with-parent", "--new-session", "--as-pid-1",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"}
	if !o.Network {
		args = append(args, "--unshare-net")
	}
	if b.asUser {
		args = append(args, "--uid", strconv.Itoa(o.UID), "--gid", strconv.Itoa(o.GID))
	}
	for _, p := range systemPaths {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			// Merged-/usr systems link /bin to usr/bin: keep the link.
			if target, err := os.Readlink(p); err == nil {
				args = append(args, "--symlink", target, p)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", p, p)
		}
	}
	for _, p := range o.ReadOnly {
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--size", strconv.FormatInt(o.TmpSize, 10), "--tmpfs", "/tmp")
	if workspace != "" {
		args = append(args, "--bind", workspace, BubblewrapWorkdir, "--chdir", BubblewrapWorkdir)
	}
	// Nothing else of the sandbox's own root is writable.
	args = append(args, "--remount-ro", "/", "--clearenv")
	env := CommandEnv(BubblewrapWorkdir)
	if workspace == "" {
		env["PWD"] = "/"
	}
	maps.Copy(env, o.Env)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		args = append(args, "--setenv", k, env[k])
	}
	args = append(append(args, "--"), argv...)
	cmd := exec.CommandContext(ctx, b.bwrap, args...)
	cmd.Dir = "/"
	cmd.Env = []string{}
	if b.asUser {
		runAs(cmd, o.UID, o.GID)
	}
	return cmd
}

// probes caches whether bubblewrap works, per binary and user.
var probes sync.Map // string → *probe

type probe struct {
	once sync.Once
	err  error
}

// check runs a trivial command in the sandbox's namespaces once per
// process, so that a kernel without unprivileged user namespaces (or a
// bwrap that lacks a flag) fails Start with bwrap's own explanation.
func (b *Bubblewrap) check(ctx context.Context) error {
	if b.bwrap == "" {
		bw, err := lookTool(b.opts.Bwrap, "bwrap", "bubblewrap")
		if err != nil {
			return err
		}
		pl, err := lookTool("", "prlimit", "util-linux")
		if err != nil {
			return err
		}
		b.bwrap, b.prlimit = bw, pl
	}
	key := fmt.Sprintf("%s|%v|%d|%d|%v", b.bwrap, b.asUser, b.opts.UID, b.opts.GID, b.opts.Network)
	v, _ := probes.LoadOrStore(key, &probe{})
	p := v.(*probe)
	p.once.Do(func() {
		// The answer is kept for the process, so a caller's cancellation
		// must not decide it; a stuck bwrap still cannot hang Start.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		cmd := b.command(ctx, "", []string{b.prlimit, "--nproc=64:64", "--", "/bin/sh", "-c", "true"})
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			p.err = errf(Unavailable, "", "bubblewrap cannot set up its sandbox here (are unprivileged user namespaces enabled?): %s", msg)
		}
	})
	return p.err
}

// CheckBubblewrap reports why a Bubblewrap sandbox with default options
// cannot run on this machine (an Unavailable error: bwrap or prlimit is
// missing, or the kernel refuses bubblewrap's namespaces), or nil when it
// can.
func CheckBubblewrap(ctx context.Context) error {
	b, err := NewBubblewrap(BubblewrapOptions{})
	if err != nil {
		return err
	}
	return b.check(ctx)
}
