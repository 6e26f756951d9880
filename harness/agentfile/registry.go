package agentfile

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/internal/yamlx"
)

// Registry holds the Go code an agent file can name besides the built-in
// middleware: middleware constructors (middleware: [{name, options}]),
// tools (tools: [{go: name}]), compiled subagents (subagents: [{compiled:
// name}]) and provider entries for model specs ("mycorp:model"). A file read
// with (*Registry).Load is checked against the registry and keeps it, so
// that its Config builds what it names; the package-level Load and Parse
// read files that name only built-in middleware.
//
// A Registry is safe for concurrent use. Adding a name twice, an empty
// name, or a middleware named like a built-in one panics: those are
// programming errors, found the first time the program runs.
type Registry struct {
	mu         sync.RWMutex
	middleware map[string]MiddlewareDef
	tools      map[string]tool.Tool
	subagents  map[string]SubAgentFactory
	providers  map[string]provider.Entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{middleware: map[string]MiddlewareDef{}, tools: map[string]tool.Tool{},
		subagents: map[string]SubAgentFactory{}, providers: map[string]provider.Entry{}}
}

// AddMiddleware makes middleware available to agent files under name. The
// middleware it builds must report name as its Name(), which is what
// profiles exclude and assemblies show.
func (r *Registry) AddMiddleware(name string, d MiddlewareDef) *Registry {
	if name == "" || d.prepare == nil {
		panic("agentfile: AddMiddleware needs a name and a definition made with NewMiddleware or NewDeferredMiddleware")
	}
	if _, ok := builtinMiddleware[name]; ok || fixedMiddleware[name] != "" {
		panic("agentfile: " + name + " is a built-in middleware")
	}
	add(r, r.middleware, name, d, "middleware")
	return r
}

// AddTool makes a Go tool available to agent files under name
// (tools: [{go: name}]): the model sees its name, description and schema.
func (r *Registry) AddTool(name string, t tool.Tool) *Registry {
	if name == "" || t == nil {
		panic("agentfile: AddTool needs a name and a tool")
	}
	add(r, r.tools, name, t, "tool")
	return r
}

// AddSubAgent makes a subagent built in Go available to agent files under
// name (subagents: [{compiled: name}]).
func (r *Registry) AddSubAgent(name string, f SubAgentFactory) *Registry {
	if name == "" || f == nil {
		panic("agentfile: AddSubAgent needs a name and a factory")
	}
	add(r, r.subagents, name, f, "subagent")
	return r
}

// AddProvider makes model specs "name:model" resolve through the entry, as
// an agent file's own providers: do (the file's entry of the same name wins).
func (r *Registry) AddProvider(name string, e provider.Entry) *Registry {
	if err := e.Validate(name); err != nil {
		panic("agentfile: AddProvider: " + err.Error())
	}
	add(r, r.providers, name, e, "provider")
	return r
}

func add[V any](r *Registry, m map[string]V, name string, v V, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := m[name]; dup {
		panic(fmt.Sprintf("agentfile: a %s named %s is already registered", what, name))
	}
	m[name] = v
}

// Middleware, Tools, SubAgents and Providers list the registered names,
// sorted.
func (r *Registry) Middleware() []string {
	return names(r, func() []string { return slices.Collect(maps.Keys(r.middleware)) })
}
func (r *Registry) Tools() []string {
	return names(r, func() []string { return slices.Collect(maps.Keys(r.tools)) })
}
func (r *Registry) SubAgents() []string {
	return names(r, func() []string { return slices.Collect(maps.Keys(r.subagents)) })
}
func (r *Registry) Providers() []string {
	return names(r, func() []string { return slices.Collect(maps.Keys(r.providers)) })
}

func names(r *Registry, keys func() []string) []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := keys()
	slices.Sort(out)
	return out
}

// Tool returns the Go tool registered as name.
func (r *Registry) Tool(name string) (tool.Tool, bool) {
	return get(r, func() (tool.Tool, bool) { t, ok := r.tools[name]; return t, ok })
}

// Provider returns the provider entry registered as name.
func (r *Registry) Provider(name string) (provider.Entry, bool) {
	return get(r, func() (provider.Entry, bool) { e, ok := r.providers[name]; return e, ok })
}

func (r *Registry) middlewareDef(name string) (MiddlewareDef, bool) {
	return get(r, func() (MiddlewareDef, bool) { d, ok := r.middleware[name]; return d, ok })
}

func (r *Registry) subagent(name string) (SubAgentFactory, bool) {
	return get(r, func() (SubAgentFactory, bool) { f, ok := r.subagents[name]; return f, ok })
}

func get[V any](r *Registry, lookup func() (V, bool)) (V, bool) {
	if r == nil {
		var zero V
		return zero, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return lookup()
}

// ModelResolver resolves model specs through the built-in providers and
// the registered ones, with the provider options of the profiles (the
// default registry when nil); see harness.Config.ResolveModel.
func (r *Registry) ModelResolver(profiles *profile.Registry) func(spec string) (llm.ChatModel, error) {
	models := builtin.NewResolver(provider.Config{})
	if err := models.SetEntries(r.providerEntries()); err != nil {
		// AddProvider validated every entry.
		panic(err)
	}
	return harness.ModelResolver(profiles, models)
}

// providerEntries returns the registered provider entries.
func (r *Registry) providerEntries() map[string]provider.Entry {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.providers)
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
	c.middleware, c.tools = maps.Clone(r.middleware), maps.Clone(r.tools)
	c.subagents, c.providers = maps.Clone(r.subagents), maps.Clone(r.providers)
	return c
}

