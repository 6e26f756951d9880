package profile

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/llm"
)

// Registry holds harness and provider profiles keyed by "provider" or
// "provider:model". Registration is additive: registering under a key that
// already holds a profile merges the new one over it (MergeHarness,
// MergeProvider). A registry loads its built-in profiles and plugins lazily,
// once, on first use; it is safe for concurrent use.
type Registry struct {
	core *registryCore
	// gen is non-zero for the handle given to the loader of bootstrap
	// number gen: its calls must not wait for the bootstrap they are part of.
	gen uint64
}

type loadState int

const (
	unloaded loadState = iota
	loading
	loaded
)

type registryCore struct {
	mu       sync.Mutex
	cond     *sync.Cond
	state    loadState
	gen      uint64
	harness  map[string]*HarnessProfile
	provider map[string]*ProviderProfile
	// userHarness records a harness registration made after bootstrap, which
	// makes a model that matches no profile worth a warning.
	userHarness bool

	builtins   func(*Registry) error
	plugins    []Plugin
	ownPlugins bool
	logger     *slog.Logger
}

// Option configures a Registry.
type Option func(*registryCore)

// WithBuiltins replaces the loader of built-in profiles (nil: no built-ins).
// The loader runs during bootstrap with a handle whose calls do not wait for
// the bootstrap; an error from it rolls the registry back.
func WithBuiltins(load func(*Registry) error) Option {
	return func(c *registryCore) { c.builtins = load }
}

// WithPlugins makes the registry run exactly these plugins, in this order, at
// bootstrap instead of those added with RegisterPlugin (none when called
// without any).
func WithPlugins(plugins ...Plugin) Option {
	return func(c *registryCore) { c.plugins, c.ownPlugins = slices.Clone(plugins), true }
}

// WithLogger sets where the registry logs (slog.Default() when unset).
func WithLogger(l *slog.Logger) Option { return func(c *registryCore) { c.logger = l } }

// NewRegistry returns a registry that, on first use, loads the built-in
// profiles (LoadBuiltins) and then the plugins added with RegisterPlugin,
// unless options say otherwise.
func NewRegistry(opts ...Option) *Registry {
	c := &registryCore{
		harness:  map[string]*HarnessProfile{},
		provider: map[string]*ProviderProfile{},
		builtins: LoadBuiltins,
	}
	c.cond = sync.NewCond(&c.mu)
	for _, o := range opts {
		o(c)
	}
	return &Registry{core: c}
}

var defaultRegistry = sync.OnceValue(func() *Registry { return NewRegistry() })

// Default returns the process-wide registry. Creating it loads nothing; the
// built-ins and plugins load on its first use.
func Default() *Registry { return defaultRegistry() }

// RegisterHarness registers a harness profile in the default registry.
func RegisterHarness(key string, p *HarnessProfile) error { return Default().RegisterHarness(key, p) }

// RegisterProvider registers a provider profile in the default registry.
func RegisterProvider(key string, p *ProviderProfile) error {
	return Default().RegisterProvider(key, p)
}

func (c *registryCore) log() *slog.Logger {
	if c.logger != nil {
		return c.logger
	}
	return slog.Default()
}

// Load bootstraps the registry if it has not been: built-ins first, then
// plugins. Every other method calls it, so calling it directly is only
// needed to surface a bootstrap error early. Concurrent callers wait for one
// bootstrap; when it fails, the registry is restored to what it held before
// and the next call tries again.
func (r *Registry) Load() error {
	c := r.core
	c.mu.Lock()
	for {
		switch c.state {
		case loaded:
			c.mu.Unlock()
			return nil
		case loading:
			if r.gen != 0 && r.gen == c.gen {
				c.mu.Unlock()
				return nil
			}
			c.cond.Wait()
			continue
		}
		c.state = loading
		c.gen++
		gen := c.gen
		harness, provider := maps.Clone(c.harness), maps.Clone(c.provider)
		c.mu.Unlock()

		err := c.bootstrap(&Registry{core: c, gen: gen})

		c.mu.Lock()
		if err != nil {
			clear(c.harness)
			maps.Copy(c.harness, harness)
			clear(c.provider)
			maps.Copy(c.provider, provider)
			c.state = unloaded
			c.cond.Broadcast()
			c.mu.Unlock()
			c.log().Error("profile: loading built-in profiles failed; the registry was rolled back and the next use retries", "error", err)
			return fmt.Errorf("profile: bootstrap: %w", err)
		}
		c.state = loaded
		c.cond.Broadcast()
		c.mu.Unlock()
		return nil
	}
}

