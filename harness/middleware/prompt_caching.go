package middleware

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// anthropicProvider is the provider name of Anthropic models (llm.Identity.Provider).
const anthropicProvider = "anthropic"

// maxCacheBreakpoints is how many cache-control breakpoints Anthropic
// accepts in one request.
const maxCacheBreakpoints = 4

// PromptCachingOptions configures AnthropicPromptCachingMiddleware.
type PromptCachingOptions struct {
	// TTL of the cache entries: "" (the provider's default, 5 minutes),
	// "5m" or "1h".
	TTL string
}

// AnthropicPromptCachingMiddleware marks cache-control breakpoints on
// requests to Anthropic models, so that the stable prefix of each call (tool
// definitions, system prompt, conversation so far) is read from the prompt
// cache instead of being processed again. It marks the last tool, the last
// system block and the last block of the latest message, skipping targets
// that are already marked and never exceeding the four breakpoints Anthropic
// accepts in one request. Requests to other providers pass through untouched. It edits
// copies only: the request's slices and the state's messages are never
// modified.
type AnthropicPromptCachingMiddleware struct {
	agent.Base
	ttl string
}

// NewAnthropicPromptCaching returns the middleware; the TTL must be "", "5m" or "1h".
func NewAnthropicPromptCaching(opts PromptCachingOptions) (*AnthropicPromptCachingMiddleware, error) {
	switch opts.TTL {
	case "", "5m", "1h":
	default:
		return nil, fmt.Errorf("AnthropicPromptCachingMiddleware: ttl must be \"5m\" or \"1h\", got %q", opts.TTL)
	}
	return &AnthropicPromptCachingMiddleware{ttl: opts.TTL}, nil
}

// Name implements agent.Middleware.
func (m *AnthropicPromptCachingMiddleware) Name() string { return AnthropicPromptCachingName }

func isAnthropic(model llm.ChatModel) bool {
	id, ok := llm.IdentityOf(model)
	return ok && id.Provider == anthropicProvider
}

func (m *AnthropicPromptCachingMiddleware) marker() *llm.CacheControl {
	cc := llm.Ephemeral()
	cc.TTL = m.ttl
	return cc
}

// WrapModelCall implements agent.Middleware.
func (m *AnthropicPromptCachingMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	if !isAnthropic(req.Model) {
		return next(ctx, req)
	}
	return next(ctx, markCachePrefix(req, m.marker))
}

// markCachePrefix returns a copy of req with cache-control breakpoints on
// the last tool, the last system block and the last block of the latest
// message, skipping targets already marked and never exceeding the four
// breakpoints the Messages API accepts (on Anthropic and on Bedrock alike).
func markCachePrefix(req *agent.ModelRequest, marker func() *llm.CacheControl) *agent.ModelRequest {
	budget := maxCacheBreakpoints - countBreakpoints(&req.Request)
	c := req.Clone()
	if n := len(c.Tools); budget > 0 && n > 0 && c.Tools[n-1].CacheControl == nil {
		c.Tools = slices.Clone(c.Tools)
		c.Tools[n-1].CacheControl = marker()
		budget--
	}
	if n := len(c.System); budget > 0 && n > 0 && c.System[n-1].CacheControl == nil {
		c.System = slices.Clone(c.System)
		c.System[n-1].CacheControl = marker()
		budget--
	}
	if n := len(c.Messages); budget > 0 && n > 0 {
		if k := len(c.Messages[n-1].Content); k > 0 && c.Messages[n-1].Content[k-1].CacheControl == nil {
			last := c.Messages[n-1].Clone()
			last.Content[k-1].CacheControl = marker()
			c.Messages = slices.Clone(c.Messages)
			c.Messages[n-1] = last
		}
	}
	return c
}

// countBreakpoints counts the cache-control markers a request already carries.
func countBreakpoints(r *llm.Request) int {
	n := 0
	for i := range r.Tools {
		if r.Tools[i].CacheControl != nil {
			n++
		}
	}
	for i := range r.System {
		if r.System[i].CacheControl != nil {
			n++
		}
	}
	for i := range r.Messages {
		for k := range r.Messages[i].Content {
			if r.Messages[i].Content[k].CacheControl != nil {
				n++
			}
		}
	}
	return n
}

// bedrockProviders are the provider names under which a model runs on
// Amazon Bedrock: dageval's built-in entry and the names Deep Agents'
// is_bedrock_model recognises.
var bedrockProviders = []string{"bedrock", "amazon_bedrock", "anthropic_bedrock", "aws", "bedrock_converse"}

// IsBedrockModel reports whether a model runs on Amazon Bedrock, judged by
// its provider name as Deep Agents judges a spec.
func IsBedrockModel(model llm.ChatModel) bool {
	id, ok := llm.IdentityOf(model)
	return ok && IsBedrockProvider(id.Provider)
}

// IsBedrockProvider reports whether a provider name is one of Bedrock's.
func IsBedrockProvider(name string) bool {
	return slices.Contains(bedrockProviders, strings.ReplaceAll(strings.ToLower(name), "-", "_"))
}

// BedrockPromptCachingMiddleware is Deep Agents' Bedrock variant of prompt
// caching (langchain-aws's BedrockPromptCachingMiddleware): for Claude on
// Amazon Bedrock, whose InvokeModel API takes the Messages API's
// cache_control, it marks the same breakpoints AnthropicPromptCachingMiddleware
// marks on Anthropic. Requests to other models (other providers, or Bedrock
// models that are not Claude) pass through untouched, as Deep Agents'
// "ignore" behaviour has it. It edits copies only.
type BedrockPromptCachingMiddleware struct {
	agent.Base
	ttl string
}

// NewBedrockPromptCaching returns the middleware; the TTL must be "", "5m"
// or "1h" (the 1-hour TTL only where Bedrock offers it for the model).
func NewBedrockPromptCaching(opts PromptCachingOptions) (*BedrockPromptCachingMiddleware, error) {
	switch opts.TTL {
	case "", "5m", "1h":
	default:
		return nil, fmt.Errorf("BedrockPromptCachingMiddleware: ttl must be \"5m\" or \"1h\", got %q", opts.TTL)
	}
	return &BedrockPromptCachingMiddleware{ttl: opts.TTL}, nil
}

// Name implements agent.Middleware.
func (m *BedrockPromptCachingMiddleware) Name() string { return BedrockPromptCachingName }

// WrapModelCall implements agent.Middleware.
func (m *BedrockPromptCachingMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	id, ok := llm.IdentityOf(req.Model)
	if !ok || !IsBedrockProvider(id.Provider) || !strings.Contains(strings.ToLower(id.Model), "anthropic") {
		return next(ctx, req)
	}
	return next(ctx, markCachePrefix(req, func() *llm.CacheControl {
		cc := llm.Ephemeral()
		cc.TTL = m.ttl
		return cc
	}))
}
