package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// defaultApprovalPrefix starts the description a reviewer sees for a tool
// call whose configuration gives none.
const defaultApprovalPrefix = "Tool execution requires approval"

// HITLRequest is the interrupt payload of HumanInTheLoopMiddleware: one
// action request and one review config per tool call awaiting review, in the
// order the model made the calls.
type HITLRequest struct {
	ActionRequests []ActionRequest `json:"action_requests"`
	ReviewConfigs  []ReviewConfig  `json:"review_configs"`
}

// ActionRequest is one tool call shown to the reviewer.
type ActionRequest struct {
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	Description string          `json:"description"`
}

// ReviewConfig says which decisions the reviewer may take on the action of
// the same index.
type ReviewConfig struct {
	ActionName       string         `json:"action_name"`
	AllowedDecisions []DecisionType `json:"allowed_decisions"`
}

// HITLResponse is the resume value HumanInTheLoopMiddleware expects: exactly
// one decision per action request, in the same order.
type HITLResponse struct {
	Decisions []Decision `json:"decisions"`
}

// Decision is a reviewer's answer to one tool call.
type Decision struct {
	Type DecisionType `json:"type"`
	// EditedAction replaces the call's name and arguments (edit only); the
	// call keeps its id.
	EditedAction *EditedAction `json:"edited_action,omitempty"`
	// Message is the feedback of a reject (a default text when empty) or the
	// tool result of a respond.
	Message string `json:"message,omitempty"`
}

// EditedAction is the replacement call of an edit decision.
type EditedAction struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Approve returns a decision that runs the call as the model made it.
func Approve() Decision { return Decision{Type: DecisionApprove} }

// Edit returns a decision that runs the call as name with args instead.
func Edit(name string, args json.RawMessage) Decision {
	return Decision{Type: DecisionEdit, EditedAction: &EditedAction{Name: name, Args: args}}
}

// Reject returns a decision that does not run the call and tells the model
// message (a default text when empty).
func Reject(message string) Decision { return Decision{Type: DecisionReject, Message: message} }

// Respond returns a decision that does not run the call and gives the model
// text as the tool's result.
func Respond(text string) Decision { return Decision{Type: DecisionRespond, Message: text} }

// HumanInTheLoopConfig configures HumanInTheLoopMiddleware.
type HumanInTheLoopConfig struct {
	// InterruptOn says which tools are reviewed and how.
	InterruptOn InterruptOn
	// DescriptionPrefix starts the default description ("Tool execution
	// requires approval" when empty).
	DescriptionPrefix string
}

// HumanInTheLoopMiddleware pauses the run after a model call whose tool calls
// need a human's review, and applies the human's decisions when the thread
// is resumed. Resuming requires a checkpointer and a thread id.
//
// Unlike LangChain, which moves auto-approved calls ahead of reviewed ones,
// the revised assistant message keeps the model's call order: the model and
// any transcript see the calls as they were made.
type HumanInTheLoopMiddleware struct {
	agent.Base
	interruptOn InterruptOn
	prefix      string
}

// NewHumanInTheLoop returns the middleware for cfg; the map is copied. It
// fails on an entry without a tool name or with an unknown decision type, so
// that a typo surfaces before a reviewer meets it.
func NewHumanInTheLoop(cfg HumanInTheLoopConfig) (*HumanInTheLoopMiddleware, error) {
	for _, name := range slices.Sorted(maps.Keys(cfg.InterruptOn)) {
		if name == "" {
			return nil, errors.New("interrupt_on: an entry has an empty tool name")
		}
		if c := cfg.InterruptOn[name]; c != nil {
			for _, d := range c.AllowedDecisions {
				if !slices.Contains(AllDecisions, d) {
					return nil, fmt.Errorf("interrupt_on[%s].allowed_decisions: unknown decision %q; use %s", name, d, joinDecisions(AllDecisions))
				}
			}
		}
	}
	m := &HumanInTheLoopMiddleware{interruptOn: MergeInterruptOn(nil, cfg.InterruptOn), prefix: cfg.DescriptionPrefix}
	if m.prefix == "" {
		m.prefix = defaultApprovalPrefix
	}
	return m, nil
}

// Name implements agent.Middleware.
func (*HumanInTheLoopMiddleware) Name() string { return HumanInTheLoopName }

// reviewed is one call awaiting review.
type reviewed struct {
	index   int // position in the assistant message's tool calls
	call    llm.ToolCall
	allowed []DecisionType
}

