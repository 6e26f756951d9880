package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aymanbagabas/go-udiff"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
)

// Assembly is the canonical description of an assembled deep agent: for
// each stack (main, then each subagent in order) its middleware, the tools,
// the system prompt (text and blocks) and every cache breakpoint exactly as
// the model is sent them on the first call; plus the model and the resolved
// profile. Same inputs, same bytes.
type Assembly struct {
	Model   string              `json:"model"`
	Profile profile.Description `json:"profile"`
	Stacks  []Stack             `json:"stacks"`
}

// Stack describes one agent of the assembly.
type Stack struct {
	// Name is "main" or "subagent:<name>". An async subagent may share its
	// name with an inline one (they are offered by different tools), so a
	// stack is identified by its name and kind together.
	Name string `json:"name"`
	// Kind is main, general-purpose, declarative, compiled or async.
	Kind string `json:"kind"`
	// Model is the model of a subagent built by the assembly (the main
	// stack's is the Assembly's Model).
	Model      string     `json:"model,omitempty"`
	Middleware []string   `json:"middleware"`
	Tools      []ToolSpec `json:"tools"`
	// SystemPrompt is the text of the system prompt; SystemBlocks is the
	// prompt as sent, one entry per content block with its cache-control
	// marker, which the text alone cannot show.
	SystemPrompt string      `json:"system_prompt"`
	SystemBlocks []llm.Block `json:"system_blocks"`
	// CacheBreakpoints lists every cache-control marker of the first
	// request, on tools, system blocks and messages, in request order: they
	// decide what a provider caches, so moving one changes cost and latency
	// without changing a word the model reads.
	CacheBreakpoints []CacheBreakpoint `json:"cache_breakpoints"`
	// Note explains what could not be described (compiled agents built
	// elsewhere, async subagents that run remotely).
	Note string `json:"note,omitempty"`
}

// CacheBreakpoint is one cache-control marker of a request.
type CacheBreakpoint struct {
	// Target is "tool", "system" (a system block) or "message".
	Target string `json:"target"`
	// Index is the 1-based position of the tool, system block or message.
	Index int `json:"index"`
	// Name is the tool's name, for tools.
	Name string `json:"name,omitempty"`
	// Role and Block (1-based) locate a message's marked content block.
	Role         string           `json:"role,omitempty"`
	Block        int              `json:"block,omitempty"`
	CacheControl llm.CacheControl `json:"cache_control"`
}

// String renders the breakpoint for the text form, e.g. "tool task
// (ephemeral)" or "message 1 (user) block 1 (ephemeral, ttl 1h)".
func (bp CacheBreakpoint) String() string {
	var at string
	switch bp.Target {
	case "tool":
		at = "tool " + bp.Name
	case "system":
		at = fmt.Sprintf("system block %d", bp.Index)
	default:
		at = fmt.Sprintf("%s %d (%s) block %d", bp.Target, bp.Index, bp.Role, bp.Block)
	}
	marker := bp.CacheControl.Type
	if bp.CacheControl.TTL != "" {
		marker += ", ttl " + bp.CacheControl.TTL
	}
	return at + " (" + marker + ")"
}

// breakpoints collects the cache-control markers of a request.
func breakpoints(r *llm.Request) []CacheBreakpoint {
	out := []CacheBreakpoint{}
	for i, t := range r.Tools {
		if t.CacheControl != nil {
			out = append(out, CacheBreakpoint{Target: "tool", Index: i + 1, Name: t.Name, CacheControl: *t.CacheControl})
		}
	}
	for i, b := range r.System {
		if b.CacheControl != nil {
			out = append(out, CacheBreakpoint{Target: "system", Index: i + 1, CacheControl: *b.CacheControl})
		}
	}
	for i, m := range r.Messages {
		for k, b := range m.Content {
			if b.CacheControl != nil {
				out = append(out, CacheBreakpoint{Target: "message", Index: i + 1, Role: string(m.Role), Block: k + 1, CacheControl: *b.CacheControl})
			}
		}
	}
	return out
}

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// SchemaOmitted marks a built-in tool described by name only (see
	// DescribeOptions.OmitBuiltinToolSchemas).
	SchemaOmitted bool `json:"schema_omitted,omitempty"`
}

// DescribeOptions tune how the first call is captured and what the
// description keeps. The zero value describes everything.
type DescribeOptions struct {
	// Files are seeded into the agent's state before the first call, for
	// middleware that read files before it (skills, memory).
	Files map[string]agent.FileData
	// Stacks keeps only the named stacks ("main", "subagent:researcher"),
	// in the assembly's order; nil keeps every stack. A name the assembly
	// does not have is an error, so a typo cannot leave a snapshot empty.
	Stacks []string
	// OmitBuiltinToolSchemas lists the tools of dageval's own middleware
	// (ls, read_file, write_todos, task, …) by name only, without their
	// descriptions and schemas. They are the same in every agent and repeat
	// in every stack, so leaving them out keeps a team's snapshot to what
	// the team wrote: its own tools, middleware order and prompts.
	OmitBuiltinToolSchemas bool
}

