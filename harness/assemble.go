package harness

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/tool"
)

// Agent is an assembled deep agent: an agent.Agent plus what it was built
// from, so its Assembly can be described.
type Agent struct {
	*agent.Agent
	model  llm.ChatModel
	spec   string
	prof   *profile.HarnessProfile
	stacks []stack
}

// stack is one assembled agent (main, or a subagent) kept for the Assembly.
type stack struct {
	name  string
	kind  string // main, declarative, general-purpose, compiled, async
	model string // the stack's model, for subagents built here
	agent *agent.Agent
	// async subagents have no stack of their own; desc describes them.
	desc string
}

// builder carries what every stack of one assembly shares.
type builder struct {
	cfg      Config
	reg      *profile.Registry
	backend  backend.Backend
	model    llm.ChatModel
	spec     string
	prof     *profile.HarnessProfile
	tools    []tool.Tool
	stacks   []stack
	limit    int
	resolve  func(string) (llm.ChatModel, error)
	interMap middleware.InterruptOn
	catalog  *catalog.Catalog
	// bedrock says the agent runs a model on Amazon Bedrock somewhere,
	// which adds Deep Agents' Bedrock prompt caching to every stack.
	bedrock bool
}

// New assembles a deep agent: resolve the model and its profile, build the
// subagents (declarative, compiled, async, then the general-purpose one), the
// main middleware stack, and the system prompt USER → BASE → SUFFIX.
func New(cfg Config) (*Agent, error) {
	b := &builder{cfg: cfg, reg: cfg.Profiles, limit: cfg.RecursionLimit}
	if b.reg == nil {
		b.reg = profile.Default()
	}
	if b.limit <= 0 {
		b.limit = DefaultRecursionLimit
	}
	b.resolve = cfg.ResolveModel
	b.catalog = cfg.Catalog
	if b.catalog == nil {
		b.catalog = catalog.Default()
	}
	if cfg.SystemPrompt != "" && len(cfg.SystemBlocks) > 0 {
		return nil, errors.New("harness: set SystemPrompt or SystemBlocks, not both")
	}

	// 1. Model and profile.
	b.model, b.spec = cfg.Model, cfg.ModelSpec
	if b.model == nil {
		if b.spec == "" {
			b.spec = DefaultModelSpec
		}
		m, err := b.resolveModel(b.spec)
		if err != nil {
			return nil, err
		}
		b.model = m
	}
	prof, err := b.profileFor(b.model, b.spec)
	if err != nil {
		return nil, err
	}
	b.prof = profile.MergeHarness(prof, cfg.Profile)
	mainMatcher := b.prof.NewExclusionMatcher()
	b.bedrock = usesBedrock(b.model, cfg.SubAgents)

	// 2. Tools and backend.
	b.tools = overrideDescriptions(cfg.Tools, b.prof)
	b.backend = cfg.Backend
	if b.backend == nil {
		b.backend = backend.NewState()
	}
	if b.cfg.Middleware, err = buildDeferred(cfg.Middleware, DeferredEnv{Model: b.model, Backend: b.backend, Catalog: b.catalog, Profile: b.prof, Resolve: b.resolveModel}); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	permInterrupts, err := interruptsFromPermissions(cfg.Permissions)
	if err != nil {
		return nil, fmt.Errorf("harness: permissions: %w", err)
	}
	b.interMap = middleware.MergeInterruptOn(permInterrupts, cfg.InterruptOn)

	// 3. Caller subagents in order.
	var inline []middleware.SubAgent
	var async []middleware.AsyncSubAgent
	names := map[string]bool{}
	// Deep Agents decides on its own general-purpose subagent from the
	// inline ones only: an async subagent of that name is a different tool's.
	inlineNames := map[string]bool{}
	for i, spec := range cfg.SubAgents {
		if spec.Name == "" {
			return nil, fmt.Errorf("harness: subagent %d has no name", i+1)
		}
		if names[spec.Name] {
			return nil, fmt.Errorf("harness: two subagents are named %q", spec.Name)
		}
		names[spec.Name] = true
		switch spec.kind() {
		case "async":
			async = append(async, middleware.AsyncSubAgent{Name: spec.Name, Description: spec.Description, GraphID: spec.GraphID, URL: spec.URL, Headers: spec.Headers})
			desc := "graph_id " + spec.GraphID
			if spec.URL != "" {
				desc += " at " + spec.URL
			}
			b.stacks = append(b.stacks, stack{name: spec.Name, kind: "async", desc: desc})
		case "compiled":
			inlineNames[spec.Name] = true
			inline = append(inline, middleware.SubAgent{Name: spec.Name, Description: spec.Description, Runner: spec.Runner})
			b.stacks = append(b.stacks, stack{name: spec.Name, kind: "compiled"})
		default:
			inlineNames[spec.Name] = true
			sa, err := b.declarative(spec)
			if err != nil {
				return nil, fmt.Errorf("harness: subagent %q: %w", spec.Name, err)
			}
			inline = append(inline, sa)
		}
	}

	// 4. The general-purpose subagent, listed first.
	if b.prof.GeneralPurposeEnabled() && !inlineNames[GeneralPurposeName] {
		gp, err := b.generalPurpose(mainMatcher)
		if err != nil {
			return nil, fmt.Errorf("harness: general-purpose subagent: %w", err)
		}
		inline = append([]middleware.SubAgent{gp}, inline...)
	}

	// 5. The main stack.
	mws, err := b.mainStack(mainMatcher, inline, async)
	if err != nil {
		return nil, err
	}
	if err := mainMatcher.Verify(); err != nil {
		return nil, fmt.Errorf("harness: profile for %s: %w", b.describeModel(), err)
	}

	// 6. System prompt and the agent.
	system := mainPrompt(cfg, b.prof)
	a, err := agent.New(agent.Config{
		Name:           cfg.Name,
		Model:          b.model,
		System:         system,
		Tools:          b.tools,
		Middleware:     mws,
		ResponseFormat: cfg.ResponseFormat,
		Checkpointer:   cfg.Checkpointer,
		RecursionLimit: b.limit,
	})
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	main := stack{name: "main", kind: "main", agent: a}
	return &Agent{Agent: a, model: b.model, spec: b.spec, prof: b.prof, stacks: append([]stack{main}, b.stacks...)}, nil
}

