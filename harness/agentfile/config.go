package agentfile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/sqlitestore"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/tool"
)

// ToolBinder gives a declared tool its behaviour at run time.
type ToolBinder func(decl Tool) (tool.Tool, error)

// Options tune how an agent file becomes a harness.Config.
type Options struct {
	// Bind gives declared tools their behaviour; nil declares them only
	// (calling one reports that it has no implementation here).
	Bind ToolBinder
	// Model overrides the file's model spec.
	Model string
	// Profiles are merged over the file's own profile, in order.
	Profiles []*profile.HarnessProfile
	// Middleware are extra caller middleware (e.g. the rubric grader).
	Middleware []agent.Middleware
	// Checkpointer persists threads.
	Checkpointer agent.Checkpointer
	// ResolveModel resolves model specs (see harness.Config.ResolveModel); nil
	// resolves through the built-in providers and the file's `providers`.
	ResolveModel func(spec string) (llm.ChatModel, error)
	// Registry is the profile registry (profile.Default() when nil).
	Registry *profile.Registry
	// ModelInfo declares model facts that win over the file's own
	// model_info, as a suite's models do; both are added to Catalog.
	ModelInfo []catalog.Declaration
	// Catalog is the catalog the declarations extend (catalog.Default()
	// when nil).
	Catalog *catalog.Catalog
	// Registrations resolve the middleware, Go tools, subagents and
	// providers a File built in Go names; a file read with (*Registry).Load
	// uses the registry it was read with.
	Registrations *Registry
	// Getenv reads the variables async subagents name in url_env
	// (os.Getenv when nil).
	Getenv func(string) string
}

