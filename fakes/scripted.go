package fakes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/dageval/dageval/fakes/internal/pieces"
	"github.com/dageval/dageval/harness/llm"
)

// ErrExhausted is returned when a scripted model is called more often than
// its script has steps.
var ErrExhausted = errors.New("fakes: scripted model has no more responses")

// Step is one scripted model turn: a response or an error.
type Step struct {
	Response *llm.Response
	Err      error
}

// Reply is a step answering with text and no tool calls.
func Reply(text string) Step {
	return Step{Response: &llm.Response{Message: llm.Assistant(text), StopReason: llm.StopEndTurn}}
}

// Calls is a step whose answer calls tools (with optional leading text).
func Calls(text string, calls ...llm.ToolCall) Step {
	return Step{Response: &llm.Response{Message: llm.Assistant(text, calls...), StopReason: llm.StopToolUse}}
}

// Fail is a step whose call fails with err.
func Fail(err error) Step { return Step{Err: err} }

// Respond is a step with a fully specified response.
func Respond(r llm.Response) Step { return Step{Response: &r} }

// Call builds a tool call; args is marshalled to JSON (a string or
// json.RawMessage is used as is). An empty id is filled in by the model with
// a deterministic "call_<turn>_<index>".
func Call(name string, args any) llm.ToolCall {
	return CallID("", name, args)
}

// CallID is Call with an explicit id.
func CallID(id, name string, args any) llm.ToolCall {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
		raw = json.RawMessage("{}")
	case string:
		raw = json.RawMessage(a)
	case json.RawMessage:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Sprintf("fakes.Call(%s): %v", name, err))
		}
		raw = b
	}
	return llm.ToolCall{ID: id, Name: name, Args: raw}
}

// Scripted is a chat model that answers with queued steps in order and
// records every request it receives. It is safe for concurrent use; with
// concurrent callers the order of steps follows the order of calls.
type Scripted struct {
	mu       sync.Mutex
	steps    []Step
	next     int
	requests []llm.Request
	failOn   map[int]error
	identity llm.Identity
	usage    func(*llm.Request, *llm.Response) llm.Usage
}

// NewScripted returns a model that plays the steps in order.
func NewScripted(steps ...Step) *Scripted {
	return &Scripted{steps: steps, identity: llm.Identity{Provider: "fake", Model: "scripted"}, usage: ApproxUsage}
}

// WithIdentity sets the provider and model id the model reports.
func (s *Scripted) WithIdentity(provider, model string) *Scripted {
	s.identity = llm.Identity{Provider: provider, Model: model}
	return s
}

// FailOn makes the n-th call (1-based) fail with err instead of consuming a step.
func (s *Scripted) FailOn(n int, err error) *Scripted {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failOn == nil {
		s.failOn = map[int]error{}
	}
	s.failOn[n] = err
	return s
}

// WithUsage replaces how the model reports token usage for responses that
// do not carry their own (ApproxUsage by default).
func (s *Scripted) WithUsage(fn func(*llm.Request, *llm.Response) llm.Usage) *Scripted {
	s.usage = fn
	return s
}

// Append queues more steps.
func (s *Scripted) Append(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

// Identity implements llm.Identified.
func (s *Scripted) Identity() llm.Identity { return s.identity }

// Requests returns copies of every request received, in order.
func (s *Scripted) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]llm.Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Calls returns how many times the model was called.
func (s *Scripted) CallCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Remaining returns how many scripted steps have not been played.
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps) - s.next
}

// Generate implements llm.ChatModel.
func (s *Scripted) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, copyRequest(req))
	call := len(s.requests)
	if err, ok := s.failOn[call]; ok {
		return nil, err
	}
	if s.next >= len(s.steps) {
		return nil, fmt.Errorf("%w (call %d; the script has %d steps; last user message: %q)", ErrExhausted, call, len(s.steps), lastUserText(req))
	}
	st := s.steps[s.next]
	s.next++
	if st.Err != nil {
		return nil, st.Err
	}
	return finish(st.Response, req, call, s.identity, s.usage), nil
}

// Stream implements llm.StreamingModel: the answer's text arrives word by
// word, tool calls on the last chunk.
func (s *Scripted) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return StreamResponse(ctx, s, req)
}

// StreamResponse streams what m.Generate returns, word by word.
func StreamResponse(ctx context.Context, m llm.ChatModel, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		for _, w := range pieces.Words(resp.Message.Text()) {
			if ctx.Err() != nil {
				yield(llm.Chunk{}, ctx.Err())
				return
			}
			if !yield(llm.Chunk{TextDelta: w}, nil) {
				return
			}
		}
		for i, tc := range resp.Message.ToolCalls {
			if !yield(llm.Chunk{ToolCallDelta: &llm.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, ArgsDelta: string(tc.Args)}}, nil) {
				return
			}
		}
		yield(llm.Chunk{Response: resp}, nil)
	}
}

