package replay

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/llm"
)

// Interaction is one recorded exchange as the adapters read it: what
// `dageval cassette show` prints.
type Interaction struct {
	Index    int    `json:"index"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Status   int    `json:"status"`
	Streamed bool   `json:"streamed"`
	// API is the wire API the request path selects ("" when none does).
	API string `json:"api,omitempty"`
	// Response is the decoded answer; nil when Error is set.
	Response *Response `json:"response,omitempty"`
	// Error is the adapter's error for a failed or unreadable answer.
	Error string `json:"error,omitempty"`
}

// Failed reports whether a successful (2xx) answer could not be decoded:
// the cassette holds something no replayed run can use.
func (i Interaction) Failed() bool { return i.Error != "" && i.Status >= 200 && i.Status < 300 }

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
}

// Inspect decodes every interaction of c in file order (see Decode).
// Credentials in URLs are redacted.
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
		if u, err := url.Parse(it.Request.URL); err == nil {
			in.API = cassette.APIOf(u.Path)
		}
		resp, err := Decode(ctx, it)
		if err != nil {
			in.Error = err.Error()
			out = append(out, in)
			continue
		}
		r := &Response{Model: resp.Model, StopReason: string(resp.StopReason), Text: resp.Message.Text(), ToolCalls: []ToolCall{},
			Usage: Usage{resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.CacheReadTokens, resp.Usage.CacheWriteTokens}}
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