// Config turns the agent file into the harness.Config that harness.New
// assembles.
func (af *File) Config(opts Options) (harness.Config, error) {
	cfg := harness.Config{
		Name:         af.Name,
		ModelSpec:    af.Model,
		SystemPrompt: af.SystemPrompt.Text,
		SystemBlocks: af.SystemPrompt.Blocks,
		Checkpointer: opts.Checkpointer,
		ResolveModel: opts.ResolveModel,
		Profiles:     opts.Registry,
	}
	if opts.Model != "" {
		cfg.ModelSpec = opts.Model
	}
	cat, err := af.Catalog(opts)
	if err != nil {
		return harness.Config{}, err
	}
	cfg.Catalog = cat
	reg := af.registry(opts)
	if cfg.ResolveModel == nil {
		if err := af.checkProviders(opts.Model != "", reg); err != nil {
			return harness.Config{}, err
		}
	}
	if cfg.ResolveModel == nil && (len(af.Providers) > 0 || len(reg.Providers()) > 0) {
		// Registered providers and the file's own (e.g. "local:model-a")
		// join the built-in ones; the file's win.
		models := builtin.NewResolver(provider.Config{})
		if err := models.SetEntries(reg.providerEntries()); err != nil {
			return harness.Config{}, err
		}
		for _, name := range slices.Sorted(maps.Keys(af.Providers)) {
			if err := models.SetEntry(name, af.Providers[name].Entry()); err != nil {
				return harness.Config{}, fmt.Errorf("%s: providers.%s: %w", af.Path, name, err)
			}
		}
		cfg.ResolveModel = harness.ModelResolver(opts.Registry, models)
	}
	bind := opts.Bind
	if bind == nil {
		bind = goOrDeclared
	}
	byName := map[string]tool.Tool{}
	for i, d := range af.Tools {
		if d.Go != "" && d.impl == nil {
			// A File built in Go names its Go tools without having read them.
			if err := d.resolveGo(reg); err != nil {
				return harness.Config{}, af.errorf(fmt.Sprintf("tools[%d].go", i), "%v", err)
			}
		}
		t, err := bind(d)
		if err != nil {
			return harness.Config{}, fmt.Errorf("%s: tool %s: %w", af.Path, d.Name, err)
		}
		cfg.Tools = append(cfg.Tools, t)
		byName[d.Name] = t
	}
	if af.Skills != nil {
		cfg.Skills = append([]string{}, *af.Skills...)
	}
	if af.Memory != nil {
		cfg.Memory = append([]string{}, *af.Memory...)
	}
	cfg.InterruptOn = interruptOn(af.InterruptOn)
	cfg.Permissions = permissions(af.Permissions)
	for i, md := range af.Middleware {
		m, err := af.buildMiddleware(fmt.Sprintf("middleware[%d]", i), md, reg, af.Permissions)
		if err != nil {
			return harness.Config{}, err
		}
		cfg.Middleware = append(cfg.Middleware, m)
	}
	cfg.Middleware = withCallers(cfg.Middleware, opts.Middleware)
	resolve := cfg.ResolveModel
	if resolve == nil {
		resolve = harness.ModelResolver(opts.Registry, nil)
	}
	for i, sd := range af.SubAgents {
		if sd.Compiled != "" {
			spec, err := af.compiled(i, sd, reg, SubAgentEnv{ModelSpec: cmp.Or(cfg.ModelSpec, harness.DefaultModelSpec), ResolveModel: resolve})
			if err != nil {
				return harness.Config{}, err
			}
			cfg.SubAgents = append(cfg.SubAgents, spec)
			continue
		}
		spec := harness.SubAgentSpec{
			Name: sd.Name, Description: sd.Description, SystemPrompt: sd.SystemPrompt,
			ModelSpec: sd.Model, Skills: sd.Skills, GraphID: sd.GraphID, URL: sd.URL, Headers: sd.Headers,
		}
		if sd.URLEnv != "" {
			getenv := opts.Getenv
			if getenv == nil {
				getenv = os.Getenv
			}
			if spec.URL = strings.TrimSpace(getenv(sd.URLEnv)); spec.URL == "" {
				return harness.Config{}, af.errorf(fmt.Sprintf("subagents[%d].url_env", i), "%s is not set: it holds the url of async subagent %q", sd.URLEnv, sd.Name)
			}
		}
		if sd.Tools != nil {
			spec.Tools = []tool.Tool{}
			for _, n := range *sd.Tools {
				spec.Tools = append(spec.Tools, byName[n])
			}
		}
		if sd.InterruptOn != nil {
			spec.InterruptOn = interruptOn(*sd.InterruptOn)
			if spec.InterruptOn == nil {
				spec.InterruptOn = middleware.InterruptOn{}
			}
		}
		if sd.Permissions != nil {
			spec.Permissions = permissions(*sd.Permissions)
			if spec.Permissions == nil {
				spec.Permissions = []middleware.Permission{}
			}
		}
		perms := af.Permissions
		if sd.Permissions != nil {
			perms = *sd.Permissions
		}
		for j, md := range sd.Middleware {
			m, err := af.buildMiddleware(fmt.Sprintf("subagents[%d].middleware[%d]", i, j), md, reg, perms)
			if err != nil {
				return harness.Config{}, err
			}
			spec.Middleware = append(spec.Middleware, m)
		}
		if sd.ResponseFormat != nil {
			rf, err := sd.ResponseFormat.format()
			if err != nil {
				return harness.Config{}, fmt.Errorf("%s: subagent %s: %w", af.Path, sd.Name, err)
			}
			spec.ResponseFormat = rf
		}
		cfg.SubAgents = append(cfg.SubAgents, spec)
	}
	if af.ResponseFormat != nil {
		rf, err := af.ResponseFormat.format()
		if err != nil {
			return harness.Config{}, fmt.Errorf("%s: response_format: %w", af.Path, err)
		}
		cfg.ResponseFormat = rf
	}
	b, err := af.backend()
	if err != nil {
		return harness.Config{}, err
	}
	cfg.Backend = b
	prof, err := af.profile()
	if err != nil {
		return harness.Config{}, err
	}
	for _, p := range opts.Profiles {
		prof = profile.MergeHarness(prof, p)
	}
	cfg.Profile = prof
	return cfg, nil
}

// registry is what the file's Go names resolve against.
func (af *File) registry(opts Options) *Registry {
	if af.reg != nil {
		return af.reg
	}
	return opts.Registrations
}

