package backend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// LocalShellOptions configure a LocalShell. The zero value works.
type LocalShellOptions struct {
	// Filesystem configures the file operations.
	Filesystem FilesystemOptions
	// Timeout is the default time limit of a command (120 s when 0).
	Timeout time.Duration
	// MaxOutputBytes caps the combined output (100 000 when 0).
	MaxOutputBytes int
	// Env is laid over the commands' environment. Without InheritEnv that
	// is CommandEnv's fixed one, whatever the host's holds; with InheritEnv
	// it is this process's environment (API keys and the user's paths
	// included, so it is for trusted programs, not for agents in evals).
	Env        map[string]string
	InheritEnv bool
	// Shell runs the command as `<Shell> -c <command>` (/bin/sh when empty).
	Shell string
	// ID overrides the identifier; by default it is "local-" followed by 8
	// hex digits derived from the root directory, so it is stable.
	ID string
}

// LocalShell is a Filesystem backend that also runs shell commands in its
// root directory, on the host, with no sandboxing: the file operations are
// confined to the root but commands are not. Put human review (interrupts)
// in front of its execute tool.
type LocalShell struct {
	*Filesystem
	id      string
	timeout time.Duration
	maxOut  int
	env     []string
	shell   string
}

// Default limits of LocalShell.
const (
	defaultExecuteTimeout = 120 * time.Second
	defaultMaxOutputBytes = 100_000
)

// NewLocalShell returns a shell backend rooted at root ("" means the working
// directory).
func NewLocalShell(root string, opts LocalShellOptions) (*LocalShell, error) {
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("backend: local shell timeout must be positive, got %s", opts.Timeout)
	}
	if opts.MaxOutputBytes < 0 {
		return nil, fmt.Errorf("backend: local shell MaxOutputBytes must be positive, got %d", opts.MaxOutputBytes)
	}
	fsb, err := NewFilesystem(root, opts.Filesystem)
	if err != nil {
		return nil, err
	}
	s := &LocalShell{Filesystem: fsb, id: opts.ID, timeout: opts.Timeout, maxOut: opts.MaxOutputBytes, shell: opts.Shell}
	if s.timeout == 0 {
		s.timeout = defaultExecuteTimeout
	}
	if s.maxOut == 0 {
		s.maxOut = defaultMaxOutputBytes
	}
	if s.shell == "" {
		s.shell = "/bin/sh"
	}
	if s.id == "" {
		sum := sha256.Sum256([]byte(fsb.root))
		s.id = "local-" + hex.EncodeToString(sum[:4])
	}
	env := CommandEnv(fsb.root)
	if opts.InheritEnv {
		env = map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		env["PWD"] = fsb.root
	}
	maps.Copy(env, opts.Env)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		s.env = append(s.env, k+"="+env[k])
	}
	return s, nil
}

// CommandPath is the search path of the commands of LocalShell and
// Bubblewrap: the system's directories, never the host user's.
const CommandPath = "/usr/local/bin:/usr/bin:/bin"

// CommandEnv is the fixed environment commands run with, in a shell whose
// working directory is workdir: PATH=CommandPath, HOME=/tmp, TMPDIR=/tmp,
// LANG=C.UTF-8 and PWD=workdir. Nothing of the host's environment is
// passed on (no API key, no user path, not the directory dageval runs
// in), so what an agent's `env` prints depends only on where its commands
// run: the sandbox's BubblewrapWorkdir, or a LocalShell's root, which is
// a host directory since its commands run on the host.
func CommandEnv(workdir string) map[string]string {
	return map[string]string{"PATH": CommandPath, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PWD": workdir}
}

// ID implements Executor.
func (s *LocalShell) ID() string { return s.id }

// Execute implements Executor. Output is stdout, then each stderr line
// prefixed "[stderr] ", or "<no output>"; past MaxOutputBytes it is cut
// (Truncated). A non-zero exit appends "Exit code: N". A command that runs
// out of time is killed with its process group and reports exit code 124.
func (s *LocalShell) Execute(ctx context.Context, req ExecuteRequest) (ExecuteResult, error) {
	return runCommand(ctx, req, s.timeout, s.maxOut, func(ctx context.Context) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, s.shell, "-c", req.Command)
		cmd.Dir = s.root
		cmd.Env = s.env
		return cmd, nil
	})
}

// runCommand runs the command build makes (stdin closed, in its own process
// group, killed with the group when ctx ends or the time runs out) and
// reports it the way Deep Agents' LocalShellBackend does; see
// LocalShell.Execute. Shells and sandboxes share it, so every backend that
// runs commands answers the model in the same words.
func runCommand(ctx context.Context, req ExecuteRequest, defaultTimeout time.Duration, maxOut int, build func(ctx context.Context) (*exec.Cmd, error)) (ExecuteResult, error) {
	if strings.TrimSpace(req.Command) == "" {
		return ExecuteResult{Output: "Error: Command must be a non-empty string.", ExitCode: ExitCode(1)}, nil
	}
	timeout := req.Timeout
	custom := timeout != 0
	switch {
	case timeout == 0:
		timeout = defaultTimeout
	case timeout < 0:
		return ExecuteResult{}, errf(InvalidArgument, "", "timeout must be positive: this backend cannot run commands without a time limit")
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := build(tctx)
	if err != nil {
		return ExecuteResult{}, err
	}
	stdout := &capped{limit: maxOut + 1}
	stderr := &capped{limit: maxOut + 1}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return ExecuteResult{}, ctx.Err()
	}
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		secs := timeout.Seconds()
		msg := fmt.Sprintf("Error: Command timed out after %g seconds and was stopped. Re-run it with a larger timeout if it needs more time.", secs)
		if custom {
			msg = fmt.Sprintf("Error: Command timed out after %g seconds (the timeout given for this call) and was stopped. It may be stuck, or it may need more time.", secs)
		}
		return ExecuteResult{Output: msg, ExitCode: ExitCode(124)}, nil
	}
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitStatus(exitErr)
	case err != nil:
		return ExecuteResult{Output: fmt.Sprintf("Error executing command (%T): %v", err, err), ExitCode: ExitCode(1)}, nil
	}
	var parts []string
	if out := stdout.String(); out != "" {
		parts = append(parts, out)
	}
	if errText := strings.TrimSpace(stderr.String()); errText != "" {
		for line := range strings.SplitSeq(errText, "\n") {
			parts = append(parts, "[stderr] "+line)
		}
	}
	output := strings.Join(parts, "\n")
	if output == "" {
		output = "<no output>"
	}
	res := ExecuteResult{ExitCode: ExitCode(code)}
	if len(output) > maxOut || stdout.dropped || stderr.dropped {
		cut := min(maxOut, len(output))
		for cut > 0 && cut < len(output) && !utf8.RuneStart(output[cut]) {
			cut--
		}
		output = output[:cut] + fmt.Sprintf("\n\n... Output truncated at %d bytes.", maxOut)
		res.Truncated = true
	}
	if code != 0 {
		output = strings.TrimRight(output, " \t\r\n") + fmt.Sprintf("\n\nExit code: %d", code)
	}
	res.Output = output
	return res, nil
}

// capped is a writer that keeps the first limit bytes and drops the rest,
// so a runaway command cannot exhaust memory.
type capped struct {
	mu      sync.Mutex
	buf     []byte
	limit   int
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - len(c.buf)
	if room < len(p) {
		c.dropped = true
		if room > 0 {
			c.buf = append(c.buf, p[:room]...)
		}
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}
