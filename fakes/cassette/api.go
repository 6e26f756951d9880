package cassette

import (
	"net/url"
	"strings"
)

// The wire APIs of the model providers whose exchanges cassettes hold; the
// local server (fakes/llmserver) speaks them and reports them by these names.
const (
	APIAnthropicMessages = "anthropic-messages"      // POST /v1/messages
	APIOpenAIChat        = "openai-chat-completions" // POST /v1/chat/completions
	APIOpenAIResponses   = "openai-responses"        // POST /v1/responses
	// APIGemini is Gemini's generateContent, whole or streamed:
	// POST /v1beta/models/{model}:generateContent and
	// POST /v1beta/models/{model}:streamGenerateContent (?alt=sse).
	APIGemini = "gemini-generate-content"
)

// Gemini's method suffixes: the model is in the path and streaming is a
// different method, not a body field.
const (
	geminiGenerate = ":generateContent"
	geminiStream   = ":streamGenerateContent"
)

// APIOf names the wire API of a request path: APIAnthropicMessages for
// .../v1/messages, APIOpenAIChat for .../chat/completions,
// APIOpenAIResponses for .../responses, APIGemini for
// .../models/{model}:generateContent and :streamGenerateContent, and ""
// for any other path.
func APIOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		return APIAnthropicMessages
	case strings.HasSuffix(path, "/chat/completions"):
		return APIOpenAIChat
	case strings.HasSuffix(path, "/responses"):
		return APIOpenAIResponses
	case strings.HasSuffix(path, geminiGenerate), strings.HasSuffix(path, geminiStream):
		return APIGemini
	}
	return ""
}

// GeminiCall reads the model and the streaming choice from a Gemini path,
// e.g. ("gemini-2.5-flash", true) for
// /v1beta/models/gemini-2.5-flash:streamGenerateContent; ok is false for
// other paths.
func GeminiCall(path string) (model string, stream, ok bool) {
	var rest string
	switch {
	case strings.HasSuffix(path, geminiStream):
		rest, stream = strings.TrimSuffix(path, geminiStream), true
	case strings.HasSuffix(path, geminiGenerate):
		rest = strings.TrimSuffix(path, geminiGenerate)
	default:
		return "", false, false
	}
	i := strings.LastIndex(rest, "/models/")
	if i < 0 {
		return "", false, false
	}
	return rest[i+len("/models/"):], stream, true
}

// RoutePath is the path a request is matched on in order (MatchOrder),
// where Gemini's whole and streamed forms of one call are one route:
// replay decodes an answer by how it was recorded, not by how it is asked
// for, so in order a streamed recording answers a whole call and the
// reverse, as it does for the providers that ask for a stream in the body.
//
// Matched by body (MatchBody), the path is matched as it is: Gemini asks
// for a stream in the path (:streamGenerateContent) where the others set
// "stream" in the body, and a body match tells a streamed call from a
// whole one for every provider alike. Turning a suite's `stream:` off or
// on then misses, with a message saying so (fakes/recorder), instead of
// replaying a recording of the other kind of call.
func RoutePath(path string) string {
	if strings.HasSuffix(path, geminiStream) {
		return strings.TrimSuffix(path, geminiStream) + geminiGenerate
	}
	return path
}

// routeQuery drops Gemini's alt=sse from the query a body match compares:
// it asks for the streamed answer as server-sent events rather than a JSON
// array, a shape replay reads either way, while whether the call streams
// at all is in the path.
func routeQuery(u *url.URL, q url.Values) {
	if APIOf(u.Path) == APIGemini {
		q.Del("alt")
	}
}
