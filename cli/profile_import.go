package cli

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/internal/fileutil"
)

// importScript reads an installed Deep Agents package; it runs as python -c.
//
//go:embed profile_import_deepagents.py
var importScript string

// supportedDeepAgents is the release line whose module layout importScript
// knows; checked against deepagents.__version__.
const (
	supportedDeepAgents       = "0.7.x"
	supportedDeepAgentsPrefix = "0.7."
)

func init() {
	registerProfile(&command{
		name:    "profile import-deepagents",
		summary: "write a profile carrying an installed Deep Agents' prompts and tool descriptions",
		usage:   "[--model SPEC] [--python PATH] [-o FILE]",
		help: `Runs your own Python (python3, or --python PATH) against the deepagents
package installed for it and writes a harness profile that makes dageval
send Deep Agents' text instead of its own: so scores measured with it are
comparable with Python Deep Agents' (dageval ships no upstream text; this
reads it from your installation). Supported: deepagents ` + supportedDeepAgents + `.

The profile holds, for the model --model names (default ` + harness.DefaultModelSpec + `):
  - tool_description_overrides: ls, read_file, write_file, edit_file, delete,
    glob, grep and execute as FilesystemMiddleware builds them for its default
    (state) backend; task from TASK_TOOL_DESCRIPTION and start_async_task as
    AsyncSubAgentMiddleware builds it, each with {available_agents} left for
    dageval to fill; check_async_task, update_async_task, cancel_async_task
    and list_async_tasks as AsyncSubAgentMiddleware builds them; write_todos
    from the TodoListMiddleware the model's profile adds, else LangChain's
    (langchain.agents.middleware.todo); then the model's harness profile's
    own overrides of the tools Deep Agents applies them to (the file tools
    and task)
  - todo_system_prompt: that TodoListMiddleware's prompt, which dageval's
    todo list sends wherever an agent has one
  - base_system_prompt and system_prompt_suffix of Deep Agents' harness
    profile for that model (the per-model suffixes), when it sets them
  - excluded_tools and excluded_middleware of that profile
  - general_purpose_subagent: the general-purpose subagent's description and
    prompt (DEFAULT_GENERAL_PURPOSE_DESCRIPTION, DEFAULT_SUBAGENT_PROMPT) or
    the profile's own, and its enabled flag

Not carried, with a warning: a profile's extra_middleware (code, not text),
and any text this deepagents lacks (an older 0.7 without the async subagent
module, a LangChain without the todo middleware), which then keeps dageval's
own. Assembling an agent with the file (dageval assemble --profile FILE
--model SPEC --format json) gives the tools, descriptions and system prompt
Deep Agents sends: the default agent, one with async subagents, and one
with a todo list.

The YAML goes to stdout, or with -o to FILE (written whole or not at all).
No model is built and nothing leaves the machine. Errors: the interpreter
missing, deepagents not installed for it (pip install 'deepagents>=0.7,<0.8'),
a version other than ` + supportedDeepAgents + `, or a module layout the import does
not know.`,
		run: runProfileImport,
	})
}

// importResult is what importScript prints.
type importResult struct {
	Error         string            `json:"error"`
	Message       string            `json:"message"`
	Version       string            `json:"version"`
	Python        string            `json:"python"`
	Tools         map[string]string `json:"tools"`
	Task          *string           `json:"task"`
	GPDescription *string           `json:"gp_description"`
	GPPrompt      *string           `json:"gp_prompt"`
	// Todo is write_todos and the todo prompt; AsyncTools the async
	// subagent tools, start_async_task as a template. Either is missing
	// when the installation lacks it, and Notes say so.
	Todo *struct {
		Description  *string `json:"description"`
		SystemPrompt *string `json:"system_prompt"`
		Source       string  `json:"source"`
	} `json:"todo"`
	AsyncTools map[string]string `json:"async_tools"`
	Notes      []string          `json:"notes"`
	Profile    *struct {
		BaseSystemPrompt         *string           `json:"base_system_prompt"`
		SystemPromptSuffix       *string           `json:"system_prompt_suffix"`
		ToolDescriptionOverrides map[string]string `json:"tool_description_overrides"`
		ExcludedTools            []string          `json:"excluded_tools"`
		ExcludedMiddleware       []string          `json:"excluded_middleware"`
		ExtraMiddleware          []string          `json:"extra_middleware"`
		GeneralPurposeSubagent   *struct {
			Enabled      *bool   `json:"enabled"`
			Description  *string `json:"description"`
			SystemPrompt *string `json:"system_prompt"`
		} `json:"general_purpose_subagent"`
	} `json:"profile"`
}