// builtinMiddleware are the middleware whose tools OmitBuiltinToolSchemas
// leaves out: dageval's own, by their stack names.
var builtinMiddleware = map[string]bool{
	middleware.FilesystemName: true, middleware.SubAgentName: true, middleware.AsyncSubAgentName: true,
	middleware.SummarizationName: true, middleware.SummarizationToolName: true, middleware.PatchToolCallsName: true,
	middleware.TodoListName: true, middleware.AnthropicPromptCachingName: true, middleware.BedrockPromptCachingName: true, middleware.SkillsName: true,
	middleware.MemoryName: true, middleware.HumanInTheLoopName: true, middleware.ToolExclusionName: true,
	middleware.RubricName: true,
}

// builtinTools names the tools the agent's built-in middleware contribute.
func builtinTools(a *agent.Agent) map[string]bool {
	out := map[string]bool{}
	for _, m := range a.Config().Middleware {
		if !builtinMiddleware[m.Name()] {
			continue
		}
		for _, t := range m.Tools() {
			out[t.Spec().Name] = true
		}
	}
	return out
}

// captureTime stamps anything the first call writes, so descriptions never
// depend on the clock.
var captureTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Describe captures the first model request of every stack and returns the
// Assembly. The real model is never called: a stand-in with the same identity
// records the request and answers at once.
func (a *Agent) Describe(ctx context.Context, opts DescribeOptions) (*Assembly, error) {
	out := &Assembly{Model: a.modelName(), Profile: a.prof.Describe()}
	keep := map[string]bool{}
	if opts.Stacks != nil {
		var names []string
		for _, st := range a.stacks {
			names = append(names, st.label())
		}
		for _, n := range opts.Stacks {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("harness: describe: no stack %q (stacks: %s)", n, strings.Join(names, ", "))
			}
			keep[n] = true
		}
	}
	for _, st := range a.stacks {
		s := Stack{Name: st.label(), Kind: st.kind, Model: st.model, Middleware: []string{}, Tools: []ToolSpec{},
			SystemBlocks: []llm.Block{}, CacheBreakpoints: []CacheBreakpoint{}}
		if opts.Stacks != nil && !keep[s.Name] {
			continue
		}
		switch {
		case st.agent != nil:
			req, err := firstRequest(ctx, st.agent, opts)
			if err != nil {
				return nil, fmt.Errorf("harness: describe %s: %w", s.Name, err)
			}
			s.Middleware = st.agent.Middleware()
			var omit map[string]bool
			if opts.OmitBuiltinToolSchemas {
				omit = builtinTools(st.agent)
			}
			for _, t := range req.Tools {
				if omit[t.Name] {
					s.Tools = append(s.Tools, ToolSpec{Name: t.Name, SchemaOmitted: true})
					continue
				}
				s.Tools = append(s.Tools, ToolSpec{Name: t.Name, Description: t.Description, Parameters: canonical(t.Parameters)})
			}
			s.SystemPrompt = req.SystemText()
			for _, b := range req.System {
				if b.CacheControl != nil {
					cc := *b.CacheControl
					b.CacheControl = &cc
				}
				s.SystemBlocks = append(s.SystemBlocks, b)
			}
			s.CacheBreakpoints = breakpoints(req)
		case st.kind == "async":
			s.Note = "runs remotely (" + st.desc + "); no local stack"
		default:
			s.Note = "compiled elsewhere; its stack is not visible to the assembly"
		}
		out.Stacks = append(out.Stacks, s)
	}
	return out, nil
}

func (a *Agent) modelName() string { return modelName(a.model, a.spec) }

// label is the stack's name in an Assembly: "main" or "subagent:<name>".
func (st stack) label() string {
	if st.kind == "main" {
		return "main"
	}
	return "subagent:" + st.name
}

// captureModel records the first request and ends the run.
type captureModel struct {
	mu   sync.Mutex
	reqs []llm.Request
}

// identifiedCapture is a captureModel standing in for a model that reports
// an identity (middleware such as prompt caching depend on it).
type identifiedCapture struct {
	*captureModel
	id llm.Identity
}

func (c identifiedCapture) Identity() llm.Identity { return c.id }

