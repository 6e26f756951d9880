package harness

import (
	"fmt"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
)

// DefaultSubagentPrompt is the general-purpose subagent's prompt unless a
// profile replaces it.
const DefaultSubagentPrompt = `You are a subagent working on one task for another agent. Use your tools to do the work thoroughly. Only your final message goes back to the agent that called you, and it cannot ask you follow-up questions: put the complete result in that final message — findings, answers, file paths you wrote, and anything you could not do.`

// DefaultGeneralPurposeDescription describes the general-purpose subagent in the task tool.
const DefaultGeneralPurposeDescription = `General-purpose agent for research, multi-step tasks and searches through files or code. It has the same tools as you. Use it when a task would take many steps or fill your context with intermediate results you do not need to keep.`

// declarative builds a declarative subagent's own stack and agent (§1.4).
func (b *builder) declarative(spec SubAgentSpec) (middleware.SubAgent, error) {
	model, modelSpec := spec.Model, spec.ModelSpec
	if model == nil && modelSpec != "" {
		m, err := b.resolveModel(modelSpec)
		if err != nil {
			return middleware.SubAgent{}, err
		}
		model = m
	}
	parentModel := model == nil
	if parentModel {
		// Like Deep Agents, the profile then comes from the parent model's
		// identity, not from the parent's spec string.
		model = b.model
	}
	prof, err := b.profileFor(model, modelSpec)
	if err != nil {
		return middleware.SubAgent{}, err
	}
	if parentModel || b.isMainModel(model, modelSpec) {
		// Config.Profile shapes the main model wherever it runs, as a
		// profile registered for that model would: Deep Agents looks a
		// subagent's profile up by the subagent's model, so spelling the
		// main model out changes nothing.
		prof = profile.MergeHarness(prof, b.cfg.Profile)
	}
	perms := spec.Permissions
	if perms == nil {
		perms = b.cfg.Permissions
	}
	fs, err := newFilesystem(b.backend, prof, perms)
	if err != nil {
		return middleware.SubAgent{}, err
	}
	summ, err := newSummarization(model, b.backend, b.catalog)
	if err != nil {
		return middleware.SubAgent{}, err
	}
	mws := []agent.Middleware{fs, summ, newPatchToolCalls()}
	if len(spec.Skills) > 0 {
		sk, err := newSkills(b.backend, spec.Skills)
		if err != nil {
			return middleware.SubAgent{}, err
		}
		mws = append(mws, sk)
	}
	core := names(mws)
	mws = append(mws, prof.MaterializeExtraMiddleware()...)
	mws = append(mws, b.promptCaching()...)

	matcher := prof.NewExclusionMatcher()
	if mws, err = matcher.Filter(mws); err != nil {
		return middleware.SubAgent{}, err
	}
	custom, err := buildDeferred(spec.Middleware, DeferredEnv{Model: model, Backend: b.backend, Catalog: b.catalog, Profile: prof, Resolve: b.resolveModel})
	if err != nil {
		return middleware.SubAgent{}, err
	}
	mws = applyCustom(mws, custom, core)
	if mws, err = matcher.Filter(mws); err != nil {
		return middleware.SubAgent{}, err
	}
	if err := matcher.Verify(); err != nil {
		return middleware.SubAgent{}, fmt.Errorf("its profile: %w", err)
	}
	if ex := prof.ExcludedTools(); len(ex) > 0 {
		mws = append(mws, middleware.NewToolExclusion(ex...))
	}
	interrupts := spec.InterruptOn
	if interrupts == nil {
		interrupts = b.cfg.InterruptOn
	}
	permInterrupts, err := interruptsFromPermissions(perms)
	if err != nil {
		return middleware.SubAgent{}, err
	}
	if merged := middleware.MergeInterruptOn(permInterrupts, interrupts); hasInterrupts(merged) {
		h, err := newHITL(merged)
		if err != nil {
			return middleware.SubAgent{}, err
		}
		mws = append(mws, h)
	}
	mws = reword(mws, prof)
	tools := spec.Tools
	if tools == nil {
		tools = b.cfg.Tools
	}
	tools = overrideDescriptions(tools, prof)
	prompt := prof.ApplyPrompt(spec.SystemPrompt)
	build := func(format *agent.ResponseFormat) (*agent.Agent, error) {
		return agent.New(agent.Config{
			Name:           spec.Name,
			Model:          model,
			System:         textBlocks(prompt),
			Tools:          tools,
			Middleware:     mws,
			ResponseFormat: format,
			RecursionLimit: b.limit,
		})
	}
	a, err := build(spec.ResponseFormat)
	if err != nil {
		return middleware.SubAgent{}, err
	}
	name := modelName(model, modelSpec)
	if parentModel {
		name = modelName(b.model, b.spec)
	}
	b.stacks = append(b.stacks, stack{name: spec.Name, kind: "declarative", model: name, agent: a})
	return middleware.SubAgent{
		Name: spec.Name, Description: spec.Description, Runner: a,
		WithResponseFormat: func(f *agent.ResponseFormat) (middleware.Runner, error) { return build(f) },
	}, nil
}

