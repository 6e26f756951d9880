package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// responsesEvent is the part of a Responses API stream event the adapter
// reads. Deltas are decoded with encoding/json rather than through the
// SDK's event union (see chatChunk); the final response, decoded once per
// call, goes through the SDK's Response type as a whole answer does, so
// both paths end in fromResponse.
type responsesEvent struct {
	Type        string `json:"type"`
	Delta       string `json:"delta"`
	OutputIndex int64  `json:"output_index"`
	Item        *struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
	} `json:"item"`
	Response json.RawMessage `json:"response"`
	Error    json.RawMessage `json:"error"`
}

// streamResponses runs one streaming Responses API attempt: the SDK sends
// the request, and the event stream is read here. A whole JSON answer
// becomes the final response with no deltas before it. Extra options come
// last.
func (m *Model) streamResponses(ctx context.Context, params responses.ResponseNewParams, emit func(llm.Chunk) bool, extra ...option.RequestOption) (*llm.Response, error) {
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
	stream := svc.responses.NewStreaming(ctx, send, append(append(append(opts, sendOpts...), extra...), option.WithResponseInto(&raw))...)
	defer stream.Close()
	if err := stream.Err(); err != nil {
		if a, ok := capture.OtherFraming(err); ok {
			return m.timed(capture)(m.responsesOnce(ctx, params, answerClient(a)))
		}
		return nil, m.classify(ctx, err, capture)
	}
	if raw == nil {
		return nil, m.cfg.BadResponse(errors.New("no response"))
	}
	events := ssestream.NewDecoder(raw)
	calls := map[int64]int{} // output index → tool call ordinal
	var final *responses.Response
	var ev responsesEvent
	for events.Next() {
		e := events.Event()
		data := e.Data
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			break
		}
		// Every response.created, in_progress and *.done event repeats the
		// whole response or item so far (tools and instructions included);
		// parsing them was a third of a streamed call. The type is read from
		// the data when it leads (as the API writes it), else from the
		// event: line, which the API sends alongside and keeps equal.
		t, leading := leadingType(data)
		if leading {
			if !responsesEventsRead[string(t)] {
				continue
			}
		} else if e.Type != "" && !responsesEventsRead[e.Type] {
			continue
		}
		var final0 *finalEvent
		if leading && responsesFinalEvents[string(t)] || !leading && responsesFinalEvents[e.Type] {
			// A final event repeats the whole response; a replay is served
			// the same ones every run, so each is parsed once per process.
			f, err := finalEvents.Remember(data, m.cfg.Replay, decodeFinalEvent)
			if err != nil {
				return nil, m.cfg.BadResponse(fmt.Errorf("stream event %s: %w", e.Type, err))
			}
			ev, final0 = f.ev, f
		} else {
			// The deltas are small but many: over a hundred a turn.
			var err error
			if ev, err = readEvents.Remember(data, m.cfg.Replay, decodeEvent); err != nil {
				return nil, m.cfg.BadResponse(fmt.Errorf("stream event %s: %w", e.Type, err))
			}
		}
		if len(ev.Error) > 0 && string(ev.Error) != "null" {
			return nil, m.classify(ctx, &ssestream.StreamError{Message: "received error while streaming: " + string(ev.Error), Event: e}, capture)
		}
		typ := ev.Type // as the SDK does, the data's type, not the event: line
		if typ == "" {
			typ = e.Type
		}
		var c llm.Chunk
		switch typ {
		case "response.output_text.delta", "response.refusal.delta":
			c.TextDelta = ev.Delta
		case "response.reasoning_summary_text.delta":
			c.ThinkingDelta = ev.Delta
		case "response.output_item.added":
			if ev.Item != nil && ev.Item.Type == "function_call" {
				n := len(calls)
				calls[ev.OutputIndex] = n
				c.ToolCallDelta = &llm.ToolCallDelta{Index: n, ID: ev.Item.CallID, Name: ev.Item.Name}
			}
		case "response.function_call_arguments.delta":
			if n, ok := calls[ev.OutputIndex]; ok && ev.Delta != "" {
				c.ToolCallDelta = &llm.ToolCallDelta{Index: n, ArgsDelta: ev.Delta}
			}
		case "response.completed", "response.incomplete", "response.failed":
			if final0 == nil { // the data's type is final, its event: line not
				final0 = &finalEvent{}
				final0.response, final0.err = decodeStreamedResponse(ev.Response)
			}
			if final0.err != nil {
				return nil, m.cfg.BadResponse(fmt.Errorf("stream event %s: %w", typ, final0.err))
			}
			final = final0.response
		case "error":
			return nil, m.cfg.Classify(provider.Failure{StatusCode: 200, Body: bytes.TrimSpace(data)})
		}
		if (c.TextDelta != "" || c.ThinkingDelta != "" || c.ToolCallDelta != nil) && !emit(c) {
			return nil, nil
		}
	}
	if err := events.Err(); err != nil {
		return nil, m.classify(ctx, err, capture)
	}
	if final == nil {
		return nil, m.cfg.Truncated("response.completed")
	}
	return m.timed(capture)(m.fromResponse(final))
}