func (c *captureModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := *req
	r.Tools = append([]llm.ToolSpec(nil), req.Tools...)
	r.System = append([]llm.Block(nil), req.System...)
	r.Messages = append([]llm.Message(nil), req.Messages...)
	c.reqs = append(c.reqs, r)
	return &llm.Response{Message: llm.Assistant("ok"), StopReason: llm.StopEndTurn}, nil
}

func firstRequest(ctx context.Context, a *agent.Agent, opts DescribeOptions) (*llm.Request, error) {
	cfg := a.Config()
	capture := &captureModel{}
	if id, ok := llm.IdentityOf(cfg.Model); ok {
		cfg.Model = identifiedCapture{capture, id}
	} else {
		cfg.Model = capture
	}
	cfg.Checkpointer = nil
	probe, err := agent.New(cfg)
	if err != nil {
		return nil, err
	}
	in := agent.Input{Messages: []llm.Message{llm.User("hi")}, Files: opts.Files}
	if _, err := probe.Invoke(ctx, in, agent.WithClock(func() time.Time { return captureTime })); err != nil {
		return nil, err
	}
	if len(capture.reqs) == 0 {
		return nil, errors.New("the agent finished without calling its model")
	}
	return &capture.reqs[0], nil
}

// canonical re-encodes a schema with sorted keys and without HTML escapes,
// so "<path>" in a description reads as written, not as "\u003cpath\u003e".
// An eval run describes every cell's agent, whose tools are the same from
// cell to cell, so each schema is re-encoded once: decoding and encoding
// them again took most of a description's time. The result is shared, so
// it is capped to its length: an append copies it.
func canonical(raw json.RawMessage) json.RawMessage {
	canonicalMu.RLock()
	c, ok := canonicalCache[string(raw)]
	canonicalMu.RUnlock()
	if ok {
		return c
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	c = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	c = c[:len(c):len(c)]
	canonicalMu.Lock()
	if len(canonicalCache) < maxCanonicalSchemas {
		canonicalCache[string(raw)] = c
	}
	canonicalMu.Unlock()
	return c
}

// The schemas canonical has re-encoded, by their raw text, up to
// maxCanonicalSchemas of them.
var (
	canonicalMu    sync.RWMutex
	canonicalCache = map[string]json.RawMessage{}
)

const maxCanonicalSchemas = 1024

// JSON renders the assembly as indented JSON with sorted object keys inside
// tool schemas.
func (as *Assembly) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(as); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Text renders the assembly for people and for diffs: one section per
// stack, every prompt and description in full.
func (as *Assembly) Text() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "model: %s\n", as.Model)
	sb.WriteString(profileText(as.Profile))
	for _, s := range as.Stacks {
		sb.WriteString(s.Text())
	}
	return sb.String()
}

// profileText renders the resolved profile readably: prompts as indented
// blocks, lists and maps one entry per line, unset fields omitted.
func profileText(d profile.Description) string {
	var sb strings.Builder
	sb.WriteString("profile:")
	empty := true
	field := func(name string) {
		if empty {
			sb.WriteString("\n")
			empty = false
		}
		sb.WriteString("  " + name + ":")
	}
	text := func(name string, v *string) {
		if v == nil {
			return
		}
		field(name)
		if *v == "" {
			sb.WriteString(" \"\"\n")
			return
		}
		sb.WriteString("\n" + indentBlock(*v, "    "))
	}
	list := func(name string, v []string) {
		if len(v) == 0 {
			return
		}
		field(name)
		sb.WriteString("\n")
		for _, x := range v {
			sb.WriteString("    - " + x + "\n")
		}
	}
	text("base_system_prompt", d.BaseSystemPrompt)
	text("system_prompt_suffix", d.SystemPromptSuffix)
	if len(d.ToolDescriptionOverrides) > 0 {
		field("tool_description_overrides")
		sb.WriteString("\n")
		for _, k := range slices.Sorted(maps.Keys(d.ToolDescriptionOverrides)) {
			sb.WriteString("    " + k + ":\n" + indentBlock(d.ToolDescriptionOverrides[k], "      "))
		}
	}
	list("excluded_tools", d.ExcludedTools)
	list("excluded_middleware", d.ExcludedMiddleware)
	list("excluded_middleware_types", d.ExcludedMiddlewareTypes)
	list("extra_middleware", d.ExtraMiddleware)
	if gp := d.GeneralPurposeSubagent; gp != nil {
		field("general_purpose_subagent")
		sb.WriteString("\n")
		if gp.Enabled != nil {
			fmt.Fprintf(&sb, "    enabled: %v\n", *gp.Enabled)
		}
		if gp.Description != nil {
			sb.WriteString("    description:\n" + indentBlock(*gp.Description, "      "))
		}
		if gp.SystemPrompt != nil {
			sb.WriteString("    system_prompt:\n" + indentBlock(*gp.SystemPrompt, "      "))
		}
	}
	text("todo_system_prompt", d.TodoSystemPrompt)
	if empty {
		sb.WriteString(" (none)\n")
	}
	return sb.String()
}

