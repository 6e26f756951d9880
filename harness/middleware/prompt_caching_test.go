package middleware_test

import (
	"context"
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

// stateProbe is the model-call wrapper inside prompt caching: it checks that
// no message of the state's history ever carries a marker the caller did not
// put there, and can replace the history before a given call.
type stateProbe struct {
	agent.Base
	t       *testing.T
	callers int // markers the caller put in the history
	calls   int
	// replaceAt, when the history has that many messages, replaces it with
	// replaceWith (a new backing array, shorter than the last call's), once.
	replaceAt   int
	replaceWith []llm.Message
	replaced    bool
}

func (*stateProbe) Name() string { return "stateProbe" }

func (p *stateProbe) BeforeModel(_ context.Context, s *agent.State) (*agent.Update, error) {
	if p.replaceAt > 0 && len(s.Messages) == p.replaceAt && !p.replaced {
		p.replaced = true
		return &agent.Update{ReplaceMessages: true, Messages: p.replaceWith}, nil
	}
	return nil, nil
}

func (p *stateProbe) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	p.calls++
	resp, err := next(ctx, req)
	// After the call, too: the marker of this call must not be in the state.
	marks := 0
	for _, m := range req.State.Messages {
		for _, b := range m.Content {
			if b.CacheControl != nil {
				marks++
			}
		}
	}
	assert.Equal(p.t, p.callers, marks, "call %d: markers in the state's history", p.calls)
	return resp, err
}

// TestAnthropicPromptCachingAcrossCalls: over a run, each request marks its
// latest message only (the marker of the previous call is gone), the
// state's history is never marked, the caller's markers count against the
// four, and a history that is replaced mid-run is marked afresh.
func TestAnthropicPromptCachingAcrossCalls(t *testing.T) {
	tools := []tool.Tool{textTool("lookup", "found")}
	script := func(calls int) []fakes.Step {
		var steps []fakes.Step
		for i := range calls - 1 {
			steps = append(steps, fakes.Calls("", fakes.Call("lookup", map[string]string{"q": itoa(i)})))
		}
		return append(steps, fakes.Reply("done"))
	}
	marked := func(text string) llm.Message {
		m := llm.User(text)
		m.Content[0].CacheControl = llm.Ephemeral()
		return m
	}
	run := func(t *testing.T, probe *stateProbe, calls int, input ...llm.Message) []llm.Request {
		t.Helper()
		probe.t = t
		model := fakes.NewScripted(script(calls)...).WithIdentity("anthropic", "claude-sonnet-4-6")
		a := newAgent(t, model, "You are helpful.", tools, newCaching(t, ""), probe)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: input})
		require.NoError(t, err)
		require.Equal(t, calls, probe.calls)
		marks := 0
		for _, m := range res.State.Messages {
			for _, b := range m.Content {
				if b.CacheControl != nil {
					marks++
				}
			}
		}
		assert.Equal(t, probe.callers, marks, "markers in the final state")
		return model.Requests()
	}
	t.Run("latest message only", func(t *testing.T) {
		reqs := run(t, &stateProbe{}, 6, llm.User("go"))
		for i, r := range reqs {
			want := []string{"tool:lookup:", "system:0", "message:" + itoa(2*i) + ":0"}
			assert.Equal(t, want, breakpoints(r), "call %d", i+1)
		}
	})
	t.Run("caller markers count", func(t *testing.T) {
		reqs := run(t, &stateProbe{callers: 1}, 4, marked("context"), llm.User("go"))
		for i, r := range reqs {
			want := []string{"tool:lookup:", "system:0", "message:0:0", "message:" + itoa(1+2*i) + ":0"}
			assert.Equal(t, want, breakpoints(r), "call %d", i+1)
		}
		reqs = run(t, &stateProbe{callers: 2}, 4, marked("context"), marked("go"))
		for i, r := range reqs {
			assert.Equal(t, []string{"tool:lookup:", "system:0", "message:0:0", "message:1:0"}, breakpoints(r),
				"call %d: the caller's two markers leave none for the latest message", i+1)
		}
	})
	t.Run("history replaced", func(t *testing.T) {
		probe := &stateProbe{replaceAt: 5, replaceWith: []llm.Message{llm.User("again")}}
		reqs := run(t, probe, 5, llm.User("go"))
		var got []string
		for _, r := range reqs {
			got = append(got, strconv.Itoa(len(r.Messages))+":"+breakpoints(r)[2])
		}
		assert.Equal(t, []string{"1:message:0:0", "3:message:2:0", "1:message:0:0", "3:message:2:0", "5:message:4:0"}, got)
		for _, r := range reqs {
			assert.Len(t, breakpoints(r), 3)
		}
	})
}
