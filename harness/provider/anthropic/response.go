package anthropic

import (
	"bytes"
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/dageval/dageval/harness/llm"
)

// response converts a complete Message, however it arrived (one JSON body or
// an accumulated stream), so that both paths give equal responses.
func response(msg *sdk.Message) *llm.Response {
	out := llm.Message{Role: llm.RoleAssistant}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				out.Content = append(out.Content, llm.TextBlock(b.Text))
			}
		case "thinking":
			out.Content = append(out.Content, llm.Block{Type: llm.BlockThinking, Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			out.Content = append(out.Content, llm.Block{Type: llm.BlockRedactedThinking, Redacted: b.Data})
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Args: compactArgs(b.Input)})
		}
		// Server-tool blocks (web search, code execution) are results the
		// API already acted on; they have no provider-neutral form yet.
	}
	usage := llm.Usage{
		InputTokens:      int(msg.Usage.InputTokens),
		OutputTokens:     int(msg.Usage.OutputTokens),
		CacheReadTokens:  int(msg.Usage.CacheReadInputTokens),
		CacheWriteTokens: int(msg.Usage.CacheCreationInputTokens),
	}
	if !msg.JSON.Usage.Valid() {
		usage = llm.UnknownUsage()
	}
	u := usage
	out.Usage = &u
	return &llm.Response{Message: out, StopReason: stopReason(msg.StopReason), Usage: usage, Model: msg.Model}
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
