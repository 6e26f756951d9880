package evals

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/internal/yamlx"
	"github.com/dageval/dageval/rubrics"
)

// Registry holds the Go code a suite file and its agent file can name:
// agent factories (agent: {factory: name}), tools ({go: name} in the
// suite or the agent file), checks (- name: {…}), and, for the agent file,
// middleware, compiled subagents and provider entries (see
// agentfile.Registry). A suite loaded with (*Registry).Load sees its
// registrations when it is validated and run, so a program passes them
// explicitly — one registry per binary or per test — instead of through
// package state. Registrations made with RegisterTool and RegisterAgent
// remain visible to every suite.
//
// A Registry is safe for concurrent use. Adding a name twice, an empty
// name, or a check or middleware named like a built-in one panics: those
// are programming errors, found the first time the program runs.
type Registry struct {
	mu     sync.RWMutex
	agents map[string]AgentFactory
	checks map[string]CheckDef
	// files holds what agent files name: tools, middleware, subagents and
	// providers.
	files *agentfile.Registry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{agents: map[string]AgentFactory{}, checks: map[string]CheckDef{}, files: agentfile.NewRegistry()}
}

// global holds what RegisterTool and RegisterAgent add.
var global = NewRegistry()

// AddTool makes a Go tool available under name, to a suite's tool
// behaviours ({go: name}, see RegisterTool) and to its agent file
// (tools: [{go: name}]).
func (r *Registry) AddTool(name string, t tool.Tool) *Registry {
	if name == "" || t == nil {
		panic("evals: AddTool needs a name and a tool")
	}
	if _, dup := r.files.Tool(name); dup {
		panic("evals: a tool named " + name + " is already registered")
	}
	r.files.AddTool(name, t)
	return r
}

// AddMiddleware makes middleware available to the suite's agent file
// under name (see agentfile.NewMiddleware).
func (r *Registry) AddMiddleware(name string, d agentfile.MiddlewareDef) *Registry {
	r.files.AddMiddleware(name, d)
	return r
}

// AddSubAgent makes a subagent built in Go available to the suite's agent
// file under name (subagents: [{compiled: name}]). It is built for every
// cell with the cell's model resolver, so its calls are recorded and
// replayed with the rest of the cell's.
func (r *Registry) AddSubAgent(name string, f agentfile.SubAgentFactory) *Registry {
	r.files.AddSubAgent(name, f)
	return r
}

// AddProvider makes model specs "name:model" resolve through the entry in
// the suite's models, grader and agent (the suite's and the agent file's
// providers of the same name win).
func (r *Registry) AddProvider(name string, e provider.Entry) *Registry {
	r.files.AddProvider(name, e)
	return r
}

// Clone returns a registry with the same registrations, to which more can
// be added without changing r.
func (r *Registry) Clone() *Registry {
	c := NewRegistry()
	if r == nil {
		return c
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	c.agents, c.checks, c.files = maps.Clone(r.agents), maps.Clone(r.checks), r.files.Clone()
	return c
}

// AgentFiles is the registry agent files are read with: the tools,
// middleware, subagents and providers added here, and the tools added
// with RegisterTool.
func (r *Registry) AgentFiles() *agentfile.Registry {
	var own *agentfile.Registry
	if r != nil {
		own = r.files
	}
	out := own.Clone()
	if r == global {
		return out
	}
	for _, name := range global.files.Tools() {
		if _, taken := out.Tool(name); !taken {
			t, _ := global.files.Tool(name)
			out.AddTool(name, t)
		}
	}
	return out
}

// AddAgent makes an agent factory available under name (see RegisterAgent).
func (r *Registry) AddAgent(name string, f AgentFactory) *Registry {
	if name == "" || f == nil {
		panic("evals: AddAgent needs a name and a factory")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.agents[name]; dup {
		panic("evals: an agent factory named " + name + " is already registered")
	}
	r.agents[name] = f
	return r
}

// AddCheck makes a Go check available to suite files under name, used like
// a built-in check: `- name: {options…}` in a case's checks.
func (r *Registry) AddCheck(name string, c CheckDef) *Registry {
	if name == "" || c.decode == nil {
		panic("evals: AddCheck needs a name and a check made with NewCheck")
	}
	if slices.Contains(rubrics.Kinds(), name) {
		panic("evals: " + name + " is a built-in check")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.checks[name]; dup {
		panic("evals: a check named " + name + " is already registered")
	}
	r.checks[name] = c
	return r
}

// Tools, Agents, Checks, Middleware, SubAgents and Providers list the
// registered names, sorted, for messages about a name that is not
// registered.
func (r *Registry) Tools() []string {
	if r == nil {
		return nil
	}
	return r.files.Tools()
}
func (r *Registry) Middleware() []string {
	if r == nil {
		return nil
	}
	return r.files.Middleware()
}
func (r *Registry) SubAgents() []string {
	if r == nil {
		return nil
	}
	return r.files.SubAgents()
}
func (r *Registry) Providers() []string {
	if r == nil {
		return nil
	}
	return r.files.Providers()
}
func (r *Registry) Agents() []string {
	return r.names(func() []string { return slices.Collect(maps.Keys(r.agents)) })
}
func (r *Registry) Checks() []string {
	return r.names(func() []string { return slices.Collect(maps.Keys(r.checks)) })
}

func (r *Registry) names(keys func() []string) []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := keys()
	slices.Sort(out)
	return out
}

func (r *Registry) tool(name string) (tool.Tool, bool) {
	if r == nil {
		return nil, false
	}
	return r.files.Tool(name)
}

// Agent returns the agent factory registered as name, on r or with
// RegisterAgent, for programs that build the agent outside a suite (as
// dageval assemble does).
func (r *Registry) Agent(name string) (AgentFactory, bool) {
	if f, ok := r.agent(name); ok {
		return f, true
	}
	return global.agent(name)
}

func (r *Registry) agent(name string) (AgentFactory, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.agents[name]
	return f, ok
}

// checkDecoders binds the registered checks to the document their specs
// are in, for the rubrics decoder.
func (r *Registry) checkDecoders(doc *yamlx.Doc) map[string]rubrics.CheckDecoder {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]rubrics.CheckDecoder, len(r.checks))
	for name, c := range r.checks {
		out[name] = func(spec ast.Node, key string) (rubrics.Check, error) { return c.decode(doc, name, spec, key) }
	}
	return out
}

