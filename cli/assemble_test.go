package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	researcher      = "../evals/examples/agents/researcher.yaml"
	researcherTerse = "../evals/examples/agents/researcher-terse.yaml"
	terseProfile    = "../evals/examples/profiles/terse.yaml"
	noSummarization = "../evals/examples/profiles/no-summarization.yaml"
	coder           = "../evals/examples/agents/coder.yaml"
)

// noKeys removes every provider key from the environment: assembling must
// not need one (and TestMain fails the run on any non-loopback dial).
func noKeys(t *testing.T) {
	t.Helper()
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "GEMINI_API_KEY", "GROQ_API_KEY", "OPENROUTER_API_KEY"} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestAssemble(t *testing.T) {
	noKeys(t)
	dir := t.TempDir()
	first := writeFile(t, dir, "first.yaml", "system_prompt_suffix: First suffix.\nexcluded_tools: [delete]\n")
	second := writeFile(t, dir, "second.yaml", "system_prompt_suffix: Second suffix.\ntool_description_overrides: {ls: Lists a directory.}\n")
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  []string
		not     []string
		stderr  []string
		exactly string // the whole stdout must be this file's assembly
	}{
		{
			name:   "the default deep agent",
			args:   []string{"assemble"},
			stdout: []string{"model: anthropic:claude-sonnet-4-6\n", "<use_parallel_tool_calls>", "== main (main) ==\nmiddleware:\n  1. FilesystemMiddleware\n  2. SubAgentMiddleware\n  3. SummarizationMiddleware\n  4. PatchToolCallsMiddleware\n  5. AnthropicPromptCachingMiddleware\n", "== subagent:general-purpose (general-purpose) ==\nmodel: anthropic:claude-sonnet-4-6\n"},
		},
		{
			name:   "another model",
			args:   []string{"assemble", "--model", "openai:gpt-5"},
			stdout: []string{"model: openai:gpt-5\nprofile: (none)\n", "system prompt:\n  (empty)\n"},
			not:    []string{"<use_parallel_tool_calls>"},
		},
		{
			name:   "an agent file",
			args:   []string{"assemble", "--agent", researcher},
			stdout: []string{"== subagent:fact-checker (declarative) ==", "  - web_search\n", "  8. HumanInTheLoopMiddleware\n", "**citations**", "Prefer primary sources"},
		},
		{
			name:   "--model overrides the agent file's",
			args:   []string{"assemble", "--agent", researcher, "--model", "anthropic:claude-opus-4-7"},
			stdout: []string{"model: anthropic:claude-opus-4-7\n", "<subagent_usage>"},
		},
		{
			name:   "profiles merge in the order given",
			args:   []string{"assemble", "--profile", first, "--profile", second},
			stdout: []string{"  system_prompt_suffix:\n    Second suffix.\n", "  excluded_tools:\n    - delete\n", "tool ls:\n  description:\n    Lists a directory.\n", "system prompt:\n  Second suffix.\n"},
			not:    []string{"First suffix.", "\n  - delete\n"},
		},
		{
			name:   "an agent file's own profile, then --profile",
			args:   []string{"assemble", "--agent", researcherTerse, "--profile", noSummarization},
			stdout: []string{"  excluded_middleware:\n    - SummarizationMiddleware\n", "Keep every answer short"},
			not:    []string{"  4. SummarizationMiddleware"},
		},
		{name: "bad format", args: []string{"assemble", "--format", "yaml"}, code: 2, stderr: []string{`--format must be text or json, got "yaml"`}},
		{name: "stray argument", args: []string{"assemble", "extra"}, code: 2, stderr: []string{`unexpected argument "extra"`}},
		{name: "head flags need --diff", args: []string{"assemble", "--head-agent", researcher}, code: 2, stderr: []string{"need --diff"}},
		{name: "--agent with --diff", args: []string{"assemble", "--diff", "--agent", researcher}, code: 2, stderr: []string{"--base-agent/--head-agent"}},
		{name: "missing agent file", args: []string{"assemble", "--agent", filepath.Join(dir, "nope.yaml")}, code: 2, stderr: []string{"nope.yaml: no such file or directory"}},
		{name: "missing profile file", args: []string{"assemble", "--profile", filepath.Join(dir, "nope.yaml")}, code: 2, stderr: []string{"nope.yaml"}},
		{name: "unknown model provider", args: []string{"assemble", "--model", "acme:m"}, code: 2, stderr: []string{`unknown provider "acme"`}},
		{name: "malformed model", args: []string{"assemble", "--model", "openai:"}, code: 2, stderr: []string{`"openai:" has an empty model id`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			require.Equal(t, tt.code, code, "stderr:\n%s", errOut)
			for _, s := range tt.stdout {
				assert.Contains(t, out, s)
			}
			for _, s := range tt.not {
				assert.NotContains(t, out, s)
			}
			for _, s := range tt.stderr {
				assert.Contains(t, errOut, s)
			}
			if tt.code != 0 {
				assert.Empty(t, out)
			}
		})
	}

	t.Run("a local shell workspace leaves no machine path in the output", func(t *testing.T) {
		repo, err := filepath.Abs("..")
		require.NoError(t, err)
		code, out, errOut := runCLI(t, "assemble", "--agent", coder)
		require.Equal(t, 0, code, errOut)
		for _, s := range []string{
			"  - execute\n",
			"  - write_todos\n",
			"  7. HumanInTheLoopMiddleware\n",
			"Host path mappings (a host path starting with ./ is relative to the directory every command starts in):\n  - `/docs/` -> `./docs/` (e.g. `/docs/dir/x.py` -> `./docs/dir/x.py`)\n",
			"not accessible from the shell):\n  - `/scratch/`\n",
		} {
			assert.Contains(t, out, s)
		}
		assert.NotContains(t, out, repo)
		assert.NotContains(t, out, os.TempDir())
	})

	t.Run("deterministic", func(t *testing.T) {
		_, a, _ := runCLI(t, "assemble", "--agent", researcher, "--format", "json")
		_, b, _ := runCLI(t, "assemble", "--agent", researcher, "--format", "json")
		assert.Equal(t, a, b)
	})
}

