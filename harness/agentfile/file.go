package agentfile

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/internal/yamlx"
)

// File is an agent file: the YAML form of a harness.Config, as dageval
// commands and suites read it. Prompts and descriptions lose the final line
// break a YAML block scalar ("|") gives them; blocks of a system_prompt list
// are kept exactly.
type File struct {
	// Path is the file the agent came from; relative paths inside it
	// (profile files, filesystem roots) are resolved against its directory.
	Path string `yaml:"-"`

	Name           string               `yaml:"name"`
	Model          string               `yaml:"model"`
	SystemPrompt   SystemPrompt         `yaml:"system_prompt"`
	Tools          []Tool               `yaml:"tools"`
	SubAgents      []SubAgent           `yaml:"subagents"`
	Skills         *[]string            `yaml:"skills"`
	Memory         *[]string            `yaml:"memory"`
	Files          map[string]string    `yaml:"files"`
	Backend        *Backend             `yaml:"backend"`
	InterruptOn    map[string]Interrupt `yaml:"interrupt_on"`
	Permissions    []Permission         `yaml:"permissions"`
	Middleware     []Middleware         `yaml:"middleware"`
	Profile        *Profile             `yaml:"profile"`
	ResponseFormat *ResponseFormat      `yaml:"response_format"`
	// Providers are named OpenAI-compatible endpoints for model specs such
	// as "local:model-a"; the model resolver reads them.
	Providers map[string]Provider `yaml:"providers"`
	// ModelInfo declares the facts of models the catalog does not list (a
	// local model's context window, a new model's prices), or replaces the
	// listed ones; summarization triggers on the declared window.
	ModelInfo []catalog.Declaration `yaml:"model_info"`

	// doc and key locate the file's keys for errors found after reading.
	doc *yamlx.Doc
	key string
	// overrides locate the top-level keys an override replaced (Override).
	overrides map[string]location
	// reg is the registry the file was read with (nil: built-ins only).
	reg *Registry
}

// location is where a part of an agent was written.
type location struct {
	doc *yamlx.Doc
	key string
}

// SystemPrompt is a string or a list of content blocks.
type SystemPrompt struct {
	Text   string
	Blocks []llm.Block
}

// UnmarshalYAML accepts a string or a list of {type: text, text, cache_control}.
func (p *SystemPrompt) UnmarshalYAML(n ast.Node) error {
	switch x := n.(type) {
	case *ast.NullNode:
		return nil
	case *ast.StringNode:
		p.Text = x.Value
		return nil
	case *ast.LiteralNode:
		p.Text = x.Value.Value
		return nil
	case *ast.SequenceNode:
		for _, item := range x.Values {
			var b struct {
				Type         string            `yaml:"type"`
				Text         string            `yaml:"text"`
				CacheControl *llm.CacheControl `yaml:"cache_control"`
			}
			if err := decodeStrict(item, &b); err != nil {
				return err
			}
			if b.Type != "" && b.Type != "text" {
				return yamlx.NodeError(item, "system prompt blocks must be text blocks, got type %q", b.Type)
			}
			p.Blocks = append(p.Blocks, llm.Block{Type: llm.BlockText, Text: b.Text, CacheControl: b.CacheControl})
		}
		return nil
	}
	return yamlx.NodeError(n, "system_prompt must be a string or a list of text blocks")
}

// Tool declares a tool the model can see. How it behaves at run time is
// decided by whoever runs the agent (a mock or a command in an eval suite, a
// Go function registered by name), unless Go names a tool registered on the
// Registry the file was read with: that tool is then the declaration's
// behaviour, and its name, description and schema fill in the declaration
// (the file may rename it or give another description, not a schema).
type Tool struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Parameters  map[string]any `yaml:"parameters"`
	Go          string         `yaml:"go"`

	// impl is the registered tool Go names, as declared.
	impl tool.Tool
}

