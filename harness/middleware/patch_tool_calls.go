package middleware

import (
	"context"
	"fmt"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// PatchToolCallsMiddleware answers dangling tool calls before a run starts.
// A call is dangling when no tool message anywhere in the history carries its
// id — typically because the caller abandoned an interrupted run and sent a
// new message. Providers reject a history with unanswered calls, so a
// synthetic tool message is inserted right after the assistant message that
// made each such call (after the results that message already has).
//
// The malformed-arguments variant is marked as an error result (Deep Agents
// marks neither as an error) because the model has to redo that call; a
// cancelled call is not a failure of the model.
type PatchToolCallsMiddleware struct{ agent.Base }

// NewPatchToolCalls returns the middleware.
func NewPatchToolCalls() *PatchToolCallsMiddleware { return &PatchToolCallsMiddleware{} }

// Name implements agent.Middleware.
func (*PatchToolCallsMiddleware) Name() string { return PatchToolCallsName }

// cancelledToolCallText is the synthetic result of a call that never ran.
func cancelledToolCallText(name, id string) string {
	return fmt.Sprintf("Tool call %s with id %s was cancelled: another message came in before it could run.", orUnknown(name), id)
}

// malformedToolCallText is the synthetic result of a call whose arguments
// could not be parsed.
func malformedToolCallText(name, id string) string {
	return fmt.Sprintf("Tool call %s with id %s was not run: its arguments were malformed or truncated.", orUnknown(name), id)
}

// BeforeAgent implements agent.Middleware. It returns nil when nothing dangles.
func (*PatchToolCallsMiddleware) BeforeAgent(_ context.Context, s *agent.State) (*agent.Update, error) {
	answered := map[string]bool{}
	dangling := false
	for _, m := range s.Messages {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range s.Messages {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, tc := range m.ToolCalls {
			dangling = dangling || (tc.ID != "" && !answered[tc.ID])
		}
		for _, tc := range m.InvalidToolCalls {
			dangling = dangling || (tc.ID != "" && !answered[tc.ID])
		}
	}
	if !dangling {
		return nil, nil
	}
	out := make([]llm.Message, 0, len(s.Messages)+1)
	msgs := s.Messages
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		out = append(out, m)
		if m.Role != llm.RoleAssistant {
			continue
		}
		// Keep the results this message already has first, so the answers
		// to one message stay together and in the order they arrived.
		for i+1 < len(msgs) && msgs[i+1].Role == llm.RoleTool {
			i++
			out = append(out, msgs[i])
		}
		for _, tc := range m.ToolCalls {
			if tc.ID != "" && !answered[tc.ID] {
				answered[tc.ID] = true
				out = append(out, llm.ToolResult(tc.ID, orUnknown(tc.Name), cancelledToolCallText(tc.Name, tc.ID), false))
			}
		}
		for _, tc := range m.InvalidToolCalls {
			if tc.ID != "" && !answered[tc.ID] {
				answered[tc.ID] = true
				out = append(out, llm.ToolResult(tc.ID, orUnknown(tc.Name), malformedToolCallText(tc.Name, tc.ID), true))
			}
		}
	}
	return &agent.Update{ReplaceMessages: true, Messages: out}, nil
}

func orUnknown(name string) string {
	if name == "" {
		return "unknown"
	}
	return name
}