// The JSON shape is {"model","profile","stacks":[{"name","middleware","tools":[{"name","description","parameters"}],"system_prompt"}]}.
func TestAssembleJSON(t *testing.T) {
	noKeys(t)
	code, out, errOut := runCLI(t, "assemble", "--agent", researcher, "--format", "json")
	require.Equal(t, 0, code, errOut)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.ElementsMatch(t, []string{"model", "profile", "stacks"}, keysOf(doc))
	var model string
	require.NoError(t, json.Unmarshal(doc["model"], &model))
	assert.Equal(t, "anthropic:claude-sonnet-4-6", model)
	var prof map[string]any
	require.NoError(t, json.Unmarshal(doc["profile"], &prof))
	assert.Contains(t, prof, "system_prompt_suffix")

	var stacks []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc["stacks"], &stacks))
	var names []string
	for _, s := range stacks {
		for _, k := range []string{"name", "kind", "middleware", "tools", "system_prompt"} {
			assert.Contains(t, s, k)
		}
		var name string
		require.NoError(t, json.Unmarshal(s["name"], &name))
		names = append(names, name)
		var mws []string
		require.NoError(t, json.Unmarshal(s["middleware"], &mws))
		assert.Contains(t, mws, "FilesystemMiddleware", name)
		var tools []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(s["tools"], &tools))
		require.NotEmpty(t, tools, name)
		for _, tl := range tools {
			assert.ElementsMatch(t, []string{"name", "description", "parameters"}, keysOf(tl))
			var schema map[string]any
			require.NoError(t, json.Unmarshal(tl["parameters"], &schema))
			assert.Equal(t, "object", schema["type"])
		}
		var prompt string
		require.NoError(t, json.Unmarshal(s["system_prompt"], &prompt))
		assert.NotEmpty(t, prompt, name)
	}
	assert.Equal(t, []string{"main", "subagent:general-purpose", "subagent:fact-checker"}, names)
	assert.NotContains(t, out, `\u003c`, "prompts read as written")
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestAssembleDiff(t *testing.T) {
	noKeys(t)
	dir := t.TempDir()
	scaffolding := writeFile(t, dir, "scaffolding.yaml", "excluded_middleware: [FilesystemMiddleware]\n")
	unmatched := writeFile(t, dir, "unmatched.yaml", "excluded_middleware: [TodoListMiddleware]\n")
	ambiguous := writeFile(t, dir, "typo.yaml", "excluded_middleware: [SummarisationMiddleware]\n")
	badAgent := writeFile(t, dir, "bad.yaml", "name: x\ntools:\n  - name: t\n  - name: t\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "identical defaults", args: []string{"--diff"}, stdout: []string{"assemblies are identical\n"}},
		{name: "identical agent files", args: []string{"--diff", "--base-agent", researcher, "--head-agent", researcher}, stdout: []string{"assemblies are identical\n"}},
		{
			name: "the terse variant", args: []string{"--diff", "--base-agent", researcher, "--head-agent", researcherTerse}, code: 1,
			stdout: []string{
				"--- base\n+++ head\n",
				"+    Keep every answer short: lead with the result, skip preamble, and leave\n",
				"--- base/main\n+++ head/main\n",
				"+  9. _ToolExclusionMiddleware\n",
				"-  - delete\n",
				"-  You are a research assistant. Answer the user's question with a short\n",
				"+  You are a research assistant. Answer in at most five bullet points, each\n",
				"--- base/subagent:fact-checker\n+++ head/subagent:fact-checker\n",
				"-model: anthropic:claude-sonnet-4-6\n+model: anthropic:claude-haiku-4-5\n",
			},
		},
		{
			name: "a head profile", args: []string{"--diff", "--head-profile", noSummarization}, code: 1,
			stdout: []string{"+  excluded_middleware:\n+    - SummarizationMiddleware\n", "-  3. SummarizationMiddleware\n"},
		},
		{
			name: "--model applies to both sides", args: []string{"--diff", "--model", "openai:gpt-5", "--head-profile", terseProfile}, code: 1,
			stdout: []string{" model: openai:gpt-5\n-profile: (none)\n+profile:\n"},
		},
		{name: "scaffolding exclusion", args: []string{"--diff", "--head-profile", scaffolding}, code: 2, stderr: []string{"dageval assemble: ", "scaffolding.yaml:1:23: excluded_middleware[0]: required scaffolding cannot be excluded"}},
		{name: "unmatched exclusion", args: []string{"--diff", "--base-profile", unmatched}, code: 2, stderr: []string{"dageval assemble: base: ", "matched no middleware", "TodoListMiddleware"}},
		{name: "a typo matches nothing", args: []string{"--diff", "--head-profile", ambiguous}, code: 2, stderr: []string{"dageval assemble: head: ", "matched no middleware", "SummarisationMiddleware"}},
		{name: "bad agent file", args: []string{"--diff", "--head-agent", badAgent}, code: 2, stderr: []string{"bad.yaml:4:5: tools[1].name: tool \"t\" is declared twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"assemble"}, tt.args...)...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, s := range tt.stdout {
				assert.Contains(t, out, s)
			}
			for _, s := range tt.stderr {
				assert.Contains(t, errOut, s)
			}
			if tt.code == 2 {
				assert.Empty(t, out)
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line of error:\n%s", errOut)
			}
		})
	}
}