// isMainModel reports whether a subagent's own model is the main model: the
// same instance, or the same provider:model (from the specs when given,
// else from the models' identities).
func (b *builder) isMainModel(m llm.ChatModel, spec string) bool {
	if m == b.model {
		return true
	}
	key := func(m llm.ChatModel, spec string) (llm.Identity, bool) {
		if spec != "" {
			ps, err := llm.ParseSpec(spec)
			return llm.Identity{Provider: ps.Provider, Model: ps.Model}, err == nil
		}
		id, ok := llm.IdentityOf(m)
		return id, ok && id.Provider != "" && id.Model != ""
	}
	sub, ok := key(m, spec)
	if !ok {
		return false
	}
	main, ok := key(b.model, b.spec)
	return ok && sub == main
}

// generalPurpose builds the general-purpose subagent from the main model,
// profile, permissions and tools (§1.5).
func (b *builder) generalPurpose(matcher *profile.ExclusionMatcher) (middleware.SubAgent, error) {
	fs, err := newFilesystem(b.backend, b.prof, b.cfg.Permissions)
	if err != nil {
		return middleware.SubAgent{}, err
	}
	summ, err := newSummarization(b.model, b.backend, b.catalog)
	if err != nil {
		return middleware.SubAgent{}, err
	}
	mws := []agent.Middleware{fs, summ, newPatchToolCalls()}
	if b.cfg.Skills != nil {
		sk, err := newSkills(b.backend, b.cfg.Skills)
		if err != nil {
			return middleware.SubAgent{}, err
		}
		mws = append(mws, sk)
	}
	mws = append(mws, b.prof.MaterializeExtraMiddleware()...)
	mws = append(mws, b.promptCaching()...)
	original := names(mws)

	if mws, err = matcher.Filter(mws); err != nil {
		return middleware.SubAgent{}, err
	}
	// The caller's replacements of default middleware reach the
	// general-purpose subagent too; main-only additions do not.
	var inherit []agent.Middleware
	for _, m := range b.cfg.Middleware {
		for _, n := range original {
			if m.Name() == n {
				inherit = append(inherit, m)
				break
			}
		}
	}
	mws = applyCustom(mws, inherit, nil)
	if mws, err = matcher.Filter(mws); err != nil {
		return middleware.SubAgent{}, err
	}
	if ex := b.prof.ExcludedTools(); len(ex) > 0 {
		mws = append(mws, middleware.NewToolExclusion(ex...))
	}
	if hasInterrupts(b.interMap) {
		h, err := newHITL(b.interMap)
		if err != nil {
			return middleware.SubAgent{}, err
		}
		mws = append(mws, h)
	}
	mws = reword(mws, b.prof)
	a, err := agent.New(agent.Config{
		Name:           GeneralPurposeName,
		Model:          b.model,
		System:         textBlocks(b.prof.GeneralPurposePrompt(DefaultSubagentPrompt)),
		Tools:          b.tools,
		Middleware:     mws,
		RecursionLimit: b.limit,
	})
	if err != nil {
		return middleware.SubAgent{}, err
	}
	// Listed first, as in the task tool's description.
	b.stacks = append([]stack{{name: GeneralPurposeName, kind: "general-purpose", model: modelName(b.model, b.spec), agent: a}}, b.stacks...)
	return middleware.SubAgent{
		Name:        GeneralPurposeName,
		Description: b.prof.GeneralPurposeDescription(DefaultGeneralPurposeDescription),
		Runner:      a,
	}, nil
}

