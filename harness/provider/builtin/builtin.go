package builtin

import (
	"errors"

	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
	"github.com/dageval/dageval/harness/provider/azure"
	"github.com/dageval/dageval/harness/provider/bedrock"
	"github.com/dageval/dageval/harness/provider/gemini"
	"github.com/dageval/dageval/harness/provider/openai"
	"github.com/dageval/dageval/harness/provider/vertex"
)

// NewResolver returns a resolver with the built-in entries and every
// adapter registered (Anthropic, OpenAI and compatible servers, Gemini,
// Bedrock, Vertex AI, Azure OpenAI); base is as for provider.NewResolver.
func NewResolver(base provider.Config) *provider.Resolver {
	r := provider.NewResolver(base)
	if err := errors.Join(anthropic.Register(r), openai.Register(r), gemini.Register(r), bedrock.Register(r), vertex.Register(r), azure.Register(r)); err != nil {
		// Registration only fails for unknown kinds, which would be a bug here.
		panic(err)
	}
	return r
}
