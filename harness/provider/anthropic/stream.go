package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// streamEvent is the part of a Messages API stream event the adapter
// reads. Events are decoded with encoding/json rather than through the
// SDK's event union: the SDK's reflective decoder, run once per token, made
// a replayed streamed run much slower than the same run whole, while a
// whole answer is decoded once per call and stays on the SDK.
type streamEvent struct {
	Index   int `json:"index"`
	Message *struct {
		Model      string         `json:"model"`
		StopReason sdk.StopReason `json:"stop_reason"`
		Usage      *streamUsage   `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string         `json:"type"`
		Text        string         `json:"text"`
		Thinking    string         `json:"thinking"`
		Signature   string         `json:"signature"`
		PartialJSON string         `json:"partial_json"`
		StopReason  sdk.StopReason `json:"stop_reason"`
	} `json:"delta"`
	Usage *streamUsage `json:"usage"`
}

// streamEvents are the events replays parsed (see provider.Answers).
var streamEvents provider.Answers[*streamEvent]

// decodeStreamEvent parses one event.
func decodeStreamEvent(data []byte) (*streamEvent, error) {
	ev := &streamEvent{}
	if err := json.Unmarshal(data, ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// streamUsage holds pointers because message_delta carries only the counts
// that changed (output tokens always), and the others keep their value
// from message_start, as the SDK's accumulator does.
type streamUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

func (u *streamUsage) into(dst *llm.Usage) {
	set := func(p *int64, d *int) {
		if p != nil {
			*d = int(*p)
		}
	}
	set(u.InputTokens, &dst.InputTokens)
	set(u.OutputTokens, &dst.OutputTokens)
	set(u.CacheCreationInputTokens, &dst.CacheWriteTokens)
	set(u.CacheReadInputTokens, &dst.CacheReadTokens)
}

// streamOnce runs one streaming attempt: the SDK sends the request, and the
// event stream is read here. emit returns false when the consumer stopped;
// streamOnce then returns at once. A whole JSON answer (a server that
// ignores "stream", or a replay of a plain recording) becomes the final
// response with no deltas before it.
func (m *Model) streamOnce(ctx context.Context, params sdk.MessageNewParams, emit func(llm.Chunk) bool, extra ...option.RequestOption) (*llm.Response, error) {
	opts, capture, err := m.callOptions(true)
	if err != nil {
		return nil, err
	}
	svc, err := m.service(ctx)
	if err != nil {
		return nil, err
	}
	var raw *http.Response
	send, body := m.direct(params)
	stream := svc.NewStreaming(ctx, send, append(append(append(opts, body...), extra...), option.WithResponseInto(&raw))...)
	defer stream.Close()
	if err := stream.Err(); err != nil {
		if a, ok := capture.OtherFraming(err); ok {
			resp, err := m.generateOnce(ctx, params, option.WithHTTPClient(&http.Client{Transport: a}))
			if resp != nil {
				resp.Latency = capture.Latency(m.cfg.Replay)
			}
			return resp, err
		}
		return nil, m.classify(ctx, err, capture)
	}
	if raw == nil {
		return nil, m.cfg.BadResponse(errors.New("no response"))
	}
	events := ssestream.NewDecoder(raw)
	var (
		model    string
		stop     sdk.StopReason
		blocks   []block
		usage    llm.Usage
		known    bool
		complete bool
		ev       streamEvent
	)
	tools := map[int]int{} // content block index → tool call ordinal
	for events.Next() {
		e := events.Event()
		data := bytes.TrimSuffix(e.Data, []byte("\n"))
		switch e.Type {
		case "", "ping":
			continue
		case "error":
			return nil, m.cfg.Classify(provider.Failure{StatusCode: raw.StatusCode, Header: raw.Header, Body: data,
				Err: fmt.Errorf("received error while streaming: %s", data)})
		}
		if len(data) == 0 {
			continue
		}
		// A replay is served the same events every run; each is parsed once
		// per process and only read here.
		pe, err := streamEvents.Remember(data, m.cfg.Replay, decodeStreamEvent)
		if err != nil {
			return nil, m.cfg.BadResponse(fmt.Errorf("stream event %s: %w", e.Type, err))
		}
		ev = *pe
		var c llm.Chunk
		switch e.Type {
		case "message_start":
			if ev.Message == nil {
				return nil, m.cfg.BadResponse(errors.New("message_start without a message"))
			}
			model, stop, blocks, usage, known = ev.Message.Model, ev.Message.StopReason, nil, llm.Usage{}, ev.Message.Usage != nil
			if known {
				ev.Message.Usage.into(&usage)
			}
		case "message_delta":
			if ev.Delta != nil {
				stop = ev.Delta.StopReason
			}
			if ev.Usage != nil {
				u := *ev.Usage // the event may be shared
				if u.OutputTokens == nil {
					u.OutputTokens = new(int64)
				}
				u.into(&usage)
			}
		case "content_block_start":
			cb := ev.ContentBlock
			if cb == nil || ev.Index != len(blocks) {
				return nil, m.cfg.BadResponse(fmt.Errorf("received event of type %s for content block at index %d, expected index %d", e.Type, ev.Index, len(blocks)))
			}
			blocks = append(blocks, block{typ: cb.Type, text: cb.Text, thinking: cb.Thinking, signature: cb.Signature, data: cb.Data, id: cb.ID, name: cb.Name, input: slices.Clip(cb.Input)}) // appended to below; the event may be shared
			if cb.Type == "tool_use" {
				n := len(tools)
				tools[ev.Index] = n
				c.ToolCallDelta = &llm.ToolCallDelta{Index: n, ID: cb.ID, Name: cb.Name}
			}
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= len(blocks) || ev.Delta == nil {
				return nil, m.cfg.BadResponse(fmt.Errorf("received event of type %s for content block at index %d, but there are %d blocks", e.Type, ev.Index, len(blocks)))
			}
			b, d := &blocks[ev.Index], ev.Delta
			switch d.Type {
			case "text_delta":
				b.text += d.Text
				c.TextDelta = d.Text
			case "thinking_delta":
				b.thinking += d.Thinking
				c.ThinkingDelta = d.Thinking
			case "signature_delta":
				b.signature += d.Signature
			case "input_json_delta":
				if d.PartialJSON != "" {
					if string(b.input) == "{}" {
						b.input = nil
					}
					b.input = append(b.input, d.PartialJSON...)
					if n, ok := tools[ev.Index]; ok {
						c.ToolCallDelta = &llm.ToolCallDelta{Index: n, ArgsDelta: d.PartialJSON}
					}
				}
			}
		case "message_stop":
			complete = true
		}
		if (c.TextDelta != "" || c.ThinkingDelta != "" || c.ToolCallDelta != nil) && !emit(c) {
			return nil, nil
		}
	}
	if err := events.Err(); err != nil {
		return nil, m.classify(ctx, err, capture)
	}
	if !complete {
		return nil, m.cfg.Truncated("message_stop")
	}
	if !known {
		usage = llm.UnknownUsage()
	}
	resp := assemble(model, stop, blocks, usage)
	resp.Latency = capture.Latency(m.cfg.Replay)
	return resp, nil
}
