package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
	"github.com/dageval/dageval/harness/provider/bedrock"
	"github.com/dageval/dageval/harness/provider/gemini"
	"github.com/dageval/dageval/harness/provider/openai"
	"github.com/dageval/dageval/harness/provider/vertex"
)

// ErrNoAdapter is wrapped by Decode's error for a request path no adapter speaks.
var ErrNoAdapter = fmt.Errorf("no adapter speaks this path (known: /v1/messages, /chat/completions, /responses, /models/{model}:generateContent, Bedrock's /model/{id}/invoke, Vertex AI's .../publishers/anthropic/models/{model}:rawPredict)")

// Answer is the recorded response of it, with its recorded duration in
// provider.DurationHeader as a recorder serves it, so that decoding reports
// the recorded latency.
func Answer(it *vcr.Interaction) provider.RecordedAnswer {
	h := it.Response.Headers.Clone()
	if h == nil {
		h = http.Header{}
	}
	d := "unknown"
	if it.Response.Duration > 0 {
		d = it.Response.Duration.String()
	}
	h.Set(provider.DurationHeader, d)
	return provider.RecordedAnswer{StatusCode: it.Response.Code, Header: h, Body: []byte(it.Response.Body)}
}

// Decode reads a recorded interaction's answer with the adapter its request
// path selects (see cassette.APIOf), JSON, server-sent events or Bedrock's
// binary event stream, exactly as a replayed run would; Azure OpenAI's
// deployment paths read as the OpenAI APIs they speak. Failed answers give
// the adapter's *llm.Error. Chat Completions and Gemini tool calls that
// the server sent without an id get the id a replayed run derives for
// them, from the length of the recorded conversation.
func Decode(ctx context.Context, it *vcr.Interaction) (*llm.Response, error) {
	u, err := url.Parse(it.Request.URL)
	if err != nil {
		return nil, fmt.Errorf("request url: %w", err)
	}
	switch cassette.APIOf(u.Path) {
	case cassette.APIAnthropicMessages:
		return anthropic.DecodeAnswer(ctx, Answer(it))
	case cassette.APIBedrockInvoke:
		return bedrock.DecodeAnswer(ctx, Answer(it))
	case cassette.APIVertexAnthropic:
		return vertex.DecodeAnswer(ctx, Answer(it))
	case cassette.APIOpenAIChat:
		return openai.DecodeChatAnswer(ctx, Answer(it), conversationLength(it.Request.Body))
	case cassette.APIOpenAIResponses:
		return openai.DecodeResponsesAnswer(ctx, Answer(it))
	case cassette.APIGemini:
		return gemini.DecodeAnswer(ctx, Answer(it), geminiConversationLength(it.Request.Body))
	}
	return nil, fmt.Errorf("%s %s: %w", it.Request.Method, u.Path, ErrNoAdapter)
}

// conversationLength counts the messages of a recorded Chat Completions
// request that the adapter's request would hold outside its system prompt.
func conversationLength(body string) int {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if json.Unmarshal([]byte(body), &req) != nil {
		return 0
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role != "system" && m.Role != "developer" {
			n++
		}
	}
	return n
}

// geminiConversationLength counts the messages of a recorded Gemini
// request as the adapter's request would hold them: one per content, except
// that a turn of function responses is one tool message per response.
func geminiConversationLength(body string) int {
	var req struct {
		Contents []struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal([]byte(body), &req) != nil {
		return 0
	}
	n := 0
	for _, c := range req.Contents {
		responses := 0
		for _, p := range c.Parts {
			if _, ok := p["functionResponse"]; ok {
				responses++
			} else if _, ok := p["function_response"]; ok {
				responses++
			}
		}
		n += max(responses, 1)
	}
	return n
}
