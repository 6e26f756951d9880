package llm

import (
	"context"
	"encoding/json"
	"iter"
	"time"
)

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments object.
	Parameters   json.RawMessage `json:"parameters"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

// Tool choice modes.
const (
	ToolChoiceAuto ToolChoiceMode = "auto" // model decides
	ToolChoiceAny  ToolChoiceMode = "any"  // model must call some tool
	ToolChoiceNone ToolChoiceMode = "none" // model must not call tools
	ToolChoiceTool ToolChoiceMode = "tool" // model must call the named tool
)

// ToolChoice constrains tool use for one call.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode"`
	Name string         `json:"name,omitempty"`
}

// ResponseFormat asks for a final answer that is a JSON value matching Schema.
type ResponseFormat struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      bool            `json:"strict,omitempty"`
}

// Thinking enables extended thinking with a token budget.
type Thinking struct {
	BudgetTokens int `json:"budget_tokens"`
}

// Request is everything a model call needs.
type Request struct {
	System         []Block         `json:"system,omitempty"`
	Messages       []Message       `json:"messages"`
	Tools          []ToolSpec      `json:"tools,omitempty"`
	ToolChoice     *ToolChoice     `json:"tool_choice,omitempty"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`

	MaxTokens     int       `json:"max_tokens,omitempty"`
	Temperature   *float64  `json:"temperature,omitempty"`
	TopP          *float64  `json:"top_p,omitempty"`
	Seed          *int64    `json:"seed,omitempty"`
	StopSequences []string  `json:"stop_sequences,omitempty"`
	Thinking      *Thinking `json:"thinking,omitempty"`
}

// SystemText concatenates the text of the system blocks. Blocks are joined
// without a separator because each appended fragment carries its own leading
// blank line (see agent.AppendSystemText).
func (r *Request) SystemText() string { return ConcatText(r.System) }

// StopReason says why the model stopped generating.
type StopReason string

// Normalised stop reasons.
const (
	StopEndTurn       StopReason = "end_turn"
	StopToolUse       StopReason = "tool_use"
	StopMaxTokens     StopReason = "max_tokens"
	StopSequence      StopReason = "stop_sequence"
	StopRefusal       StopReason = "refusal"
	StopContentFilter StopReason = "content_filter"
	StopPauseTurn     StopReason = "pause_turn"
)

// Usage counts tokens of one or more model calls. InputTokens excludes cache reads and writes.
//
// A provider that reports no usage for a call (a Chat Completions stream
// without its usage chunk, a compatible server that leaves usage out) does
// not make the call free: its Usage has UnknownCalls 1 and zero counts, and
// a sum keeps counting such calls, so that reports say "unknown" (or "at
// least") instead of showing a zero.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// UnknownCalls counts the calls in this sum whose usage was not reported;
	// their tokens are missing from the counts above.
	UnknownCalls int `json:"unknown_calls,omitempty"`
}

// UnknownUsage is the usage of one call whose provider reported none.
func UnknownUsage() Usage { return Usage{UnknownCalls: 1} }

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.UnknownCalls += o.UnknownCalls
}

// Total is every token billed: input, output and cache traffic. With
// UnknownCalls > 0 it is a lower bound.
func (u Usage) Total() int {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Known reports whether every call counted here reported its usage.
func (u Usage) Known() bool { return u.UnknownCalls == 0 }

// IsZero reports whether nothing was counted, not even a call of unknown usage.
func (u Usage) IsZero() bool { return u == Usage{} }

// Latency is how long one model call took. During replay it is what the
// recording says, never the (near zero) time the replay took.
type Latency struct {
	// Duration runs from sending the request to the last byte of the answer.
	Duration time.Duration `json:"duration"`
	// FirstEvent runs from sending the request to the first byte of a
	// streamed answer's events; 0 for a whole (JSON) answer or when the
	// recording does not say.
	FirstEvent time.Duration `json:"first_event,omitempty"`
	// Recorded says the values come from a recording, not from the clock.
	Recorded bool `json:"recorded,omitempty"`
}

// Response is the result of one model call.
type Response struct {
	Message    Message    `json:"message"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	Usage      Usage      `json:"usage"`
	Model      string     `json:"model,omitempty"`
	// Latency is how long the call took; nil when unknown (a recording
	// imported without timings).
	Latency *Latency `json:"latency,omitempty"`
	// Warnings say what was odd about an answer that was still accepted,
	// such as a stream that ended without a finish reason.
	Warnings []string `json:"warnings,omitempty"`
}

// ChatModel generates the next assistant message. The request is lent for
// the call: a model copies what it keeps of it, since the caller may reuse
// its slices for later calls (summarization and prompt caching do, for
// their message lists, rewriting messages in place from call to call).
type ChatModel interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// StreamingModel is a ChatModel that can also deliver its answer incrementally.
// The final chunk carries the assembled Response, equal to what Generate returns.
type StreamingModel interface {
	ChatModel
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Chunk is one increment of a streamed response.
type Chunk struct {
	TextDelta     string         `json:"text_delta,omitempty"`
	ThinkingDelta string         `json:"thinking_delta,omitempty"`
	ToolCallDelta *ToolCallDelta `json:"tool_call_delta,omitempty"`
	// Response is set on the last chunk only.
	Response *Response `json:"response,omitempty"`
}

// ToolCallDelta is a fragment of a tool call being streamed.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	ArgsDelta string `json:"args_delta,omitempty"`
}

// Identity names a model for profile lookup: provider ("anthropic") and model id ("claude-sonnet-4-6").
type Identity struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// String renders the identity as a provider:model spec, or the bare part that is known.
func (id Identity) String() string {
	switch {
	case id.Provider != "" && id.Model != "":
		return id.Provider + ":" + id.Model
	case id.Model != "":
		return id.Model
	default:
		return id.Provider
	}
}

// Identified is implemented by models that know their provider and model id.
type Identified interface {
	Identity() Identity
}

// IdentityOf returns the model's identity, or false if it does not say.
func IdentityOf(m ChatModel) (Identity, bool) {
	if im, ok := m.(Identified); ok {
		return im.Identity(), true
	}
	return Identity{}, false
}