// Impl is the Go tool the declaration names (with the declaration's name
// and description), or nil for a tool that is only declared.
func (t Tool) Impl() tool.Tool { return t.impl }

// SubAgent is a declarative subagent, an async one (graph_id, url), or
// one built in Go (compiled: the name it is registered under; the file may
// rename it and give its description).
type SubAgent struct {
	Compiled     string `yaml:"compiled"`
	Name         string `yaml:"name"`
	Description  string `yaml:"description"`
	SystemPrompt string `yaml:"system_prompt"`
	Model        string `yaml:"model"`
	// Tools names tools declared in the agent file; absent inherits all,
	// an empty list gives none.
	Tools          *[]string             `yaml:"tools"`
	Skills         []string              `yaml:"skills"`
	InterruptOn    *map[string]Interrupt `yaml:"interrupt_on"`
	Permissions    *[]Permission         `yaml:"permissions"`
	Middleware     []Middleware          `yaml:"middleware"`
	ResponseFormat *ResponseFormat       `yaml:"response_format"`
	GraphID        string                `yaml:"graph_id"`
	URL            string                `yaml:"url"`
	// URLEnv names the environment variable that holds the url, for a
	// server whose address is known only when the agent runs (a port
	// picked at start, a deployment per environment).
	URLEnv  string            `yaml:"url_env"`
	Headers map[string]string `yaml:"headers"`
}

// Interrupt is `true`, `false`, or {allowed_decisions, description}.
type Interrupt struct {
	Enabled          bool
	AllowedDecisions []middleware.DecisionType
	Description      string
}

// UnmarshalYAML accepts a boolean or a mapping.
func (d *Interrupt) UnmarshalYAML(n ast.Node) error {
	if b, ok := n.(*ast.BoolNode); ok {
		d.Enabled = b.Value
		return nil
	}
	var m struct {
		AllowedDecisions []string `yaml:"allowed_decisions"`
		Description      string   `yaml:"description"`
	}
	if _, ok := n.(*ast.MappingNode); !ok {
		if _, ok := n.(*ast.MappingValueNode); !ok {
			return yamlx.NodeError(n, "interrupt_on entries are true, false or {allowed_decisions, description}")
		}
	}
	if err := decodeStrict(n, &m); err != nil {
		return err
	}
	d.Enabled = true
	d.Description = m.Description
	for _, s := range m.AllowedDecisions {
		dt := middleware.DecisionType(s)
		if !slices.Contains(middleware.AllDecisions, dt) {
			return yamlx.NodeError(n, "unknown decision %q (want approve, edit, reject or respond)", s)
		}
		d.AllowedDecisions = append(d.AllowedDecisions, dt)
	}
	return nil
}

// Permission is one filesystem permission rule.
type Permission struct {
	Operations []string `yaml:"operations"`
	Paths      []string `yaml:"paths"`
	Mode       string   `yaml:"mode"`
}

// Middleware adds a middleware by name, with options: a built-in one or
// one registered on the Registry the file is read with.
type Middleware struct {
	Name    string         `yaml:"name"`
	Options map[string]any `yaml:"options"`

	// build is prepared from the options when the file is read.
	build builder
}

// Profile is a profile file path or an inline profile.
type Profile struct {
	// File is the profile file, relative to the agent file.
	File string
	// Inline is the inline profile, or the loaded File.
	Inline *profile.Config
	node   ast.Node
}

// UnmarshalYAML accepts a path string or an inline profile mapping; the
// profile itself is read once the agent file's name is known (load).
func (r *Profile) UnmarshalYAML(n ast.Node) error {
	if s, ok := n.(*ast.StringNode); ok {
		r.File = s.Value
		return nil
	}
	r.node = n
	return nil
}

