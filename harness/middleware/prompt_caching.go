package middleware

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

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
	return markAndCall(ctx, cacheMarksKey{m}, req, m.marker, next)
}

// cacheMarksKey keys a prompt caching middleware's cacheMarks in agent.RunMemo.
type cacheMarksKey struct{ m agent.Middleware }

// cacheMarks is the message list a prompt caching middleware hands the
// model across the calls of one run, so that marking the latest message
// costs the same at the thousandth step as at the tenth instead of copying
// the whole history each call. buf[:len(src)] holds src, the list as of the
// previous call, except that buf[len(src)-1] carries the marker when marked
// is set; marks counts the breakpoints src itself carries. src is either
// the state's history (whose messages never change, see agent.State; feed
// is nil) or a list lent by an earlier middleware (see lentList), call seq
// of feed, which says what changed since. Reusing buf rewrites the messages
// changed or marked by the previous call: the model is lent the request
// for the call only and copies what it keeps (as llm.ChatModel says).
type cacheMarks struct {
	mu     sync.Mutex
	src    []llm.Message
	buf    []llm.Message
	marked bool
	marks  int
	feed   any
	seq    uint64
	// lent describes buf to the middleware after it, for the call.
	lent lentList
}

// markAndCall calls next with req marked as markCachePrefix marks it. When
// the request carries the state's own history or a list an earlier
// middleware lent, and no other call of the run is using the run's
// cacheMarks, the marked message list is built by extending the previous
// call's instead of copying the history.
func markAndCall(ctx context.Context, key cacheMarksKey, req *agent.ModelRequest, marker func() *llm.CacheControl, next agent.ModelHandler) (*agent.ModelResponse, error) {
	in := lentFrom(ctx, req.Messages)
	if in == nil && (req.State == nil || !sameMessages(req.Messages, req.State.Messages)) {
		return next(ctx, markCachePrefix(req, marker))
	}
	cm := agent.RunMemo(ctx, key, func() *cacheMarks { return &cacheMarks{} })
	if !cm.mu.TryLock() {
		return next(ctx, markCachePrefix(req, marker))
	}
	defer cm.mu.Unlock()
	c, out := cm.mark(req, in, marker)
	if out != nil {
		ctx = withLent(ctx, out)
	}
	return next(ctx, c)
}

// mark returns a copy of req marked as markCachePrefix marks it, whose
// message list (when the latest message is marked) is cm.buf, and the
// description of that list for the middleware after it. in describes
// req.Messages when an earlier middleware lent them; otherwise they are the
// state's history.
func (cm *cacheMarks) mark(req *agent.ModelRequest, in *lentList, marker func() *llm.CacheControl) (*agent.ModelRequest, *lentList) {
	msgs := req.Messages
	old := len(cm.src)
	var extends bool
	if in != nil {
		extends = in.extends(cm.feed, cm.seq, old)
	} else {
		extends = old > 0 && cm.feed == nil && len(msgs) >= old && unsafe.SliceData(msgs) == unsafe.SliceData(cm.src)
	}
	if old > 0 && !extends {
		// Not an extension of the list cm.buf holds: start over in a
		// new buffer, leaving the old one to the request it was lent to.
		cm.src, cm.buf, cm.marked, cm.marks = nil, nil, false, 0
		old = 0
	}
	if cm.marked {
		cm.buf[old-1] = msgs[old-1]
		cm.marked = false
	}
	if in != nil {
		if extends {
			for _, i := range in.dirty {
				cm.buf[i] = msgs[i]
			}
		}
		cm.marks, cm.feed, cm.seq = in.marks, in.feed, in.seq
	} else {
		cm.marks += messageBreakpoints(msgs[old:])
		cm.feed, cm.seq = nil, 0
	}
	cm.buf = append(cm.buf, msgs[old:]...)
	cm.src = msgs

	budget := maxCacheBreakpoints - toolSystemBreakpoints(&req.Request) - cm.marks
	c, budget := markToolsSystem(req, budget, marker)
	if n := len(msgs); budget > 0 && n > 0 {
		if k := len(msgs[n-1].Content); k > 0 && msgs[n-1].Content[k-1].CacheControl == nil {
			last := msgs[n-1].Clone()
			last.Content[k-1].CacheControl = marker()
			cm.buf[n-1] = last
			cm.marked = true
			// Full slice expression: what is appended downstream lands in
			// a copy, never in the part of buf the next call extends.
			c.Messages = cm.buf[:n:n]
			// Only the breakpoints are vouched for: the list is not
			// described as an edit of the previous one.
			cm.lent = lentList{msgs: c.Messages, marks: cm.marks + 1}
			return c, &cm.lent
		}
	}
	return c, nil
}

// markCachePrefix returns a copy of req with cache-control breakpoints on
// the last tool, the last system block and the last block of the latest
// message, skipping targets already marked and never exceeding the four
// breakpoints the Messages API accepts (on Anthropic and on Bedrock alike).
func markCachePrefix(req *agent.ModelRequest, marker func() *llm.CacheControl) *agent.ModelRequest {
	budget := maxCacheBreakpoints - countBreakpoints(&req.Request)
	c, budget := markToolsSystem(req, budget, marker)
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

// markToolsSystem returns a copy of req with the last tool and the last
// system block marked, as far as budget allows, and what is left of budget.
func markToolsSystem(req *agent.ModelRequest, budget int, marker func() *llm.CacheControl) (*agent.ModelRequest, int) {
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
	return c, budget
}

// toolSystemBreakpoints counts the cache-control markers a request's tools
// and system blocks already carry.
func toolSystemBreakpoints(r *llm.Request) int {
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
	return n
}

// messageBreakpoints counts the cache-control markers msgs already carry.
func messageBreakpoints(msgs []llm.Message) int {
	n := 0
	for i := range msgs {
		for k := range msgs[i].Content {
			if msgs[i].Content[k].CacheControl != nil {
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
	return markAndCall(ctx, cacheMarksKey{m}, req, func() *llm.CacheControl {
		cc := llm.Ephemeral()
		cc.TTL = m.ttl
		return cc
	}, next)
}

// countBreakpoints counts the cache-control markers a request already carries.
func countBreakpoints(r *llm.Request) int {
	return toolSystemBreakpoints(r) + messageBreakpoints(r.Messages)
}
