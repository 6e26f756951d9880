package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needPython skips when the machine has no python3: the import runs the
// user's own interpreter.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// standIn puts a stand-in deepagents package on PYTHONPATH.
func standIn(t *testing.T, dir string) {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", dir))
	require.NoError(t, err)
	t.Setenv("PYTHONPATH", abs)
}

// standInText asks the stand-in package for the text Deep Agents would send
// the default agent on that model, computed the way Deep Agents computes it
// (task template formatted with the general-purpose line, prompt = suffix).
func standInText(t *testing.T, model string) (tools map[string]string, mainPrompt, gpPrompt string) {
	t.Helper()
	script := `
import json, sys
from deepagents.backends import StateBackend
from deepagents.middleware import subagents as sub
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.profiles.harness.harness_profiles import _get_harness_profile
p = _get_harness_profile(sys.argv[1])
tools = {t.name: t.description for t in FilesystemMiddleware(backend=StateBackend()).tools}
del tools["execute"]  # a state backend cannot execute: Deep Agents hides the tool
gp = "- general-purpose: " + sub.DEFAULT_GENERAL_PURPOSE_DESCRIPTION
tools["task"] = sub.TASK_TOOL_DESCRIPTION.format(available_agents=gp)
suffix = p.system_prompt_suffix
json.dump({"tools": tools, "main": suffix, "gp": sub.DEFAULT_SUBAGENT_PROMPT + "\n\n" + suffix}, sys.stdout)
`
	out, err := exec.Command("python3", "-c", script, model).Output()
	require.NoError(t, err)
	var v struct {
		Tools    map[string]string
		Main, GP string
	}
	require.NoError(t, json.Unmarshal(out, &v))
	return v.Tools, v.Main, v.GP
}

// standInAssembly asks the stand-in package for what Deep Agents sends the
// main agent on model, built as create_deep_agent builds it: the file tools
// (no execute on a state backend), task with the general-purpose line, with
// remote the async tools of one async subagent "remote", with todo a
// TodoListMiddleware() of the caller's, then the profile's extra middleware;
// the prompt is the profile's base and suffix with each middleware's prompt
// appended after a blank line.
func standInAssembly(t *testing.T, model string, remote, todo bool) (names []string, tools map[string]string, prompt string) {
	t.Helper()
	script := `
import json, sys
from deepagents.backends import StateBackend
from deepagents.middleware import subagents as sub
from deepagents.middleware.async_subagents import AsyncSubAgentMiddleware
from deepagents.middleware.filesystem import FilesystemMiddleware
from deepagents.profiles.harness.harness_profiles import _get_harness_profile
from langchain.agents.middleware import TodoListMiddleware
model, remote, todo = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
p = _get_harness_profile(model)
tools = [[t.name, t.description] for t in FilesystemMiddleware(backend=StateBackend()).tools if t.name != "execute"]
tools.append(["task", sub.TASK_TOOL_DESCRIPTION.format(available_agents="- general-purpose: " + sub.DEFAULT_GENERAL_PURPOSE_DESCRIPTION)])
mws = []
if remote:
    mws.append(AsyncSubAgentMiddleware(async_subagents=[{"name": "remote", "description": "Works remotely.", "graph_id": "g", "url": "http://127.0.0.1:9"}]))
if todo:
    mws.append(TodoListMiddleware())
mws += list(p.materialize_extra_middleware())
prompt = "\n\n".join(x for x in (p.base_system_prompt, p.system_prompt_suffix) if x is not None)
for m in mws:
    tools += [[t.name, t.description] for t in m.tools]
    if m.system_prompt:
        prompt = prompt + "\n\n" + m.system_prompt if prompt else m.system_prompt
json.dump({"tools": tools, "prompt": prompt}, sys.stdout)
`
	flag := map[bool]string{false: "0", true: "1"}
	out, err := exec.Command("python3", "-c", script, model, flag[remote], flag[todo]).Output()
	require.NoError(t, err)
	var v struct {
		Tools  [][2]string
		Prompt string
	}
	require.NoError(t, json.Unmarshal(out, &v))
	tools = map[string]string{}
	for _, tl := range v.Tools {
		names = append(names, tl[0])
		tools[tl[0]] = tl[1]
	}
	return names, tools, v.Prompt
}