// load reads the inline profile or the profile file, reporting problems at
// their place: inside the agent file for an inline profile, at the
// `profile` key (with the profile file's own positions) for a file.
func (r *Profile) load(af *File, key string) error {
	if r.File != "" {
		c, err := profile.LoadConfigFile(af.resolvePathOf(key)(r.File))
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return af.errorf(key, "%v", pe)
			}
			return af.errorf(key, "%v", err)
		}
		r.Inline = c
		return nil
	}
	if r.Inline != nil && r.node == nil {
		return nil
	}
	doc, full := af.locate(key)
	c, err := profile.DecodeConfigNode(doc.File, r.node, full)
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return af.errorf(key, "%v", err)
	}
	r.Inline = c
	return nil
}

// ResponseFormat asks for a structured answer.
type ResponseFormat struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Schema      map[string]any `yaml:"schema"`
	Strategy    string         `yaml:"strategy"`
}

// Backend chooses where the agent's files live and its commands run.
type Backend struct {
	Kind string `yaml:"kind"` // state | store | filesystem | localshell | sandbox | composite
	// Root is the directory of a filesystem or localshell backend, relative
	// to the agent file.
	Root string `yaml:"root"`
	// HostPaths switches a filesystem backend out of virtual mode.
	HostPaths bool `yaml:"host_paths"`
	// Timeout and MaxOutputBytes configure localshell and sandbox commands.
	Timeout        string `yaml:"timeout"`
	MaxOutputBytes int    `yaml:"max_output_bytes"`
	// Workspace is the directory a sandbox copies into each run's fresh
	// workspace, relative to the agent file (none: an empty workspace).
	Workspace string `yaml:"workspace"`
	// Network lets a sandbox's commands use the network (off by default).
	Network bool `yaml:"network"`
	// MaxProcesses caps a sandbox command's processes (256 when 0).
	MaxProcesses int `yaml:"max_processes"`
	// ReadOnly lists host paths a sandbox's commands may also read.
	ReadOnly []string `yaml:"read_only"`
	// Env is laid over a sandbox's command environment.
	Env map[string]string `yaml:"env"`
	// Database is the SQLite file of a store backend ("" keeps it in memory).
	Database  string   `yaml:"database"`
	Namespace []string `yaml:"namespace"`
	// Default and Routes make a composite backend.
	Default       *Backend           `yaml:"default"`
	Routes        map[string]Backend `yaml:"routes"`
	ArtifactsRoot string             `yaml:"artifacts_root"`
}

// Provider is a named model endpoint (see harness/provider); Kind is
// openai-compatible (the default), openai or anthropic.
type Provider struct {
	Kind      string            `yaml:"kind"`
	BaseURL   string            `yaml:"base_url"`
	APIKeyEnv string            `yaml:"api_key_env"`
	Headers   map[string]string `yaml:"headers"`
}

func decodeStrict(n ast.Node, v any) error {
	d := &yamlx.Doc{Root: n}
	return d.DecodeNode(n, v)
}

// Load reads and validates an agent file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent file: %w", err)
	}
	return Parse(path, data)
}

// Parse parses an agent file's bytes; path names it in errors and anchors its
// relative paths.
func Parse(path string, data []byte) (*File, error) {
	return (*Registry)(nil).ParseEmbedded(path, data, "")
}

// ParseEmbedded parses the agent at key of a YAML document ("" for the whole
// document), such as the inline `agent:` of a suite file; errors name the
// document's path, lines and keys, e.g. "suite.yaml:4:5: agent.tools[0].name".
func ParseEmbedded(path string, data []byte, key string) (*File, error) {
	return (*Registry)(nil).ParseEmbedded(path, data, key)
}

// decode decodes and validates the agent at key of a parsed document,
// resolving what it names in Go against reg.
func decode(doc *yamlx.Doc, key string, reg *Registry) (*File, error) {
	af, err := decodeRaw(doc, key, reg)
	if err != nil {
		return nil, err
	}
	if err := af.validate(); err != nil {
		return nil, err
	}
	return af, nil
}

