package profile

import (
	"fmt"
	"maps"
)

// ProviderSpec holds the fields of a ProviderProfile.
type ProviderSpec struct {
	// InitOptions are static options for building the provider's chat model
	// (for example {"use_responses_api": true}).
	InitOptions map[string]any
	// InitOptionsFactory computes options at each resolution (for example
	// from the environment); its keys win over InitOptions.
	InitOptionsFactory func() (map[string]any, error)
	// PreInit runs before options are computed and may refuse the model (for
	// example an unsupported configuration) by returning an error.
	PreInit func(spec string) error
}

// ProviderProfile shapes how a model of a provider is constructed: the option
// map handed to the provider adapter. It is immutable and safe for concurrent
// use; a nil *ProviderProfile adds nothing.
type ProviderProfile struct {
	init    map[string]any
	factory func() (map[string]any, error)
	preInit func(spec string) error
}

// NewProviderProfile returns a profile holding a deep copy of spec's options:
// later changes to the caller's maps do not reach it.
func NewProviderProfile(spec ProviderSpec) *ProviderProfile {
	return &ProviderProfile{init: cloneOptions(spec.InitOptions), factory: spec.InitOptionsFactory, preInit: spec.PreInit}
}

// InitOptions returns a deep copy of the static options.
func (p *ProviderProfile) InitOptions() map[string]any {
	if p == nil {
		return map[string]any{}
	}
	return cloneOptions(p.init)
}

// HasPreInit reports whether the profile runs a pre-init check.
func (p *ProviderProfile) HasPreInit() bool { return p != nil && p.preInit != nil }

// HasFactory reports whether the profile computes options at resolution time.
func (p *ProviderProfile) HasFactory() bool { return p != nil && p.factory != nil }

// ApplyOption changes how options are applied.
type ApplyOption func(*applyOptions)

type applyOptions struct{ skipPreInit bool }

// SkipPreInit applies the options without running the pre-init check.
func SkipPreInit() ApplyOption { return func(o *applyOptions) { o.skipPreInit = true } }

// Apply runs the pre-init check for spec, then returns a new map holding the
// static options, overlaid by the factory's, overlaid by callerOptions: the
// caller always wins. Nothing passed in is modified, and the result shares
// no maps or slices with the profile or the caller.
func (p *ProviderProfile) Apply(spec string, callerOptions map[string]any, opts ...ApplyOption) (map[string]any, error) {
	var o applyOptions
	for _, opt := range opts {
		opt(&o)
	}
	if p == nil {
		return cloneOptions(callerOptions), nil
	}
	if p.preInit != nil && !o.skipPreInit {
		if err := p.preInit(spec); err != nil {
			return nil, fmt.Errorf("provider profile for %s refused the model: %w", spec, err)
		}
	}
	merged := cloneOptions(p.init)
	if p.factory != nil {
		dynamic, err := p.factory()
		if err != nil {
			return nil, fmt.Errorf("provider profile for %s: computing options: %w", spec, err)
		}
		maps.Copy(merged, cloneOptions(dynamic))
	}
	maps.Copy(merged, cloneOptions(callerOptions))
	return merged, nil
}

// MergeProvider layers override over base and returns a new profile (a nil
// side yields the other side): static options merge key by key with override
// winning; when both sides have a factory, the merged factory runs base's,
// then override's, and overlays the results; when both have a pre-init check,
// base's runs first and override's only when base's passes.
func MergeProvider(base, override *ProviderProfile) *ProviderProfile {
	switch {
	case base == nil:
		return override
	case override == nil:
		return base
	}
	m := &ProviderProfile{init: cloneOptions(base.init), factory: base.factory, preInit: base.preInit}
	maps.Copy(m.init, cloneOptions(override.init))
	switch {
	case base.factory == nil:
		m.factory = override.factory
	case override.factory != nil:
		bf, of := base.factory, override.factory
		m.factory = func() (map[string]any, error) {
			out, err := bf()
			if err != nil {
				return nil, fmt.Errorf("base options factory: %w", err)
			}
			out = cloneOptions(out)
			more, err := of()
			if err != nil {
				return nil, fmt.Errorf("override options factory: %w", err)
			}
			maps.Copy(out, cloneOptions(more))
			return out, nil
		}
	}
	switch {
	case base.preInit == nil:
		m.preInit = override.preInit
	case override.preInit != nil:
		bp, op := base.preInit, override.preInit
		m.preInit = func(spec string) error {
			if err := bp(spec); err != nil {
				return fmt.Errorf("base pre-init check (the override's check did not run): %w", err)
			}
			if err := op(spec); err != nil {
				return fmt.Errorf("override pre-init check: %w", err)
			}
			return nil
		}
	}
	return m
}

// cloneOptions deep-copies the JSON-like containers of an option map
// (maps with string keys and slices); other values are copied as they are.
// It never returns nil.
func cloneOptions(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneOptions(x)
	case map[string]string:
		return maps.Clone(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []string:
		return append([]string(nil), x...)
	}
	return v
}
