package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// Runner runs an agent to completion; *agent.Agent implements it.
type Runner interface {
	Invoke(ctx context.Context, in agent.Input, opts ...agent.Option) (*agent.Result, error)
}

// SubAgent is one agent the task tool can launch.
type SubAgent struct {
	Name        string
	Description string
	Runner      Runner
	// WithResponseFormat rebuilds the subagent to answer in a per-call
	// format (see ResponseFormatConfigKey). Declarative subagents set it;
	// compiled subagents, which arrive ready-made, cannot.
	WithResponseFormat func(format *agent.ResponseFormat) (Runner, error)
}

// ResponseFormatConfigKey is the agent.WithConfig key through which a caller
// asks every task of one run to return a structured response.
const ResponseFormatConfigKey = "deepagents_subagent_response_format"

// SubAgentOptions configures SubAgentMiddleware.
type SubAgentOptions struct {
	SubAgents []SubAgent
	// TaskDescription replaces the task tool's description; "{available_agents}"
	// in it is replaced by the list of subagents.
	TaskDescription string
	// SystemPrompt, when set, is appended to every model call together with
	// the list of subagents.
	SystemPrompt string
	// PrivateKeys are state keys that never cross into a subagent or back.
	PrivateKeys []string
}

// SubAgentMiddleware gives the agent the `task` tool, which runs a subagent
// in an isolated context and returns its final answer.
type SubAgentMiddleware struct {
	agent.Base
	opts    SubAgentOptions
	byName  map[string]SubAgent
	private map[string]bool
	task    tool.Tool
}

// NewSubAgentMiddleware builds the middleware; at least one subagent is required.
func NewSubAgentMiddleware(opts SubAgentOptions) (*SubAgentMiddleware, error) {
	if len(opts.SubAgents) == 0 {
		return nil, errors.New("SubAgentMiddleware: at least one subagent must be specified")
	}
	m := &SubAgentMiddleware{opts: opts, byName: map[string]SubAgent{}, private: map[string]bool{}}
	for _, sa := range opts.SubAgents {
		if sa.Name == "" {
			return nil, errors.New("SubAgentMiddleware: a subagent has an empty name")
		}
		if sa.Runner == nil {
			return nil, fmt.Errorf("SubAgentMiddleware: subagent %q has nothing to run", sa.Name)
		}
		if _, dup := m.byName[sa.Name]; dup {
			return nil, fmt.Errorf("SubAgentMiddleware: two subagents are named %q", sa.Name)
		}
		m.byName[sa.Name] = sa
	}
	for _, k := range opts.PrivateKeys {
		m.private[k] = true
	}
	m.task = &tool.Func{ToolSpec: llm.ToolSpec{
		Name:        "task",
		Description: m.description(),
		Parameters:  taskParams,
	}, Fn: m.runTask}
	m.task = tool.ValidatedBy(m.task, taskParsed)
	return m, nil
}

// taskParams is the task tool's schema, shared by every instance.
var taskParams = json.RawMessage(taskSchema)

// taskParsed is taskParams, parsed when a task call is first validated.
var taskParsed = tool.BuiltinSchema(taskParams)

const taskSchema = `{"type":"object","properties":{"description":{"type":"string","description":"The complete task for the subagent: everything it needs to know, and what it should return."},"subagent_type":{"type":"string","description":"Which subagent to run; one of the types listed in the tool description."}},"required":["description","subagent_type"]}`

// defaultTaskDescription is the task tool's description unless a profile or
// the caller overrides it.
const defaultTaskDescription = `Launch a subagent that works on a task in its own, fresh context window and reports back with one final message.

Available subagent types:
{available_agents}

How to use it:
- A subagent knows only what you write in description. Give it every detail it needs and say exactly what its final message should contain.
- Its report comes back to you, not to the user. Relay what matters to the user yourself.
- Tasks are independent of each other and of earlier tasks; a subagent remembers nothing between calls.
- To run several independent tasks at once, call task several times in the same turn.
- Say whether the subagent should produce content, analyse something, or research; it cannot ask you.
- When a subagent's description says to use it proactively, do so without being asked.`

// defaultTaskDescriptionGP is the default description when a general-purpose
// subagent exists; without one, its last line would send the model to a type
// it cannot use.
const defaultTaskDescriptionGP = defaultTaskDescription + "\n- Prefer general-purpose for broad, multi-step work that needs the same tools you have; do small, single-step work yourself."

func (m *SubAgentMiddleware) agentList() string {
	var sb strings.Builder
	for i, sa := range m.opts.SubAgents {
		if i > 0 {
			sb.WriteByte('\n')
		}
		fmt.Fprintf(&sb, "- %s: %s", sa.Name, sa.Description)
	}
	return sb.String()
}