type assembledStack struct {
	Name  string `json:"name"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	SystemPrompt string `json:"system_prompt"`
}

func assembleJSON(t *testing.T, args ...string) map[string]assembledStack {
	t.Helper()
	code, out, stderr := runCLI(t, append([]string{"assemble", "--format", "json"}, args...)...)
	require.Equal(t, 0, code, stderr)
	var a struct {
		Stacks []assembledStack `json:"stacks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &a))
	m := map[string]assembledStack{}
	for _, s := range a.Stacks {
		m[s.Name] = s
	}
	return m
}

func toolText(s assembledStack) ([]string, map[string]string) {
	var names []string
	desc := map[string]string{}
	for _, tl := range s.Tools {
		names = append(names, tl.Name)
		desc[tl.Name] = tl.Description
	}
	return names, desc
}

// The imported profile makes the default assembly send the stand-in
// package's tool list, tool descriptions and prompts.
func TestProfileImportDeepAgentsMatchesThePackage(t *testing.T) {
	needPython(t)
	standIn(t, "fake_deepagents")
	const model = "anthropic:claude-sonnet-4-6"
	file := filepath.Join(t.TempDir(), "deepagents.yaml")
	code, out, stderr := runCLI(t, "profile", "import-deepagents", "-o", file)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, out, "-o writes the file only")
	assert.Empty(t, stderr, "everything the stand-in has is carried")

	wantTools, wantMain, wantGP := standInText(t, model)
	stacks := assembleJSON(t, "--profile", file, "--model", model)
	main := stacks["main"]
	names, desc := toolText(main)
	assert.Equal(t, []string{"ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep", "task"}, names)
	assert.Equal(t, wantTools, desc)
	assert.Equal(t, wantMain, main.SystemPrompt)
	gp := stacks["subagent:general-purpose"]
	assert.Equal(t, wantGP, gp.SystemPrompt)
	_, gpDesc := toolText(gp)
	assert.Equal(t, wantTools["ls"], gpDesc["ls"], "the general-purpose subagent's file tools carry the same text")

	// Without the profile the text is dageval's own: the test would see it.
	_, own := toolText(assembleJSON(t, "--model", model)["main"])
	assert.NotEqual(t, wantTools["ls"], own["ls"])

	// Stdout gives the same document, byte for byte, on every run.
	code, first, _ := runCLI(t, "profile", "import-deepagents")
	require.Equal(t, 0, code)
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(written), first)
	assert.Contains(t, first, "{available_agents}", "the task template keeps its placeholder for dageval")
	assert.Contains(t, first, "A format escape: {not a placeholder}.", "format escapes resolve as in Deep Agents")
}

// With the imported profile, an agent with an async subagent and a todo
// list, and the Codex agent whose profiles add a todo list, send the
// stand-in's tool list, every tool's description and the prompt with the
// todo fragment.
func TestProfileImportDeepAgentsAsyncAndTodo(t *testing.T) {
	needPython(t)
	standIn(t, "fake_deepagents")
	dir := t.TempDir()
	file := filepath.Join(dir, "deepagents.yaml")
	code, _, stderr := runCLI(t, "profile", "import-deepagents", "-o", file)
	require.Equal(t, 0, code, stderr)
	agentFile := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(agentFile, []byte(`model: anthropic:claude-sonnet-4-6
subagents:
  - name: remote
    description: Works remotely.
    graph_id: g
    url: http://127.0.0.1:9
middleware:
  - name: TodoListMiddleware
`), 0o644))

	wantNames, wantTools, wantPrompt := standInAssembly(t, "anthropic:claude-sonnet-4-6", true, true)
	require.Contains(t, wantNames, "start_async_task")
	require.Contains(t, wantNames, "write_todos")
	main := assembleJSON(t, "--agent", agentFile, "--profile", file)["main"]
	names, desc := toolText(main)
	assert.Equal(t, wantNames, names)
	assert.Equal(t, wantTools, desc)
	assert.Equal(t, wantPrompt, main.SystemPrompt)
	assert.Contains(t, desc["start_async_task"], "- remote: Works remotely.\n", "the template lists the async subagent")
	assert.Contains(t, desc["start_async_task"], "A format escape: {kept braces}.")

	// Without the profile every one of them is dageval's own.
	_, own := toolText(assembleJSON(t, "--agent", agentFile)["main"])
	for _, name := range []string{"write_todos", "start_async_task", "check_async_task", "update_async_task", "cancel_async_task", "list_async_tasks"} {
		assert.NotEqual(t, wantTools[name], own[name], name)
	}

	// Codex: the todo list comes from the model's profiles, in Deep Agents
	// and in dageval, and carries the text of Deep Agents' instance.
	const codex = "openai:gpt-5.1-codex"
	codexFile := filepath.Join(dir, "codex.yaml")
	code, _, stderr = runCLI(t, "profile", "import-deepagents", "--model", codex, "-o", codexFile)
	require.Equal(t, 0, code, stderr)
	wantNames, wantTools, wantPrompt = standInAssembly(t, codex, false, false)
	stacks := assembleJSON(t, "--profile", codexFile, "--model", codex)
	names, desc = toolText(stacks["main"])
	assert.Equal(t, wantNames, names)
	assert.Equal(t, wantTools, desc)
	assert.Equal(t, wantPrompt, stacks["main"].SystemPrompt)
	assert.True(t, strings.HasSuffix(wantPrompt, "\n\nSTAND-IN Codex todo prompt."), wantPrompt)
	_, gpDesc := toolText(stacks["subagent:general-purpose"])
	assert.Equal(t, wantTools["write_todos"], gpDesc["write_todos"])
	assert.True(t, strings.HasSuffix(stacks["subagent:general-purpose"].SystemPrompt, "\n\nSTAND-IN Codex todo prompt."))
}

