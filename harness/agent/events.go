package agent

import (
	"encoding/json"

	"github.com/dageval/dageval/harness/llm"
)

// EventType names a stream event.
type EventType string

// Stream event types, in the order a step produces them.
const (
	EventModelStart EventType = "model_start"
	EventModelChunk EventType = "model_chunk" // only with WithTokenStream and a streaming model
	EventModelEnd   EventType = "model_end"
	EventToolStart  EventType = "tool_start"
	EventToolEnd    EventType = "tool_end"
	EventUpdate     EventType = "update"
	EventCustom     EventType = "custom"
	EventInterrupt  EventType = "interrupt"
	EventDone       EventType = "done" // last event of Stream; carries the Result
)

// Event is one entry of a run's stream. The order of events is deterministic:
// tool events of parallel calls are delivered in call order.
type Event struct {
	Type EventType `json:"type"`
	// Agent is the path of the agent that produced the event ("main",
	// "main/task:researcher").
	Agent string `json:"agent,omitempty"`
	// Step counts model and tool steps of this agent from 1.
	Step int `json:"step,omitempty"`
	// Node names the hook that produced an update ("before_model:SummarizationMiddleware").
	Node string `json:"node,omitempty"`
	// Name is the name of a custom event.
	Name string `json:"name,omitempty"`

	Response   *llm.Response      `json:"response,omitempty"`    // model_end
	Chunk      *llm.Chunk         `json:"chunk,omitempty"`       // model_chunk
	ToolCall   *llm.ToolCall      `json:"tool_call,omitempty"`   // tool_start, tool_end
	ToolResult *llm.Message       `json:"tool_result,omitempty"` // tool_end
	Update     *Update            `json:"update,omitempty"`      // update
	Payload    json.RawMessage    `json:"payload,omitempty"`     // custom
	Interrupts []PendingInterrupt `json:"interrupts,omitempty"`  // interrupt
	Result     *Result            `json:"-"`                     // done
}

// PendingInterrupt is a pause waiting for the caller's answer.
type PendingInterrupt struct {
	// ID identifies the hook or tool call that paused; use it as the key of a
	// ResumeMap when several interrupts are pending.
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}
