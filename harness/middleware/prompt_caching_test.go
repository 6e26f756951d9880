package middleware_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

// breakpoints lists where a request carries cache-control markers.
func breakpoints(r llm.Request) []string {
	var out []string
	for _, t := range r.Tools {
		if t.CacheControl != nil {
			out = append(out, "tool:"+t.Name+":"+t.CacheControl.TTL)
		}
	}
	for i, b := range r.System {
		if b.CacheControl != nil {
			out = append(out, "system:"+itoa(i))
		}
	}
	for i, m := range r.Messages {
		for k, b := range m.Content {
			if b.CacheControl != nil {
				out = append(out, "message:"+itoa(i)+":"+itoa(k))
			}
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func newCaching(t *testing.T, ttl string) *middleware.AnthropicPromptCachingMiddleware {
	t.Helper()
	m, err := middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{TTL: ttl})
	require.NoError(t, err)
	return m
}

func TestAnthropicPromptCachingPlacement(t *testing.T) {
	tools := []tool.Tool{textTool("lookup", "found"), textTool("fetch", "page")}
	script := func() []fakes.Step {
		return []fakes.Step{fakes.Calls("", fakes.Call("lookup", map[string]string{"q": "x"})), fakes.Reply("done")}
	}
	t.Run("anthropic model", func(t *testing.T) {
		model := fakes.NewScripted(script()...).WithIdentity("anthropic", "claude-sonnet-4-6")
		a := newAgent(t, model, "You are helpful.", tools, newCaching(t, ""))
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("find x")}})
		require.NoError(t, err)
		reqs := model.Requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, []string{"tool:fetch:", "system:0", "message:0:0"}, breakpoints(reqs[0]))
		assert.Equal(t, []string{"tool:fetch:", "system:0", "message:2:0"}, breakpoints(reqs[1]),
			"only the latest turn is marked; the first call's marker did not leak into state")
		assert.Equal(t, "ephemeral", reqs[0].Tools[1].CacheControl.Type)
		for _, m := range res.State.Messages {
			for _, b := range m.Content {
				assert.Nil(t, b.CacheControl, "state messages are never marked")
			}
		}
		for _, s := range a.ToolSpecs() {
			assert.Nil(t, s.CacheControl)
		}
		assert.Nil(t, a.Config().System[0].CacheControl, "the agent's system blocks are not mutated")
	})
	t.Run("other providers are untouched", func(t *testing.T) {
		for _, provider := range []string{"openai", "fake", "anthropic-compatible"} {
			model := fakes.NewScripted(script()...).WithIdentity(provider, "m")
			a := newAgent(t, model, "You are helpful.", tools, newCaching(t, ""))
			_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("find x")}})
			require.NoError(t, err)
			for _, r := range model.Requests() {
				assert.Empty(t, breakpoints(r), provider)
			}
		}
	})
	t.Run("ttl", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("ok")).WithIdentity("anthropic", "claude-haiku-4-5")
		a := newAgent(t, model, "", tools, newCaching(t, "1h"))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}})
		require.NoError(t, err)
		assert.Equal(t, []string{"tool:fetch:1h", "message:0:0"}, breakpoints(model.Requests()[0]), "no system prompt, no system marker")
		_, err = middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{TTL: "10m"})
		require.ErrorContains(t, err, `ttl must be "5m" or "1h"`)
	})
	t.Run("never more than four breakpoints", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("ok")).WithIdentity("anthropic", "claude-sonnet-4-6")
		system := []llm.Block{
			{Type: llm.BlockText, Text: "A", CacheControl: llm.Ephemeral()},
			{Type: llm.BlockText, Text: "B", CacheControl: llm.Ephemeral()},
			{Type: llm.BlockText, Text: "C", CacheControl: llm.Ephemeral()},
		}
		a, err := agent.New(agent.Config{Model: model, System: system, Tools: tools, Middleware: []agent.Middleware{newCaching(t, "")}})
		require.NoError(t, err)
		_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}})
		require.NoError(t, err)
		assert.Equal(t, []string{"tool:fetch:", "system:0", "system:1", "system:2"}, breakpoints(model.Requests()[0]),
			"the caller's three markers are kept and only the tool list gets the fourth")
	})
}

// TestBedrockPromptCaching: Claude on Bedrock gets Anthropic's breakpoints
// (InvokeModel takes cache_control); Anthropic's own models, and Bedrock
// models that are not Claude, pass through untouched.
func TestBedrockPromptCaching(t *testing.T) {
	tools := []tool.Tool{textTool("lookup", "found")}
	bedrockCaching, err := middleware.NewBedrockPromptCaching(middleware.PromptCachingOptions{TTL: "1h"})
	require.NoError(t, err)
	assert.Equal(t, "BedrockPromptCachingMiddleware", bedrockCaching.Name())
	for _, tt := range []struct {
		provider, model string
		want            []string
	}{
		{"bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", []string{"tool:lookup:1h", "system:0", "message:0:0"}},
		{"amazon_bedrock", "anthropic.claude-haiku-4-5-20251001-v1:0", []string{"tool:lookup:1h", "system:0", "message:0:0"}},
		{"bedrock", "amazon.nova-pro-v1:0", nil},
		{"anthropic", "claude-sonnet-4-6", nil},
		{"vertex", "claude-sonnet-4-5@20250929", nil},
	} {
		model := fakes.NewScripted(fakes.Reply("done")).WithIdentity(tt.provider, tt.model)
		a := newAgent(t, model, "You are helpful.", tools, bedrockCaching)
		_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("find x")}})
		require.NoError(t, err)
		assert.Equal(t, tt.want, breakpoints(model.Requests()[0]), "%s:%s", tt.provider, tt.model)
	}
	_, err = middleware.NewBedrockPromptCaching(middleware.PromptCachingOptions{TTL: "2h"})
	assert.ErrorContains(t, err, `BedrockPromptCachingMiddleware: ttl must be "5m" or "1h"`)
	assert.True(t, middleware.IsBedrockProvider("bedrock-converse"))
	assert.False(t, middleware.IsBedrockProvider("anthropic"))
}