func (m *SubAgentMiddleware) description() string {
	d := m.opts.TaskDescription
	if d == "" {
		d = defaultTaskDescription
		if _, ok := m.byName["general-purpose"]; ok {
			d = defaultTaskDescriptionGP
		}
	}
	if r := lastTaskDescription.Load(); r != nil && r.template == d && r.lists(m.opts.SubAgents) {
		return r.text
	}
	r := &taskDescription{template: d, text: strings.ReplaceAll(d, "{available_agents}", m.agentList())}
	for _, sa := range m.opts.SubAgents {
		r.names = append(r.names, sa.Name)
		r.descriptions = append(r.descriptions, sa.Description)
	}
	lastTaskDescription.Store(r)
	return r.text
}

// lastTaskDescription is the task tool's description as last rendered:
// an eval run assembles the same subagents in every cell, whose agents
// then share the text instead of each rendering its own.
var lastTaskDescription atomic.Pointer[taskDescription]

// taskDescription is a task tool description and what it was rendered from.
type taskDescription struct {
	template            string
	names, descriptions []string
	text                string
}

// lists reports whether the description lists subagents, as rendered.
func (r *taskDescription) lists(subagents []SubAgent) bool {
	if len(subagents) != len(r.names) {
		return false
	}
	for i, sa := range subagents {
		if sa.Name != r.names[i] || sa.Description != r.descriptions[i] {
			return false
		}
	}
	return true
}

// Name implements agent.Middleware.
func (m *SubAgentMiddleware) Name() string { return SubAgentName }

// Tools implements agent.Middleware.
func (m *SubAgentMiddleware) Tools() []tool.Tool { return []tool.Tool{m.task} }

// SubAgents returns the configured subagents in order.
func (m *SubAgentMiddleware) SubAgents() []SubAgent { return slices.Clone(m.opts.SubAgents) }

// WrapModelCall appends the configured system prompt and the subagent list.
func (m *SubAgentMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	if m.opts.SystemPrompt != "" {
		req = req.AppendSystem(m.opts.SystemPrompt + "\n\nAvailable subagent types:\n\n" + m.agentList())
	}
	return next(ctx, req)
}

type taskArgs struct {
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type"`
}

// relayed is the payload of a parent interrupt that relays a subagent's pauses.
type relayed struct {
	Subagent   string                   `json:"subagent"`
	Interrupts []agent.PendingInterrupt `json:"interrupts"`
}

func (m *SubAgentMiddleware) runTask(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var args taskArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return tool.InvalidArgs("task", err), nil
	}
	sa, ok := m.byName[args.SubagentType]
	if !ok {
		names := make([]string, len(m.opts.SubAgents))
		for i, s := range m.opts.SubAgents {
			names[i] = "`" + s.Name + "`"
		}
		return tool.Text(fmt.Sprintf("We cannot invoke subagent %s because it does not exist, the only allowed types are %s", args.SubagentType, strings.Join(names, ", "))), nil
	}
	call, ok := agent.ToolCall(ctx)
	if !ok || call.ID == "" {
		return tool.Result{}, errors.New("task: the tool call has no id")
	}
	runner := sa.Runner
	if v, ok := agent.Configurable(ctx, ResponseFormatConfigKey); ok && v != nil {
		format, ok := v.(*agent.ResponseFormat)
		if !ok {
			return tool.Result{}, fmt.Errorf("task: %s must be an *agent.ResponseFormat, got %T", ResponseFormatConfigKey, v)
		}
		if sa.WithResponseFormat == nil {
			return tool.Result{}, fmt.Errorf("task: a response format cannot be used with the compiled subagent %q", sa.Name)
		}
		r, err := sa.WithResponseFormat(format)
		if err != nil {
			return tool.Result{}, fmt.Errorf("task: subagent %q with response format: %w", sa.Name, err)
		}
		runner = r
	}

	parent := agent.ToolState(ctx)
	in := m.childInput(parent, args.Description)
	opts := []agent.Option{
		agent.WithAgentPath(agent.AgentPath(ctx) + "/task:" + sa.Name),
		agent.WithLane(agent.Lane(ctx) + "/task:" + sa.Name + "#" + call.ID),
		agent.WithEvents(func(ev agent.Event) { agent.EmitEvent(ctx, ev) }),
	}
	cp, thread := agent.CheckpointerFrom(ctx), agent.ThreadID(ctx)
	if cp != nil && thread != "" {
		child := thread + "/task/" + call.ID
		opts = append(opts, agent.WithCheckpointer(cp), agent.WithThread(child))
		prev, err := cp.Get(ctx, child)
		if err != nil {
			return tool.Result{}, fmt.Errorf("task: load subagent thread: %w", err)
		}
		if prev != nil && len(prev.Interrupts) > 0 {
			// The subagent paused earlier; the answer reaches us through our own interrupt.
			answer, err := agent.InterruptKey(ctx, pauseKey(prev.Steps, prev.Interrupts), relayed{Subagent: sa.Name, Interrupts: prev.Interrupts})
			if err != nil {
				return tool.Result{}, err
			}
			in = agent.Input{Resume: resumeFor(prev.Interrupts, answer)}
		}
	}
	res, err := runner.Invoke(ctx, in, opts...)
	if err != nil {
		return tool.Result{}, fmt.Errorf("subagent %s: %w", sa.Name, err)
	}
	if res == nil || res.State == nil {
		return tool.Result{}, fmt.Errorf("subagent %s returned no state; a subagent must return its final state with messages", sa.Name)
	}
	if res.Interrupted() {
		_, err := agent.InterruptKey(ctx, pauseKey(res.Steps, res.Interrupts), relayed{Subagent: sa.Name, Interrupts: res.Interrupts})
		if err == nil {
			err = errors.New("task: subagent interrupt was answered before it was asked")
		}
		return tool.Result{}, err
	}
	if u := m.childUpdates(parent, res.State); !u.IsEmpty() {
		if err := agent.UpdateState(ctx, u); err != nil {
			return tool.Result{}, err
		}
	}
	return tool.Text(finalAnswer(res.State)), nil
}