// buildMiddleware builds one instance of the middleware a declaration at
// key names.
func (af *File) buildMiddleware(key string, d Middleware, reg *Registry, perms []Permission) (agent.Middleware, error) {
	b, err := af.middlewareBuilder(key, d, reg)
	if err != nil {
		return nil, err
	}
	m, err := b(buildContext{name: d.Name, perms: perms})
	if err != nil {
		return nil, af.errorf(key+".options", "%s: %v", d.Name, err)
	}
	return m, nil
}

// withCallers adds the caller's middleware to the file's; one named like a
// file's middleware replaces it (the runner's rubric grader replaces a
// RubricMiddleware the file declares).
func withCallers(own, callers []agent.Middleware) []agent.Middleware {
	out := slices.Clone(own)
	for _, c := range callers {
		i := slices.IndexFunc(out, func(m agent.Middleware) bool { return m.Name() == c.Name() })
		if i >= 0 {
			out[i] = c
			continue
		}
		out = append(out, c)
	}
	return out
}

// compiled builds the subagent that declaration i names in Go.
func (af *File) compiled(i int, sd SubAgent, reg *Registry, env SubAgentEnv) (harness.SubAgentSpec, error) {
	key := fmt.Sprintf("subagents[%d]", i)
	f, ok := reg.subagent(sd.Compiled)
	if !ok {
		return harness.SubAgentSpec{}, af.errorf(key+".compiled", "no subagent is registered as %q (%s)", sd.Compiled, registered(reg.SubAgents()))
	}
	spec, err := f(env)
	if err != nil {
		return harness.SubAgentSpec{}, af.errorf(key+".compiled", "subagent %s: %v", sd.Compiled, err)
	}
	spec.Name = cmp.Or(sd.Name, spec.Name, sd.Compiled)
	spec.Description = cmp.Or(sd.Description, spec.Description)
	if spec.Description == "" {
		return harness.SubAgentSpec{}, af.errorf(key, "subagent %s needs a description (the model chooses subagents by it): give one in the file or in Go", spec.Name)
	}
	return spec, nil
}

// Catalog is the model catalog the agent runs with: opts.Catalog (or the
// default catalog) with the file's model_info and then opts.ModelInfo.
func (af *File) Catalog(opts Options) (*catalog.Catalog, error) {
	cat := opts.Catalog
	if cat == nil {
		cat = catalog.Default()
	}
	c, err := cat.With(append(slices.Clone(af.ModelInfo), opts.ModelInfo...)...)
	if err != nil {
		return nil, fmt.Errorf("%s: model_info: %w", af.Path, err)
	}
	return c, nil
}

// SeedFiles returns the agent file's `files` as agent state files.
func (af *File) SeedFiles() map[string]agent.FileData {
	if len(af.Files) == 0 {
		return nil
	}
	out := make(map[string]agent.FileData, len(af.Files))
	for p, c := range af.Files {
		out[p] = agent.FileData{Content: c, Encoding: backend.EncodingUTF8}
	}
	return out
}

func (af *File) profile() (*profile.HarnessProfile, error) {
	if af.Profile == nil {
		return nil, nil
	}
	c := af.Profile.Inline
	if c == nil {
		// A File built in Go rather than read from YAML.
		loaded, err := profile.LoadConfigFile(af.resolvePathOf("profile")(af.Profile.File))
		if err != nil {
			return nil, err
		}
		c = loaded
	}
	p, err := c.HarnessProfile()
	if err != nil {
		return nil, fmt.Errorf("%s: profile: %w", af.Path, err)
	}
	return p, nil
}

func interruptOn(m map[string]Interrupt) middleware.InterruptOn {
	if len(m) == 0 {
		return nil
	}
	out := middleware.InterruptOn{}
	for name, d := range m {
		if !d.Enabled {
			out[name] = nil
			continue
		}
		out[name] = &middleware.InterruptOnConfig{AllowedDecisions: slices.Clone(d.AllowedDecisions), Description: d.Description}
	}
	return out
}

func permissions(ds []Permission) []middleware.Permission {
	var out []middleware.Permission
	for _, d := range ds {
		p := middleware.Permission{Paths: slices.Clone(d.Paths), Mode: middleware.PermissionMode(d.Mode)}
		for _, op := range d.Operations {
			p.Operations = append(p.Operations, middleware.Operation(op))
		}
		out = append(out, p)
	}
	return out
}

