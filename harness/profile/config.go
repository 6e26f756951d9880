package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/dageval/dageval/internal/yamlx"
)

// Config is the serialisable part of a harness profile, with exactly the keys
// of Deep Agents' HarnessProfileConfig, so a profile file written for Deep
// Agents loads unchanged:
//
//	base_system_prompt: "You are a careful reviewer."
//	system_prompt_suffix: "Answer in English."
//	tool_description_overrides: {ls: "List a directory."}
//	excluded_tools: [execute]
//	excluded_middleware: [SummarizationMiddleware]
//	general_purpose_subagent: {enabled: false}
//
// plus one key of dageval's own, which Deep Agents' config lacks:
//
//	todo_system_prompt: "Plan with write_todos."
//
// todo_system_prompt replaces the fragment TodoListMiddleware appends to the
// system prompt, in every stack the profile shapes that has the middleware
// (from a profile's extra middleware or the caller's), unless that
// middleware was given a prompt of its own. Where Deep Agents applies
// tool_description_overrides to the file tools, task and the caller's tools
// only, dageval applies them to every tool a built-in middleware adds —
// write_todos, compact_conversation and the async subagent tools too (a
// start_async_task override, like task's, may hold {available_agents}) —
// again unless the middleware was given that tool's description itself. A
// name no tool has is ignored, as in Deep Agents: a profile may serve
// agents with different tools.
//
// It holds no extra middleware and names middleware only by string. Build a
// runtime profile with HarnessProfile; read files with LoadConfigFile.
type Config struct {
	BaseSystemPrompt         *string                 `json:"base_system_prompt,omitempty"`
	SystemPromptSuffix       *string                 `json:"system_prompt_suffix,omitempty"`
	ToolDescriptionOverrides map[string]string       `json:"tool_description_overrides,omitempty"`
	ExcludedTools            []string                `json:"excluded_tools,omitempty"`
	ExcludedMiddleware       []string                `json:"excluded_middleware,omitempty"`
	GeneralPurposeSubagent   *GeneralPurposeSubagent `json:"general_purpose_subagent,omitempty"`
	TodoSystemPrompt         *string                 `json:"todo_system_prompt,omitempty"`
}

// configKeys are the keys a profile file may use, in output order.
var configKeys = []string{
	"base_system_prompt", "system_prompt_suffix", "tool_description_overrides",
	"excluded_tools", "excluded_middleware", "general_purpose_subagent", "todo_system_prompt",
}

// gpKeys are the keys of general_purpose_subagent, in output order.
var gpKeys = []string{"enabled", "description", "system_prompt"}

// Validate checks the excluded_middleware entries as NewHarnessProfile
// does: malformed names and scaffolding are errors.
func (c Config) Validate() error { return validateExclusions(c.ExcludedMiddleware, nil) }

// Normalized returns a copy with sorted, de-duplicated lists and no empty
// containers — the form every encoding writes, so equal configs encode to
// equal bytes. An explicit empty general_purpose_subagent is kept.
func (c Config) Normalized() Config {
	n := Config{
		BaseSystemPrompt:       clonePtr(c.BaseSystemPrompt),
		SystemPromptSuffix:     clonePtr(c.SystemPromptSuffix),
		ExcludedTools:          sortedSet(c.ExcludedTools),
		ExcludedMiddleware:     sortedSet(c.ExcludedMiddleware),
		GeneralPurposeSubagent: c.GeneralPurposeSubagent.clone(),
		TodoSystemPrompt:       clonePtr(c.TodoSystemPrompt),
	}
	if len(c.ToolDescriptionOverrides) > 0 {
		n.ToolDescriptionOverrides = maps.Clone(c.ToolDescriptionOverrides)
	}
	return n
}

// HarnessProfile builds the runtime profile the config describes.
func (c Config) HarnessProfile() (*HarnessProfile, error) {
	return NewHarnessProfile(HarnessSpec{
		BaseSystemPrompt:         c.BaseSystemPrompt,
		SystemPromptSuffix:       c.SystemPromptSuffix,
		ToolDescriptionOverrides: c.ToolDescriptionOverrides,
		ExcludedTools:            c.ExcludedTools,
		ExcludedMiddleware:       c.ExcludedMiddleware,
		GeneralPurposeSubagent:   c.GeneralPurposeSubagent,
		TodoSystemPrompt:         c.TodoSystemPrompt,
	})
}

// SerializedNamer is implemented by middleware whose type exclusions may be
// written to a profile config under a name (for example an implementation
// type that stands for "SummarizationMiddleware"). ConfigFromHarness asks a
// zero value of the excluded type.
type SerializedNamer interface {
	SerializedName() string
}

var serializedNamerInterface = reflect.TypeFor[SerializedNamer]()

