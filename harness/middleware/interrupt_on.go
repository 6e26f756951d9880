package middleware

import (
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// DecisionType is the kind of a human's answer to one interrupted tool call.
type DecisionType string

// Decisions a reviewer may take on an interrupted tool call.
const (
	DecisionApprove DecisionType = "approve" // run the call as is
	DecisionEdit    DecisionType = "edit"    // run the call with edited name/arguments
	DecisionReject  DecisionType = "reject"  // do not run it; tell the model why
	DecisionRespond DecisionType = "respond" // do not run it; the human's text is the tool result
)

// AllDecisions is what a tool configured with plain `true` allows.
var AllDecisions = []DecisionType{DecisionApprove, DecisionEdit, DecisionReject, DecisionRespond}

// InterruptOnConfig says how calls to one tool are reviewed by a human before
// they run (Deep Agents' interrupt_on entry).
type InterruptOnConfig struct {
	// AllowedDecisions lists what the reviewer may answer; empty means all.
	AllowedDecisions []DecisionType `json:"allowed_decisions,omitempty"`
	// Description is shown to the reviewer; DescribeFunc, when set, wins.
	Description  string                                         `json:"description,omitempty"`
	DescribeFunc func(call llm.ToolCall, s *agent.State) string `json:"-"`
	// When, if set, is evaluated per call: false means the call runs
	// without review. Permission-derived entries use it to interrupt only
	// for protected paths.
	When func(call llm.ToolCall, s *agent.State) bool `json:"-"`
}

// InterruptOn maps tool names to their review configuration. A tool that is
// absent is never interrupted. A nil value is an explicit `false`: the tool is
// not interrupted, which lets a subagent or the caller switch off an entry it
// would otherwise inherit. `true` is an empty &InterruptOnConfig{}.
type InterruptOn map[string]*InterruptOnConfig

// MergeInterruptOn returns base overlaid with over: the caller's entry wins
// per tool, as Deep Agents merges permission-derived entries under the
// caller's interrupt_on. It returns nil when both are empty.
func MergeInterruptOn(base, over InterruptOn) InterruptOn {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(InterruptOn, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
