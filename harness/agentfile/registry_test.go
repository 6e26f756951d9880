package agentfile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
)

// auditOptions are a custom middleware's options, as an agent file gives them.
type auditOptions struct {
	Prefix string   `yaml:"prefix"`
	Max    int      `yaml:"max"`
	Tags   []string `yaml:"tags"`
}

func (o auditOptions) Validate() error {
	if o.Max < 0 {
		return errors.New("max must not be negative")
	}
	return nil
}

// audit is a team's middleware: it adds a line to the system prompt.
type audit struct {
	agent.Base
	name string
	o    auditOptions
}

func (a *audit) Name() string { return a.name }

func (a *audit) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	req.System = append(req.System, llm.TextBlock(a.o.Prefix+": every answer is audited"))
	return next(ctx, req)
}

func newAudit(o auditOptions) (agent.Middleware, error) {
	return &audit{name: "AuditMiddleware", o: o}, nil
}

type lookupArgs struct {
	Order string `json:"order" jsonschema:"the order id, e.g. A-17"`
}

func lookupTool(t *testing.T) tool.Tool {
	t.Helper()
	lt, err := tool.New("lookup_order", "Looks an order up by id.", func(_ context.Context, a lookupArgs) (string, error) {
		return "order " + a.Order + ": shipped", nil
	})
	require.NoError(t, err)
	return lt
}

func teamRegistry(t *testing.T) *agentfile.Registry {
	t.Helper()
	return agentfile.NewRegistry().
		AddMiddleware("AuditMiddleware", agentfile.NewMiddleware(newAudit)).
		AddMiddleware("ModelNoteMiddleware", agentfile.NewDeferredMiddleware(func(o struct{}, env harness.DeferredEnv) (agent.Middleware, error) {
			id, _ := llm.IdentityOf(env.Model)
			return &audit{name: "ModelNoteMiddleware", o: auditOptions{Prefix: "model " + id.String()}}, nil
		})).
		AddMiddleware("Misnamed", agentfile.NewMiddleware(newAudit)).
		AddTool("lookup_order", lookupTool(t)).
		AddSubAgent("helper", func(env agentfile.SubAgentEnv) (harness.SubAgentSpec, error) {
			m, err := env.ResolveModel(env.ModelSpec)
			if err != nil {
				return harness.SubAgentSpec{}, err
			}
			a, err := agent.New(agent.Config{Name: "helper", Model: m})
			return harness.SubAgentSpec{Description: "Helps with anything.", Runner: a}, err
		}).
		AddProvider("corp", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "http://127.0.0.1:9/v1", KeyOptional: true})
}

func describe(t *testing.T, af *agentfile.File, opts agentfile.Options) *harness.Assembly {
	t.Helper()
	cfg, err := af.Config(opts)
	require.NoError(t, err)
	cfg.Profiles = emptyRegistry()
	a, err := harness.New(cfg)
	require.NoError(t, err)
	as, err := a.Describe(t.Context(), harness.DescribeOptions{})
	require.NoError(t, err)
	return as
}