// decodeRaw decodes the agent at key without validating it.
func decodeRaw(doc *yamlx.Doc, key string, reg *Registry) (*File, error) {
	af := &File{Path: doc.File, reg: reg}
	if err := doc.DecodeNode(doc.Node(key), af); err != nil {
		return nil, err
	}
	af.trimTexts()
	af.doc, af.key = doc, key
	return af, nil
}

// validate checks the decoded agent, reporting each problem where the key
// it is about was written (see errorf).
func (af *File) validate() error {
	if af.Model != "" {
		if _, err := llm.ParseSpec(af.Model); err != nil {
			return af.errorf("model", "%v", err)
		}
	}
	declared := map[string]bool{}
	for i := range af.Tools {
		if af.Tools[i].Go != "" && af.Tools[i].impl == nil {
			if err := af.Tools[i].resolveGo(af.reg); err != nil {
				return af.errorf(fmt.Sprintf("tools[%d].go", i), "%v", err)
			}
		}
		t := af.Tools[i]
		if t.Name == "" {
			return af.errorf(fmt.Sprintf("tools[%d].name", i), "a tool needs a name")
		}
		if declared[t.Name] {
			return af.errorf(fmt.Sprintf("tools[%d].name", i), "tool %q is declared twice", t.Name)
		}
		declared[t.Name] = true
		if t.Parameters != nil && t.impl == nil {
			raw, _ := json.Marshal(t.Parameters)
			if _, err := toolSchema(raw); err != nil {
				return af.errorf(fmt.Sprintf("tools[%d].parameters", i), "%v", err)
			}
		}
	}
	seen := map[string]bool{}
	for i := range af.SubAgents {
		p := fmt.Sprintf("subagents[%d]", i)
		if af.SubAgents[i].Compiled != "" {
			if err := af.checkCompiled(i); err != nil {
				return err
			}
		}
		s := af.SubAgents[i]
		if s.Name == "" {
			return af.errorf(p, "a subagent needs a name")
		}
		if seen[s.Name] {
			return af.errorf(p+".name", "subagent %q is declared twice", s.Name)
		}
		seen[s.Name] = true
		if s.Compiled != "" {
			continue
		}
		if s.Description == "" {
			return af.errorf(p, "subagent %q needs a description (the model chooses subagents by it)", s.Name)
		}
		if s.GraphID == "" && s.SystemPrompt == "" {
			return af.errorf(p, "subagent %q needs a system_prompt (or a graph_id for an async subagent)", s.Name)
		}
		if s.URLEnv != "" && s.GraphID == "" {
			return af.errorf(p+".url_env", "subagent %q has a url_env but no graph_id: only an async subagent has a url", s.Name)
		}
		if s.URLEnv != "" && s.URL != "" {
			return af.errorf(p+".url_env", "subagent %q gives both url and url_env: give one", s.Name)
		}
		if s.Model != "" {
			if _, err := llm.ParseSpec(s.Model); err != nil {
				return af.errorf(p+".model", "%v", err)
			}
		}
		if s.Tools != nil {
			for j, n := range *s.Tools {
				if !declared[n] {
					return af.errorf(fmt.Sprintf("%s.tools[%d]", p, j), "tool %q is not declared in the agent's tools", n)
				}
			}
		}
	}
	for i, m := range af.Middleware {
		if m.build != nil {
			continue // prepared before an override kept it
		}
		b, err := af.middlewareBuilder(fmt.Sprintf("middleware[%d]", i), m, af.reg)
		if err != nil {
			return err
		}
		af.Middleware[i].build = b
	}
	for i, sd := range af.SubAgents {
		for j, m := range sd.Middleware {
			if m.build != nil {
				continue
			}
			b, err := af.middlewareBuilder(fmt.Sprintf("subagents[%d].middleware[%d]", i, j), m, af.reg)
			if err != nil {
				return err
			}
			af.SubAgents[i].Middleware[j].build = b
		}
	}
	if af.Backend != nil {
		if err := af.Backend.validate(af.errorf, "backend", af.resolvePathOf("backend")); err != nil {
			return err
		}
	}
	if af.ResponseFormat != nil {
		if af.ResponseFormat.Schema == nil {
			return af.errorf("response_format", "response_format needs a schema")
		}
		switch af.ResponseFormat.Strategy {
		case "", "tool", "provider":
		default:
			return af.errorf("response_format.strategy", "strategy must be tool or provider, got %q", af.ResponseFormat.Strategy)
		}
	}
	for i, p := range af.Permissions {
		if err := checkPermission(p); err != nil {
			return af.errorf(fmt.Sprintf("permissions[%d]", i), "%v", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(af.Providers)) {
		if err := af.Providers[name].Entry().Validate(name); err != nil {
			return af.errorf("providers."+name, "%v", err)
		}
	}
	if err := checkModelInfo(af.errorf, "model_info", af.ModelInfo); err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(af.Files)) {
		if err := checkAbsolute(p); err != nil {
			return af.errorf("files."+p, "%v", err)
		}
	}
	if af.Skills != nil {
		for i, p := range *af.Skills {
			if err := checkAbsolute(p); err != nil {
				return af.errorf(fmt.Sprintf("skills[%d]", i), "%v", err)
			}
		}
	}
	if af.Memory != nil {
		for i, p := range *af.Memory {
			if err := checkAbsolute(p); err != nil {
				return af.errorf(fmt.Sprintf("memory[%d]", i), "%v", err)
			}
		}
	}
	for i, s := range af.SubAgents {
		for j, p := range s.Skills {
			if err := checkAbsolute(p); err != nil {
				return af.errorf(fmt.Sprintf("subagents[%d].skills[%d]", i, j), "%v", err)
			}
		}
	}
	if af.Profile != nil {
		if err := af.Profile.load(af, "profile"); err != nil {
			return err
		}
	}
	return nil
}

// checkModelInfo reports the first invalid declaration at its key.
func checkModelInfo(errf func(key, format string, args ...any) error, key string, decls []catalog.Declaration) error {
	for i, d := range decls {
		if err := d.Validate(); err != nil {
			k := fmt.Sprintf("%s[%d]", key, i)
			var de *catalog.DeclarationError
			if errors.As(err, &de) {
				if de.Key != "" {
					k += "." + de.Key
				}
				return errf(k, "%s", de.Msg)
			}
			return errf(k, "%v", err)
		}
	}
	return nil
}

// checkProviders reports model specs whose provider neither the built-in
// providers nor the file's `providers` know. It runs only when the file's
// models are resolved the default way (a caller's resolver may know more).
func (af *File) checkProviders(modelOverridden bool, reg *Registry) error {
	known := map[string]bool{}
	for _, n := range provider.BuiltinNames() {
		known[n] = true
	}
	for _, n := range reg.Providers() {
		known[n] = true
	}
	for n := range af.Providers {
		known[n] = true
	}
	check := func(key, spec string) error {
		if spec == "" {
			return nil
		}
		id, err := llm.ParseSpec(spec)
		if err != nil || known[id.Provider] {
			return nil // malformed specs were reported when the file was read
		}
		return af.errorf(key, "unknown provider %q in model %q (known: %s; declare others under providers:)", id.Provider, spec, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
	}
	if !modelOverridden {
		if err := check("model", af.Model); err != nil {
			return err
		}
	}
	for i, sd := range af.SubAgents {
		if err := check(fmt.Sprintf("subagents[%d].model", i), sd.Model); err != nil {
			return err
		}
	}
	return nil
}

// resolveGo finds the registered tool a declaration names and fills the
// declaration in from it.
func (t *Tool) resolveGo(reg *Registry) error {
	gt, ok := reg.Tool(t.Go)
	if !ok {
		return fmt.Errorf("no Go tool is registered as %q (%s)", t.Go, registered(reg.Tools()))
	}
	if t.Parameters != nil {
		return fmt.Errorf("tool %s: the parameters of a Go tool come from Go; leave parameters out", t.Go)
	}
	spec := gt.Spec()
	if t.Name == "" {
		t.Name = spec.Name
	}
	if t.Description == "" {
		t.Description = spec.Description
	}
	if len(spec.Parameters) > 0 {
		if err := json.Unmarshal(spec.Parameters, &t.Parameters); err != nil {
			return fmt.Errorf("tool %s: its schema: %w", t.Go, err)
		}
	}
	t.impl = gt
	if t.Name != spec.Name || t.Description != spec.Description {
		renamed := spec
		renamed.Name, renamed.Description = t.Name, t.Description
		t.impl = &tool.Func{ToolSpec: renamed, Fn: gt.Call}
	}
	return nil
}

// checkCompiled checks subagent i, built in Go: it is registered, and the
// file sets nothing that only a declarative subagent has.
func (af *File) checkCompiled(i int) error {
	s := &af.SubAgents[i]
	p := fmt.Sprintf("subagents[%d]", i)
	if _, ok := af.reg.subagent(s.Compiled); !ok {
		return af.errorf(p+".compiled", "no subagent is registered as %q (%s)", s.Compiled, registered(af.reg.SubAgents()))
	}
	for _, f := range []struct {
		key string
		set bool
	}{
		{"system_prompt", s.SystemPrompt != ""}, {"model", s.Model != ""}, {"tools", s.Tools != nil}, {"skills", s.Skills != nil},
		{"interrupt_on", s.InterruptOn != nil}, {"permissions", s.Permissions != nil}, {"middleware", s.Middleware != nil},
		{"response_format", s.ResponseFormat != nil}, {"graph_id", s.GraphID != ""}, {"url", s.URL != ""}, {"url_env", s.URLEnv != ""}, {"headers", s.Headers != nil},
	} {
		if f.set {
			return af.errorf(p+"."+f.key, "subagent %s is built in Go (compiled: %s); its %s comes from there", cmp.Or(s.Name, s.Compiled), s.Compiled, f.key)
		}
	}
	if s.Name == "" {
		s.Name = s.Compiled
	}
	return nil
}

// errorf reports a problem at a key of the agent file, with its position
// when the file was read from YAML: where the key was written, in the
// agent file or in the override that replaced it (Override).
func (af *File) errorf(key, format string, args ...any) error {
	doc, full := af.locate(key)
	if doc == nil {
		return fmt.Errorf("%s: %s: %s", af.Path, full, fmt.Sprintf(format, args...))
	}
	return doc.Errorf(full, format, args...)
}

// locate returns the document a key of the agent was written in and the
// key's full path there.
func (af *File) locate(key string) (*yamlx.Doc, string) {
	doc, prefix := af.doc, af.key
	if l, ok := af.overrides[topKey(key)]; ok {
		doc, prefix = l.doc, l.key
	}
	if prefix != "" {
		key = prefix + "." + key
	}
	return doc, key
}

// topKey is the top-level key of a key path ("tools" of "tools[0].name").
func topKey(key string) string {
	if i := strings.IndexAny(key, ".["); i >= 0 {
		return key[:i]
	}
	return key
}

// resolvePathOf resolves paths written under a top-level key: relative to
// the agent file, or to the file of the override that gave the key.
func (af *File) resolvePathOf(key string) func(string) string {
	if l, ok := af.overrides[topKey(key)]; ok {
		return func(p string) string {
			if p == "" || filepath.IsAbs(p) {
				return p
			}
			return filepath.Join(filepath.Dir(l.doc.File), p)
		}
	}
	return af.resolvePath
}

// trimTexts drops the line break a YAML block scalar ("|") leaves at the end
// of a prompt or description: joined with a profile's prompt it would
// otherwise turn the blank line between them into two.
func (af *File) trimTexts() {
	trim := func(s *string) { *s = strings.TrimRight(*s, "\r\n") }
	trim(&af.SystemPrompt.Text)
	for i := range af.Tools {
		trim(&af.Tools[i].Description)
	}
	for i := range af.SubAgents {
		trim(&af.SubAgents[i].Description)
		trim(&af.SubAgents[i].SystemPrompt)
	}
}

// checkAbsolute accepts a clean absolute path of the agent's virtual file
// tree, the only form the file tools can find.
func checkAbsolute(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is not an absolute path; paths in the agent's file tree start with /", p)
	}
	clean, err := backend.ValidatePath(p)
	if err != nil {
		return err
	}
	if want := strings.TrimSuffix(p, "/"); clean != want && p != "/" {
		return fmt.Errorf("%q is not a clean path (write %q)", p, clean)
	}
	return nil
}

// Entry is the provider entry the declaration describes; the kind defaults
// to an OpenAI-compatible server.
func (pd Provider) Entry() provider.Entry {
	kind := pd.Kind
	if kind == "" {
		kind = provider.KindOpenAICompatible
	}
	return provider.Entry{Kind: kind, BaseURL: pd.BaseURL, APIKeyEnv: pd.APIKeyEnv, Headers: pd.Headers}
}

func (b *Backend) validate(errf func(key, format string, args ...any) error, path string, resolve func(string) string) error {
	checkTimeout := func() error {
		if b.Timeout != "" {
			if d, err := time.ParseDuration(b.Timeout); err != nil || d <= 0 {
				return errf(path+".timeout", "not a positive duration: %q (e.g. 30s)", b.Timeout)
			}
		}
		return nil
	}
	switch b.Kind {
	case "", "state", "store":
	case "filesystem", "localshell":
		if err := checkTimeout(); err != nil {
			return err
		}
	case "sandbox":
		if err := checkTimeout(); err != nil {
			return err
		}
		if b.Workspace != "" {
			if st, err := os.Stat(resolve(b.Workspace)); err != nil || !st.IsDir() {
				return errf(path+".workspace", "%q is not a directory (relative paths are relative to the agent file)", b.Workspace)
			}
		}
		if b.MaxProcesses < 0 || b.MaxOutputBytes < 0 {
			return errf(path, "max_processes and max_output_bytes must not be negative")
		}
		for i, p := range b.ReadOnly {
			if !filepath.IsAbs(p) {
				return errf(fmt.Sprintf("%s.read_only[%d]", path, i), "%q is not an absolute host path", p)
			}
		}
	case "composite":
		if b.Default == nil {
			return errf(path, "a composite backend needs a default backend")
		}
		if err := b.Default.validate(errf, path+".default", resolve); err != nil {
			return err
		}
		for _, prefix := range slices.Sorted(maps.Keys(b.Routes)) {
			r := b.Routes[prefix]
			if !strings.HasPrefix(prefix, "/") {
				return errf(path+".routes."+prefix, "route prefixes start with /")
			}
			if r.Kind == "composite" {
				return errf(path+".routes."+prefix, "routes cannot be composite backends")
			}
			if r.Kind == "sandbox" {
				// Commands run on the default backend only, so a sandbox
				// mounted as a route would hold files no command can reach.
				return errf(path+".routes."+prefix, "a sandbox can only be the default backend of a composite")
			}
			if err := r.validate(errf, path+".routes."+prefix, resolve); err != nil {
				return err
			}
		}
	default:
		return errf(path+".kind", "unknown backend kind %q (want state, store, filesystem, localshell, sandbox or composite)", b.Kind)
	}
	return nil
}

func (af *File) dir() string {
	if af.Path == "" {
		return "."
	}
	return filepath.Dir(af.Path)
}

func (af *File) resolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(af.dir(), p)
}
