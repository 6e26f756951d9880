package openai

import (
	"context"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// decodeRequest is the request whose answer is being decoded; the answer is
// served from memory, so what it asks does not matter.
var decodeRequest = &llm.Request{Messages: []llm.Message{llm.User("decode a recorded answer")}}

// DecodeChatAnswer returns what the adapter makes of a recorded Chat
// Completions answer (a JSON body or an event stream), through the same SDK
// client and conversion code as a live call. nMessages is the number of
// messages of the conversation the answer belongs to, not counting system
// messages: tool calls that arrived without an id get the id a replayed run
// derives from it. A non-2xx answer, an error document or a body the SDK
// cannot read gives the *llm.Error a live call would.
func DecodeChatAnswer(ctx context.Context, a provider.RecordedAnswer, nMessages int) (*llm.Response, error) {
	m, err := New(provider.DecodeConfig(provider.KindOpenAICompatible, a))
	if err != nil {
		return nil, err
	}
	streamed := a.Streamed()
	params, err := m.chatParams(decodeRequest, streamed)
	if err != nil {
		return nil, err
	}
	return provider.Do(ctx, m.cfg, func(ctx context.Context) (*llm.Response, error) {
		if streamed {
			return m.streamChat(ctx, params, nMessages, keepAll)
		}
		return m.chatOnce(ctx, params, nMessages)
	})
}

// DecodeResponsesAnswer returns what the adapter makes of a recorded
// Responses API answer (a JSON body or an event stream), through the same
// SDK client and conversion code as a live call; failures are as for
// DecodeChatAnswer.
func DecodeResponsesAnswer(ctx context.Context, a provider.RecordedAnswer) (*llm.Response, error) {
	m, err := New(provider.DecodeConfig(provider.KindOpenAI, a))
	if err != nil {
		return nil, err
	}
	params, err := m.responsesParams(decodeRequest)
	if err != nil {
		return nil, err
	}
	return provider.Do(ctx, m.cfg, func(ctx context.Context) (*llm.Response, error) {
		if a.Streamed() {
			return m.streamResponses(ctx, params, keepAll)
		}
		return m.responsesOnce(ctx, params)
	})
}