// ConfigFromHarness converts a runtime profile into a Config. It fails with
// ErrNotSerializable when the profile has extra middleware (list or factory)
// or excludes a middleware type that has no serialized name.
func ConfigFromHarness(p *HarnessProfile) (Config, error) {
	if p == nil {
		return Config{}, nil
	}
	if p.hasExtraMiddleware() {
		return Config{}, fmt.Errorf("%w: it has extra middleware, which a profile file cannot hold; register it in Go instead", ErrNotSerializable)
	}
	names := slices.Clone(p.excludedNames)
	var unnamed []string
	for _, t := range p.excludedTypes {
		name := serializedName(t)
		if name == "" || CheckExclusionName(name) != nil {
			unnamed = append(unnamed, typeLabel(t))
			continue
		}
		names = append(names, name)
	}
	if len(unnamed) > 0 {
		return Config{}, fmt.Errorf("%w: excluded middleware type(s) %s have no serialized name; implement SerializedName or exclude by name",
			ErrNotSerializable, strings.Join(unnamed, ", "))
	}
	return Config{
		BaseSystemPrompt:         clonePtr(p.base),
		SystemPromptSuffix:       clonePtr(p.suffix),
		ToolDescriptionOverrides: maps.Clone(p.overrides),
		ExcludedTools:            slices.Clone(p.excludedTools),
		ExcludedMiddleware:       names,
		GeneralPurposeSubagent:   p.gp.clone(),
		TodoSystemPrompt:         clonePtr(p.todoPrompt),
	}.Normalized(), nil
}

func serializedName(t reflect.Type) (name string) {
	if !t.Implements(serializedNamerInterface) {
		return ""
	}
	mw, ok := zeroMiddleware(t)
	if !ok {
		return ""
	}
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	return mw.(SerializedNamer).SerializedName()
}

// MarshalJSON writes the normalized config; an invalid config is an error.
func (c Config) MarshalJSON() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	type plain Config
	return json.Marshal(plain(c.Normalized()))
}

// UnmarshalJSON reads a config strictly, as ParseConfig does.
func (c *Config) UnmarshalJSON(data []byte) error {
	parsed, err := ParseConfig("", data)
	if err != nil {
		return err
	}
	*c = *parsed
	return nil
}

// MarshalYAML returns the normalized config as an ordered mapping, so that
// go-yaml writes the keys in Deep Agents' order. An invalid config is an error.
func (c Config) MarshalYAML() (any, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := c.Normalized()
	out := yaml.MapSlice{}
	add := func(k string, v any) { out = append(out, yaml.MapItem{Key: k, Value: v}) }
	if n.BaseSystemPrompt != nil {
		add("base_system_prompt", *n.BaseSystemPrompt)
	}
	if n.SystemPromptSuffix != nil {
		add("system_prompt_suffix", *n.SystemPromptSuffix)
	}
	if len(n.ToolDescriptionOverrides) > 0 {
		m := yaml.MapSlice{}
		for _, k := range slices.Sorted(maps.Keys(n.ToolDescriptionOverrides)) {
			m = append(m, yaml.MapItem{Key: k, Value: n.ToolDescriptionOverrides[k]})
		}
		add("tool_description_overrides", m)
	}
	if len(n.ExcludedTools) > 0 {
		add("excluded_tools", n.ExcludedTools)
	}
	if len(n.ExcludedMiddleware) > 0 {
		add("excluded_middleware", n.ExcludedMiddleware)
	}
	if gp := n.GeneralPurposeSubagent; gp != nil {
		m := yaml.MapSlice{}
		if gp.Enabled != nil {
			m = append(m, yaml.MapItem{Key: "enabled", Value: *gp.Enabled})
		}
		if gp.Description != nil {
			m = append(m, yaml.MapItem{Key: "description", Value: *gp.Description})
		}
		if gp.SystemPrompt != nil {
			m = append(m, yaml.MapItem{Key: "system_prompt", Value: *gp.SystemPrompt})
		}
		add("general_purpose_subagent", m)
	}
	if n.TodoSystemPrompt != nil {
		add("todo_system_prompt", *n.TodoSystemPrompt)
	}
	return out, nil
}

// YAML renders the config as a YAML document (multi-line prompts as literal
// blocks) that ParseConfig reads back to an equal, normalized config.
func (c Config) YAML() ([]byte, error) {
	return yaml.MarshalWithOptions(c, yaml.UseLiteralStyleIfMultiline(true))
}

// ConfigError is a problem at a place in a profile file.
type ConfigError struct {
	File   string // file name, when known
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Key    string // path of the offending key, e.g. "excluded_middleware[1]"
	Err    error
}

func (e *ConfigError) Error() string {
	return (&yamlx.Error{File: e.File, Line: e.Line, Column: e.Column, Key: e.Key, Msg: e.Err.Error()}).Error()
}

// Unwrap returns the underlying error (for errors.Is with the sentinels).
func (e *ConfigError) Unwrap() error { return e.Err }

var errConfigSyntax = errors.New("not a valid profile file")
