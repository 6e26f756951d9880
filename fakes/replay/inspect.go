package replay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// Outcome says what an interaction holds, as a replayed run would see it.
type Outcome string

// Interaction outcomes.
const (
	// OutcomeAnswer: a model answer the adapter decodes.
	OutcomeAnswer Outcome = "answer"
	// OutcomeProviderError: the provider's error (a non-2xx answer or an
	// error event in a stream), which replay hands to the agent as the
	// same error: a correct answer to replay, not a broken recording.
	OutcomeProviderError Outcome = "provider_error"
	// OutcomeNotModelCall: traffic that is no model call (an image
	// download, a tracing endpoint); no adapter reads it and none needs to.
	OutcomeNotModelCall Outcome = "not_a_model_call"
	// OutcomeNoAdapter: a model call on an API no adapter speaks.
	OutcomeNoAdapter Outcome = "no_adapter"
	// OutcomeUndecodable: a successful answer the adapter cannot read (or
	// a stream cut off before its end).
	OutcomeUndecodable Outcome = "undecodable"
)

// Interaction is one recorded exchange as the adapters read it: what
// `dageval cassette show` prints.
type Interaction struct {
	Index  int    `json:"index"`
	Method string `json:"method"`
	URL    string `json:"url"`
	Status int    `json:"status"`
	// Streamed reports an answer recorded as a stream: server-sent
	// events, or Gemini's JSON array of chunks.
	Streamed bool `json:"streamed"`
	// API is the wire API the request path selects ("" when none does).
	API     string  `json:"api,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Latency is the recorded duration; nil when the recording has none.
	Latency *Latency `json:"latency,omitempty"`
	// Response is the decoded answer; nil when Error is set.
	Response *Response `json:"response,omitempty"`
	// Error is the adapter's error for a failed or unreadable answer.
	Error string `json:"error,omitempty"`
}

// Latency is an interaction's recorded timing, in milliseconds.
type Latency struct {
	DurationMS int64 `json:"duration_ms"`
	// FirstEventMS is the time to a stream's first byte; omitted when not recorded.
	FirstEventMS int64 `json:"first_event_ms,omitempty"`
}

// Failed reports whether the interaction holds something no replayed run
// can use: a successful answer that cannot be decoded, or a model call no
// adapter speaks. Recorded provider errors and traffic that is no model
// call are not failures.
func (i Interaction) Failed() bool {
	return i.Outcome == OutcomeUndecodable || i.Outcome == OutcomeNoAdapter
}

// Response is a decoded answer.
type Response struct {
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	Text       string `json:"text"`
	// Thinking is the model's visible reasoning, when the answer has any.
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls"`
	// InvalidToolCalls are calls whose arguments are not valid JSON.
	InvalidToolCalls []InvalidToolCall `json:"invalid_tool_calls,omitempty"`
	Usage            Usage             `json:"usage"`
	// Warnings say what was odd about an answer the adapter still accepted.
	Warnings []string `json:"warnings,omitempty"`
}

// ToolCall is a tool call of a decoded answer.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// InvalidToolCall is a tool call whose arguments could not be parsed.
type InvalidToolCall struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Args  string `json:"args"`
	Error string `json:"error"`
}

// Usage is the token usage of a decoded answer.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	// Unknown says the answer reported no usage; the counts are then 0 but
	// mean "not reported", not "free".
	Unknown bool `json:"unknown,omitempty"`
}

// Inspect decodes every interaction of c in file order (see Decode) and
// says what each holds (see Outcome). Credentials in URLs are redacted.
func Inspect(ctx context.Context, c *cassette.Cassette) []Interaction {
	out := make([]Interaction, 0, len(c.Interactions))
	for i, it := range c.Interactions {
		in := Interaction{
			Index:    i,
			Method:   it.Request.Method,
			URL:      cassette.RedactURL(it.Request.URL),
			Status:   it.Response.Code,
			Streamed: Answer(it).Streamed(),
		}
		if d := it.Response.Duration; d > 0 {
			in.Latency = &Latency{DurationMS: d.Milliseconds()}
			if f, err := time.ParseDuration(it.Response.Headers.Get(provider.FirstEventHeader)); err == nil && f > 0 {
				in.Latency.FirstEventMS = f.Milliseconds()
			}
		}
		if u, err := url.Parse(it.Request.URL); err == nil {
			in.API = cassette.APIOf(u.Path)
			// Gemini streams without alt=sse as one JSON array of chunks:
			// still a stream, though not an event stream.
			if _, stream, ok := cassette.GeminiCall(u.Path); ok && stream && in.Status >= 200 && in.Status < 300 {
				in.Streamed = true
			}
		}
		if in.API == "" && !IsModelCall(it) {
			in.Outcome = OutcomeNotModelCall
			out = append(out, in)
			continue
		}
		resp, err := Decode(ctx, it)
		if err != nil {
			in.Error = err.Error()
			in.Outcome = outcomeOf(err, in.Status)
			out = append(out, in)
			continue
		}
		in.Outcome = OutcomeAnswer
		r := &Response{Model: resp.Model, StopReason: string(resp.StopReason), Text: resp.Message.Text(), ToolCalls: []ToolCall{},
			Usage:    Usage{resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.CacheReadTokens, resp.Usage.CacheWriteTokens, !resp.Usage.Known()},
			Warnings: resp.Warnings}
		var thinking []string
		for _, b := range resp.Message.Content {
			if b.Type == llm.BlockThinking && b.Thinking != "" {
				thinking = append(thinking, b.Thinking)
			}
		}
		r.Thinking = strings.Join(thinking, "\n")
		for _, tc := range resp.Message.ToolCalls {
			r.ToolCalls = append(r.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Name, Args: tc.Args})
		}
		for _, tc := range resp.Message.InvalidToolCalls {
			r.InvalidToolCalls = append(r.InvalidToolCalls, InvalidToolCall{ID: tc.ID, Name: tc.Name, Args: tc.Args, Error: tc.Error})
		}
		in.Response = r
		out = append(out, in)
	}
	return out
}

// outcomeOf classifies a decoding error: the provider's own error (any
// status, an error event inside a 2xx stream) is an answer replay repeats;
// a 2xx answer that cannot be read, or a stream that was cut off, is not.
func outcomeOf(err error, status int) Outcome {
	if errors.Is(err, ErrNoAdapter) {
		return OutcomeNoAdapter
	}
	if status < 200 || status >= 300 {
		return OutcomeProviderError
	}
	switch llm.KindOf(err) {
	case "", llm.ErrBadResponse, llm.ErrConnection:
		return OutcomeUndecodable
	}
	return OutcomeProviderError
}

// modelRequestKeys are request-body keys that hold a conversation or a
// prompt in the model APIs dageval knows of (Messages, Chat Completions,
// Responses, Gemini, legacy completions).
var modelRequestKeys = []string{"messages", "input", "contents", "prompt"}

// IsModelCall reports whether an interaction is a call to a model: its path
// is one an adapter speaks, or it is a POST whose JSON body holds a
// conversation or prompt. Other traffic a client recorded along the way (an
// image download, a tracing endpoint) is not, and no adapter needs to read it.
func IsModelCall(it *vcr.Interaction) bool {
	if u, err := url.Parse(it.Request.URL); err == nil && cassette.APIOf(u.Path) != "" {
		return true
	}
	if it.Request.Method != http.MethodPost {
		return false
	}
	var body map[string]json.RawMessage
	if json.Unmarshal([]byte(it.Request.Body), &body) != nil {
		return false
	}
	for _, k := range modelRequestKeys {
		if _, ok := body[k]; ok {
			return true
		}
	}
	return false
}