// An agent file read with a registry names the team's middleware (options
// decoded into its Go type), Go tools, compiled subagents and providers,
// and the assembly has them where the Go API would put them.
func TestRegistryNamesGoCode(t *testing.T) {
	reg := teamRegistry(t)
	af, err := reg.Parse("agent.yaml", []byte(`
model: corp:model-a
system_prompt: You help with orders.
tools:
  - go: lookup_order
  - {go: lookup_order, name: find_order, description: Finds an order.}
middleware:
  - name: AuditMiddleware
    options: {prefix: AUDIT, max: 3, tags: [a, b]}
  - name: ModelNoteMiddleware
subagents:
  - compiled: helper
  - {compiled: helper, name: second, description: A second helper.}
`))
	require.NoError(t, err)
	as := describe(t, af, agentfile.Options{Registry: emptyRegistry()})
	main := as.Stacks[0]
	assert.Equal(t, "corp:model-a", as.Model)
	assert.Contains(t, main.Middleware, "AuditMiddleware")
	assert.Contains(t, main.Middleware, "ModelNoteMiddleware")
	assert.Contains(t, main.SystemPrompt, "AUDIT: every answer is audited")
	assert.Contains(t, main.SystemPrompt, "model corp:model-a: every answer is audited", "a deferred middleware sees the stack's model")
	var lookup, find *harness.ToolSpec
	for i, tl := range main.Tools {
		switch tl.Name {
		case "lookup_order":
			lookup = &main.Tools[i]
		case "find_order":
			find = &main.Tools[i]
		}
	}
	require.NotNil(t, lookup)
	require.NotNil(t, find)
	assert.Equal(t, "Looks an order up by id.", lookup.Description)
	assert.Contains(t, string(lookup.Parameters), `"order"`, "the schema comes from the Go type")
	assert.Equal(t, "Finds an order.", find.Description)
	assert.Equal(t, "lookup_order", af.Tools[0].Name, "the declaration is filled in from the Go tool")

	var kinds []string
	for _, s := range as.Stacks {
		kinds = append(kinds, s.Name+"/"+s.Kind)
	}
	assert.Contains(t, kinds, "subagent:helper/compiled")
	assert.Contains(t, kinds, "subagent:second/compiled")

	// The Go tool is the declaration's behaviour when nothing else binds it.
	cfg, err := af.Config(agentfile.Options{Registry: emptyRegistry()})
	require.NoError(t, err)
	var res tool.Result
	for _, tl := range cfg.Tools {
		if tl.Spec().Name == "find_order" {
			res, err = tl.Call(t.Context(), []byte(`{"order":"A-17"}`))
			require.NoError(t, err)
		}
	}
	assert.Equal(t, "order A-17: shipped", res.Text())
}

