package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// TestModelsOfOneResolverShareTheirClient: the models a resolver builds
// for the same URL and headers share one SDK client (an eval run builds
// two per cell), while each keeps its own caches, and a model with another
// URL, other headers or another resolver's HTTP client gets its own and
// sends its calls where its config says.
func TestModelsOfOneResolverShareTheirClient(t *testing.T) {
	seen := map[string]string{}
	serve := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen[name] = r.Header.Get("X-Team")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"from ` + name + `"}}]}`))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := serve("a"), serve("b")
	newResolver := func() *provider.Resolver {
		r := provider.NewResolver(provider.Config{HTTPClient: &http.Client{}})
		require.NoError(t, Register(r))
		require.NoError(t, r.SetEntries(map[string]provider.Entry{
			"a":     {Kind: provider.KindOpenAICompatible, BaseURL: a.URL + "/v1", KeyOptional: true},
			"a-red": {Kind: provider.KindOpenAICompatible, BaseURL: a.URL + "/v1", KeyOptional: true, Headers: map[string]string{"X-Team": "red"}},
			"b":     {Kind: provider.KindOpenAICompatible, BaseURL: b.URL + "/v1", KeyOptional: true},
		}))
		return r
	}
	r := newResolver()
	build := func(r *provider.Resolver, spec string) *Model {
		m, err := r.Resolve(spec)
		require.NoError(t, err)
		return m.(*Model)
	}
	m1, m2 := build(r, "a:model-a"), build(r, "a:model-b")
	assert.NotSame(t, m1, m2)
	assert.Same(t, &m1.base[0], &m2.base[0], "two models of one resolver for the same URL built two clients")
	assert.NotSame(t, &m1.chatMessages, &m2.chatMessages)
	for _, other := range []*Model{build(r, "a-red:model-a"), build(r, "b:model-a"), build(newResolver(), "a:model-a")} {
		assert.NotSame(t, &m1.base[0], &other.base[0], other.cfg.Provider)
	}

	ask := func(m *Model) string {
		resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
		require.NoError(t, err)
		return resp.Message.Text()
	}
	assert.Equal(t, "from a", ask(m2))
	assert.Equal(t, "from a", ask(build(r, "a-red:model-a")))
	assert.Equal(t, "red", seen["a"])
	assert.Equal(t, "from b", ask(build(r, "b:model-a")))
	assert.Equal(t, "", seen["b"])
	assert.Equal(t, "from a", ask(build(r, "a:model-a")))
	assert.Equal(t, "", seen["a"], "a model without the header sent another model's")
}
