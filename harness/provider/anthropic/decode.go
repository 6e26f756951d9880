package anthropic

import (
	"context"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// DecodeAnswer returns what the adapter makes of a recorded Messages API
// answer: the response Generate returns for a JSON body, or the final
// response Stream assembles from an event stream, through the same SDK
// client and conversion code. A non-2xx answer, an error event or a body the
// SDK cannot read gives the *llm.Error a live call would.
func DecodeAnswer(ctx context.Context, a provider.RecordedAnswer) (*llm.Response, error) {
	m, err := New(provider.DecodeConfig(provider.KindAnthropic, a))
	if err != nil {
		return nil, err
	}
	return DecodeAnswerWith(ctx, m, a)
}

// DecodeAnswerWith is DecodeAnswer through m, a model built over
// provider.DecodeConfig(kind, a): how the platform adapters decode what
// their platform recorded (Bedrock's binary event stream included).
func DecodeAnswerWith(ctx context.Context, m *Model, a provider.RecordedAnswer) (*llm.Response, error) {
	req := &llm.Request{Messages: []llm.Message{llm.User("decode a recorded answer")}}
	if !a.Streamed() {
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