// Every name a file gives in Go terms is checked when the file is read, at
// its file, line, column and key; a name that is not registered lists what
// is.
func TestRegistryErrors(t *testing.T) {
	reg := teamRegistry(t)
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown option", "middleware:\n  - name: AuditMiddleware\n    options: {prefix: x, colour: red}\n", `agent.yaml:3:26: middleware[0].options.colour: unknown key "colour"`},
		{"wrong option type", "middleware:\n  - name: AuditMiddleware\n    options:\n      max: many\n", "agent.yaml:4:12: middleware[0].options.max: got string, want an integer"},
		{"option validation", "middleware:\n  - name: AuditMiddleware\n    options: {max: -1}\n", "agent.yaml:3:5: middleware[0].options: max must not be negative"},
		{"unregistered middleware", "middleware:\n  - name: Audit\n", `agent.yaml:2:5: middleware[0].name: unknown middleware "Audit" (built in: AnthropicPromptCachingMiddleware,`},
		{"lists registered middleware", "middleware:\n  - name: Audit\n", "registered: AuditMiddleware, Misnamed, ModelNoteMiddleware)"},
		{"fixed middleware", "middleware:\n  - name: SubAgentMiddleware\n", "agent.yaml:2:5: middleware[0].name: SubAgentMiddleware cannot be declared: the assembly builds it from subagents:"},
		{"misnamed middleware", "middleware:\n  - name: Misnamed\n", "agent.yaml:2:5: middleware[0].options: Misnamed: the middleware registered as Misnamed names itself AuditMiddleware; register it under its own name"},
		{"unregistered tool", "tools:\n  - go: lookup\n", `agent.yaml:2:5: tools[0].go: no Go tool is registered as "lookup" (registered: lookup_order)`},
		{"parameters of a Go tool", "tools:\n  - go: lookup_order\n    parameters: {type: object}\n", "agent.yaml:2:5: tools[0].go: tool lookup_order: the parameters of a Go tool come from Go"},
		{"Go tool declared twice", "tools:\n  - go: lookup_order\n  - name: lookup_order\n", `agent.yaml:3:5: tools[1].name: tool "lookup_order" is declared twice`},
		{"unregistered subagent", "subagents:\n  - compiled: writer\n", `agent.yaml:2:5: subagents[0].compiled: no subagent is registered as "writer" (registered: helper)`},
		{"compiled subagent with a prompt", "subagents:\n  - compiled: helper\n    system_prompt: Be nice.\n", "agent.yaml:3:5: subagents[0].system_prompt: subagent helper is built in Go (compiled: helper); its system_prompt comes from there"},
		{"unregistered provider", "model: acme:m\n", `agent.yaml:1:1: model: unknown provider "acme" in model "acme:m" (known: anthropic, azure, azure_openai, bedrock, corp,`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			af, err := reg.Parse("agent.yaml", []byte(tt.yaml))
			if err == nil {
				_, err = af.Config(agentfile.Options{Registry: emptyRegistry()})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// Without the registry none of it is known, and the message says so.
	_, err := agentfile.Parse("agent.yaml", []byte("tools:\n  - go: lookup_order\n"))
	assert.ErrorContains(t, err, `tools[0].go: no Go tool is registered as "lookup_order" (none is registered)`)
}

// A File built in Go names registered code through Options.Registrations,
// and its options are checked as a read file's are (without positions,
// which it has none of).
func TestRegistrationsOfAFileBuiltInGo(t *testing.T) {
	reg := teamRegistry(t)
	af := &agentfile.File{Path: "agent.yaml", Model: "corp:model-a",
		Tools:      []agentfile.Tool{{Go: "lookup_order"}},
		Middleware: []agentfile.Middleware{{Name: "AuditMiddleware", Options: map[string]any{"prefix": "GO"}}},
		SubAgents:  []agentfile.SubAgent{{Compiled: "helper"}}}
	as := describe(t, af, agentfile.Options{Registry: emptyRegistry(), Registrations: reg})
	assert.Contains(t, as.Stacks[0].SystemPrompt, "GO: every answer is audited")
	assert.Contains(t, toolSpecNames(as.Stacks[0].Tools), "lookup_order")

	bad := &agentfile.File{Path: "agent.yaml", Middleware: []agentfile.Middleware{{Name: "AuditMiddleware", Options: map[string]any{"max": "many"}}}}
	_, err := bad.Config(agentfile.Options{Registrations: reg})
	assert.ErrorContains(t, err, "agent.yaml: middleware[0].options.max: got string, want an integer")
}

// Every built-in middleware can be named, with its options, and takes its
// place in the stack: a name the stack has replaces that entry, a new one
// joins after the core middleware.
func TestEveryBuiltinMiddlewareCanBeNamed(t *testing.T) {
	af, err := agentfile.Parse("agent.yaml", []byte(`
model: anthropic:claude-sonnet-4-6
files:
  /AGENTS.md: Be brief.
  /skills/greet/SKILL.md: "---\nname: greet\ndescription: Greets people.\n---\nSay hello."
middleware:
  - name: TodoListMiddleware
    options: {tool_description: Plans the work.}
  - name: PatchToolCallsMiddleware
  - name: AnthropicPromptCachingMiddleware
    options: {ttl: 1h}
  - name: SummarizationMiddleware
    options: {trigger: [{tokens: 1000}, {messages: 40}], keep: {messages: 4}, truncate_args: {max_length: 500}}
  - name: SummarizationToolMiddleware
    options: {tool_description: Compacts the conversation., keep: {messages: 2}}
  - name: RubricMiddleware
    options: {model: anthropic:claude-haiku-4-5, max_iterations: 2, temperature: 0, seed: 7}
  - name: HumanInTheLoopMiddleware
    options: {interrupt_on: {write_file: true, edit_file: {allowed_decisions: [approve, reject]}}}
  - name: FilesystemMiddleware
    options: {tool_descriptions: {ls: Lists a directory.}, tool_token_limit: 5000, glob_timeout: 5s}
  - name: SkillsMiddleware
    options: {sources: [/skills/]}
  - name: MemoryMiddleware
    options: {sources: [/AGENTS.md]}
`))
	require.NoError(t, err)
	cfg, err := af.Config(agentfile.Options{Registry: emptyRegistry()})
	require.NoError(t, err)
	cfg.Profiles = emptyRegistry()
	a, err := harness.New(cfg)
	require.NoError(t, err)
	as, err := a.Describe(t.Context(), harness.DescribeOptions{Files: af.SeedFiles()})
	require.NoError(t, err)
	main := as.Stacks[0]
	for _, name := range []string{middleware.TodoListName, middleware.PatchToolCallsName, middleware.AnthropicPromptCachingName,
		middleware.SummarizationName, middleware.SummarizationToolName, middleware.RubricName, middleware.HumanInTheLoopName,
		middleware.FilesystemName, middleware.SkillsName, middleware.MemoryName} {
		assert.Equal(t, 1, strings.Count(strings.Join(main.Middleware, " ")+" ", name+" "), "%s once in %v", name, main.Middleware)
	}
	descs := map[string]string{}
	for _, tl := range main.Tools {
		descs[tl.Name] = tl.Description
	}
	assert.Equal(t, "Lists a directory.", descs["ls"])
	assert.Equal(t, "Plans the work.", descs["write_todos"])
	assert.Equal(t, "Compacts the conversation.", descs[middleware.CompactConversationTool])
	assert.Contains(t, main.SystemPrompt, "greet", "the skills middleware read its source")
	assert.Contains(t, main.SystemPrompt, "Be brief.", "the memory middleware read its source")
	assert.Contains(t, slices.Collect(func(yield func(string) bool) {
		for _, bp := range main.CacheBreakpoints {
			if !yield(bp.CacheControl.TTL) {
				return
			}
		}
	}), "1h", "the prompt-caching options reach the requests")

	for _, tt := range []struct{ yaml, want string }{
		{"middleware:\n  - name: AnthropicPromptCachingMiddleware\n    options: {ttl: 2d}\n", "agent.yaml:3:5: middleware[0].options: "},
		{"middleware:\n  - name: RubricMiddleware\n    options: {strategy: guess}\n", `agent.yaml:3:5: middleware[0].options: strategy must be tool or provider, got "guess"`},
		{"middleware:\n  - name: SummarizationMiddleware\n    options: {keep: {tokens: 1, messages: 2}}\n", "agent.yaml:3:5: middleware[0].options: SummarizationMiddleware: keep: a keep policy sets exactly one"},
		{"middleware:\n  - name: FilesystemMiddleware\n    options: {glob_timeout: soon}\n", `agent.yaml:3:5: middleware[0].options: glob_timeout: not a positive duration: "soon"`},
		{"middleware:\n  - name: SkillsMiddleware\n    options: {sources: [skills/]}\n", `agent.yaml:3:5: middleware[0].options: sources[0]: "skills/" is not an absolute path`},
		{"middleware:\n  - name: HumanInTheLoopMiddleware\n    options: {interrupt_on: {x: {allowed_decisions: [maybe]}}}\n", `unknown decision "maybe"`},
	} {
		_, err := agentfile.Parse("agent.yaml", []byte(tt.yaml))
		assert.ErrorContains(t, err, tt.want)
	}
}

// The runner's middleware replaces one of the same name the file declares,
// as the eval runner's grader replaces a file's RubricMiddleware.
func TestCallerMiddlewareReplacesTheFiles(t *testing.T) {
	af, err := agentfile.Parse("agent.yaml", []byte("middleware:\n  - name: RubricMiddleware\n"))
	require.NoError(t, err)
	grader, err := middleware.NewRubricMiddleware(middleware.RubricOptions{Model: fakes.NewScripted()})
	require.NoError(t, err)
	cfg, err := af.Config(agentfile.Options{Middleware: []agent.Middleware{grader}})
	require.NoError(t, err)
	require.Len(t, cfg.Middleware, 1)
	assert.Same(t, agent.Middleware(grader), cfg.Middleware[0])
}

func toolSpecNames(ts []harness.ToolSpec) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}
