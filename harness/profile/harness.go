package profile

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/dageval/dageval/harness/agent"
)

// GeneralPurposeSubagent edits the general-purpose subagent a deep agent adds
// on its own. Each field is optional: nil means "keep the default".
type GeneralPurposeSubagent struct {
	// Enabled is tri-state: nil keeps the default (on), true forces it on,
	// false removes it.
	Enabled *bool `json:"enabled,omitempty"`
	// Description replaces the default description shown in the task tool.
	Description *string `json:"description,omitempty"`
	// SystemPrompt replaces the subagent's prompt; the profile's base
	// prompt is then ignored for it, its suffix still applies.
	SystemPrompt *string `json:"system_prompt,omitempty"`
}

func (g *GeneralPurposeSubagent) clone() *GeneralPurposeSubagent {
	if g == nil {
		return nil
	}
	return &GeneralPurposeSubagent{Enabled: clonePtr(g.Enabled), Description: clonePtr(g.Description), SystemPrompt: clonePtr(g.SystemPrompt)}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// HarnessSpec is what NewHarnessProfile builds a profile from in Go: the
// fields of a Config plus what a profile file cannot hold (type exclusions,
// middleware instances). Keep or change it freely afterwards: the profile
// copies everything it keeps. Describe reads a profile back.
type HarnessSpec struct {
	// BaseSystemPrompt replaces the stack's own base prompt when non-nil; an
	// empty string replaces it with nothing.
	BaseSystemPrompt *string
	// SystemPromptSuffix is appended, after a blank line, to every prompt the
	// profile shapes when non-nil (even when empty).
	SystemPromptSuffix *string
	// ToolDescriptionOverrides maps tool names to the description the model
	// sees instead of the tool's own.
	ToolDescriptionOverrides map[string]string
	// ExcludedTools are hidden from the model.
	ExcludedTools []string
	// ExcludedMiddleware removes middleware whose Name() is one of these.
	ExcludedMiddleware []string
	// ExcludedMiddlewareTypes removes middleware whose dynamic type is exactly
	// one of these (reflect.TypeFor[*middleware.X]()); a type that embeds an
	// excluded type survives.
	ExcludedMiddlewareTypes []reflect.Type
	// ExtraMiddleware is added to every stack the profile shapes; the same
	// instances are shared by all stacks.
	ExtraMiddleware []agent.Middleware
	// ExtraMiddlewareFactory, when set instead, is called once per stack so
	// each stack gets fresh instances.
	ExtraMiddlewareFactory func() []agent.Middleware
	// GeneralPurposeSubagent edits the general-purpose subagent; nil keeps
	// its defaults.
	GeneralPurposeSubagent *GeneralPurposeSubagent
	// TodoSystemPrompt, when non-nil, replaces the prompt fragment of every
	// TodoListMiddleware in the stacks the profile shapes that was not given
	// a prompt of its own; an empty string appends nothing.
	TodoSystemPrompt *string
}

// HarnessProfile shapes an agent for a model or provider: its prompt, tool
// descriptions, hidden tools, middleware removed or added, and the
// general-purpose subagent. A profile is immutable and safe for concurrent
// use; a nil *HarnessProfile behaves as an empty profile.
type HarnessProfile struct {
	base, suffix  *string
	overrides     map[string]string
	excludedTools []string
	excludedNames []string
	excludedTypes []reflect.Type
	extra         []agent.Middleware
	extraFactory  func() []agent.Middleware
	gp            *GeneralPurposeSubagent
	todoPrompt    *string
}

// NewHarnessProfile validates spec and returns the profile. It rejects
// malformed or scaffolding middleware exclusions (see ErrInvalidExclusion and
// ErrScaffolding) and a spec that sets both extra-middleware forms.
func NewHarnessProfile(spec HarnessSpec) (*HarnessProfile, error) {
	if err := validateExclusions(spec.ExcludedMiddleware, spec.ExcludedMiddlewareTypes); err != nil {
		return nil, err
	}
	if len(spec.ExtraMiddleware) > 0 && spec.ExtraMiddlewareFactory != nil {
		return nil, fmt.Errorf("%w: set ExtraMiddleware or ExtraMiddlewareFactory, not both", ErrInvalidProfile)
	}
	for i, mw := range spec.ExtraMiddleware {
		if isNil(mw) {
			return nil, fmt.Errorf("%w: ExtraMiddleware[%d] is nil", ErrInvalidProfile, i)
		}
	}
	p := &HarnessProfile{
		base:          clonePtr(spec.BaseSystemPrompt),
		suffix:        clonePtr(spec.SystemPromptSuffix),
		excludedTools: sortedSet(spec.ExcludedTools),
		excludedNames: sortedSet(spec.ExcludedMiddleware),
		excludedTypes: sortedTypes(spec.ExcludedMiddlewareTypes),
		extraFactory:  spec.ExtraMiddlewareFactory,
		gp:            spec.GeneralPurposeSubagent.clone(),
		todoPrompt:    clonePtr(spec.TodoSystemPrompt),
	}
	if len(spec.ToolDescriptionOverrides) > 0 {
		p.overrides = maps.Clone(spec.ToolDescriptionOverrides)
	}
	if len(spec.ExtraMiddleware) > 0 {
		p.extra = slices.Clone(spec.ExtraMiddleware)
	}
	return p, nil
}

// MustHarnessProfile is NewHarnessProfile for specs fixed at compile time; it
// panics on an invalid spec.
func MustHarnessProfile(spec HarnessSpec) *HarnessProfile {
	p, err := NewHarnessProfile(spec)
	if err != nil {
		panic(err)
	}
	return p
}

func isNil(mw agent.Middleware) bool {
	if mw == nil {
		return true
	}
	v := reflect.ValueOf(mw)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return v.IsNil()
	}
	return false
}

