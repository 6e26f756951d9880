package llm

import (
	"encoding/json"
	"strings"
)

// Role is who authored a message.
type Role string

// The four message roles. Tool messages carry the result of one tool call.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// BlockType names the kind of a content block.
type BlockType string

// Content block kinds. Tool use and tool results are not blocks: an assistant
// message lists its calls in Message.ToolCalls and each result is a RoleTool
// message, which is the shape the agent loop and every middleware reason about.
// Provider adapters translate to and from their wire blocks.
const (
	BlockText             BlockType = "text"
	BlockImage            BlockType = "image"
	BlockAudio            BlockType = "audio"
	BlockVideo            BlockType = "video"
	BlockFile             BlockType = "file"
	BlockThinking         BlockType = "thinking"
	BlockRedactedThinking BlockType = "redacted_thinking"
)

// CacheControl marks a prompt-cache breakpoint on a block or tool.
type CacheControl struct {
	Type string `json:"type"`          // "ephemeral"
	TTL  string `json:"ttl,omitempty"` // "5m" or "1h"; empty means the provider default
}

// Ephemeral returns the standard ephemeral cache-control marker.
func Ephemeral() *CacheControl { return &CacheControl{Type: "ephemeral"} }

// Block is one piece of message content. Which fields are meaningful depends on Type.
type Block struct {
	Type BlockType `json:"type"`

	// Text is the text of a text block.
	Text string `json:"text,omitempty"`

	// MediaType, Data (base64) and URL describe image, audio, video and file blocks.
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`

	// Thinking and Signature hold a thinking block; Redacted holds the opaque
	// payload of a redacted-thinking block. Both must be sent back verbatim.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`

	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: s} }

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// InvalidToolCall is a tool call whose arguments could not be parsed, kept so
// that the history stays faithful and the call can be answered.
type InvalidToolCall struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Args  string `json:"args"`
	Error string `json:"error"`
}

// Message is one turn of a conversation.
type Message struct {
	ID      string  `json:"id,omitempty"`
	Role    Role    `json:"role"`
	Name    string  `json:"name,omitempty"`
	Content []Block `json:"content,omitempty"`

	// ToolCalls and InvalidToolCalls belong to assistant messages.
	ToolCalls        []ToolCall        `json:"tool_calls,omitempty"`
	InvalidToolCalls []InvalidToolCall `json:"invalid_tool_calls,omitempty"`

	// ToolCallID and IsError belong to tool messages.
	ToolCallID string `json:"tool_call_id,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	// Artifact is data a tool returned beside its content, not shown to the model.
	Artifact json.RawMessage `json:"artifact,omitempty"`

	// Usage is the token usage of the model call that produced an assistant message.
	Usage *Usage `json:"usage,omitempty"`

	// Metadata holds free-form tags such as lc_source ("summarization",
	// "rubric_grader") or lc_evicted_to that middleware use to recognise
	// messages they produced.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Metadata keys shared between middleware.
const (
	MetaSource    = "lc_source"     // who synthesised the message
	MetaEvictedTo = "lc_evicted_to" // where an oversized message was offloaded
)

// User returns a user message with one text block.
func User(text string) Message { return Message{Role: RoleUser, Content: []Block{TextBlock(text)}} }

// System returns a system message with one text block.
func System(text string) Message { return Message{Role: RoleSystem, Content: []Block{TextBlock(text)}} }

// Assistant returns an assistant message with one text block (none if text is empty) and the given tool calls.
func Assistant(text string, calls ...ToolCall) Message {
	m := Message{Role: RoleAssistant, ToolCalls: calls}
	if text != "" {
		m.Content = []Block{TextBlock(text)}
	}
	return m
}

// ToolResult returns a tool message answering the call with the given id.
func ToolResult(callID, name, text string, isError bool) Message {
	return Message{Role: RoleTool, ToolCallID: callID, Name: name, Content: []Block{TextBlock(text)}, IsError: isError}
}

// Text joins the text blocks of the message with newlines.
func (m Message) Text() string { return BlocksText(m.Content) }

// BlocksText joins the text of text blocks with newlines, skipping other kinds.
func BlocksText(blocks []Block) string {
	switch n := countText(blocks); n {
	case 0:
		return ""
	case 1:
		for _, b := range blocks {
			if b.Type == BlockText {
				return b.Text
			}
		}
	}
	var sb strings.Builder
	first := true
	for _, b := range blocks {
		if b.Type != BlockText {
			continue
		}
		if !first {
			sb.WriteByte('\n')
		}
		first = false
		sb.WriteString(b.Text)
	}
	return sb.String()
}

// ConcatText concatenates the text of text blocks with no separator, which is
// how a system prompt made of fragments reads.
func ConcatText(blocks []Block) string {
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type == BlockText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

func countText(blocks []Block) int {
	n := 0
	for _, b := range blocks {
		if b.Type == BlockText {
			n++
		}
	}
	return n
}

// Clone returns a deep copy of the message, so edits never reach the original.
func (m Message) Clone() Message {
	c := m
	c.Content = cloneSlice(m.Content)
	for i := range c.Content {
		if cc := c.Content[i].CacheControl; cc != nil {
			v := *cc
			c.Content[i].CacheControl = &v
		}
	}
	if m.ToolCalls != nil {
		c.ToolCalls = make([]ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			tc.Args = append(json.RawMessage(nil), tc.Args...)
			c.ToolCalls[i] = tc
		}
	}
	c.InvalidToolCalls = cloneSlice(m.InvalidToolCalls)
	c.Artifact = cloneSlice(m.Artifact)
	if m.Usage != nil {
		u := *m.Usage
		c.Usage = &u
	}
	if m.Metadata != nil {
		c.Metadata = make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			c.Metadata[k] = v
		}
	}
	return c
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
