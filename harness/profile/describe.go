package profile

import (
	"maps"
	"slices"
)

// Description is a deterministic, JSON-serialisable account of a resolved
// harness profile, the way to read one back: for snapshots, `dageval
// assemble` and tests. Unset fields are
// omitted; a prompt set to the empty string shows as "".
type Description struct {
	BaseSystemPrompt         *string           `json:"base_system_prompt,omitempty"`
	SystemPromptSuffix       *string           `json:"system_prompt_suffix,omitempty"`
	ToolDescriptionOverrides map[string]string `json:"tool_description_overrides,omitempty"`
	ExcludedTools            []string          `json:"excluded_tools,omitempty"`
	ExcludedMiddleware       []string          `json:"excluded_middleware,omitempty"`
	// ExcludedMiddlewareTypes lists type exclusions by Go type name.
	ExcludedMiddlewareTypes []string `json:"excluded_middleware_types,omitempty"`
	// ExtraMiddleware lists the names of the extra middleware one stack gets.
	ExtraMiddleware        []string                `json:"extra_middleware,omitempty"`
	GeneralPurposeSubagent *GeneralPurposeSubagent `json:"general_purpose_subagent,omitempty"`
	TodoSystemPrompt       *string                 `json:"todo_system_prompt,omitempty"`
}

// Describe returns the profile's Description. It materializes the extra
// middleware once to learn their names.
func (p *HarnessProfile) Describe() Description {
	if p == nil {
		return Description{}
	}
	d := Description{
		BaseSystemPrompt:         clonePtr(p.base),
		SystemPromptSuffix:       clonePtr(p.suffix),
		ToolDescriptionOverrides: maps.Clone(p.overrides),
		ExcludedTools:            slices.Clone(p.excludedTools),
		ExcludedMiddleware:       slices.Clone(p.excludedNames),
		GeneralPurposeSubagent:   p.gp.clone(),
		TodoSystemPrompt:         clonePtr(p.todoPrompt),
	}
	for _, t := range p.excludedTypes {
		d.ExcludedMiddlewareTypes = append(d.ExcludedMiddlewareTypes, typeLabel(t))
	}
	for _, mw := range p.MaterializeExtraMiddleware() {
		if mw == nil {
			d.ExtraMiddleware = append(d.ExtraMiddleware, "<nil>")
			continue
		}
		d.ExtraMiddleware = append(d.ExtraMiddleware, mw.Name())
	}
	return d
}