func (c *registryCore) bootstrap(handle *Registry) error {
	if c.builtins != nil {
		if err := callGuarded(func() error { return c.builtins(handle) }); err != nil {
			return err
		}
	}
	plugins := c.plugins
	if !c.ownPlugins {
		plugins = registeredPlugins()
	}
	for _, p := range plugins {
		c.runPlugin(handle, p)
	}
	return nil
}

// runPlugin isolates one plugin: a failure is logged and undoes whatever the
// plugin registered, so a broken plugin never leaves half its profiles behind.
func (c *registryCore) runPlugin(handle *Registry, p Plugin) {
	if p.Register == nil {
		c.log().Error("profile: plugin has no Register function; skipped", "plugin", p.Name)
		return
	}
	c.mu.Lock()
	harness, provider := maps.Clone(c.harness), maps.Clone(c.provider)
	c.mu.Unlock()
	if err := callGuarded(func() error { return p.Register(handle) }); err != nil {
		c.mu.Lock()
		clear(c.harness)
		maps.Copy(c.harness, harness)
		clear(c.provider)
		maps.Copy(c.provider, provider)
		c.mu.Unlock()
		c.log().Error("profile: plugin failed; its registrations were discarded", "plugin", p.Name, "error", err)
	}
}

// callGuarded turns a panic into an error so that a broken loader cannot
// leave the registry stuck in the loading state.
func callGuarded(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, firstLines(string(debug.Stack()), 10))
		}
	}()
	return fn()
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// RegisterHarness adds p under key, merging it over a profile already there
// (MergeHarness), so registrations from several places add up.
func (r *Registry) RegisterHarness(key string, p *HarnessProfile) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("%w: nil harness profile for key %q", ErrInvalidProfile, key)
	}
	if err := r.Load(); err != nil {
		return err
	}
	c := r.core
	c.mu.Lock()
	defer c.mu.Unlock()
	if existing, ok := c.harness[key]; ok {
		c.log().Info("profile: merging HarnessProfile over the one already registered; sets and middleware are united, the new prompts and descriptions win", "key", key)
		p = MergeHarness(existing, p)
	}
	c.harness[key] = p
	if r.gen == 0 {
		c.userHarness = true
	}
	return nil
}

// RegisterProvider adds p under key, merging it over a profile already there
// (MergeProvider).
func (r *Registry) RegisterProvider(key string, p *ProviderProfile) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("%w: nil provider profile for key %q", ErrInvalidProfile, key)
	}
	if err := r.Load(); err != nil {
		return err
	}
	c := r.core
	c.mu.Lock()
	defer c.mu.Unlock()
	if existing, ok := c.provider[key]; ok {
		c.log().Info("profile: merging ProviderProfile over the one already registered; pre-init checks and option factories chain", "key", key)
		p = MergeProvider(existing, p)
	}
	c.provider[key] = p
	return nil
}

// HarnessKeys returns the keys holding harness profiles, sorted.
func (r *Registry) HarnessKeys() ([]string, error) {
	if err := r.Load(); err != nil {
		return nil, err
	}
	r.core.mu.Lock()
	defer r.core.mu.Unlock()
	return slices.Sorted(maps.Keys(r.core.harness)), nil
}

// ProviderKeys returns the keys holding provider profiles, sorted.
func (r *Registry) ProviderKeys() ([]string, error) {
	if err := r.Load(); err != nil {
		return nil, err
	}
	r.core.mu.Lock()
	defer r.core.mu.Unlock()
	return slices.Sorted(maps.Keys(r.core.provider)), nil
}

// lookup finds the profiles for spec: the exact key and, when spec names a
// model, its provider key. A malformed spec finds nothing, so "openai:" does
// not quietly match "openai".
func lookup[P any](r *Registry, spec string, table func(*registryCore) map[string]P) (exact, provider P, hasExact, hasProvider bool, err error) {
	prov, _, hasModel, kerr := splitKey(spec)
	if kerr != nil {
		return exact, provider, false, false, nil
	}
	if err = r.Load(); err != nil {
		return exact, provider, false, false, err
	}
	r.core.mu.Lock()
	defer r.core.mu.Unlock()
	m := table(r.core)
	exact, hasExact = m[spec]
	if hasModel {
		provider, hasProvider = m[prov]
	}
	return exact, provider, hasExact, hasProvider, nil
}

