package profile

import (
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
)

// claudeGuidance is the suffix of the Claude 4.x profiles: three tagged
// sections on parallel tool calls, looking before answering, and reflecting
// on tool results.
const claudeGuidance = `<use_parallel_tool_calls>
When you need several tool calls that do not depend on each other, make them together in one turn rather than one after another — for example reading a few files, running independent searches, or listing several directories. Call tools in sequence only when one call needs the result of another, and never fill in a value you are still waiting for with a guess.
</use_parallel_tool_calls>

<investigate_before_answering>
Do not describe code, files or data you have not looked at. When the user points at a file, open it before saying anything about it. Base your answers on what your tools actually returned; if you are not sure, check rather than speculate, and say what you could not verify.
</investigate_before_answering>

<tool_result_reflection>
After each tool result, pause to judge what it tells you and how good it is before choosing the next step. When a result surprises you, adjust the plan instead of pressing on with the old one.
</tool_result_reflection>`

// claudeOpusGuidance adds sections on grounding in tools and on when to
// delegate to subagents.
const claudeOpusGuidance = claudeGuidance + `

<tool_usage>
Learn the current state of files, the environment and the task by using your tools, not by reasoning from memory or assumptions. A quick check beats a confident guess.
</tool_usage>

<subagent_usage>
Delegate to a subagent only when a piece of work is substantial and can be done on its own; do small or tightly coupled steps yourself. When several independent pieces are worth delegating, start their subagents in parallel in a single turn.
</subagent_usage>`

// codexGuidance is the suffix of the Codex profiles: autonomous work,
// parallel tool use and an honest plan.
const codexGuidance = "## Working autonomously\n\n" +
	"Work like a senior engineer who owns the task from start to finish. Default to action: inspect, change and verify without asking for confirmation on routine choices, " +
	"and without announcing what you are about to do before doing it. Stop to ask only when a decision is genuinely ambiguous or risky. " +
	"Finish with a short account of what you changed and how you checked it.\n\n" +
	"## Parallel tool use\n\n" +
	"Batch independent reads, searches and commands into a single turn. Run steps one at a time only when a later step depends on an earlier result.\n\n" +
	"## Plan hygiene\n\n" +
	"When you keep a plan with `write_todos`, keep it true to the work: mark an item in_progress when you start it and completed as soon as it is done, " +
	"drop items that no longer apply, add the ones you discover, and make sure the list matches what was actually done before you finish."

// Keys of the built-in harness profiles.
var (
	claudeKeys     = []string{"anthropic:claude-sonnet-4-6", "anthropic:claude-haiku-4-5"}
	claudeOpusKeys = []string{"anthropic:claude-opus-4-7"}
	codexKeys      = []string{"openai:gpt-5.1-codex", "openai:gpt-5.2-codex", "openai:gpt-5.3-codex"}
)

// newTodoListExtra gives each stack of a Codex agent its own todo list.
func newTodoListExtra() []agent.Middleware {
	return []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{})}
}

// LoadBuiltins registers the built-in profiles into r: the OpenAI provider
// profile (Responses API on), the Claude Opus 4.7, Sonnet 4.6 and Haiku 4.5
// harness profiles (general guidance suffix; Opus adds tool and subagent
// sections) and the GPT-5.x Codex harness profiles (autonomous-work suffix
// and a fresh TodoListMiddleware per stack). A new registry runs it on first
// use unless WithBuiltins says otherwise.
func LoadBuiltins(r *Registry) error {
	openAI := NewProviderProfile(ProviderSpec{InitOptions: map[string]any{"use_responses_api": true}})
	if err := r.RegisterProvider("openai", openAI); err != nil {
		return err
	}
	type entry struct {
		keys []string
		spec HarnessSpec
	}
	opus, claude, codex := claudeOpusGuidance, claudeGuidance, codexGuidance
	for _, e := range []entry{
		{claudeOpusKeys, HarnessSpec{SystemPromptSuffix: &opus}},
		{claudeKeys, HarnessSpec{SystemPromptSuffix: &claude}},
		{codexKeys, HarnessSpec{SystemPromptSuffix: &codex, ExtraMiddlewareFactory: newTodoListExtra}},
	} {
		p, err := NewHarnessProfile(e.spec)
		if err != nil {
			return err
		}
		for _, k := range e.keys {
			if err := r.RegisterHarness(k, p); err != nil {
				return err
			}
		}
	}
	return nil
}