// pauseKey identifies one pause of a subagent, so each is answered once.
func pauseKey(steps int, ints []agent.PendingInterrupt) string {
	ids := make([]string, len(ints))
	for i, in := range ints {
		ids[i] = in.ID
	}
	return fmt.Sprintf("subagent@%d:%s", steps, strings.Join(ids, ","))
}

// resumeFor turns the parent's answer into the subagent's resume value: the
// answer itself for one pending interrupt, or a map keyed by interrupt id.
func resumeFor(ints []agent.PendingInterrupt, answer json.RawMessage) any {
	if len(ints) == 1 {
		return answer
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(answer, &m); err != nil {
		return answer
	}
	rm := agent.ResumeMap{}
	for k, v := range m {
		rm[k] = v
	}
	return rm
}

// childInput is the subagent's starting state: the parent's files and public
// values, and one user message with the task.
func (m *SubAgentMiddleware) childInput(parent *agent.State, description string) agent.Input {
	in := agent.Input{Messages: []llm.Message{llm.User(description)}}
	if parent == nil {
		return in
	}
	if len(parent.Files) > 0 {
		in.Files = maps.Clone(parent.Files)
	}
	for k, v := range parent.Values {
		if m.private[k] {
			continue
		}
		if in.Values == nil {
			in.Values = map[string]json.RawMessage{}
		}
		in.Values[k] = v
	}
	return in
}

// childUpdates returns what the subagent changed in the shared (non-private)
// state: files written or deleted and public values.
func (m *SubAgentMiddleware) childUpdates(parent, child *agent.State) *agent.Update {
	u := &agent.Update{}
	var before map[string]agent.FileData
	if parent != nil {
		before = parent.Files
	}
	for _, p := range slices.Sorted(maps.Keys(child.Files)) {
		fd := child.Files[p]
		if old, ok := before[p]; ok && old == fd {
			continue
		}
		if u.Files == nil {
			u.Files = map[string]*agent.FileData{}
		}
		u.Files[p] = &fd
	}
	for p := range before {
		if _, ok := child.Files[p]; !ok {
			if u.Files == nil {
				u.Files = map[string]*agent.FileData{}
			}
			u.Files[p] = nil
		}
	}
	var parentVals map[string]json.RawMessage
	if parent != nil {
		parentVals = parent.Values
	}
	for k, v := range child.Values {
		if m.private[k] || string(parentVals[k]) == string(v) {
			continue
		}
		if u.Values == nil {
			u.Values = map[string]json.RawMessage{}
		}
		u.Values[k] = v
	}
	return u
}

// finalAnswer is what the parent sees: the structured response as JSON, else
// the last non-empty assistant text.
func finalAnswer(s *agent.State) string {
	if len(s.StructuredResponse) > 0 && string(s.StructuredResponse) != "null" {
		return string(s.StructuredResponse)
	}
	return strings.TrimRight(s.LastText(), " \t\r\n")
}
