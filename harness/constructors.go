package harness

import (
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
)

// The constructors below build the default middleware of every stack with
// the settings create_deep_agent uses.

func newFilesystem(b backend.Backend, p *profile.HarnessProfile, perms []middleware.Permission) (agent.Middleware, error) {
	return middleware.NewFilesystem(middleware.FilesystemOptions{
		Backend:          b,
		ToolDescriptions: p.ToolDescriptionOverrides(),
		Permissions:      perms,
	})
}

func newSummarization(m llm.ChatModel, b backend.Backend, cat *catalog.Catalog) (agent.Middleware, error) {
	return middleware.NewSummarization(middleware.SummarizationOptions{
		Backend:       b,
		Model:         m,
		ContextWindow: cat.ContextWindow,
	})
}

func newPatchToolCalls() agent.Middleware { return middleware.NewPatchToolCalls() }

func newSkills(b backend.Backend, sources []string) (agent.Middleware, error) {
	src := make([]middleware.SkillSource, len(sources))
	for i, s := range sources {
		src[i] = middleware.SkillSource{Path: s}
	}
	return middleware.NewSkills(middleware.SkillsOptions{Backend: b, Sources: src})
}

func newMemory(b backend.Backend, sources []string) (agent.Middleware, error) {
	return middleware.NewMemory(middleware.MemoryOptions{Backend: b, Sources: sources, AddCacheControl: true})
}

// promptCaching is the caching tail of every stack: Anthropic's, then
// Bedrock's when the agent runs a model on Bedrock.
func (b *builder) promptCaching() []agent.Middleware {
	m, err := middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{})
	if err != nil {
		panic(err) // the zero options are valid
	}
	out := []agent.Middleware{m}
	if b.bedrock {
		br, err := middleware.NewBedrockPromptCaching(middleware.PromptCachingOptions{})
		if err != nil {
			panic(err) // the zero options are valid
		}
		out = append(out, br)
	}
	return out
}

// usesBedrock reports whether the main model or a declarative subagent's
// runs on Amazon Bedrock. Deep Agents adds its Bedrock caching middleware
// to every stack when langchain-aws is installed, which an agent on
// Bedrock needs and others mostly lack; so here it is there exactly when
// some model of the agent is on Bedrock, and other agents assemble as
// before.
func usesBedrock(main llm.ChatModel, subagents []SubAgentSpec) bool {
	if middleware.IsBedrockModel(main) {
		return true
	}
	for _, s := range subagents {
		if s.Model != nil && middleware.IsBedrockModel(s.Model) {
			return true
		}
		if spec, err := llm.ParseSpec(s.ModelSpec); s.ModelSpec != "" && err == nil && middleware.IsBedrockProvider(spec.Provider) {
			return true
		}
	}
	return false
}

func newHITL(on middleware.InterruptOn) (agent.Middleware, error) {
	return middleware.NewHumanInTheLoop(middleware.HumanInTheLoopConfig{InterruptOn: on})
}

// interruptsFromPermissions turns interrupt-mode permission rules into
// human-in-the-loop entries.
func interruptsFromPermissions(perms []middleware.Permission) (middleware.InterruptOn, error) {
	ps, err := middleware.CompilePermissions(perms)
	if err != nil {
		return nil, err
	}
	return ps.InterruptOn(), nil
}

// reword gives the finished stack's re-wordable middleware (write_todos,
// compact_conversation, the async subagent tools, the todo prompt) the
// profile's text. It runs last, so it reaches that middleware wherever it
// came from — the profile's extra middleware, the caller's — which the
// profile's text cannot reach when the middleware is built. The file tools
// and task get it when they are built, as in Deep Agents.
func reword(mws []agent.Middleware, p *profile.HarnessProfile) []agent.Middleware {
	o := middleware.TextOverrides{ToolDescriptions: p.ToolDescriptionOverrides()}
	if s, ok := p.TodoSystemPrompt(); ok {
		o.TodoSystemPrompt = &s
	}
	if len(o.ToolDescriptions) == 0 && o.TodoSystemPrompt == nil {
		return mws
	}
	out := slices.Clone(mws)
	for i, m := range out {
		if r, ok := m.(middleware.Overridable); ok {
			out[i] = r.WithOverrides(o)
		}
	}
	return out
}