func checkPermission(d Permission) error {
	_, err := middleware.CompilePermissions(permissions([]Permission{d}))
	return err
}

func (d *ResponseFormat) format() (*agent.ResponseFormat, error) {
	raw, err := json.Marshal(d.Schema)
	if err != nil {
		return nil, err
	}
	if _, err := toolSchema(raw); err != nil {
		return nil, err
	}
	return &agent.ResponseFormat{Name: d.Name, Description: d.Description, Schema: raw, Strategy: agent.Strategy(d.Strategy)}, nil
}

func toolSchema(raw json.RawMessage) (*tool.Schema, error) { return tool.ParseSchema(raw) }

// goOrDeclared is the behaviour of a tool when nothing binds it: the Go
// tool it names, else none.
func goOrDeclared(d Tool) (tool.Tool, error) {
	if d.impl != nil {
		return d.impl, nil
	}
	return declaredOnly(d)
}

// declaredOnly is the behaviour of a declared tool when nothing binds it.
func declaredOnly(d Tool) (tool.Tool, error) {
	params := json.RawMessage(`{"type":"object","properties":{}}`)
	if d.Parameters != nil {
		raw, err := json.Marshal(d.Parameters)
		if err != nil {
			return nil, err
		}
		params = raw
	}
	return tool.Validated(&tool.Func{
		ToolSpec: llm.ToolSpec{Name: d.Name, Description: d.Description, Parameters: params},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			return tool.Result{}, fmt.Errorf("tool %s is declared in the agent file but has no implementation here", d.Name)
		},
	})
}

func (af *File) backend() (backend.Backend, error) {
	if af.Backend == nil {
		return nil, nil
	}
	return af.buildBackend(af.Backend)
}

func (af *File) buildBackend(d *Backend) (backend.Backend, error) {
	resolve := af.resolvePathOf("backend")
	switch d.Kind {
	case "", "state":
		return backend.NewState(), nil
	case "store":
		var kv backend.KVStore
		if d.Database != "" {
			db, err := sqlitestore.Open(resolve(d.Database))
			if err != nil {
				return nil, err
			}
			kv = db
		} else {
			kv = backend.NewMemoryKVStore()
		}
		var ns backend.NamespaceFunc
		if len(d.Namespace) > 0 {
			ns = backend.StaticNamespace(d.Namespace...)
		}
		return backend.NewStore(kv, ns), nil
	case "filesystem":
		return backend.NewFilesystem(resolve(d.Root), backend.FilesystemOptions{HostPaths: d.HostPaths})
	case "localshell":
		opts := backend.LocalShellOptions{Filesystem: backend.FilesystemOptions{HostPaths: d.HostPaths}, MaxOutputBytes: d.MaxOutputBytes}
		if d.Timeout != "" {
			t, err := time.ParseDuration(d.Timeout)
			if err != nil {
				return nil, err
			}
			opts.Timeout = t
		}
		return backend.NewLocalShell(resolve(d.Root), opts)
	case "sandbox":
		opts := backend.BubblewrapOptions{Workspace: resolve(d.Workspace), Network: d.Network, MaxOutputBytes: d.MaxOutputBytes,
			MaxProcesses: d.MaxProcesses, ReadOnly: slices.Clone(d.ReadOnly), Env: maps.Clone(d.Env)}
		if d.Timeout != "" {
			t, err := time.ParseDuration(d.Timeout)
			if err != nil {
				return nil, err
			}
			opts.Timeout = t
		}
		return backend.NewBubblewrap(opts)
	case "composite":
		def, err := af.buildBackend(d.Default)
		if err != nil {
			return nil, err
		}
		var routes []backend.Route
		for _, prefix := range slices.Sorted(maps.Keys(d.Routes)) {
			r := d.Routes[prefix]
			b, err := af.buildBackend(&r)
			if err != nil {
				return nil, fmt.Errorf("route %s: %w", prefix, err)
			}
			routes = append(routes, backend.Route{Prefix: prefix, Backend: b})
		}
		return backend.NewComposite(def, routes, backend.CompositeOptions{ArtifactsRoot: d.ArtifactsRoot})
	}
	return nil, fmt.Errorf("unknown backend kind %q", d.Kind)
}
