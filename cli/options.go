package cli

import (
	"context"
	"io"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/rubrics"
)

// Option registers Go code with Main, or changes where Main reads and
// writes. Every registration goes into one evals.Registry that every
// subcommand uses: validate, run and compare load suites through it, and
// assemble (with --diff) reads agent files through it.
type Option func(*config)

// config is what the options set.
type config struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	base           *evals.Registry
	adds           []func(*evals.Registry)
}

// registry is the registry the commands share: a copy of the one given
// with WithRegistry (so that Main never changes the caller's), with the
// other registrations added in order.
func (c *config) registry() *evals.Registry {
	reg := c.base.Clone()
	for _, add := range c.adds {
		add(reg)
	}
	return reg
}

// registration is an option adding to the shared registry.
func registration(f func(*evals.Registry)) Option {
	return func(c *config) { c.adds = append(c.adds, f) }
}

// WithRegistry starts from a registry the program already has, for
// example the one its go test suites use (evals.WithRegistry), so that the
// command line and the tests see the same Go code. Main works on a copy.
func WithRegistry(r *evals.Registry) Option { return func(c *config) { c.base = r } }

// WithAgent registers an agent factory: suites name it as agent: {factory:
// name}, and dageval assemble as --agent factory:name.
func WithAgent(name string, f evals.AgentFactory) Option {
	return registration(func(r *evals.Registry) { r.AddAgent(name, f) })
}

// WithTool registers a Go tool: agent files name it as tools: [{go: name}],
// suites give it to a declared tool as {go: name}.
func WithTool(name string, t tool.Tool) Option {
	return registration(func(r *evals.Registry) { r.AddTool(name, t) })
}

// WithMiddleware registers a middleware constructor under the name the
// middleware reports. Agent files name it as middleware: [{name, options}],
// and the options are decoded strictly into O (see agentfile.NewMiddleware).
func WithMiddleware[O any](name string, constructor func(opts O) (agent.Middleware, error)) Option {
	return registration(func(r *evals.Registry) { r.AddMiddleware(name, agentfile.NewMiddleware(constructor)) })
}

// WithDeferredMiddleware is WithMiddleware for middleware that needs the
// stack's model, backend, profile or model resolver (see
// agentfile.NewDeferredMiddleware).
func WithDeferredMiddleware[O any](name string, constructor func(opts O, env harness.DeferredEnv) (agent.Middleware, error)) Option {
	return registration(func(r *evals.Registry) { r.AddMiddleware(name, agentfile.NewDeferredMiddleware(constructor)) })
}

// WithSubAgent registers a subagent built in Go: agent files name it as
// subagents: [{compiled: name}].
func WithSubAgent(name string, f agentfile.SubAgentFactory) Option {
	return registration(func(r *evals.Registry) { r.AddSubAgent(name, f) })
}

// WithCheck registers a check written in Go: suites use it like a built-in
// check, - name: {options}, with the options decoded strictly into O (see
// evals.NewCheck).
func WithCheck[O any](name string, check func(ctx context.Context, opts O, run *rubrics.Record) rubrics.CheckVerdict) Option {
	return registration(func(r *evals.Registry) { r.AddCheck(name, evals.NewCheck(check)) })
}

// WithProvider registers a provider entry, so that model specs "name:model"
// in suites, agent files and --model flags reach it (for example a
// company's OpenAI-compatible gateway); a suite's or agent file's own
// providers: entry of the same name wins.
func WithProvider(name string, e provider.Entry) Option {
	return registration(func(r *evals.Registry) { r.AddProvider(name, e) })
}

// WithContext runs the command under ctx instead of one that an interrupt
// cancels.
func WithContext(ctx context.Context) Option { return func(c *config) { c.ctx = ctx } }

// WithStdio replaces standard input, output and error, for running
// commands in-process (in a test, say).
func WithStdio(stdin io.Reader, stdout, stderr io.Writer) Option {
	return func(c *config) { c.stdin, c.stdout, c.stderr = stdin, stdout, stderr }
}

// WithGetenv replaces how commands read environment variables (API keys,
// CI, DAGEVAL_RECORD).
func WithGetenv(getenv func(string) string) Option { return func(c *config) { c.getenv = getenv } }