// importTimeout bounds the Python run: importing deepagents and LangChain
// takes seconds, never minutes.
const importTimeout = 2 * time.Minute

func runProfileImport(ctx context.Context, e *env, args []string) error {
	c := profileCommands["import-deepagents"]
	fs := newFlags(c, e)
	model := fs.String("model", harness.DefaultModelSpec, "the model spec whose Deep Agents harness profile to import")
	python := fs.String("python", "python3", "the Python interpreter that has deepagents installed")
	outFile := fs.String("o", "", "write the profile to this file instead of stdout")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	res, err := readDeepAgents(ctx, *python, *model)
	if err != nil {
		return err
	}
	cfg, warnings, err := importedConfig(res, *model)
	if err != nil {
		return err
	}
	body, err := cfg.YAML()
	if err != nil {
		return fmt.Errorf("%w", err)
	}
	var doc bytes.Buffer
	fmt.Fprintf(&doc, "# Deep Agents %s text for %s, read from your installation by\n# dageval profile import-deepagents. Use it with\n#   dageval assemble --profile FILE --model %s\n", res.Version, *model, *model)
	doc.Write(body)
	if !bytes.HasSuffix(body, []byte("\n")) {
		doc.WriteByte('\n')
	}
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "dageval profile import-deepagents: %s\n", w)
	}
	if *outFile == "" {
		_, err = e.stdout.Write(doc.Bytes())
		return err
	}
	if err := fileutil.WriteFileAtomic(*outFile, doc.Bytes()); err != nil {
		return fmt.Errorf("%w", err)
	}
	return nil
}