// AfterModel implements agent.Middleware.
func (m *HumanInTheLoopMiddleware) AfterModel(ctx context.Context, s *agent.State) (*agent.Update, error) {
	if len(m.interruptOn) == 0 || len(s.Messages) == 0 {
		return nil, nil
	}
	last := s.Messages[len(s.Messages)-1]
	if last.Role != llm.RoleAssistant || len(last.ToolCalls) == 0 {
		return nil, nil
	}
	var pending []reviewed
	req := HITLRequest{ActionRequests: []ActionRequest{}, ReviewConfigs: []ReviewConfig{}}
	for i, call := range last.ToolCalls {
		cfg := m.interruptOn[call.Name]
		if cfg == nil || (cfg.When != nil && !cfg.When(call, s)) {
			continue
		}
		allowed := cfg.AllowedDecisions
		if len(allowed) == 0 {
			allowed = AllDecisions
		}
		pending = append(pending, reviewed{index: i, call: call, allowed: allowed})
		req.ActionRequests = append(req.ActionRequests, ActionRequest{Name: call.Name, Args: shownArgs(call.Args), Description: m.describe(cfg, call, s)})
		req.ReviewConfigs = append(req.ReviewConfigs, ReviewConfig{ActionName: call.Name, AllowedDecisions: slices.Clone(allowed)})
	}
	if len(pending) == 0 {
		return nil, nil
	}
	raw, err := agent.Interrupt(ctx, req)
	if err != nil {
		return nil, err
	}
	var resp HITLResponse
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("resume value must be {\"decisions\": [...]} with one decision per reviewed tool call: %w", err)
	}
	if len(resp.Decisions) != len(pending) {
		names := make([]string, len(pending))
		for i, p := range pending {
			names[i] = p.call.Name + " (" + p.call.ID + ")"
		}
		return nil, fmt.Errorf("resume has %d decisions for %d reviewed tool calls [%s]; give exactly one decision per call, in order",
			len(resp.Decisions), len(pending), strings.Join(names, ", "))
	}

	revised := last.Clone()
	var answers []llm.Message
	for i, p := range pending {
		d := resp.Decisions[i]
		if !slices.Contains(AllDecisions, d.Type) {
			return nil, fmt.Errorf("decision %d: unknown decision type %q for tool %s (call %s); use one of %s",
				i+1, d.Type, p.call.Name, p.call.ID, joinDecisions(AllDecisions))
		}
		if !slices.Contains(p.allowed, d.Type) {
			return nil, fmt.Errorf("decision %d: %q is not allowed for tool %s (call %s); allowed: %s",
				i+1, d.Type, p.call.Name, p.call.ID, joinDecisions(p.allowed))
		}
		switch d.Type {
		case DecisionApprove:
		case DecisionEdit:
			if d.EditedAction == nil || d.EditedAction.Name == "" {
				return nil, fmt.Errorf("decision %d: edit of tool %s (call %s) needs edited_action with a name and args", i+1, p.call.Name, p.call.ID)
			}
			args := argsOrEmpty(d.EditedAction.Args)
			if !json.Valid(args) || bytes.TrimSpace(args)[0] != '{' {
				return nil, fmt.Errorf("decision %d: edited args for tool %s (call %s) must be a JSON object, got %s", i+1, p.call.Name, p.call.ID, args)
			}
			revised.ToolCalls[p.index] = llm.ToolCall{ID: p.call.ID, Name: d.EditedAction.Name, Args: args}
		case DecisionReject:
			text := d.Message
			if text == "" {
				text = fmt.Sprintf("The user rejected the tool call %s (id %s); it was not run.", p.call.Name, p.call.ID)
			}
			answers = append(answers, llm.ToolResult(p.call.ID, p.call.Name, text, true))
		case DecisionRespond:
			if d.Message == "" {
				return nil, fmt.Errorf("decision %d: respond for tool %s (call %s) needs a message, which becomes the tool's result", i+1, p.call.Name, p.call.ID)
			}
			answers = append(answers, llm.ToolResult(p.call.ID, p.call.Name, d.Message, false))
		}
	}
	return &agent.Update{Messages: append([]llm.Message{revised}, answers...)}, nil
}

func (m *HumanInTheLoopMiddleware) describe(cfg *InterruptOnConfig, call llm.ToolCall, s *agent.State) string {
	if cfg.DescribeFunc != nil {
		return cfg.DescribeFunc(call, s)
	}
	if cfg.Description != "" {
		return cfg.Description
	}
	return fmt.Sprintf("%s\n\nTool: %s\nArgs: %s", m.prefix, call.Name, shownArgs(call.Args))
}

func argsOrEmpty(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

// shownArgs is the call's arguments as the reviewer sees them; arguments that
// are not JSON are shown as a JSON string so the payload still encodes.
func shownArgs(args json.RawMessage) json.RawMessage {
	args = argsOrEmpty(args)
	if json.Valid(args) {
		return args
	}
	raw, _ := json.Marshal(string(args))
	return raw
}

func joinDecisions(ds []DecisionType) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}