// responsesEventsRead are the event types streamResponses uses.
var responsesEventsRead = map[string]bool{
	"response.output_text.delta": true, "response.refusal.delta": true, "response.reasoning_summary_text.delta": true,
	"response.output_item.added": true, "response.function_call_arguments.delta": true,
	"response.completed": true, "response.incomplete": true, "response.failed": true, "error": true,
}

// responsesFinalEvents are the event types that carry the whole response.
var responsesFinalEvents = map[string]bool{"response.completed": true, "response.incomplete": true, "response.failed": true}

// finalEvent is a parsed final event: its members and its response as the
// SDK's Response (or why that failed). Kept ones are shared and read-only,
// as fromResponse only reads the response.
type finalEvent struct {
	ev       responsesEvent
	response *responses.Response
	err      error
}

// finalEvents are the final events replays parsed (see provider.Answers).
var finalEvents provider.Answers[*finalEvent]

// readEvents are the other events replays parsed; a kept one's raw
// members are shared and only read.
var readEvents provider.Answers[responsesEvent]

// decodeEvent parses an event that is not final.
func decodeEvent(data []byte) (responsesEvent, error) {
	var ev responsesEvent
	err := json.Unmarshal(data, &ev)
	return ev, err
}

// decodeFinalEvent parses a final event; only its not being an event at
// all is an error, as streamResponses reports the rest in its own order.
func decodeFinalEvent(data []byte) (*finalEvent, error) {
	f := &finalEvent{}
	if err := json.Unmarshal(data, &f.ev); err != nil {
		return nil, err
	}
	// Decoded whatever the data's type says: the event: line may have
	// routed it here, and a type that is not final leaves it unread.
	f.response, f.err = decodeStreamedResponse(f.ev.Response)
	return f, nil
}

// decodeStreamedResponse decodes the response of a final event into the
// SDK's Response from the members fromResponse reads, as decodeResponse
// does for a whole answer (the echoed tools and instructions were most of
// a streamed call's decoding).
func decodeStreamedResponse(raw []byte) (*responses.Response, error) {
	if trimmed, ok := trimObject(raw, answerMembers); ok {
		raw = trimmed
	}
	r := &responses.Response{}
	if err := r.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return r, nil
}

var typePrefix = []byte(`{"type":"`)

// leadingType reads the type of an event whose JSON starts with it, as the
// API and every compatible server write them; ok is false otherwise, and
// the event is then parsed in full.
func leadingType(data []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimLeft(data, " \t\r\n"), typePrefix)
	if !ok {
		return nil, false
	}
	end := bytes.IndexAny(rest, `"\`)
	if end < 0 || rest[end] != '"' {
		return nil, false
	}
	return rest[:end], true
}