// An installation that lacks a piece keeps dageval's text for it and says so.
func TestProfileImportDeepAgentsMissingPieces(t *testing.T) {
	needPython(t)
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join("testdata", "fake_deepagents"))))
	require.NoError(t, os.Remove(filepath.Join(root, "deepagents", "middleware", "async_subagents.py")))
	t.Setenv("PYTHONPATH", root)
	code, out, stderr := runCLI(t, "profile", "import-deepagents")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "has no deepagents.middleware.async_subagents.AsyncSubAgentMiddleware: the async subagent tools keep dageval's descriptions")
	assert.NotContains(t, out, "start_async_task")
	assert.Contains(t, out, "write_todos", "the rest is still carried")
}

// A model whose Deep Agents profile sets a base prompt, its own overrides,
// an excluded tool and a general-purpose description carries all of them.
func TestProfileImportDeepAgentsModelProfile(t *testing.T) {
	needPython(t)
	standIn(t, "fake_deepagents")
	const model = "openai:stand-in-custom"
	file := filepath.Join(t.TempDir(), "p.yaml")
	code, _, stderr := runCLI(t, "profile", "import-deepagents", "--model", model, "-o", file)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "Deep Agents' profile for openai:stand-in-custom overrides write_todos, which Deep Agents does not apply to that tool: the profile keeps the text Deep Agents sends")
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(written), "STAND-IN override Deep Agents ignores.")
	assert.Contains(t, string(written), "STAND-IN write_todos: keep a plan.")
	stacks := assembleJSON(t, "--profile", file, "--model", model)
	names, desc := toolText(stacks["main"])
	assert.NotContains(t, names, "delete")
	assert.Equal(t, "STAND-IN profile ls.", desc["ls"], "the profile's override wins over the tool's text")
	assert.Equal(t, "STAND-IN base.", stacks["main"].SystemPrompt)
	assert.Equal(t, "STAND-IN base.", stacks["subagent:general-purpose"].SystemPrompt, "the base replaces the general-purpose prompt, as in Deep Agents")
	assert.Contains(t, desc["task"], "- general-purpose: STAND-IN profile GP.")

	code, _, stderr = runCLI(t, "profile", "import-deepagents", "--model", "openai:gpt-5.1-codex")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "adds middleware (TodoListMiddleware), which a profile file cannot hold")
}

func TestProfileImportDeepAgentsErrors(t *testing.T) {
	needPython(t)
	file := filepath.Join(t.TempDir(), "p.yaml")

	code, _, stderr := runCLI(t, "profile", "import-deepagents", "--python", filepath.Join(t.TempDir(), "no-python"), "-o", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no Python interpreter")
	assert.Contains(t, stderr, "--python PATH")

	standIn(t, "fake_deepagents_old")
	code, _, stderr = runCLI(t, "profile", "import-deepagents", "-o", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "deepagents 0.6.2 is installed for python3; the import knows deepagents 0.7.x only")

	empty := t.TempDir()
	t.Setenv("PYTHONPATH", empty)
	if exec.Command("python3", "-c", "import deepagents").Run() == nil {
		t.Log("deepagents is installed on this machine: skipping the not-installed case")
	} else {
		code, _, stderr = runCLI(t, "profile", "import-deepagents", "-o", file)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "deepagents is not installed for python3")
		assert.Contains(t, stderr, "pip install 'deepagents>=0.7,<0.8'")
	}
	_, err := os.Stat(file)
	assert.True(t, os.IsNotExist(err), "a failed import writes nothing")
}
