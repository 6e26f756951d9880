package agentfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/tool"
)

// Bad agent files are refused with the file, line, column and key of the
// problem. Each case is a whole file.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "name: x\nnmae: y\n", `agent.yaml:2:1: nmae: unknown key "nmae"`},
		{"wrong type", "name: x\ntools: 5\n", "agent.yaml:2:8: tools: got a number, want a list"},
		{"wrong type in a list", "skills: notalist\n", "agent.yaml:1:9: skills: got a string, want a list"},
		{"unknown middleware", "middleware:\n  - name: Bogus\n", `agent.yaml:2:5: middleware[0].name: unknown middleware "Bogus" (built in: AnthropicPromptCachingMiddleware, FilesystemMiddleware, HumanInTheLoopMiddleware, MemoryMiddleware, PatchToolCallsMiddleware, RubricMiddleware, SkillsMiddleware, SummarizationMiddleware, SummarizationToolMiddleware, TodoListMiddleware; none is registered)`},
		{"unknown subagent middleware", "subagents:\n  - name: a\n    description: d\n    system_prompt: p\n    middleware:\n      - name: Nope\n", `agent.yaml:6:9: subagents[0].middleware[0].name: unknown middleware "Nope"`},
		{"bad middleware options", "middleware:\n  - name: SummarizationMiddleware\n    options: {trigger: {foo: 1}}\n", `agent.yaml:3:25: middleware[0].options.trigger.foo: unknown key "foo"`},
		{"subagent without description", "subagents:\n  - name: a\n    system_prompt: p\n", `agent.yaml:2:5: subagents[0]: subagent "a" needs a description`},
		{"subagent without prompt", "subagents:\n  - name: a\n    description: d\n", `agent.yaml:2:5: subagents[0]: subagent "a" needs a system_prompt (or a graph_id for an async subagent)`},
		{"url_env without graph_id", "subagents:\n  - {name: a, description: d, system_prompt: p, url_env: U}\n", `agent.yaml:2:49: subagents[0].url_env: subagent "a" has a url_env but no graph_id: only an async subagent has a url`},
		{"url and url_env", "subagents:\n  - {name: a, description: d, graph_id: g, url: 'http://x', url_env: U}\n", `subagents[0].url_env: subagent "a" gives both url and url_env: give one`},
		{"url_env unset", "subagents:\n  - {name: a, description: d, graph_id: g, url_env: DAGEVAL_TEST_NEVER_SET}\n", `subagents[0].url_env: DAGEVAL_TEST_NEVER_SET is not set: it holds the url of async subagent "a"`},
		{"subagent declared twice", "subagents:\n  - {name: a, description: d, system_prompt: p}\n  - {name: a, description: d, system_prompt: p}\n", `subagents[1].name: subagent "a" is declared twice`},
		{"tool declared twice", "tools:\n  - name: t\n    description: d\n  - name: t\n    description: e\n", `agent.yaml:4:5: tools[1].name: tool "t" is declared twice`},
		{"tool schema", "tools:\n  - name: t\n    parameters: {type: 5}\n", "agent.yaml:3:5: tools[0].parameters: parse JSON Schema"},
		{"malformed model spec", "model: 'openai:'\n", `agent.yaml:1:1: model: model spec "openai:" has an empty model id`},
		{"unknown provider", "model: a:b:c\n", `agent.yaml:1:1: model: unknown provider "a" in model "a:b:c" (known: anthropic,`},
		{"unknown subagent provider", "subagents:\n  - {name: a, description: d, system_prompt: p, model: 'acme:m'}\n", `agent.yaml:2:49: subagents[0].model: unknown provider "acme"`},
		{"bad backend kind", "backend:\n  kind: s3\n", `agent.yaml:2:3: backend.kind: unknown backend kind "s3" (want state, store, filesystem, localshell, sandbox or composite)`},
		{"sandbox workspace", "backend:\n  kind: sandbox\n  workspace: nowhere\n", `agent.yaml:3:3: backend.workspace: "nowhere" is not a directory (relative paths are relative to the agent file)`},
		{"sandbox timeout", "backend: {kind: sandbox, timeout: -1s}\n", `agent.yaml:1:26: backend.timeout: not a positive duration: "-1s"`},
		{"sandbox read-only path", "backend:\n  kind: sandbox\n  read_only: [opt/go]\n", `agent.yaml:3:15: backend.read_only[0]: "opt/go" is not an absolute host path`},
		{"sandbox as a route", "backend:\n  kind: composite\n  default: {kind: state}\n  routes:\n    /work/: {kind: sandbox}\n", "agent.yaml:5:5: backend.routes./work/: a sandbox can only be the default backend of a composite"},
		{"composite without default", "backend:\n  kind: composite\n", "agent.yaml:1:1: backend: a composite backend needs a default backend"},
		{"route prefix", "backend:\n  kind: composite\n  default: {kind: state}\n  routes:\n    notes/: {kind: state}\n", "agent.yaml:5:5: backend.routes.notes/: route prefixes start with /"},
		{"bad timeout", "backend:\n  kind: localshell\n  timeout: soon\n", `agent.yaml:3:3: backend.timeout: not a positive duration: "soon"`},
		{"unknown subagent tool", "tools:\n  - name: t\n    description: d\nsubagents:\n  - name: a\n    description: d\n    system_prompt: p\n    tools: [t, nope]\n", `agent.yaml:8:16: subagents[0].tools[1]: tool "nope" is not declared in the agent's tools`},
		{"bad permission operation", "permissions:\n  - operations: [fly]\n    paths: [/x/**]\n    mode: deny\n", `agent.yaml:2:5: permissions[0]: invalid filesystem permission: permission 0: operation "fly" is not "read" or "write"`},
		{"bad permission mode", "permissions:\n  - operations: [write]\n    paths: [/x/**]\n    mode: maybe\n", `agent.yaml:2:5: permissions[0]: invalid filesystem permission: permission 0: mode "maybe" is not allow, deny or interrupt`},
		{"files key not absolute", "files:\n  notes.md: hi\n", `agent.yaml:2:3: files.notes.md: "notes.md" is not an absolute path`},
		{"files key escaping", "files:\n  /a/../b.md: hi\n", "agent.yaml:2:3: files./a/../b.md: "},
		{"files key not clean", "files:\n  /a//b.md: hi\n", `agent.yaml:2:3: files./a//b.md: "/a//b.md" is not a clean path (write "/a/b.md")`},
		{"skills path", "skills: [skills/]\n", `agent.yaml:1:10: skills[0]: "skills/" is not an absolute path`},
		{"memory path", "memory: [AGENTS.md]\n", `agent.yaml:1:10: memory[0]: "AGENTS.md" is not an absolute path`},
		{"provider kind", "providers:\n  local:\n    kind: grpc\n", `agent.yaml:2:3: providers.local: provider entry local: kind "grpc" is not one of`},
		{"provider without base url", "providers:\n  local: {}\n", "agent.yaml:2:3: providers.local: provider entry local: base_url is required"},
		{"interrupt decision", "interrupt_on:\n  t: {allowed_decisions: [maybe]}\n", `agent.yaml:2:6: interrupt_on.t: unknown decision "maybe"`},
		{"prompt block type", "system_prompt:\n  - type: image\n    text: x\n", `agent.yaml:2:9: system_prompt[0]: system prompt blocks must be text blocks, got type "image"`},
		{"response format strategy", "response_format:\n  schema: {type: object}\n  strategy: magic\n", `agent.yaml:3:3: response_format.strategy: strategy must be tool or provider, got "magic"`},
		{"inline profile scaffolding", "profile:\n  excluded_middleware: [FilesystemMiddleware]\n", `agent.yaml:2:25: profile.excluded_middleware[0]: required scaffolding cannot be excluded: "FilesystemMiddleware"`},
		{"inline profile unknown key", "profile:\n  bogus: 1\n", `agent.yaml:2:3: profile.bogus: unknown key "bogus"`},
		{"missing profile file", "profile: missing.yaml\n", "agent.yaml:1:1: profile: open missing.yaml: no such file or directory"},
		{"model info without facts", "model_info:\n  - spec: local:qwen3\n", "agent.yaml:2:5: model_info[0]: the declaration gives no facts: set context_window, max_output or prices"},
		{"model info negative window", "model_info:\n  - spec: local:qwen3\n    context_window: -5\n", "agent.yaml:3:5: model_info[0].context_window: must not be negative, got -5"},
		{"model info bad price", "model_info:\n  - spec: local:qwen3\n    prices: {input_per_mtok: -1}\n", "agent.yaml:3:14: model_info[0].prices.input_per_mtok: must be a non-negative number"},
		{"model info unknown key", "model_info:\n  - spec: local:qwen3\n    window: 5\n", `agent.yaml:3:5: model_info[0].window: unknown key "window"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			af, err := agentfile.Parse("agent.yaml", []byte(tt.yaml))
			if err == nil {
				_, err = af.Config(agentfile.Options{})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// A profile file's own problems are reported at the profile file's lines.
func TestProfileFileErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("excluded_tools: [x]\nexcluded_middleware: [SubAgentMiddleware]\n"), 0o644))
	_, err := agentfile.Parse(filepath.Join(dir, "agent.yaml"), []byte("name: a\nprofile: p.yaml\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "agent.yaml")+":2:1: profile: ")
	assert.Contains(t, err.Error(), filepath.Join(dir, "p.yaml")+":2:23: excluded_middleware[0]: required scaffolding cannot be excluded")
}

// The example agent becomes the Config it describes.
func TestExampleAgentFile(t *testing.T) {
	af, err := agentfile.Load("../../evals/examples/agents/researcher.yaml")
	require.NoError(t, err)
	cfg, err := af.Config(agentfile.Options{})
	require.NoError(t, err)
	assert.Equal(t, "researcher", cfg.Name)
	assert.Equal(t, "anthropic:claude-sonnet-4-6", cfg.ModelSpec)
	assert.Equal(t, "You are a research assistant. Answer the user's question with a short\nreport: findings first, each claim backed by a source you actually read.\nSave the report to /reports/<topic>.md and tell the user where it is.", cfg.SystemPrompt, "the block scalar's last line break is dropped")
	assert.Equal(t, []string{"web_search", "fetch_url", "publish_report"}, toolNames(cfg.Tools))
	require.Len(t, cfg.SubAgents, 1)
	fc := cfg.SubAgents[0]
	assert.Equal(t, "fact-checker", fc.Name)
	require.Len(t, fc.Tools, 2)
	assert.Equal(t, "web_search", fc.Tools[0].Spec().Name)
	assert.Equal(t, []string{"/skills/research/"}, fc.Skills)
	assert.Nil(t, fc.InterruptOn, "inherits the parent's")
	assert.Equal(t, []string{"/skills/research/"}, cfg.Skills)
	assert.Equal(t, []string{"/memory/AGENTS.md"}, cfg.Memory)
	assert.Contains(t, cfg.InterruptOn, "publish_report")
	require.Len(t, cfg.Permissions, 1)
	seeds := af.SeedFiles()
	assert.Contains(t, seeds["/memory/AGENTS.md"].Content, "Prefer primary sources")

	a, err := harness.New(cfg)
	require.NoError(t, err)
	as, err := a.Describe(t.Context(), harness.DescribeOptions{Files: seeds})
	require.NoError(t, err)
	main := stackOf(t, as, "main")
	assert.Equal(t, []string{
		middleware.SkillsName, middleware.FilesystemName, middleware.SubAgentName, middleware.SummarizationName,
		middleware.PatchToolCallsName, middleware.AnthropicPromptCachingName, middleware.MemoryName, middleware.HumanInTheLoopName,
	}, main.Middleware)
	assert.Contains(t, main.SystemPrompt, "**citations**")
	assert.Contains(t, main.SystemPrompt, "Prefer primary sources")
	fcs := stackOf(t, as, "subagent:fact-checker")
	assert.Equal(t, "anthropic:claude-sonnet-4-6", fcs.Model)
	var fcsTools []string
	for _, tl := range fcs.Tools {
		fcsTools = append(fcsTools, tl.Name)
	}
	assert.Equal(t, []string{"ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep", "web_search", "fetch_url"}, fcsTools)

	// A declared tool has no behaviour of its own unless a binder gives it one.
	res, err := cfg.Tools[0].Call(t.Context(), []byte(`{"query":"x"}`))
	assert.Empty(t, res.Content)
	assert.ErrorContains(t, err, "declared in the agent file but has no implementation")

	t.Run("overrides", func(t *testing.T) {
		extra := profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("Extra.")})
		cfg, err := af.Config(agentfile.Options{Model: "openai:gpt-5", Profiles: []*profile.HarnessProfile{extra}})
		require.NoError(t, err)
		assert.Equal(t, "openai:gpt-5", cfg.ModelSpec)
		assert.Equal(t, ptr("Extra."), cfg.Profile.Describe().SystemPromptSuffix)
	})
}

// A file's own providers resolve its models, with no API key and no call.
func TestProviders(t *testing.T) {
	af, err := agentfile.Parse("agent.yaml", []byte("model: local:model-a\nproviders:\n  local:\n    base_url: http://127.0.0.1:9/v1\n    api_key_env: LOCAL_KEY\n"))
	require.NoError(t, err)
	cfg, err := af.Config(agentfile.Options{Registry: emptyRegistry()})
	require.NoError(t, err)
	cfg.Profiles = emptyRegistry()
	a, err := harness.New(cfg)
	require.NoError(t, err)
	as, err := a.Describe(t.Context(), harness.DescribeOptions{})
	require.NoError(t, err)
	assert.Equal(t, "local:model-a", as.Model)
	id, ok := llm.IdentityOf(a.Config().Model)
	require.True(t, ok)
	assert.Equal(t, llm.Identity{Provider: "local", Model: "model-a"}, id)
}

// Middleware named in an agent file built in Go are checked when it becomes
// a Config, as they are when a file is read.
func TestConfigUnknownMiddleware(t *testing.T) {
	tests := []struct {
		name string
		file agentfile.File
		want string
	}{
		{"main", agentfile.File{Path: "agent.yaml", Middleware: []agentfile.Middleware{{Name: "Bogus"}}},
			`agent.yaml: middleware[0].name: unknown middleware "Bogus" (built in: AnthropicPromptCachingMiddleware, FilesystemMiddleware, HumanInTheLoopMiddleware, MemoryMiddleware, PatchToolCallsMiddleware, RubricMiddleware, SkillsMiddleware, SummarizationMiddleware, SummarizationToolMiddleware, TodoListMiddleware; none is registered)`},
		{"subagent", agentfile.File{Path: "agent.yaml", SubAgents: []agentfile.SubAgent{{Name: "a", Description: "d", SystemPrompt: "p", Middleware: []agentfile.Middleware{{Name: "Nope"}}}}},
			`agent.yaml: subagents[0].middleware[0].name: unknown middleware "Nope" (built in: AnthropicPromptCachingMiddleware,`},
		{"options", agentfile.File{Path: "agent.yaml", Middleware: []agentfile.Middleware{{Name: middleware.TodoListName, Options: map[string]any{"bogus": 1}}}},
			`agent.yaml: middleware[0].options.bogus: unknown key "bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.file.Config(agentfile.Options{ResolveModel: func(string) (llm.ChatModel, error) { return nil, nil }})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func toolNames(tools []tool.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Spec().Name
	}
	return out
}

