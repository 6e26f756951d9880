package rubrics

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// Record is what checks look at after a run: the final messages, the tool
// calls as a tree of trajectories (a task call holds its subagent's run),
// file access, usage, steps, cost and the run's error.
type Record struct {
	// CaseID and Input name the case the run answered (set by the caller);
	// code assertions receive them.
	CaseID string
	Input  string
	// Messages are the final state's messages.
	Messages []llm.Message
	// Start is the index in Messages of the case's own user message: the
	// messages before it are a prior history the case gave (multi-turn
	// input), which no check reads as the run's.
	Start int
	// Replies are the root agent's model answers in this run, one per
	// model turn, in order (Deep Agents' agent steps).
	Replies []llm.Message
	// Todos and Values are the final state's todo list and middleware
	// state values, for state checks.
	Todos  []agent.Todo
	Values map[string]json.RawMessage
	// StructuredResponse is the final state's structured response, if any.
	StructuredResponse json.RawMessage
	// Trajectory is the root agent's run; task calls hold their subagents' runs.
	Trajectory *Trajectory
	// Runs lists every agent run seen, root first, subagent runs in the order
	// they started. Grader runs are not included.
	Runs []*Trajectory
	// Files reads the agent's files after the run; nil when there is no access.
	Files FileReader
	// Usage sums token usage by role.
	Usage RoleUsage
	// Steps counts the root agent's steps (model calls plus tool steps).
	Steps int
	// CostUSD is the run's cost; nil when unknown (set by the caller, who knows prices).
	CostUSD *float64
	// Err is the run's error, nil when it finished.
	Err error
	// RubricEvaluations are the root agent's rubric gradings, in order.
	RubricEvaluations []middleware.RubricEvaluation
}

// RoleUsage splits token usage by who spent it.
type RoleUsage struct {
	// Agent is the root agent's own model calls.
	Agent llm.Usage `json:"agent"`
	// Subagents is every subagent run's model calls.
	Subagents llm.Usage `json:"subagents"`
	// Grader is the rubric grader's model calls.
	Grader llm.Usage `json:"grader"`
}

// Total sums the roles.
func (u RoleUsage) Total() llm.Usage {
	t := u.Agent
	t.Add(u.Subagents)
	t.Add(u.Grader)
	return t
}

// Trajectory is one agent run's tool calls in order.
type Trajectory struct {
	// Agent is the run's agent path ("main", "main/task:researcher").
	Agent string `json:"agent"`
	// Subagent is the subagent type of a task run ("" for the root).
	Subagent string `json:"subagent,omitempty"`
	// ToolCallID is the id of the task call that started a subagent run.
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Calls      []ToolCall `json:"calls"`
	// Turns counts the run's model answers.
	Turns int `json:"turns,omitempty"`
	// Messages is a subagent run's transcript as its events show it: the
	// task description as the user message, then each model answer and tool
	// result. It is empty for the root run (its transcript is Record.Messages).
	Messages []llm.Message `json:"messages,omitempty"`
}

