package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// chatChunk is the part of a Chat Completions stream chunk the adapter
// reads. Chunks are decoded with encoding/json rather than through the
// SDK's chunk type: the SDK's reflective decoder, run once per token, made
// a replayed streamed run three times slower than the same run whole
// (whole answers made the same trade later, see chatText).
type chatChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int64     `json:"index"`
		Delta        chatDelta `json:"delta"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// chatChunks are the chunks replays parsed (see provider.Answers); add
// only reads a kept one.
var chatChunks provider.Answers[*chatChunk]

// decodeChatChunk parses one chunk.
func decodeChatChunk(data []byte) (*chatChunk, error) {
	c := &chatChunk{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, err
	}
	return c, nil
}

type chatDelta struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// Reasoning text of compatible servers: vLLM and DeepSeek send
	// reasoning_content, OpenRouter and Ollama reasoning (see reasoningOf).
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ExtraContent     *extraContent   `json:"extra_content"`
	ToolCalls        []struct {
		Index    int64  `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
		ExtraContent *extraContent `json:"extra_content"`
	} `json:"tool_calls"`
}

// reasoning is the delta's reasoning text, as reasoningOf reads it from a
// whole message.
func (d *chatDelta) reasoning() string {
	return firstReasoning(d.ReasoningContent, d.Reasoning)
}

// firstReasoning is the first of the raw reasoning fields that is a
// non-empty string.
func firstReasoning(raws ...json.RawMessage) string {
	for _, raw := range raws {
		var s string
		if len(raw) > 0 && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func (e *extraContent) signature() string {
	if e == nil {
		return ""
	}
	return e.Google.ThoughtSignature
}

// add folds one stream chunk into the result; it returns false when emit
// does.
func (r *chatResult) add(c *chatChunk, emit func(llm.Chunk) bool) bool {
	if r.id == "" {
		r.id = c.ID
	}
	if r.model == "" {
		r.model = c.Model
	}
	if u := c.Usage; u != nil {
		r.usage = sdk.CompletionUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
		r.usage.PromptTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
		r.usage.PromptTokensDetails.CacheWriteTokens = u.PromptTokensDetails.CacheWriteTokens
		r.usagePresent = true
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		r.choicePresent = true
		d := &ch.Delta
		if ch.FinishReason != "" {
			r.finish = ch.FinishReason
		}
		if sig := d.ExtraContent.signature(); sig != "" {
			r.signature = sig
		}
		if th := d.reasoning(); th != "" {
			r.reasoning.WriteString(th)
			if !emit(llm.Chunk{ThinkingDelta: th}) {
				return false
			}
		}
		if d.Content != "" {
			r.content.WriteString(d.Content)
			if !emit(llm.Chunk{TextDelta: d.Content}) {
				return false
			}
		}
		r.refusal += d.Refusal
		for _, tc := range d.ToolCalls {
			idx := int(tc.Index)
			if idx < 0 {
				idx = 0 // some servers send -1 for a single call
			}
			for len(r.calls) <= idx {
				r.calls = append(r.calls, &chatCall{})
			}
			call := r.calls[idx]
			id, name := tc.ID, tc.Function.Name
			if id != "" && id == call.id && name == call.name {
				// Some servers (Novita behind OpenRouter) repeat the
				// call's id and whole name on every delta; only its first
				// delta has them, so the rest adds arguments only.
				id, name = "", ""
			}
			if id != "" {
				call.id = id
			}
			call.name += name
			call.args.WriteString(tc.Function.Arguments)
			if sig := tc.ExtraContent.signature(); sig != "" {
				call.signature = sig
			}
			if id != "" || name != "" || tc.Function.Arguments != "" {
				if !emit(llm.Chunk{ToolCallDelta: &llm.ToolCallDelta{Index: idx, ID: id, Name: name, ArgsDelta: tc.Function.Arguments}}) {
					return false
				}
			}
		}
	}
	return true
}

// streamChat runs one streaming Chat Completions attempt: the SDK sends
// the request, and the event stream is read here. A whole JSON answer
// becomes the final response with no deltas before it. Extra options come
// last.
func (m *Model) streamChat(ctx context.Context, params sdk.ChatCompletionNewParams, nMessages int, emit func(llm.Chunk) bool, extra ...option.RequestOption) (*llm.Response, error) {
	opts, capture, err := m.callOptions(true)
	if err != nil {
		return nil, err
	}
	var raw *http.Response
	svc, err := m.services(ctx)
	if err != nil {
		return nil, err
	}
	send, sendOpts := direct(m, params)
	stream := svc.chat.NewStreaming(ctx, send, append(append(append(opts, sendOpts...), extra...), option.WithResponseInto(&raw))...)
	defer stream.Close()
	if err := stream.Err(); err != nil {
		if a, ok := capture.OtherFraming(err); ok {
			return m.timed(capture)(m.chatOnce(ctx, params, nMessages, answerClient(a)))
		}
		return nil, m.classify(ctx, err, capture)
	}
	if raw == nil {
		return nil, m.cfg.BadResponse(fmt.Errorf("no response"))
	}
	events := ssestream.NewDecoder(raw)
	r := &chatResult{}
	done := false
	for events.Next() {
		data := events.Event().Data
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			done = true
			break
		}
		// Parsing the chunks was over a third of a replayed streamed run,
		// and a replay is served the same ones every run.
		c, err := chatChunks.Remember(data, m.cfg.Replay, decodeChatChunk)
		if err != nil {
			return nil, m.cfg.BadResponse(fmt.Errorf("stream chunk: %w", err))
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			// An error document inside a 200 stream (OpenRouter sends one
			// when the upstream provider fails mid-answer).
			return nil, m.classify(ctx, &ssestream.StreamError{Message: "received error while streaming: " + string(c.Error), Event: events.Event()}, capture)
		}
		if !r.add(c, emit) {
			return nil, nil
		}
	}
	if err := events.Err(); err != nil {
		return nil, m.classify(ctx, err, capture)
	}
	var warnings []string
	if !r.choicePresent || r.finish == "" {
		// Without a finish reason the stream was cut off, unless it still
		// ended with [DONE]: some OpenRouter providers never send one.
		if !done {
			return nil, m.cfg.Truncated("a finish_reason")
		}
		warnings = append(warnings, "the stream ended with [DONE] but no chunk carried a finish_reason; the stop reason was inferred from the answer")
	}
	resp := r.response(nMessages)
	resp.Warnings = warnings
	for _, w := range warnings {
		m.warn(ctx, w)
	}
	return m.timed(capture)(resp, nil)
}