func stackOf(t *testing.T, as *harness.Assembly, name string) harness.Stack {
	t.Helper()
	for _, s := range as.Stacks {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no stack %q", name)
	return harness.Stack{}
}

// emptyRegistry is a profile registry without built-ins or plugins.
func emptyRegistry() *profile.Registry {
	return profile.NewRegistry(profile.WithBuiltins(nil), profile.WithPlugins())
}

func ptr[T any](v T) *T { return &v }

// `backend: {kind: sandbox}` gives the agent a bubblewrap sandbox that
// copies the workspace directory at each start; assembling it needs no
// bwrap (nothing runs until the sandbox starts).
func TestSandboxBackend(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "project"), 0o755))
	af, err := agentfile.Parse(filepath.Join(dir, "agent.yaml"), []byte("model: anthropic:claude-sonnet-4-6\nbackend:\n  kind: sandbox\n  workspace: project\n  timeout: 30s\n  network: true\n  env: {GOFLAGS: -mod=vendor}\n"))
	require.NoError(t, err)
	cfg, err := af.Config(agentfile.Options{Registry: emptyRegistry()})
	require.NoError(t, err)
	sb, ok := cfg.Backend.(*backend.Bubblewrap)
	require.True(t, ok, "%T", cfg.Backend)
	assert.Empty(t, sb.Workspace(), "not started")
	cfg.Profiles = emptyRegistry()
	a, err := harness.New(cfg)
	require.NoError(t, err)
	as, err := a.Describe(t.Context(), harness.DescribeOptions{})
	require.NoError(t, err)
	var tools []string
	for _, tl := range as.Stacks[0].Tools {
		tools = append(tools, tl.Name)
	}
	assert.Contains(t, tools, "execute")
}

// An async subagent's url_env is read when the file becomes a config, so
// a server whose port is picked at start can be named.
func TestAsyncSubAgentURLEnv(t *testing.T) {
	af, err := agentfile.Parse("agent.yaml", []byte("subagents:\n  - {name: helper, description: d, graph_id: worker, url_env: WORKER_URL}\n"))
	require.NoError(t, err)
	cfg, err := af.Config(agentfile.Options{Getenv: func(k string) string {
		if k == "WORKER_URL" {
			return " http://127.0.0.1:4321 "
		}
		return ""
	}})
	require.NoError(t, err)
	require.Len(t, cfg.SubAgents, 1)
	assert.Equal(t, "worker", cfg.SubAgents[0].GraphID)
	assert.Equal(t, "http://127.0.0.1:4321", cfg.SubAgents[0].URL)
}
