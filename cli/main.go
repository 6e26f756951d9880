// Package cli is the dageval command line as a library, so that a program can run every subcommand with its own Go code.
package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/dageval/dageval/evals"
)

// Exit codes shared by every subcommand.
const (
	exitOK       = 0 // the job ran and everything passed
	exitFailures = 1 // the job ran and found failures (or differences)
	exitBad      = 2 // bad input, or the job could not be carried out
)

// command is one subcommand. Each lives in its own file and registers itself.
type command struct {
	name    string
	summary string
	usage   string // first line of --help: arguments after the command name
	help    string // what the command does, shown by --help
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch; tests substitute buffers.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	// reg holds the program's registrations (nil: none), shared by every
	// command that reads suites or agent files.
	reg *evals.Registry
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// exitError carries an exit code with an optional message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// failures signals exit code 1 (the job ran and found failures).
func failures(format string, args ...any) error {
	return &exitError{code: exitFailures, msg: fmt.Sprintf(format, args...)}
}

// usageError signals exit code 2 because the command line was wrong.
func usageError(format string, args ...any) error {
	return &exitError{code: exitBad, msg: fmt.Sprintf(format, args...)}
}

// Main runs the dageval command line given args (without the program's
// name) and returns its exit code: 0 ok, 1 the job ran and found failures
// (or differences), 2 bad input or the job could not run. The options
// register the program's own agents, tools, middleware, subagents, checks
// and providers, which every subcommand then knows by name, so that a
// team's command is
//
//	func main() {
//		os.Exit(cli.Main(os.Args[1:],
//			cli.WithAgent("support", support.Factory),
//			cli.WithTool("lookup_order", support.LookupOrder),
//			cli.WithMiddleware("RedactMiddleware", support.NewRedact)))
//	}
//
// and `go run ./cmd/evals run suite.yaml` works as dageval run does, with
// that agent. Without WithContext, an interrupt (SIGINT) or a SIGTERM —
// what CI cancellation and Kubernetes send — cancels the command, and a
// run then writes what it finished, to be resumed.
func Main(args []string, opts ...Option) int {
	c := config{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	for _, o := range opts {
		o(&c)
	}
	if c.ctx == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		c.ctx = ctx
	}
	tuneGC()
	return runMain(c.ctx, &env{stdout: c.stdout, stderr: c.stderr, stdin: c.stdin, getenv: c.getenv, reg: c.registry()}, args)
}

// runMain dispatches to a subcommand and maps its error to an exit code.
func runMain(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		printUsage(e.stderr)
		return exitBad
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	case "-v", "--version", "-version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		if s := nearest(name, commandNames()); s != "" {
			fmt.Fprintf(e.stderr, "dageval: unknown command %q; did you mean %q?\nRun 'dageval help' for the commands.\n", name, s)
			return exitBad
		}
		fmt.Fprintf(e.stderr, "dageval: unknown command %q\n\n", name)
		printUsage(e.stderr)
		return exitBad
	}
	err := c.run(ctx, e, args[1:])
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	}
	var xe *exitError
	if errors.As(err, &xe) {
		if xe.msg != "" {
			fmt.Fprintf(e.stderr, "dageval %s: %s\n", c.name, xe.msg)
		}
		return xe.code
	}
	fmt.Fprintf(e.stderr, "dageval %s: %v\n", c.name, err)
	return exitBad
}

// newFlags returns a flag set whose --help prints the command's usage and
// help text on standard output; a wrong flag prints them on standard error.
func newFlags(c *command, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("dageval "+c.name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{stdout: e.stdout, stderr: e.stderr})
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: dageval %s %s\n\n%s\n", c.name, c.usage, strings.TrimSpace(c.help))
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintf(w, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// flagOutput holds what a flag set prints until parsing tells whether it
// answers --help (standard output) or reports a mistake (standard error).
type flagOutput struct {
	buf            bytes.Buffer
	stdout, stderr io.Writer
}

func (o *flagOutput) Write(p []byte) (int, error) { return o.buf.Write(p) }

func (o *flagOutput) flush(help bool) {
	w := o.stderr
	if help {
		w = o.stdout
	}
	w.Write(o.buf.Bytes())
	o.buf.Reset()
}

// parse parses flags, turning a parse failure into exit code 2. A flag
// the command does not have gets a short message naming the nearest one,
// rather than the whole usage.
func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if o, ok := fs.Output().(*flagOutput); ok {
		if name, unknown := strings.CutPrefix(fmt.Sprint(err), "flag provided but not defined: "); unknown {
			o.buf.Reset()
			name = strings.TrimLeft(name, "-")
			var flags []string
			fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
			msg := fmt.Sprintf("%s: unknown flag --%s", fs.Name(), name)
			if s := nearest(name, flags); s != "" {
				msg += fmt.Sprintf(" (did you mean --%s?)", s)
			}
			fmt.Fprintf(o.stderr, "%s\nRun '%s --help' for its flags.\n", msg, fs.Name())
		}
		o.flush(errors.Is(err, flag.ErrHelp))
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: exitBad}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "dageval assembles deep agents, replays and grades their runs, and gates changes in CI.\n\nUsage: dageval <command> [flags] [arguments]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'dageval <command> --help' for a command's flags.\nExit codes: 0 ok, 1 the job ran and found failures, 2 bad input or the job could not run.\n")
}