// readDeepAgents runs importScript with python and decodes what it printed.
func readDeepAgents(ctx context.Context, python, model string) (*importResult, error) {
	path, err := exec.LookPath(python)
	if err != nil {
		return nil, fmt.Errorf("no Python interpreter %q (%v); give the one that has deepagents installed with --python PATH", python, errors.Unwrap(err))
	}
	ctx, cancel := context.WithTimeout(ctx, importTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", importScript, model)
	// Deep Agents' lazy imports may log; only stdout carries the answer.
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8")
	runErr := cmd.Run()
	var res importResult
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil {
		msg := strings.TrimSpace(stderr.String())
		if runErr == nil {
			runErr = jerr
		}
		if msg == "" {
			msg = runErr.Error()
		}
		return nil, fmt.Errorf("%s did not run the import: %s", python, lastLines(msg, 5))
	}
	switch res.Error {
	case "":
	case "not_installed":
		return nil, fmt.Errorf("deepagents is not installed for %s (%s); install it into that interpreter's environment with pip install 'deepagents>=0.7,<0.8', or name another interpreter with --python", python, res.Message)
	default:
		return nil, fmt.Errorf("reading deepagents with %s failed (%s): %s", python, res.Error, res.Message)
	}
	if !strings.HasPrefix(res.Version, supportedDeepAgentsPrefix) {
		v := res.Version
		if v == "" {
			v = "unknown (no deepagents.__version__)"
		}
		return nil, fmt.Errorf("deepagents %s is installed for %s; the import knows deepagents %s only", v, python, supportedDeepAgents)
	}
	if res.Task == nil || len(res.Tools) == 0 || res.GPDescription == nil || res.GPPrompt == nil {
		return nil, fmt.Errorf("deepagents %s lacks part of the text the import reads (the file tools, TASK_TOOL_DESCRIPTION, DEFAULT_GENERAL_PURPOSE_DESCRIPTION, DEFAULT_SUBAGENT_PROMPT)", res.Version)
	}
	return &res, nil
}

// importedConfig turns what the script read into a profile config, and says
// what it could not carry.
func importedConfig(res *importResult, model string) (profile.Config, []string, error) {
	overrides := maps.Clone(res.Tools)
	overrides["task"] = *res.Task
	maps.Copy(overrides, res.AsyncTools)
	cfg := profile.Config{ToolDescriptionOverrides: overrides}
	if t := res.Todo; t != nil {
		if t.Description != nil {
			overrides[middleware.WriteTodosTool] = *t.Description
		}
		cfg.TodoSystemPrompt = t.SystemPrompt
	}
	gp := &profile.GeneralPurposeSubagent{Description: res.GPDescription, SystemPrompt: res.GPPrompt}
	warnings := slices.Clone(res.Notes)
	if p := res.Profile; p != nil {
		cfg.BaseSystemPrompt, cfg.SystemPromptSuffix = p.BaseSystemPrompt, p.SystemPromptSuffix
		for _, name := range slices.Sorted(maps.Keys(p.ToolDescriptionOverrides)) {
			if !upstreamOverridable(name) {
				warnings = append(warnings, fmt.Sprintf("Deep Agents' profile for %s overrides %s, which Deep Agents does not apply to that tool: the profile keeps the text Deep Agents sends", model, name))
				continue
			}
			overrides[name] = p.ToolDescriptionOverrides[name]
		}
		cfg.ExcludedTools, cfg.ExcludedMiddleware = p.ExcludedTools, p.ExcludedMiddleware
		if p.BaseSystemPrompt != nil {
			// Deep Agents' base replaces the general-purpose prompt too,
			// and dageval's profile does the same when the prompt is unset.
			gp.SystemPrompt = nil
		}
		if g := p.GeneralPurposeSubagent; g != nil {
			gp.Enabled = g.Enabled
			if g.Description != nil {
				gp.Description = g.Description
			}
			if g.SystemPrompt != nil {
				gp.SystemPrompt = g.SystemPrompt
			}
		}
		if len(p.ExtraMiddleware) > 0 {
			warnings = append(warnings, fmt.Sprintf("Deep Agents' profile for %s adds middleware (%s), which a profile file cannot hold; dageval's own profile for the model decides its extra middleware", model, strings.Join(p.ExtraMiddleware, ", ")))
		}
	}
	cfg.GeneralPurposeSubagent = gp
	if cfg.SystemPromptSuffix == nil {
		if own, err := profile.Default().Harness(model); err == nil && own.Describe().SystemPromptSuffix != nil {
			warnings = append(warnings, fmt.Sprintf("Deep Agents has no prompt suffix for %s but dageval's profile for it has one, and a profile file cannot remove it: the assembled prompt keeps dageval's suffix", model))
		}
	}
	if err := cfg.Validate(); err != nil {
		return profile.Config{}, nil, fmt.Errorf("Deep Agents' profile for %s: %w", model, err)
	}
	return cfg, warnings, nil
}

// upstreamOverridable reports whether Deep Agents applies a profile's
// description override to the tool: it does to the file tools, task and the
// caller's tools, not to the tools of the middleware it builds otherwise,
// which dageval's profiles reach too.
func upstreamOverridable(name string) bool {
	switch name {
	case middleware.WriteTodosTool, middleware.CompactConversationTool,
		"start_async_task", "check_async_task", "update_async_task", "cancel_async_task", "list_async_tasks":
		return false
	}
	return true
}

// lastLines keeps the end of a Python traceback, where the error is.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
