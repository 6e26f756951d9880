package anthropic

import (
	"bytes"
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/dageval/dageval/harness/llm"
)

// block is one content block, of a whole Message or accumulated from a
// stream; both paths end in assemble, so they give equal responses.
type block struct {
	typ, text, thinking, signature, data, id, name string
	input                                          json.RawMessage
}

// response converts a complete Message from a JSON answer.
func response(msg *sdk.Message) *llm.Response {
	blocks := make([]block, len(msg.Content))
	for i, b := range msg.Content {
		blocks[i] = block{typ: b.Type, text: b.Text, thinking: b.Thinking, signature: b.Signature, data: b.Data, id: b.ID, name: b.Name, input: b.Input}
	}
	usage := llm.UnknownUsage()
	if msg.JSON.Usage.Valid() {
		usage = llm.Usage{
			InputTokens:      int(msg.Usage.InputTokens),
			OutputTokens:     int(msg.Usage.OutputTokens),
			CacheReadTokens:  int(msg.Usage.CacheReadInputTokens),
			CacheWriteTokens: int(msg.Usage.CacheCreationInputTokens),
		}
	}
	return assemble(msg.Model, msg.StopReason, blocks, usage)
}

// assemble builds the provider-neutral answer.
func assemble(model string, stop sdk.StopReason, blocks []block, usage llm.Usage) *llm.Response {
	out := llm.Message{Role: llm.RoleAssistant}
	for _, b := range blocks {
		switch b.typ {
		case "text":
			if b.text != "" {
				out.Content = append(out.Content, llm.TextBlock(b.text))
			}
		case "thinking":
			out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Thinking: b.thinking, Signature: b.signature})
		case "redacted_thinking":
			out.Content = append(out.Content, llm.Block{Type: llm.BlockRedactedThinking, Redacted: b.data})
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.id, Name: b.name, Args: compactArgs(b.input)})
		}
		// Server-tool blocks (web search, code execution) are results the
		// API already acted on; they have no provider-neutral form yet.
	}
	u := usage
	out.Usage = &u
	return &llm.Response{Message: out, StopReason: stopReason(stop), Usage: usage, Model: model}
}

// compactArgs normalises tool input so that streamed and whole answers match.
func compactArgs(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return buf.Bytes()
}

func stopReason(r sdk.StopReason) llm.StopReason {
	switch r {
	case sdk.StopReasonEndTurn:
		return llm.StopEndTurn
	case sdk.StopReasonToolUse:
		return llm.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return llm.StopSequence
	case sdk.StopReasonPauseTurn:
		return llm.StopPauseTurn
	case sdk.StopReasonRefusal:
		return llm.StopRefusal
	}
	return llm.StopReason(r)
}
