package profile

import (
	"maps"
	"reflect"
	"slices"

	"github.com/dageval/dageval/harness/agent"
)

// MergeHarness layers override over base, field by field, and returns a new
// profile (a nil side yields the other side):
//
//   - base and suffix prompts: override's when set, else base's;
//   - tool description overrides: base's entries, then override's;
//   - excluded tools and middleware (names and types): union;
//   - extra middleware: when only one side has any, that side's (list or
//     factory); when both do, a factory that materializes both and merges
//     them by concrete type — base order kept, a base entry whose type the
//     override also supplies replaced by the override's instance, override
//     entries of new types appended in order;
//   - general-purpose subagent: field by field, override's fields when set;
//   - todo prompt: override's when set, else base's.
//
// Neither input changes.
func MergeHarness(base, override *HarnessProfile) *HarnessProfile {
	switch {
	case base == nil && override == nil:
		return nil
	case base == nil:
		return override
	case override == nil:
		return base
	}
	m := &HarnessProfile{
		base:          firstSet(override.base, base.base),
		suffix:        firstSet(override.suffix, base.suffix),
		excludedTools: sortedSet(append(slices.Clone(base.excludedTools), override.excludedTools...)),
		excludedNames: sortedSet(append(slices.Clone(base.excludedNames), override.excludedNames...)),
		excludedTypes: sortedTypes(append(slices.Clone(base.excludedTypes), override.excludedTypes...)),
		gp:            mergeGeneralPurpose(base.gp, override.gp),
		todoPrompt:    clonePtr(firstSet(override.todoPrompt, base.todoPrompt)),
	}
	if len(base.overrides)+len(override.overrides) > 0 {
		m.overrides = maps.Clone(base.overrides)
		if m.overrides == nil {
			m.overrides = map[string]string{}
		}
		maps.Copy(m.overrides, override.overrides)
	}
	switch {
	case !override.hasExtraMiddleware():
		m.extra, m.extraFactory = base.extra, base.extraFactory
	case !base.hasExtraMiddleware():
		m.extra, m.extraFactory = override.extra, override.extraFactory
	default:
		m.extraFactory = func() []agent.Middleware {
			return mergeMiddlewareByType(base.MaterializeExtraMiddleware(), override.MaterializeExtraMiddleware())
		}
	}
	return m
}

func firstSet[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func mergeGeneralPurpose(base, override *GeneralPurposeSubagent) *GeneralPurposeSubagent {
	switch {
	case base == nil:
		return override.clone()
	case override == nil:
		return base.clone()
	}
	return &GeneralPurposeSubagent{
		Enabled:      clonePtr(firstSet(override.Enabled, base.Enabled)),
		Description:  clonePtr(firstSet(override.Description, base.Description)),
		SystemPrompt: clonePtr(firstSet(override.SystemPrompt, base.SystemPrompt)),
	}
}

// mergeMiddlewareByType keeps base's order; a base entry whose concrete type
// the override also has is replaced, at its first occurrence, by the
// override's (last) instance of that type, and later base entries of that
// type are dropped; override entries of types base lacks are appended.
func mergeMiddlewareByType(base, override []agent.Middleware) []agent.Middleware {
	overrideByType := make(map[reflect.Type]agent.Middleware, len(override))
	for _, mw := range override {
		overrideByType[reflect.TypeOf(mw)] = mw
	}
	baseTypes := make(map[reflect.Type]bool, len(base))
	out := make([]agent.Middleware, 0, len(base)+len(override))
	for _, mw := range base {
		t := reflect.TypeOf(mw)
		if baseTypes[t] {
			if _, replaced := overrideByType[t]; replaced {
				continue
			}
			out = append(out, mw)
			continue
		}
		baseTypes[t] = true
		if o, ok := overrideByType[t]; ok {
			out = append(out, o)
		} else {
			out = append(out, mw)
		}
	}
	for _, mw := range override {
		if !baseTypes[reflect.TypeOf(mw)] {
			out = append(out, mw)
		}
	}
	return out
}