// Text renders one stack.
func (s Stack) Text() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n== %s (%s) ==\n", s.Name, s.Kind)
	if s.Model != "" {
		fmt.Fprintf(&sb, "model: %s\n", s.Model)
	}
	if s.Note != "" {
		fmt.Fprintf(&sb, "note: %s\n", s.Note)
	}
	if len(s.Middleware) > 0 {
		sb.WriteString("middleware:\n")
		for i, m := range s.Middleware {
			fmt.Fprintf(&sb, "  %d. %s\n", i+1, m)
		}
	}
	if len(s.Tools) > 0 {
		sb.WriteString("tools:\n")
		for _, t := range s.Tools {
			if t.SchemaOmitted {
				fmt.Fprintf(&sb, "  - %s (built-in, schema omitted)\n", t.Name)
				continue
			}
			fmt.Fprintf(&sb, "  - %s\n", t.Name)
		}
		for _, t := range s.Tools {
			if t.SchemaOmitted {
				continue
			}
			fmt.Fprintf(&sb, "tool %s:\n", t.Name)
			fmt.Fprintf(&sb, "  description:\n%s", indentBlock(t.Description, "    "))
			params, _ := indentJSON(t.Parameters)
			fmt.Fprintf(&sb, "  parameters:\n%s", indentBlock(params, "    "))
		}
	}
	if s.Note == "" {
		switch {
		case len(s.SystemBlocks) > 1:
			// Block boundaries are part of the request (each block can carry
			// its own cache marker), so several blocks are shown as such.
			fmt.Fprintf(&sb, "system prompt (%d blocks):\n", len(s.SystemBlocks))
			for i, b := range s.SystemBlocks {
				fmt.Fprintf(&sb, "  [block %d]\n", i+1)
				sb.WriteString(indentBlock(b.Text, "  "))
			}
		case s.SystemPrompt == "":
			sb.WriteString("system prompt:\n  (empty)\n")
		default:
			sb.WriteString("system prompt:\n" + indentBlock(s.SystemPrompt, "  "))
		}
		if len(s.CacheBreakpoints) > 0 {
			sb.WriteString("cache breakpoints:\n")
			for _, bp := range s.CacheBreakpoints {
				sb.WriteString("  - " + bp.String() + "\n")
			}
		}
	}
	return sb.String()
}

func indentJSON(raw json.RawMessage) (string, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw), err
	}
	return buf.String(), nil
}

func indentBlock(s, prefix string) string {
	if s == "" {
		return prefix + "\n"
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var sb strings.Builder
	for _, l := range lines {
		if l == "" {
			sb.WriteString("\n")
			continue
		}
		sb.WriteString(prefix + l + "\n")
	}
	return sb.String()
}

// Diff returns a unified diff of two assemblies, section by section (model
// and profile, then each stack by name), and whether they differ.
func Diff(base, head *Assembly) (string, bool) {
	var sb strings.Builder
	header := func(a *Assembly) string {
		s := a.Text()
		if i := strings.Index(s, "\n== "); i >= 0 {
			return s[:i+1]
		}
		return s
	}
	sb.WriteString(udiff.Unified("base", "head", header(base), header(head)))
	// Stacks pair up by name and kind: an async subagent may share its name
	// with an inline one (Deep Agents keeps both), and such names are
	// labelled with the kind so the two sections can be told apart.
	type key struct{ name, kind string }
	kinds := map[string]map[string]bool{}
	byKey := func(a *Assembly) (map[key]Stack, []key) {
		m := map[key]Stack{}
		var order []key
		for _, s := range a.Stacks {
			k := key{s.Name, s.Kind}
			m[k] = s
			order = append(order, k)
			if kinds[s.Name] == nil {
				kinds[s.Name] = map[string]bool{}
			}
			kinds[s.Name][s.Kind] = true
		}
		return m, order
	}
	bm, border := byKey(base)
	hm, horder := byKey(head)
	seen := map[key]bool{}
	for _, k := range append(border, horder...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		var a, b string
		if s, ok := bm[k]; ok {
			a = s.Text()
		}
		if s, ok := hm[k]; ok {
			b = s.Text()
		}
		label := k.name
		if len(kinds[k.name]) > 1 {
			label += " (" + k.kind + ")"
		}
		sb.WriteString(udiff.Unified("base/"+label, "head/"+label, a, b))
	}
	out := sb.String()
	return out, out != ""
}