// Load reads and validates a suite file (see the package-level Load) with
// the registry's checks; the suite is validated and run with its tools and
// agent factories too.
func (r *Registry) Load(path string) (*Suite, error) {
	s, errs := loadSuite(path, r)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return s, nil
}

// Parse is Load for a suite held in memory.
func (r *Registry) Parse(path string, data []byte) (*Suite, error) {
	s, errs := parseSuite(path, data, r)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return s, nil
}

// CheckDef is a check written in Go, made with NewCheck and added to a
// Registry by name.
type CheckDef struct {
	decode func(doc *yamlx.Doc, kind string, spec ast.Node, key string) (rubrics.Check, error)
}

// NewCheck makes a check from a function judging one run. The spec a suite
// writes under the check's name is decoded into O, strictly (an unknown key
// or a wrong type is an error at its file, line and column); a missing or
// null spec leaves O's zero value. When O (or *O) has a Validate() error
// method, it is called as the suite loads and its error is reported at the
// check. The verdict has the shape of a built-in check's: Name defaults to
// the check's name, Score is clamped to [0, 1] and a passing verdict with
// no score scores 1, so a pass/fail check need not set one; a scorer sets
// Score for partial credit. A panic in fn fails the check with the panic as
// its detail rather than the run.
func NewCheck[O any](fn func(ctx context.Context, opts O, run *rubrics.Record) rubrics.CheckVerdict) CheckDef {
	return CheckDef{decode: func(doc *yamlx.Doc, kind string, spec ast.Node, key string) (rubrics.Check, error) {
		var opts O
		if _, isNull := spec.(*ast.NullNode); spec != nil && !isNull {
			if err := doc.DecodeNode(spec, &opts); err != nil {
				return nil, err
			}
		}
		var v any = &opts
		if _, ok := v.(interface{ Validate() error }); !ok {
			v = opts
		}
		if val, ok := v.(interface{ Validate() error }); ok {
			if err := val.Validate(); err != nil {
				return nil, doc.Errorf(key, "%v", err)
			}
		}
		return &goCheck[O]{kind: kind, opts: opts, fn: fn}, nil
	}}
}

// goCheck is a registered Go check with its decoded options.
type goCheck[O any] struct {
	kind string
	opts O
	fn   func(ctx context.Context, opts O, run *rubrics.Record) rubrics.CheckVerdict
}

func (c *goCheck[O]) Kind() string { return c.kind }
func (c *goCheck[O]) Name() string { return c.kind }

func (c *goCheck[O]) Evaluate(ctx context.Context, rec *rubrics.Record) (v rubrics.CheckVerdict) {
	defer func() {
		if p := recover(); p != nil {
			v = rubrics.CheckVerdict{Name: c.kind, Detail: fmt.Sprintf("check %s panicked: %v", c.kind, p)}
		}
	}()
	v = c.fn(ctx, c.opts, rec)
	if v.Name == "" {
		v.Name = c.kind
	}
	switch {
	case math.IsNaN(v.Score) || v.Score < 0:
		v.Score = 0
	case v.Score > 1:
		v.Score = 1
	}
	if v.Passed && v.Score == 0 {
		v.Score = 1
	}
	return v
}