func sortedSet(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedTypes(in []reflect.Type) []reflect.Type {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b reflect.Type) int { return compareTypes(a, b) })
	return slices.Compact(out)
}

func compareTypes(a, b reflect.Type) int {
	if c := cmpString(typeLabel(a), typeLabel(b)); c != 0 {
		return c
	}
	return cmpString(typePkgPath(a), typePkgPath(b))
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func typePkgPath(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

// ApplyPrompt shapes a stack's prompt: the profile's base prompt, when set,
// replaces base (even with an empty string); the suffix, when set, follows
// after a blank line, or stands alone when the prompt is empty. An empty
// suffix still adds the blank line, as in Deep Agents.
func (p *HarnessProfile) ApplyPrompt(base string) string {
	prompt := base
	if p == nil {
		return prompt
	}
	if p.base != nil {
		prompt = *p.base
	}
	if p.suffix != nil {
		if prompt != "" {
			prompt += "\n\n" + *p.suffix
		} else {
			prompt = *p.suffix
		}
	}
	return prompt
}

// ToolDescriptionOverrides returns a copy of the tool-name → description map.
func (p *HarnessProfile) ToolDescriptionOverrides() map[string]string {
	if p == nil {
		return nil
	}
	return maps.Clone(p.overrides)
}

// ToolDescription returns the override for a tool and whether there is one.
func (p *HarnessProfile) ToolDescription(name string) (string, bool) {
	if p == nil {
		return "", false
	}
	d, ok := p.overrides[name]
	return d, ok
}

// TodoSystemPrompt returns the profile's todo-list prompt fragment and
// whether it sets one.
func (p *HarnessProfile) TodoSystemPrompt() (string, bool) {
	if p == nil || p.todoPrompt == nil {
		return "", false
	}
	return *p.todoPrompt, true
}

// ExcludedTools returns the hidden tool names, sorted.
func (p *HarnessProfile) ExcludedTools() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.excludedTools)
}

// hasExclusions reports whether the profile removes any middleware.
func (p *HarnessProfile) hasExclusions() bool {
	return p != nil && (len(p.excludedNames) > 0 || len(p.excludedTypes) > 0)
}

// hasExtraMiddleware reports whether the profile adds middleware.
func (p *HarnessProfile) hasExtraMiddleware() bool {
	return p != nil && (len(p.extra) > 0 || p.extraFactory != nil)
}

// MaterializeExtraMiddleware returns the profile's extra middleware for one
// stack, in a new slice. A factory is called on every call, so call it once
// per stack to give each stack its own instances.
func (p *HarnessProfile) MaterializeExtraMiddleware() []agent.Middleware {
	switch {
	case p == nil:
		return nil
	case p.extraFactory != nil:
		return slices.Clone(p.extraFactory())
	default:
		return slices.Clone(p.extra)
	}
}

// GeneralPurposeEnabled reports whether the general-purpose subagent is
// added: true unless the profile disables it explicitly.
func (p *HarnessProfile) GeneralPurposeEnabled() bool {
	return p == nil || p.gp == nil || p.gp.Enabled == nil || *p.gp.Enabled
}

// GeneralPurposeDescription returns the profile's description for the
// general-purpose subagent, or def when it sets none.
func (p *HarnessProfile) GeneralPurposeDescription(def string) string {
	if p == nil || p.gp == nil || p.gp.Description == nil {
		return def
	}
	return *p.gp.Description
}

// GeneralPurposePrompt returns the general-purpose subagent's prompt given
// its default: the sub-profile's prompt, when set, wins over everything and
// only the suffix is added; otherwise ApplyPrompt(def).
func (p *HarnessProfile) GeneralPurposePrompt(def string) string {
	if p == nil || p.gp == nil || p.gp.SystemPrompt == nil {
		return p.ApplyPrompt(def)
	}
	prompt := *p.gp.SystemPrompt
	if p.suffix != nil {
		prompt += "\n\n" + *p.suffix
	}
	return prompt
}
