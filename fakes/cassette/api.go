package cassette

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
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
	// APIBedrockInvoke is Claude's Messages API on Amazon Bedrock: POST
	// /model/{model}/invoke, or /invoke-with-response-stream for AWS's
	// binary event stream; the model and stream flag live in the path.
	APIBedrockInvoke = "bedrock-invoke"
	// APIVertexAnthropic is Claude's Messages API on Google Vertex AI: POST
	// /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict,
	// or :streamRawPredict for server-sent events.
	APIVertexAnthropic = "vertex-anthropic"
)

// Gemini's method suffixes: the model is in the path and streaming is a
// different method, not a body field.
const (
	geminiGenerate = ":generateContent"
	geminiStream   = ":streamGenerateContent"
)

// vertexAnthropic matches a Vertex AI path to a Claude model and captures
// its project and location segments.
var vertexAnthropic = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(/v1/projects/)([^/]+)(/locations/)([^/]+)(/publishers/anthropic/models/[^/]+:(?:streamRawPredict|rawPredict))$`)
})

// bedrockInvoke matches a Bedrock InvokeModel path.
var bedrockInvoke = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/model/[^/]+/(?:invoke|invoke-with-response-stream)$`)
})

// APIOf names the wire API of a request path: APIAnthropicMessages for
// .../v1/messages, APIBedrockInvoke for Bedrock's /model/{id}/invoke paths,
// APIVertexAnthropic for Vertex AI's Claude paths, APIOpenAIChat for
// .../chat/completions (Azure OpenAI's /openai/deployments/{d}/chat/completions
// included), APIOpenAIResponses for .../responses (Azure's /openai/responses
// and /openai/v1/responses included), APIGemini for
// .../models/{model}:generateContent and :streamGenerateContent, and ""
// for any other path.
func APIOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		return APIAnthropicMessages
	case strings.HasPrefix(path, "/model/") && bedrockInvoke().MatchString(path):
		return APIBedrockInvoke
	case strings.Contains(path, "/publishers/anthropic/models/") && vertexAnthropic().MatchString(path):
		return APIVertexAnthropic
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

// IsStreamPath reports whether a path asks for a stream by itself, as
// Gemini's, Bedrock's and Vertex AI's do (elsewhere the body's "stream"
// says).
func IsStreamPath(path string) bool {
	return strings.HasSuffix(path, geminiStream) || strings.HasSuffix(path, ":streamRawPredict") ||
		strings.HasSuffix(path, "/invoke-with-response-stream") && bedrockInvoke().MatchString(path)
}

// MatchPath is the path a request is matched on by body (MatchBody): the
// path itself, except that Vertex AI paths stand for any project and
// location. Those segments say where a recording was made, as a host does,
// not what was asked, and a replay in CI needs neither configured. Where a
// path asks for a stream (IsStreamPath) it is matched as it is: a body
// match tells a streamed call from a whole one for every provider alike.
func MatchPath(path string) string {
	if !strings.Contains(path, "/publishers/anthropic/models/") {
		return path
	}
	return vertexAnthropic().ReplaceAllString(path, "${1}*${3}*${5}")
}

// RoutePath is the path a request is matched on in order (MatchOrder):
// MatchPath, with the whole and streamed forms of one call (Gemini's
// :generateContent and :streamGenerateContent, Bedrock's invoke and
// invoke-with-response-stream, Vertex AI's rawPredict and
// streamRawPredict) one route. Replay decodes an answer by how it was
// recorded, not by how it is asked for, so in order a streamed recording
// answers a whole call and the reverse, as it does for the providers that
// ask for a stream in the body.
//
// Matched by body (MatchBody), MatchPath applies instead: turning a
// suite's `stream:` off or on then misses, with a message saying so
// (fakes/recorder), instead of replaying a recording of the other kind of
// call.
func RoutePath(path string) string {
	path = MatchPath(path)
	switch {
	case strings.HasSuffix(path, geminiStream):
		return strings.TrimSuffix(path, geminiStream) + geminiGenerate
	case strings.HasSuffix(path, ":streamRawPredict"):
		return strings.TrimSuffix(path, ":streamRawPredict") + ":rawPredict"
	case strings.HasSuffix(path, "/invoke-with-response-stream") && bedrockInvoke().MatchString(path):
		return strings.TrimSuffix(path, "-with-response-stream")
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