// Harness returns the harness profile for a spec ("provider" or
// "provider:model"): the exact key's profile merged over the provider key's,
// either one alone, or nil when neither is registered or the spec is
// malformed. A bare spec is looked up exactly, never as a provider of
// something else. The error is a failed bootstrap.
func (r *Registry) Harness(spec string) (*HarnessProfile, error) {
	exact, prov, hasExact, hasProv, err := lookup(r, spec, func(c *registryCore) map[string]*HarnessProfile { return c.harness })
	switch {
	case err != nil:
		return nil, err
	case hasExact && hasProv:
		return MergeHarness(prov, exact), nil
	case hasExact:
		return exact, nil
	case hasProv:
		r.core.log().Debug("profile: no exact HarnessProfile; using the provider's", "spec", spec)
		return prov, nil
	}
	return nil, nil
}

// Provider returns the provider profile for a spec, with the same lookup
// rules as Harness.
func (r *Registry) Provider(spec string) (*ProviderProfile, error) {
	exact, prov, hasExact, hasProv, err := lookup(r, spec, func(c *registryCore) map[string]*ProviderProfile { return c.provider })
	switch {
	case err != nil:
		return nil, err
	case hasExact && hasProv:
		return MergeProvider(prov, exact), nil
	case hasExact:
		return exact, nil
	case hasProv:
		return prov, nil
	}
	return nil, nil
}

// ApplyProvider looks up the provider profile for spec and applies it to
// callerOptions (ProviderProfile.Apply); with no profile it returns a copy of
// callerOptions. The caller's map is never modified.
func (r *Registry) ApplyProvider(spec string, callerOptions map[string]any, opts ...ApplyOption) (map[string]any, error) {
	p, err := r.Provider(spec)
	if err != nil {
		return nil, err
	}
	return p.Apply(spec, callerOptions, opts...)
}

// HarnessForModel returns the harness profile for an agent's model; it never
// returns nil without an error. With a spec (the caller named the model as a
// string) it is Harness(spec) or an empty profile. Otherwise the model's
// llm.Identity decides: "provider:model" (which falls back to the provider
// key), then a model id that itself contains a colon, then the provider
// alone. A bare model id is never looked up on its own, so an in-house model
// called "openai" does not pick up the openai profile.
func (r *Registry) HarnessForModel(model llm.ChatModel, spec string) (*HarnessProfile, error) {
	if spec != "" {
		p, err := r.Harness(spec)
		if err != nil || p != nil {
			return p, err
		}
		return &HarnessProfile{}, nil
	}
	var id llm.Identity
	if model != nil {
		id, _ = llm.IdentityOf(model)
	}
	var tried []string
	try := func(key string) (*HarnessProfile, error) {
		tried = append(tried, key)
		return r.Harness(key)
	}
	steps := []struct {
		ok  bool
		key string
	}{
		{id.Provider != "" && id.Model != "" && !strings.Contains(id.Model, ":"), id.Provider + ":" + id.Model},
		{strings.Contains(id.Model, ":"), id.Model},
		{id.Provider != "", id.Provider},
	}
	for _, s := range steps {
		if !s.ok {
			continue
		}
		p, err := try(s.key)
		if err != nil || p != nil {
			return p, err
		}
	}
	c := r.core
	c.mu.Lock()
	warn := c.userHarness
	c.mu.Unlock()
	level := slog.LevelDebug
	if warn {
		level = slog.LevelWarn
	}
	c.log().Log(context.Background(), level, "profile: the model matched no harness profile; using an empty one",
		"provider", id.Provider, "model", id.Model, "tried", tried)
	return &HarnessProfile{}, nil
}

// Plugin registers third-party profiles when a registry bootstraps — Go's
// counterpart of Deep Agents' entry points. Add one with RegisterPlugin from
// an init function.
type Plugin struct {
	// Name identifies the plugin in logs and fixes the order plugins run in.
	Name string
	// Register adds the plugin's profiles to the registry it is given. It must
	// not use Default() or the package-level Register functions: those wait
	// for the very bootstrap the plugin is part of. An error (or panic) is
	// logged, and whatever the plugin registered is discarded; other plugins
	// still run.
	Register func(*Registry) error
}

var (
	pluginsMu sync.Mutex
	plugins   []Plugin
)

// RegisterPlugin adds a plugin that every registry created with default
// options runs at bootstrap, after the built-ins, in name order. Register
// plugins from init functions: a registry that has already bootstrapped does
// not run plugins added later.
func RegisterPlugin(name string, register func(*Registry) error) {
	pluginsMu.Lock()
	defer pluginsMu.Unlock()
	plugins = append(plugins, Plugin{Name: name, Register: register})
}

func registeredPlugins() []Plugin {
	pluginsMu.Lock()
	defer pluginsMu.Unlock()
	out := slices.Clone(plugins)
	slices.SortStableFunc(out, func(a, b Plugin) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