// Every problem a user can make in an agent file reaches the terminal as
// one line naming the file, line, column and key, with exit status 2.
func TestAssembleBadAgentFiles(t *testing.T) {
	noKeys(t)
	dir := t.TempDir()
	tests := []struct{ name, yaml, want string }{
		{"unknown key", "name: x\ntols: []\n", `:2:1: tols: unknown key "tols"`},
		{"wrong type", "name: [x]\n", ":1:7: name: "},
		{"unknown middleware", "middleware:\n  - name: TodoList\n", `:2:5: middleware[0].name: unknown middleware "TodoList"`},
		{"subagent without description", "subagents:\n  - name: helper\n    system_prompt: Help.\n", `:2:5: subagents[0]: subagent "helper" needs a description`},
		{"tool declared twice", "tools:\n  - {name: search, description: s}\n  - {name: search, description: s}\n", `:3:6: tools[1].name: tool "search" is declared twice`},
		{"bad model spec", "model: 'anthropic:'\n", `:1:1: model: model spec "anthropic:" has an empty model id`},
		{"unknown provider", "model: acme:large\n", `:1:1: model: unknown provider "acme"`},
		{"bad backend kind", "backend: {kind: s3}\n", `:1:11: backend.kind: unknown backend kind "s3"`},
		{"unknown subagent tool", "tools:\n  - {name: search, description: s}\nsubagents:\n  - name: helper\n    description: Helps.\n    system_prompt: Help.\n    tools: [serach]\n", `:7:13: subagents[0].tools[0]: tool "serach" is not declared in the agent's tools`},
		{"bad permission", "permissions:\n  - {operations: [write], paths: [secrets/**], mode: deny}\n", `:2:6: permissions[0]: invalid filesystem permission: permission 0: path "secrets/**" must start with /`},
		{"files key not absolute", "files:\n  notes/todo.md: x\n", `:2:3: files.notes/todo.md: "notes/todo.md" is not an absolute path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".yaml", tt.yaml)
			code, out, errOut := runCLI(t, "assemble", "--agent", p)
			require.Equal(t, 2, code, "stdout:\n%s", out)
			assert.Empty(t, out)
			assert.Contains(t, errOut, "dageval assemble: "+p+tt.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		})
	}
}

// TestAssembleCase: a suite's case with agent: overrides assembles as the
// case runs it, and --diff shows what the case changed.
func TestAssembleCase(t *testing.T) {
	noKeys(t)
	dir := t.TempDir()
	suite := writeFile(t, dir, "suite.yaml", `version: 1
name: cases
agent:
  system_prompt: You help.
  memory: [/AGENTS.md]
models: [anthropic:claude-sonnet-4-6]
cases:
  - id: plain
    input: hi
  - id: named
    input: what is your name
    agent:
      system_prompt: Your name is Foo Bar.
      memory: [/project/AGENTS.md]
    files: {/project/AGENTS.md: "The project is TurboWidget."}
`)
	code, out, errOut := runCLI(t, "assemble", "--suite", suite, "--case", "named")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Your name is Foo Bar.")
	assert.Contains(t, out, "The project is TurboWidget.", "the case's memory file is read into the prompt")
	assert.NotContains(t, out, "You help.")

	code, out, errOut = runCLI(t, "assemble", "--suite", suite, "--case", "plain")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "You help.")

	code, out, _ = runCLI(t, "assemble", "--diff", "--suite", suite, "--case", "named")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "-  You help.")
	assert.Contains(t, out, "+  Your name is Foo Bar.")
	assert.Contains(t, out, "+  The project is TurboWidget.")

	code, out, _ = runCLI(t, "assemble", "--diff", "--suite", suite, "--base-case", "plain", "--head-case", "named")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "+  Your name is Foo Bar.")

	code, out, _ = runCLI(t, "assemble", "--diff", "--suite", suite, "--base-case", "plain", "--head-case", "plain")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "assemblies are identical")

	code, _, errOut = runCLI(t, "assemble", "--suite", suite, "--case", "namd")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `the suite has no case "namd"; did you mean named? (cases: plain, named)`)

	code, _, errOut = runCLI(t, "assemble", "--case", "named")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--case, --base-case and --head-case need --suite")
}
