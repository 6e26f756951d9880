package harness

import (
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

func newPromptCaching() agent.Middleware {
	m, err := middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{})
	if err != nil {
		panic(err) // the zero options are valid
	}
	return m
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
