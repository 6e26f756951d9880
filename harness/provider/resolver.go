package provider

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/llm"
)

// Factory builds a chat model from a resolved configuration. It must not
// need the API key: adapters look the key up when a call is made.
type Factory func(Config) (llm.ChatModel, error)

// Resolver turns model specs ("anthropic:claude-sonnet-4-6", "ollama:llama3:8b",
// "local:model-a") into chat models: the provider half names an entry, the
// entry's kind picks a registered factory. It starts with the built-in
// entries; users add or override entries with SetEntry. Safe for concurrent use.
type Resolver struct {
	mu        sync.RWMutex
	base      Config
	entries   map[string]Entry
	factories map[string]Factory
	// entriesShared and factoriesShared say the map is also another
	// resolver's (see WithBase), or the built-in entries: it is copied
	// before it changes, so that building a resolver per eval cell copies
	// and validates nothing.
	entriesShared, factoriesShared bool
	// shared is what the models built from this resolver's base share
	// (see Config.Shared).
	shared *sync.Map
}

// NewResolver returns a resolver with the built-in entries and no factories.
// base supplies the fields shared by every model it builds: HTTPClient (where
// a recorder sits), Retry, Timeout, MaxTokens, Replay, Logger, Getenv. The
// provider-specific fields of base (Provider, Model, Kind, BaseURL,
// credentials, Headers, ExtraBody, UseResponsesAPI) are ignored; they come
// from entries and per-model options.
func NewResolver(base Config) *Resolver {
	return &Resolver{base: sharedBase(base), entries: builtinEntries(), entriesShared: true, factories: map[string]Factory{}, shared: &sync.Map{}}
}

// sharedBase is base less the fields that come from entries and options.
func sharedBase(base Config) Config {
	b := base.Clone()
	b.Provider, b.Model, b.Kind, b.BaseURL = "", "", "", ""
	b.APIKey, b.APIKeyEnv, b.AuthHeader, b.KeyOptional, b.UseResponsesAPI = "", "", "", false, nil
	b.Headers, b.ExtraBody, b.shared = nil, nil, nil
	return b
}

// WithBase returns a resolver with r's entries and factories and base in
// place of r's (as for NewResolver): what an eval run's cells share, each
// with the HTTP client of its own recorder. Later changes to either
// resolver do not reach the other.
func (r *Resolver) WithBase(base Config) *Resolver {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entriesShared, r.factoriesShared = true, true
	return &Resolver{base: sharedBase(base), entries: r.entries, factories: r.factories, entriesShared: true, factoriesShared: true, shared: &sync.Map{}}
}

// ownEntries makes r.entries r's own before a change; r.mu is held.
func (r *Resolver) ownEntries() {
	if r.entriesShared {
		r.entries, r.entriesShared = maps.Clone(r.entries), false
	}
}

// Register installs the factory for a wire protocol, replacing any earlier one.
func (r *Resolver) Register(kind string, f Factory) error {
	if !slices.Contains(Kinds(), kind) {
		return fmt.Errorf("provider: cannot register unknown kind %q (want one of %s)", kind, strings.Join(Kinds(), ", "))
	}
	if f == nil {
		return fmt.Errorf("provider: nil factory for kind %s", kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.factoriesShared {
		r.factories, r.factoriesShared = maps.Clone(r.factories), false
	}
	r.factories[kind] = f
	return nil
}

// SetEntry adds or replaces the named entry after validating it.
func (r *Resolver) SetEntry(name string, e Entry) error {
	if err := e.Validate(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ownEntries()
	r.entries[name] = e.clone()
	return nil
}

// SetEntries adds several entries; if any is invalid none is added. Errors
// are reported for the first invalid entry in name order.
func (r *Resolver) SetEntries(entries map[string]Entry) error {
	names := slices.Sorted(maps.Keys(entries))
	for _, name := range names {
		if err := entries[name].Validate(name); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ownEntries()
	for _, name := range names {
		r.entries[name] = entries[name].clone()
	}
	return nil
}

// Entry returns a copy of the named entry.
func (r *Resolver) Entry(name string) (Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return e.clone(), ok
}

// Names lists the known entry names, sorted.
func (r *Resolver) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.entries))
}

// Config resolves spec to a model configuration and applies options (see
// ApplyOptions). It reads no API key.
func (r *Resolver) Config(spec string, options map[string]any) (Config, error) {
	s, err := llm.ParseSpec(spec)
	if err != nil {
		return Config{}, err
	}
	r.mu.RLock()
	e, ok := r.entries[s.Provider]
	base := r.base
	r.mu.RUnlock()
	if !ok {
		return Config{}, fmt.Errorf("model spec %q: unknown provider %q; known providers: %s (declare others under providers:)", spec, s.Provider, strings.Join(r.Names(), ", "))
	}
	c := e.config(s.Provider, s.Model, base)
	c.shared = r.shared
	if err := ApplyOptions(&c, options); err != nil {
		return Config{}, fmt.Errorf("model spec %q: %w", spec, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Resolve builds the chat model for spec. It never needs an API key.
func (r *Resolver) Resolve(spec string) (llm.ChatModel, error) { return r.ResolveWith(spec, nil) }

// ResolveWith builds the chat model for spec with provider options, as
// harness profiles express them (see ApplyOptions).
func (r *Resolver) ResolveWith(spec string, options map[string]any) (llm.ChatModel, error) {
	c, err := r.Config(spec, options)
	if err != nil {
		return nil, err
	}
	return r.Build(c)
}

// Build builds a model from an already resolved configuration.
func (r *Resolver) Build(c Config) (llm.ChatModel, error) {
	r.mu.RLock()
	f, ok := r.factories[c.Kind]
	r.mu.RUnlock()
	if c.shared != r.shared || c.HTTPClient != r.base.HTTPClient {
		// Only the models of this resolver's own base share what they
		// build: a config changed to another client would keep it alive.
		c.shared = nil
	}
	if !ok {
		return nil, fmt.Errorf("provider %s: no adapter registered for kind %s (use builtin.NewResolver, or register one)", c.name(), c.Kind)
	}
	m, err := f(c)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", c.name(), err)
	}
	return m, nil
}
