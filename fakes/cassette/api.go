package cassette

import "strings"

// The wire APIs of the model providers whose exchanges cassettes hold; the
// local server (fakes/llmserver) speaks them and reports them by these names.
const (
	APIAnthropicMessages = "anthropic-messages"      // POST /v1/messages
	APIOpenAIChat        = "openai-chat-completions" // POST /v1/chat/completions
	APIOpenAIResponses   = "openai-responses"        // POST /v1/responses
)

// APIOf names the wire API of a request path: APIAnthropicMessages for
// .../v1/messages, APIOpenAIChat for .../chat/completions,
// APIOpenAIResponses for .../responses, and "" for any other path.
func APIOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		return APIAnthropicMessages
	case strings.HasSuffix(path, "/chat/completions"):
		return APIOpenAIChat
	case strings.HasSuffix(path, "/responses"):
		return APIOpenAIResponses
	}
	return ""
}