func (b *builder) resolveModel(spec string) (llm.ChatModel, error) {
	if _, err := llm.ParseSpec(spec); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if b.resolve == nil {
		// Built only when a spec needs resolving: most assemblies get a model.
		b.resolve = ModelResolver(b.reg, nil)
	}
	m, err := b.resolve(spec)
	if err != nil {
		return nil, fmt.Errorf("harness: model %s: %w", spec, err)
	}
	return m, nil
}

func (b *builder) profileFor(m llm.ChatModel, spec string) (*profile.HarnessProfile, error) {
	p, err := b.reg.HarnessForModel(m, spec)
	if err != nil {
		return nil, fmt.Errorf("harness: profiles: %w", err)
	}
	return p, nil
}

func (b *builder) describeModel() string {
	if b.spec == "" {
		if _, ok := llm.IdentityOf(b.model); !ok {
			return "the model"
		}
	}
	return modelName(b.model, b.spec)
}

// modelName names a model for the Assembly: its spec when it was given as
// one, else its identity, else its Go type.
func modelName(m llm.ChatModel, spec string) string {
	if spec != "" {
		return spec
	}
	if id, ok := llm.IdentityOf(m); ok {
		return id.String()
	}
	return fmt.Sprintf("%T", m)
}

// overrideDescriptions returns copies of tools whose description a profile
// overrides; the caller's tools are never changed.
func overrideDescriptions(tools []tool.Tool, p *profile.HarnessProfile) []tool.Tool {
	if tools == nil {
		return nil
	}
	out := make([]tool.Tool, len(tools))
	for i, t := range tools {
		if d, ok := p.ToolDescription(t.Spec().Name); ok {
			t = tool.WithDescription(t, d)
		}
		out[i] = t
	}
	return out
}

// applyCustom merges caller middleware into a stack by name (Deep Agents'
// _apply_custom_middleware): a name already in the stack is replaced in
// place (a later duplicate wins); new names are inserted right after the
// last entry whose name is in core, or appended when core is nil.
func applyCustom(base, custom []agent.Middleware, core []string) []agent.Middleware {
	out := slices.Clone(base)
	if len(custom) == 0 {
		return out
	}
	present := map[string]bool{}
	for _, m := range base {
		present[m.Name()] = true
	}
	replace := map[string]agent.Middleware{}
	var add []agent.Middleware
	for _, m := range custom {
		if present[m.Name()] {
			replace[m.Name()] = m
		} else {
			add = append(add, m)
		}
	}
	for i, m := range out {
		if r, ok := replace[m.Name()]; ok {
			out[i] = r
		}
	}
	if len(add) == 0 {
		return out
	}
	at := len(out)
	if core != nil {
		last := -1
		for i, m := range out {
			if slices.Contains(core, m.Name()) {
				last = i
			}
		}
		if last >= 0 {
			at = last + 1
		}
	}
	return slices.Insert(out, at, add...)
}

func names(mws []agent.Middleware) []string {
	out := make([]string, len(mws))
	for i, m := range mws {
		out[i] = m.Name()
	}
	return out
}

// mainPrompt assembles USER → BASE → SUFFIX for the main agent.
func mainPrompt(cfg Config, p *profile.HarnessProfile) []llm.Block {
	base := p.ApplyPrompt("")
	if len(cfg.SystemBlocks) > 0 {
		blocks := make([]llm.Block, len(cfg.SystemBlocks), len(cfg.SystemBlocks)+1)
		for i, bl := range cfg.SystemBlocks {
			if bl.CacheControl != nil {
				cc := *bl.CacheControl
				bl.CacheControl = &cc
			}
			blocks[i] = bl
		}
		if base == "" {
			return blocks
		}
		return append(blocks, llm.TextBlock("\n\n"+base))
	}
	text := cfg.SystemPrompt
	switch {
	case text == "":
		text = base
	case base != "":
		text += "\n\n" + base
	}
	if text == "" {
		// No blocks, so fragments that middleware append get no leading blank line.
		return nil
	}
	return []llm.Block{llm.TextBlock(text)}
}
