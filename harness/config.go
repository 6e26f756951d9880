package harness

import (
	"net/http"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/tool"
)

// DefaultModelSpec is the model a deep agent uses when none is given, as in Deep Agents.
const DefaultModelSpec = "anthropic:claude-sonnet-4-6"

// DefaultRecursionLimit is the step budget of an assembled agent, as in Deep Agents.
const DefaultRecursionLimit = 9999

// GeneralPurposeName is the name of the subagent every deep agent gets unless
// its profile disables it or the caller supplies its own.
const GeneralPurposeName = "general-purpose"

// Config mirrors the parameters of Deep Agents' create_deep_agent.
type Config struct {
	// Name labels the agent ("main" when empty).
	Name string
	// Model is a ready model. When nil, ModelSpec ("provider:model") is
	// resolved through ResolveModel; with neither, DefaultModelSpec is used.
	Model     llm.ChatModel
	ModelSpec string
	// ResolveModel turns a model spec into a model. Assembling never calls
	// the model, so a resolver may build models lazily and need no API key.
	ResolveModel func(spec string) (llm.ChatModel, error)

	// Tools are the caller's tools, added after the middleware tools and
	// inherited by subagents that do not list their own.
	Tools []tool.Tool
	// SystemPrompt is the USER part of the system prompt. SystemBlocks is
	// its content-block form (cache-control markers survive); set one.
	SystemPrompt string
	SystemBlocks []llm.Block

	// Middleware is the caller's middleware: a name already in the stack
	// replaces that entry in place; new names go right after the core stack.
	Middleware []agent.Middleware
	// SubAgents in order: declarative, compiled (Runner set) or async (GraphID set).
	SubAgents []SubAgentSpec
	// Skills lists skill source directories; nil means no SkillsMiddleware,
	// an empty non-nil list adds it with no sources.
	Skills []string
	// Memory lists AGENTS.md paths; nil means no MemoryMiddleware.
	Memory []string
	// ResponseFormat asks the main agent for a structured answer.
	ResponseFormat *agent.ResponseFormat
	// Checkpointer persists threads (needed for interrupts).
	Checkpointer agent.Checkpointer
	// Backend holds the agent's files; a State backend when nil.
	Backend backend.Backend
	// InterruptOn asks a human before the listed tools run.
	InterruptOn middleware.InterruptOn
	// Permissions restrict the filesystem tools.
	Permissions []middleware.Permission
	// LocalGraphs serves the graphs of async subagents without a URL, in
	// process (see middleware.AsyncSubAgentOptions.Local); without it such
	// a subagent's tools report that nothing runs its graph.
	LocalGraphs http.Handler

	// Profiles is the profile registry (profile.Default() when nil).
	Profiles *profile.Registry
	// Profile is merged over the profile the registry has for the model,
	// e.g. the profile files given to `dageval assemble --profile`. Like a
	// profile registered for that model, it shapes every stack that runs on
	// it: main, general-purpose and declarative subagents whose model is
	// the main model — given no model, or the same provider:model spelled
	// out (such a stack then must match its middleware exclusions too).
	Profile *profile.HarnessProfile
	// RecursionLimit overrides DefaultRecursionLimit.
	RecursionLimit int
	// Catalog holds the model facts the assembly uses: the context windows
	// summarization triggers on. catalog.Default() when nil; give one made
	// with (*catalog.Catalog).With for a model the catalog does not list,
	// such as a local model, or it is summarised at a fixed token count.
	Catalog *catalog.Catalog
}

// SubAgentSpec describes one subagent. Which kind it is follows Deep Agents'
// routing: GraphID set → async; Runner set → compiled; otherwise declarative.
type SubAgentSpec struct {
	Name        string
	Description string
	// SystemPrompt is the authored prompt of a declarative subagent.
	SystemPrompt string

	// Model or ModelSpec chooses a declarative subagent's model; with
	// neither it uses the parent's model (and derives its profile from it).
	Model     llm.ChatModel
	ModelSpec string
	// Tools are the subagent's tools. Nil inherits the caller's tools; an
	// empty non-nil list means no caller tools.
	Tools []tool.Tool
	// Middleware is added to the subagent's own stack.
	Middleware []agent.Middleware
	// InterruptOn replaces the inherited configuration when non-nil (an
	// empty map switches inherited interrupts off).
	InterruptOn middleware.InterruptOn
	// Skills are the subagent's own skill sources (never inherited).
	Skills []string
	// Permissions replace the parent's when non-nil.
	Permissions []middleware.Permission
	// ResponseFormat asks the subagent for a structured answer.
	ResponseFormat *agent.ResponseFormat

	// Runner makes this a compiled subagent, used as is.
	Runner middleware.Runner

	// GraphID (with URL and Headers) makes this an async subagent on a
	// LangGraph deployment.
	GraphID string
	URL     string
	Headers map[string]string
}

func (s SubAgentSpec) kind() string {
	switch {
	case s.GraphID != "":
		return "async"
	case s.Runner != nil:
		return "compiled"
	default:
		return "declarative"
	}
}