// mainStack builds the main agent's middleware (§1.3).
func (b *builder) mainStack(matcher *profile.ExclusionMatcher, inline []middleware.SubAgent, async []middleware.AsyncSubAgent) ([]agent.Middleware, error) {
	var mws []agent.Middleware
	if b.cfg.Skills != nil {
		sk, err := newSkills(b.backend, b.cfg.Skills)
		if err != nil {
			return nil, err
		}
		mws = append(mws, sk)
	}
	fs, err := newFilesystem(b.backend, b.prof, b.cfg.Permissions)
	if err != nil {
		return nil, err
	}
	mws = append(mws, fs)
	// The task tool needs the private state keys of the final stack, so the
	// SubAgentMiddleware is built once the stack is complete, in this slot.
	slot := &subAgentSlot{}
	if len(inline) > 0 {
		mws = append(mws, slot)
	}
	summ, err := newSummarization(b.model, b.backend, b.catalog)
	if err != nil {
		return nil, err
	}
	mws = append(mws, summ, newPatchToolCalls())
	if len(async) > 0 {
		am, err := middleware.NewAsyncSubAgentMiddleware(middleware.AsyncSubAgentOptions{SubAgents: async, Local: b.cfg.LocalGraphs})
		if err != nil {
			return nil, err
		}
		mws = append(mws, am)
	}
	core := names(mws)
	mws = append(mws, b.prof.MaterializeExtraMiddleware()...)
	mws = append(mws, b.promptCaching()...)
	if b.cfg.Memory != nil {
		mem, err := newMemory(b.backend, b.cfg.Memory)
		if err != nil {
			return nil, err
		}
		mws = append(mws, mem)
	}
	if hasInterrupts(b.interMap) {
		h, err := newHITL(b.interMap)
		if err != nil {
			return nil, err
		}
		mws = append(mws, h)
	}
	if mws, err = matcher.Filter(mws); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	mws = applyCustom(mws, b.cfg.Middleware, core)
	if mws, err = matcher.Filter(mws); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if ex := b.prof.ExcludedTools(); len(ex) > 0 {
		mws = append(mws, middleware.NewToolExclusion(ex...))
	}
	// Private state never crosses into subagents: the task tool learns which
	// keys are private from the final stack.
	if i := slices.Index(mws, agent.Middleware(slot)); i >= 0 {
		var private []string
		for _, m := range mws {
			for _, k := range m.StateKeys() {
				if k.Private {
					private = append(private, k.Name)
				}
			}
		}
		taskDesc, _ := b.prof.ToolDescription("task")
		sub, err := middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{SubAgents: inline, TaskDescription: taskDesc, PrivateKeys: private})
		if err != nil {
			return nil, err
		}
		mws[i] = sub
	}
	return reword(mws, b.prof), nil
}

// subAgentSlot holds SubAgentMiddleware's place in the main stack while the
// stack is assembled; a caller middleware of the same name replaces it.
type subAgentSlot struct{ agent.Base }

func (*subAgentSlot) Name() string { return middleware.SubAgentName }

// hasInterrupts mirrors Deep Agents: any entry, even an explicit false,
// brings the human-in-the-loop middleware into the stack.
func hasInterrupts(m middleware.InterruptOn) bool { return len(m) > 0 }

func textBlocks(s string) []llm.Block {
	if s == "" {
		return nil
	}
	return []llm.Block{llm.TextBlock(s)}
}
