package gemini

import (
	"bytes"
	"context"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// DecodeAnswer returns what the adapter makes of a recorded Gemini answer:
// the response Generate returns for one JSON object, or the final response
// Stream assembles from an event stream or a JSON array of chunks (what
// streamGenerateContent answers without alt=sse), through the same SDK
// client and conversion code. nMessages is the length of the recorded
// conversation, from which ids are derived for calls Gemini sent without
// one, as a replayed run derives them. A non-2xx answer, an error chunk or
// a body the SDK cannot read gives the *llm.Error a live call would.
func DecodeAnswer(ctx context.Context, a provider.RecordedAnswer, nMessages int) (*llm.Response, error) {
	m, err := New(provider.DecodeConfig(provider.KindGemini, a))
	if err != nil {
		return nil, err
	}
	req := &llm.Request{Messages: make([]llm.Message, max(nMessages, 1))}
	for i := range req.Messages {
		req.Messages[i] = llm.User("decode a recorded answer")
	}
	if !a.Streamed() && !bytes.HasPrefix(bytes.TrimSpace(a.Body), []byte("[")) {
		return m.Generate(ctx, req)
	}
	var final *llm.Response
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if c.Response != nil {
			final = c.Response
		}
	}
	return final, nil
}