// finish copies a scripted response and fills in ids, model and usage.
func finish(r *llm.Response, req *llm.Request, call int, id llm.Identity, usage func(*llm.Request, *llm.Response) llm.Usage) *llm.Response {
	out := *r
	out.Message = r.Message.Clone()
	out.Message.Role = llm.RoleAssistant
	for i := range out.Message.ToolCalls {
		if out.Message.ToolCalls[i].ID == "" {
			out.Message.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", call, i+1)
		}
	}
	if out.StopReason == "" {
		out.StopReason = llm.StopEndTurn
		if len(out.Message.ToolCalls) > 0 {
			out.StopReason = llm.StopToolUse
		}
	}
	if out.Model == "" {
		out.Model = id.Model
	}
	if out.Usage.IsZero() && usage != nil {
		out.Usage = usage(req, &out)
	}
	return &out
}

// ApproxUsage estimates usage at four characters per token, so scripted runs
// report stable, plausible token counts.
func ApproxUsage(req *llm.Request, resp *llm.Response) llm.Usage {
	in := len(llm.BlocksText(req.System))
	for _, m := range req.Messages {
		in += messageChars(m)
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return llm.Usage{InputTokens: (in + 3) / 4, OutputTokens: (messageChars(resp.Message) + 3) / 4}
}

func messageChars(m llm.Message) int {
	n := len(m.Text())
	for _, tc := range m.ToolCalls {
		n += len(tc.Name) + len(tc.Args)
	}
	return n
}

// copyRequest returns a copy of req that shares no slices with it, so later
// changes by the caller do not alter what was recorded.
func copyRequest(req *llm.Request) llm.Request {
	c := *req
	c.System = append([]llm.Block(nil), req.System...)
	c.Messages = make([]llm.Message, len(req.Messages))
	for i, m := range req.Messages {
		c.Messages[i] = m.Clone()
	}
	c.Tools = append([]llm.ToolSpec(nil), req.Tools...)
	return c
}

func lastUserText(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			t := req.Messages[i].Text()
			if len(t) > 80 {
				t = t[:80] + "…"
			}
			return t
		}
	}
	return ""
}

// Rule answers a request when When matches it.
type Rule struct {
	// Name labels the rule in errors.
	Name string
	// When selects requests; nil matches everything.
	When func(req *llm.Request) bool
	// Reply produces the answer.
	Reply func(req *llm.Request) (*llm.Response, error)
}

// RuleModel answers each request with the first rule that matches it, which
// suits concurrent callers (subagents, graders) whose order is not fixed.
type RuleModel struct {
	mu       sync.Mutex
	rules    []Rule
	requests []llm.Request
	identity llm.Identity
	failOn   map[int]error
}

// NewRuleModel returns a model driven by rules.
func NewRuleModel(rules ...Rule) *RuleModel {
	return &RuleModel{rules: rules, identity: llm.Identity{Provider: "fake", Model: "rules"}}
}

// WithIdentity sets the provider and model id the model reports.
func (m *RuleModel) WithIdentity(provider, model string) *RuleModel {
	m.identity = llm.Identity{Provider: provider, Model: model}
	return m
}

// FailOn makes the n-th call (1-based) fail with err.
func (m *RuleModel) FailOn(n int, err error) *RuleModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failOn == nil {
		m.failOn = map[int]error{}
	}
	m.failOn[n] = err
	return m
}

// Identity implements llm.Identified.
func (m *RuleModel) Identity() llm.Identity { return m.identity }

// Requests returns copies of every request received, in order.
func (m *RuleModel) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.requests...)
}

// Generate implements llm.ChatModel.
func (m *RuleModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.requests = append(m.requests, copyRequest(req))
	call := len(m.requests)
	err, fail := m.failOn[call]
	m.mu.Unlock()
	if fail {
		return nil, err
	}
	for _, r := range m.rules {
		if r.When == nil || r.When(req) {
			resp, err := r.Reply(req)
			if err != nil {
				return nil, err
			}
			return finish(resp, req, call, m.identity, ApproxUsage), nil
		}
	}
	return nil, fmt.Errorf("fakes: no rule matches call %d (last user message: %q)", call, lastUserText(req))
}

// Stream implements llm.StreamingModel.
func (m *RuleModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return StreamResponse(ctx, m, req)
}

// LastUserContains matches requests whose last user message contains s.
func LastUserContains(s string) func(*llm.Request) bool {
	return func(req *llm.Request) bool {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == llm.RoleUser {
				return strings.Contains(req.Messages[i].Text(), s)
			}
		}
		return false
	}
}

// LastIsToolResult matches requests whose last message is a result of the named tool.
func LastIsToolResult(name string) func(*llm.Request) bool {
	return func(req *llm.Request) bool {
		n := len(req.Messages)
		return n > 0 && req.Messages[n-1].Role == llm.RoleTool && req.Messages[n-1].Name == name
	}
}
