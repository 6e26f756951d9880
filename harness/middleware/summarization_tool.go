package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// CompactConversationTool is the name of the tool SummarizationToolMiddleware contributes.
const CompactConversationTool = "compact_conversation"

// defaultCompactDescription is the description of compact_conversation.
const defaultCompactDescription = "Summarize the older part of this conversation to free context space. " +
	"Use it when the conversation has grown long and the earlier details are no longer needed verbatim, for example before starting a new phase of work. " +
	"The most recent messages stay as they are, and the full earlier history is saved to a file you can read later. " +
	"It does nothing while the conversation is still short. Takes no arguments."

// Results of compact_conversation the model sees.
const (
	compactNothingText = "Nothing to compact yet — the conversation is still well within its token budget."
	compactDoneFormat  = "Conversation compacted. Summarized %d messages into a concise summary."
	compactFailFormat  = "Compaction failed: an error occurred while generating the summary (%v). " +
		"The conversation has not been compacted — no messages were summarized or removed."
)

// compactEligibility scales every trigger threshold: compaction is allowed
// once the conversation is half-way to automatic summarization.
const compactEligibility = 0.5

// CompactConversationOptions configures SummarizationToolMiddleware.
type CompactConversationOptions struct {
	// SystemPrompt, when non-empty, is appended to every model call (for
	// example a hint about when to compact).
	SystemPrompt string
	// ToolDescription replaces the default description when non-empty.
	ToolDescription string
}

// SummarizationToolMiddleware gives the agent the compact_conversation tool,
// which runs the summarization of a SummarizationMiddleware on demand. It is
// available once any trigger clause is half met (message counts against the
// conversation, token counts against the calibrated estimate); below that,
// or when nothing is old enough to summarize, it answers that there is
// nothing to compact. A failure is reported to the model as text and leaves
// the conversation as it was.
//
// The summariser is the summarization's Model or, when that is nil, the
// model of the agent's latest call, which this middleware notes as calls
// pass through it.
type SummarizationToolMiddleware struct {
	agent.Base
	s    *SummarizationMiddleware
	opts CompactConversationOptions
	tool tool.Tool
}

// NewCompactConversation returns the compact_conversation middleware
// working with s (normally the same instance that is in the stack).
func NewCompactConversation(s *SummarizationMiddleware, opts CompactConversationOptions) (*SummarizationToolMiddleware, error) {
	if s == nil {
		return nil, errors.New("SummarizationToolMiddleware: a SummarizationMiddleware is required")
	}
	desc := opts.ToolDescription
	if desc == "" {
		desc = defaultCompactDescription
	}
	m := &SummarizationToolMiddleware{s: s, opts: opts}
	m.tool = &tool.Func{
		ToolSpec: llm.ToolSpec{Name: CompactConversationTool, Description: desc, Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		Fn:       m.compact,
	}
	return m, nil
}

// WithOverrides implements Overridable: a profile's compact_conversation
// description applies when the options kept the default.
func (m *SummarizationToolMiddleware) WithOverrides(o TextOverrides) agent.Middleware {
	d, ok := o.overrideFor(CompactConversationTool, m.opts.ToolDescription != "")
	if !ok || d == "" {
		return m
	}
	opts := m.opts
	opts.ToolDescription = d
	c, err := NewCompactConversation(m.s, opts)
	if err != nil {
		return m // unreachable: m was built from the same summarization
	}
	return c
}

// Name implements agent.Middleware.
func (m *SummarizationToolMiddleware) Name() string { return SummarizationToolName }

// Tools implements agent.Middleware.
func (m *SummarizationToolMiddleware) Tools() []tool.Tool { return []tool.Tool{m.tool} }

// WrapModelCall implements agent.Middleware: it notes the model and appends
// the optional prompt fragment.
func (m *SummarizationToolMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	m.s.remember(req.Model)
	return next(ctx, req.AppendSystem(m.opts.SystemPrompt))
}

func (m *SummarizationToolMiddleware) compact(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	st := agent.ToolState(ctx)
	if st == nil {
		return tool.Result{}, agent.ErrNoToolCall
	}
	s := m.s
	var agentModel llm.ChatModel
	if ref := s.lastModel.Load(); ref != nil {
		agentModel = ref.m
	}
	p := s.policyFor(agentModel)
	v := s.viewOf(st.Messages, st, nil)
	tokens := 0
	if j, used := v.reportedUsage(); j >= 0 {
		tokens = used + s.count(nil, v.msgs[j+1:], nil)
	} else {
		tokens = s.count(nil, v.msgs, nil)
	}
	if !p.anyMet(p.trigger, tokens, len(v.msgs), compactEligibility) {
		return tool.Text(compactNothingText), nil
	}
	cut := s.cutoff(v.msgs, p.keep, p, true, nil)
	if cut <= v.firstNew() {
		return tool.Text(compactNothingText), nil
	}
	model := s.opts.Model
	if model == nil {
		model = agentModel
	}
	out, err := s.summarize(ctx, ctx, model, st, &v, cut, p)
	if err != nil {
		return tool.Errorf(compactFailFormat, err), nil
	}
	if err := agent.UpdateState(ctx, out.update); err != nil {
		return tool.Result{}, err
	}
	return tool.Text(fmt.Sprintf(compactDoneFormat, out.summarized)), nil
}