// ToolCall is one tool call of a run.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Step groups calls the model requested in the same turn: they share it.
	Step int `json:"step"`
	// Turn is the model turn of its run that requested the call, from 1:
	// the n-th model answer (Deep Agents' step index).
	Turn int `json:"turn,omitempty"`
	// Result is the text of the tool's answer; IsError marks a failed call.
	Result  string `json:"result,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Subagent is the run a task call started, when it could be observed.
	Subagent *Trajectory `json:"subagent,omitempty"`
}

// Names returns the names of the run's tool calls in order.
func (t *Trajectory) Names() []string {
	if t == nil {
		return nil
	}
	out := make([]string, len(t.Calls))
	for i, c := range t.Calls {
		out[i] = c.Name
	}
	return out
}

// Flatten returns the run's calls with each task call followed by its
// subagent's calls, depth first: the order in which they happened.
func (t *Trajectory) Flatten() []ToolCall {
	if t == nil {
		return nil
	}
	var out []ToolCall
	for _, c := range t.Calls {
		out = append(out, c)
		if c.Subagent != nil {
			out = append(out, c.Subagent.Flatten()...)
		}
	}
	return out
}

// FileReader reads the agent's files after a run. ReadFile returns an error
// wrapping fs.ErrNotExist for a missing file.
type FileReader interface {
	ReadFile(ctx context.Context, path string) (string, error)
}

// StateFiles reads files kept in agent state (the State backend's storage).
type StateFiles map[string]agent.FileData

// ReadFile implements FileReader; base64 content is decoded.
func (s StateFiles) ReadFile(_ context.Context, path string) (string, error) {
	fd, ok := s[path]
	if !ok {
		return "", fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	if fd.Encoding == "base64" {
		raw, err := base64.StdEncoding.DecodeString(fd.Content)
		if err != nil {
			return "", fmt.Errorf("%s: bad base64 content: %w", path, err)
		}
		return string(raw), nil
	}
	return fd.Content, nil
}

// FinalAnswer is the run's answer as checks see it: the structured response
// as JSON when there is one, else the last non-empty assistant text of the
// run (an answer whose last message only called tools, or said nothing,
// still has the text it gave before). LastMessage is Deep Agents' choice.
func (r *Record) FinalAnswer() string {
	if len(r.StructuredResponse) > 0 && string(r.StructuredResponse) != "null" {
		return string(r.StructuredResponse)
	}
	s := agent.State{Messages: r.own()}
	return s.LastText()
}

// LastMessage is the text of the run's last assistant message, even when
// it is empty: what Deep Agents' trajectory.answer reads. The structured
// response wins as in FinalAnswer.
func (r *Record) LastMessage() string {
	if len(r.StructuredResponse) > 0 && string(r.StructuredResponse) != "null" {
		return string(r.StructuredResponse)
	}
	msgs := r.own()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			return msgs[i].Text()
		}
	}
	return ""
}

// own returns the messages of this run: the case's input and what came
// after it, without a prior history.
func (r *Record) own() []llm.Message {
	if r.Start > 0 && r.Start <= len(r.Messages) {
		return r.Messages[r.Start:]
	}
	return r.Messages
}

// AssistantTexts lists the non-empty texts of the root agent's answers in
// this run, in order.
func (r *Record) AssistantTexts() []string {
	var out []string
	msgs := r.Replies
	if msgs == nil {
		msgs = r.own()
	}
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant {
			if t := m.Text(); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// Turns counts the root agent's model answers in this run.
func (r *Record) Turns() int {
	if r.Replies != nil {
		return len(r.Replies)
	}
	n := 0
	for _, m := range r.own() {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

// FinalEvaluation returns the last rubric grading of the run, which holds
// the verdict the run ended with.
func (r *Record) FinalEvaluation() (middleware.RubricEvaluation, bool) {
	if len(r.RubricEvaluations) == 0 {
		return middleware.RubricEvaluation{}, false
	}
	return r.RubricEvaluations[len(r.RubricEvaluations)-1], true
}

// ToolCallNames lists the root agent's tool calls by name, in order.
func (r *Record) ToolCallNames() []string { return r.Trajectory.Names() }

// NewRecord builds a record from a run's stream events (as delivered by
// agent.WithEvents or Agent.Stream) and its final state. Either may be
// missing: without events, the trajectory comes from the messages (and has
// no subagent runs); without a state, the answer is empty. Files default to
// the state's files; set Files, CostUSD and Err as the caller knows them.
//
// Subagent runs are attached to the task call that started them. Their
// events arrive between the task call's tool_start and tool_end, labelled
// with the path "<parent>/task:<type>"; parallel task calls of one step are
// delivered one after the other in call order, so each run belongs to the
// earliest task call of that type still open.
func NewRecord(events []agent.Event, final *agent.State) *Record {
	return NewRecordAt(events, final, 0)
}

// NewRecordAt is NewRecord for a run whose input began with a prior history:
// start is the index of the case's own user message in the final messages,
// and nothing before it counts as the run's.
func NewRecordAt(events []agent.Event, final *agent.State, start int) *Record {
	rec := &Record{Start: start}
	if final != nil {
		rec.Messages = final.Messages
		rec.StructuredResponse = final.StructuredResponse
		rec.Files = StateFiles(final.Files)
		rec.Todos, rec.Values = final.Todos, final.Values
	}
	if len(events) == 0 {
		rec.Trajectory = TrajectoryFromMessages("main", rec.own())
		rec.Runs = []*Trajectory{rec.Trajectory}
		rec.Steps = stepsFromMessages(rec.own())
		return rec
	}
	b := &recordBuilder{rec: rec, live: map[string]*liveRun{}}
	for i := range events {
		b.add(&events[i])
	}
	if rec.Trajectory == nil {
		rec.Trajectory = &Trajectory{Agent: b.root, Calls: []ToolCall{}}
		rec.Runs = append([]*Trajectory{rec.Trajectory}, rec.Runs...)
	}
	return rec
}

// TrajectoryFromMessages reads a run's tool calls from its messages. Calls
// of one assistant message share a step; results are matched by call id.
func TrajectoryFromMessages(agentPath string, msgs []llm.Message) *Trajectory {
	t := &Trajectory{Agent: agentPath, Calls: []ToolCall{}}
	at := map[string]int{}
	turn := 0
	answers := 0
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			answers++
			t.Turns = answers
			if len(m.ToolCalls) == 0 {
				continue
			}
			turn++
			for _, tc := range m.ToolCalls {
				at[tc.ID] = len(t.Calls)
				t.Calls = append(t.Calls, ToolCall{ID: tc.ID, Name: tc.Name, Args: tc.Args, Step: turn, Turn: answers})
			}
		case llm.RoleTool:
			if i, ok := at[m.ToolCallID]; ok {
				t.Calls[i].Result = m.Text()
				t.Calls[i].IsError = m.IsError
			}
		}
	}
	return t
}

func stepsFromMessages(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant {
			n++
			if len(m.ToolCalls) > 0 {
				n++
			}
		}
	}
	return n
}

// liveRun is a run whose events are still arriving.
type liveRun struct {
	traj *Trajectory
	// open holds the indexes of calls started but not ended, in call order.
	open []int
	// child maps an open task call's index to the path of the run it started.
	child map[int]string
}

type recordBuilder struct {
	rec  *Record
	root string
	live map[string]*liveRun
}

func (b *recordBuilder) add(ev *agent.Event) {
	if b.root == "" {
		b.root, _, _ = strings.Cut(ev.Agent, "/")
		if b.root == "" {
			b.root = "main"
		}
	}
	path := ev.Agent
	if path == "" {
		path = b.root
	}
	grader := isGraderPath(path)
	if ev.Type == agent.EventModelEnd && ev.Response != nil {
		if !grader {
			b.run(path).traj.Turns++
		}
		switch {
		case path == b.root:
			b.rec.Usage.Agent.Add(ev.Response.Usage)
			b.rec.Replies = append(b.rec.Replies, ev.Response.Message)
		case grader:
			b.rec.Usage.Grader.Add(ev.Response.Usage)
		default:
			b.rec.Usage.Subagents.Add(ev.Response.Usage)
		}
	}
	if path == b.root {
		b.rec.Steps = max(b.rec.Steps, ev.Step)
		if ev.Type == agent.EventCustom && ev.Name == middleware.RubricEvaluationEndEvent {
			var e middleware.RubricEvaluation
			if json.Unmarshal(ev.Payload, &e) == nil {
				b.rec.RubricEvaluations = append(b.rec.RubricEvaluations, e)
			}
		}
	}
	if grader {
		return
	}
	if path != b.root {
		// Any event opens a subagent run, so one that calls no tools is
		// still attached to its task call.
		r := b.run(path)
		switch {
		case ev.Type == agent.EventModelEnd && ev.Response != nil:
			r.traj.Messages = append(r.traj.Messages, ev.Response.Message)
		case ev.Type == agent.EventToolEnd && ev.ToolResult != nil:
			r.traj.Messages = append(r.traj.Messages, *ev.ToolResult)
		}
	}
	if (ev.Type != agent.EventToolStart && ev.Type != agent.EventToolEnd) || ev.ToolCall == nil {
		return
	}
	r := b.run(path)
	at := -1
	for _, i := range r.open {
		if r.traj.Calls[i].ID == ev.ToolCall.ID {
			at = i
			break
		}
	}
	if at < 0 && ev.Type == agent.EventToolEnd {
		// The start happened before this record began (a resumed run).
		for i := range r.traj.Calls {
			if r.traj.Calls[i].ID == ev.ToolCall.ID && ev.ToolCall.ID != "" {
				at = i
			}
		}
	}
	if at < 0 {
		at = len(r.traj.Calls)
		r.traj.Calls = append(r.traj.Calls, ToolCall{ID: ev.ToolCall.ID, Name: ev.ToolCall.Name, Args: ev.ToolCall.Args, Step: ev.Step, Turn: r.traj.Turns})
		r.open = append(r.open, at)
	}
	if ev.Type == agent.EventToolEnd {
		c := &r.traj.Calls[at]
		if ev.ToolResult != nil {
			c.Result = ev.ToolResult.Text()
			c.IsError = ev.ToolResult.IsError
		}
		for k, i := range r.open {
			if i == at {
				r.open = append(r.open[:k:k], r.open[k+1:]...)
				break
			}
		}
		if p, ok := r.child[at]; ok {
			delete(b.live, p)
			delete(r.child, at)
		}
	}
}

// run returns the live run for path, starting one (and attaching it to its
// task call) when none is open.
func (b *recordBuilder) run(path string) *liveRun {
	if r, ok := b.live[path]; ok {
		return r
	}
	r := &liveRun{traj: &Trajectory{Agent: path, Calls: []ToolCall{}}, child: map[int]string{}}
	b.live[path] = r
	if path == b.root {
		b.rec.Trajectory = r.traj
		b.rec.Runs = append([]*Trajectory{r.traj}, b.rec.Runs...)
		return r
	}
	b.rec.Runs = append(b.rec.Runs, r.traj)
	parentPath, last := path, ""
	if i := strings.LastIndex(path, "/"); i >= 0 {
		parentPath, last = path[:i], path[i+1:]
	}
	sub, isTask := strings.CutPrefix(last, "task:")
	if isTask {
		r.traj.Subagent = sub
	} else {
		r.traj.Subagent = last
	}
	parent, ok := b.live[parentPath]
	if !ok {
		if parentPath != b.root && !strings.Contains(parentPath, "/") {
			return r
		}
		parent = b.run(parentPath)
	}
	// The earliest open task call of this type that has no run yet; failing
	// that (arguments the record cannot read), the earliest open task call.
	pick := -1
	for _, i := range parent.open {
		c := parent.traj.Calls[i]
		if _, taken := parent.child[i]; taken || c.Name != "task" {
			continue
		}
		if subagentType(c.Args) == sub {
			pick = i
			break
		}
		if pick < 0 {
			pick = i
		}
	}
	if pick >= 0 {
		parent.child[pick] = path
		call := &parent.traj.Calls[pick]
		call.Subagent = r.traj
		r.traj.ToolCallID = call.ID
		var a struct {
			Description string `json:"description"`
		}
		if json.Unmarshal(call.Args, &a) == nil && a.Description != "" {
			r.traj.Messages = append(r.traj.Messages, llm.User(a.Description))
		}
	}
	return r
}

func subagentType(args json.RawMessage) string {
	var a struct {
		SubagentType string `json:"subagent_type"`
	}
	_ = json.Unmarshal(args, &a)
	return a.SubagentType
}

func isGraderPath(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if seg == middleware.RubricGraderName {
			return true
		}
	}
	return false
}