// registered renders a list of registered names for a message about a name
// that is not among them.
func registered(list []string) string {
	if len(list) == 0 {
		return "none is registered"
	}
	return "registered: " + strings.Join(list, ", ")
}

// Load reads and validates an agent file that may name the registry's
// middleware, tools, subagents and providers.
func (r *Registry) Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent file: %w", err)
	}
	return r.Parse(path, data)
}

// Parse is Load for an agent file held in memory.
func (r *Registry) Parse(path string, data []byte) (*File, error) {
	return r.ParseEmbedded(path, data, "")
}

// ParseEmbedded is the package-level ParseEmbedded with the registry.
func (r *Registry) ParseEmbedded(path string, data []byte, key string) (*File, error) {
	doc, err := yamlx.Parse(path, data)
	if err != nil {
		return nil, err
	}
	return decode(doc, key, r)
}

// ParseEmbeddedDoc is ParseEmbedded for a document parsed already, such
// as the suite file that holds the agent: the file is parsed once, and
// the agent shares its syntax tree instead of keeping a copy of its own.
func (r *Registry) ParseEmbeddedDoc(doc *yamlx.Doc, key string) (*File, error) {
	return decode(doc, key, r)
}

// MiddlewareDef is middleware an agent file can name, made with
// NewMiddleware or NewDeferredMiddleware and added to a Registry.
type MiddlewareDef struct {
	// prepare decodes and checks a declaration's options and returns what
	// builds one instance for each Config.
	prepare func(src optionSource) (builder, error)
}

// builder builds one instance of a declared middleware.
type builder func(bc buildContext) (agent.Middleware, error)

// buildContext is what a declaration is built with: its name, and the
// filesystem permissions of the agent (or subagent) declaring it.
type buildContext struct {
	name  string
	perms []Permission
}

// optionSource is where a declaration's options are: a node of the agent
// file, or a document made from the Options of a File built in Go.
type optionSource struct {
	doc  *yamlx.Doc
	node ast.Node
	key  string // the options' key, e.g. "middleware[0].options"
	name string // the middleware's name, for messages
}

// NewMiddleware makes middleware from a constructor. The options an agent
// file writes under the middleware's name are decoded into O strictly (an
// unknown key or a wrong type is an error at its file, line and column);
// no options leave O's zero value. When O (or *O) has a Validate() error
// method, it is called as the file is read and its error is reported at
// the options. fn runs once for every assembly of the agent, so that no
// two agents share an instance.
func NewMiddleware[O any](fn func(opts O) (agent.Middleware, error)) MiddlewareDef {
	return MiddlewareDef{prepare: func(src optionSource) (builder, error) {
		o, err := decodeOptions[O](src)
		if err != nil {
			return nil, err
		}
		return func(bc buildContext) (agent.Middleware, error) {
			m, err := fn(o)
			return named(bc.name, m, err)
		}, nil
	}}
}

// NewDeferredMiddleware is NewMiddleware for middleware that needs what
// only the assembly knows: the model and backend of the stack it joins,
// the model facts, the harness profile, and how model specs resolve (see
// harness.DeferredEnv). fn runs for every stack the middleware joins.
func NewDeferredMiddleware[O any](fn func(opts O, env harness.DeferredEnv) (agent.Middleware, error)) MiddlewareDef {
	return MiddlewareDef{prepare: func(src optionSource) (builder, error) {
		o, err := decodeOptions[O](src)
		if err != nil {
			return nil, err
		}
		return func(bc buildContext) (agent.Middleware, error) {
			return harness.NewDeferredWith(bc.name, func(env harness.DeferredEnv) (agent.Middleware, error) {
				m, err := fn(o, env)
				return named(bc.name, m, err)
			}), nil
		}, nil
	}}
}

// named checks that built middleware reports the name it was declared
// under: profiles exclude it and assemblies show it by that name.
func named(name string, m agent.Middleware, err error) (agent.Middleware, error) {
	switch {
	case err != nil:
		return nil, err
	case m == nil:
		return nil, fmt.Errorf("the constructor of %s returned no middleware", name)
	case m.Name() != name:
		return nil, fmt.Errorf("the middleware registered as %s names itself %s; register it under its own name", name, m.Name())
	}
	return m, nil
}

// decodeOptions decodes the options at src into O and validates them.
func decodeOptions[O any](src optionSource) (O, error) {
	var o O
	if _, isNull := src.node.(*ast.NullNode); src.node != nil && !isNull {
		if err := src.doc.DecodeNode(src.node, &o); err != nil {
			return o, err
		}
	}
	var v any = &o
	if _, ok := v.(interface{ Validate() error }); !ok {
		v = o
	}
	if val, ok := v.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return o, src.doc.Errorf(src.key, "%v", err)
		}
	}
	return o, nil
}

// SubAgentFactory builds a subagent written in Go that agent files name
// (subagents: [{compiled: name}]), once for every assembly. It normally
// returns a compiled subagent (Runner set, for example a *harness.Agent
// built with env's model resolver), but any harness.SubAgentSpec works.
// The spec's Name defaults to the registered name and its Description to
// the one the agent file gives; the file's name and description win.
type SubAgentFactory func(env SubAgentEnv) (harness.SubAgentSpec, error)

// SubAgentEnv is what a SubAgentFactory is told about the agent it joins.
type SubAgentEnv struct {
	// ModelSpec is the main agent's model spec.
	ModelSpec string
	// ResolveModel resolves model specs the way the main agent's models are
	// resolved: in an eval run, through the cell's cassette, so a subagent
	// built on it is recorded and replayed with the rest of the run.
	ResolveModel func(spec string) (llm.ChatModel, error)
}
