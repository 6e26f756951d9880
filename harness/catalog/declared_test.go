package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
)

func TestWithDeclaresUnknownModels(t *testing.T) {
	base := catalog.Default()
	qwen := llm.Identity{Provider: "ollama", Model: "qwen3"}
	_, ok := base.ContextWindow(qwen)
	require.False(t, ok, "the embedded catalog does not list ollama:qwen3")

	c, err := base.With(catalog.Declaration{Spec: "ollama:qwen3", ContextWindow: 32768,
		Prices: &catalog.Prices{InputPerMTok: 0.1, OutputPerMTok: 0.4}})
	require.NoError(t, err)
	w, ok := c.ContextWindow(qwen)
	require.True(t, ok)
	assert.Equal(t, 32768, w)
	_, ok = base.ContextWindow(qwen)
	assert.False(t, ok, "With leaves the catalog it was called on alone")

	cost, err := c.Cost("ollama:qwen3", llm.Usage{InputTokens: 1_000_000, OutputTokens: 500_000})
	require.NoError(t, err)
	assert.InDelta(t, 0.3, cost.USD, 1e-9, "declared prices win over the self-hosted zero")
	assert.False(t, cost.SelfHosted)
	assert.True(t, cost.Verified)

	free, err := c.Cost("ollama:llama3", llm.Usage{InputTokens: 10})
	require.NoError(t, err)
	assert.True(t, free.SelfHosted, "undeclared self-hosted models still cost nothing")
}

func TestWithOverridesListedFigures(t *testing.T) {
	listed, err := catalog.Lookup("anthropic:claude-sonnet-4-6")
	require.NoError(t, err)
	c, err := catalog.Default().With(
		catalog.Declaration{Spec: "anthropic:claude-sonnet-4-6-20260101", ContextWindow: 100_000},
		catalog.Declaration{Spec: "anthropic:claude-sonnet-4-6", MaxOutput: 8000},
	)
	require.NoError(t, err)
	m, err := c.Lookup("anthropic:claude-sonnet-4-6")
	require.NoError(t, err)
	assert.Equal(t, 100_000, m.ContextWindow, "a dated spec declares the listed model")
	assert.Equal(t, 8000, m.MaxOutput)
	assert.Equal(t, listed.Price, m.Price, "figures a declaration leaves out are kept")
}

func TestDeclarationValidate(t *testing.T) {
	tests := []struct {
		d    catalog.Declaration
		want string
	}{
		{catalog.Declaration{Spec: "qwen3", ContextWindow: 1}, "spec: "},
		{catalog.Declaration{Spec: "local:qwen3", ContextWindow: -1}, "context_window: must not be negative"},
		{catalog.Declaration{Spec: "local:qwen3", ContextWindow: 10, MaxOutput: 20}, "max_output: 20 is more than the context window"},
		{catalog.Declaration{Spec: "local:qwen3", Prices: &catalog.Prices{OutputPerMTok: -2}}, "prices.output_per_mtok: must be a non-negative"},
		{catalog.Declaration{Spec: "local:qwen3"}, "gives no facts"},
	}
	for _, tt := range tests {
		assert.ErrorContains(t, tt.d.Validate(), tt.want, tt.d.Spec)
	}
	_, err := catalog.Default().With(catalog.Declaration{Spec: "local:qwen3"})
	assert.ErrorContains(t, err, "catalog: model local:qwen3: the declaration gives no facts")
}

func TestSuggest(t *testing.T) {
	c := catalog.Default()
	for spec, want := range map[string]string{
		"openai:gpt5":                 "openai:gpt-5",
		"anthropic:claude-sonnet-4.6": "anthropic:claude-sonnet-4-6",
		"anthropic:claude-sonet-4-6":  "anthropic:claude-sonnet-4-6",
		"OpenAI:GPT-5-Mini-x":         "openai:gpt-5-mini",
	} {
		got, ok := c.Suggest(spec)
		assert.True(t, ok, spec)
		assert.Equal(t, want, got, spec)
	}
	for _, spec := range []string{"local:qwen3", "openai:gpt-5", "openai:o", "not a spec"} {
		got, ok := c.Suggest(spec)
		assert.False(t, ok, "%s → %s", spec, got)
	}
}
