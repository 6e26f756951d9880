package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
)

func TestEmbeddedCatalogParsesAndCoversTheBrief(t *testing.T) {
	c := catalog.Default()
	assert.Equal(t, "2026-11-25", c.Version())
	for _, spec := range []string{
		"anthropic:claude-opus-4-7", "anthropic:claude-sonnet-4-6", "anthropic:claude-haiku-4-5",
		"anthropic:claude-opus-4-6", "anthropic:claude-opus-4-5", "anthropic:claude-sonnet-4-5",
		"anthropic:claude-opus-4-1", "anthropic:claude-sonnet-4-0",
		"openai:gpt-5", "openai:gpt-5-mini", "openai:gpt-5-nano", "openai:gpt-4.1", "openai:gpt-4o",
		"openai:gpt-4o-mini", "openai:gpt-5-codex",
		"groq:openai/gpt-oss-120b", "ollama:llama3.1:8b",
		"gemini:gemini-3.1-pro-preview", "gemini:gemini-3-flash-preview", "gemini:gemini-2.5-pro",
		"gemini:gemini-2.5-flash", "gemini:gemini-2.5-flash-lite",
	} {
		m, err := c.Lookup(spec)
		require.NoError(t, err, spec)
		assert.Positive(t, m.ContextWindow, spec)
		assert.NotEmpty(t, m.Source, "every entry cites its source: %s", spec)
	}
	for _, m := range c.Models() {
		if m.Price != nil {
			assert.GreaterOrEqual(t, m.Price.Output, m.Price.Input, "%s: output is never cheaper than input", m.Spec())
			assert.LessOrEqual(t, m.Price.CacheRead, m.Price.Input, "%s: cache reads are never dearer than input", m.Spec())
		}
	}
}

func TestLookupByAliasAndSnapshotDate(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"anthropic:claude-haiku-4-5-20251001", "anthropic:claude-haiku-4-5"},   // alias
		{"anthropic:claude-sonnet-4-5-20250929", "anthropic:claude-sonnet-4-5"}, // alias
		{"anthropic:claude-sonnet-4-6-20260101", "anthropic:claude-sonnet-4-6"}, // unknown snapshot date falls back
		{"openai:gpt-4o-2024-08-06", "openai:gpt-4o"},                           // alias
		{"openai:gpt-4o-2024-05-13", "openai:gpt-4o-2024-05-13"},                // its own, dearer entry
		{"openai:gpt-4o-mini-2024-07-18", "openai:gpt-4o-mini"},                 // as in the recordings
		{"openai:gpt-4.1-2025-04-14", "openai:gpt-4.1"},
		{"google_genai:gemini-2.5-flash", "gemini:gemini-2.5-flash"}, // LangChain's provider name
		{"gemini-openai:gemini-2.5-pro", "gemini:gemini-2.5-pro"},    // the OpenAI-compatible endpoint
		{"gemini:gemini-2.0-flash-001", "gemini:gemini-2.0-flash"},   // as in the recordings
	}
	for _, tt := range tests {
		m, err := catalog.Lookup(tt.spec)
		require.NoError(t, err, tt.spec)
		assert.Equal(t, tt.want, m.Spec(), tt.spec)
	}
}

func TestUnknownModelsAreNeverFree(t *testing.T) {
	u := llm.Usage{InputTokens: 1000, OutputTokens: 100}
	for _, spec := range []string{"openai:gpt-9", "anthropic:claude-3-opus-20240229", "openrouter:mistralai/mistral-small", "local:model-a"} {
		_, err := catalog.Lookup(spec)
		assert.ErrorIs(t, err, catalog.ErrUnknownModel, spec)
		c, err := catalog.CostOf(spec, u)
		require.ErrorIs(t, err, catalog.ErrUnknownModel, spec)
		assert.Contains(t, err.Error(), spec)
		assert.Contains(t, err.Error(), catalog.Version())
		assert.Equal(t, catalog.Cost{}, c)
	}
	_, err := catalog.CostOf("not a spec", u)
	assert.Error(t, err)
}

func TestUnpricedAndSelfHosted(t *testing.T) {
	u := llm.Usage{InputTokens: 1000, OutputTokens: 100}
	// A self-hosted provider costs nothing, listed or not, and says so.
	for _, spec := range []string{"ollama:llama3.1:8b", "ollama:llama3:8b", "vllm:my-finetune", "llamacpp:model"} {
		c, err := catalog.CostOf(spec, u)
		require.NoError(t, err, spec)
		assert.True(t, c.SelfHosted, spec)
		assert.Zero(t, c.USD, spec)
		assert.Equal(t, "$0.000000 (self-hosted)", c.String())
	}
	// Self-hosted models still need an entry for their context window.
	_, err := catalog.Lookup("ollama:llama3:8b")
	assert.ErrorIs(t, err, catalog.ErrUnknownModel)

	c, err := catalog.Parse("t.yaml", []byte("version: v1\ncurrency: USD\nmodels:\n  - {provider: x, id: y, context_window: 10}\n"))
	require.NoError(t, err)
	_, err = c.Cost("x:y", u)
	assert.ErrorIs(t, err, catalog.ErrUnpriced)
}

func TestCostArithmetic(t *testing.T) {
	// The Anthropic tool-output recording's first turn: 445 in, 23 out on Sonnet 4.5.
	c, err := catalog.CostOf("anthropic:claude-sonnet-4-5-20250929", llm.Usage{InputTokens: 445, OutputTokens: 23})
	require.NoError(t, err)
	assert.InDelta(t, 445*3.0/1e6+23*15.0/1e6, c.USD, 1e-12)
	assert.Equal(t, "anthropic:claude-sonnet-4-5", c.Model)
	assert.True(t, c.Verified)

	c, err = catalog.CostOf("anthropic:claude-sonnet-4-6", llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 1_000_000})
	require.NoError(t, err)
	assert.InDelta(t, 3+15+0.3+3.75, c.USD, 1e-9)
	assert.InDelta(t, 0.3, c.CacheRead, 1e-12)
	assert.InDelta(t, 3.75, c.CacheWrite, 1e-12)

	c, err = catalog.CostOf("openai:gpt-5.5", llm.Usage{InputTokens: 1_000_000})
	require.NoError(t, err)
	assert.False(t, c.Verified)
	assert.Equal(t, "$5.000000 (unverified price)", c.String())
}

// TestGeminiCostCountsCachedTokensAsReads: the adapter reports Gemini's
// cached prompt tokens as cache reads, priced at the cache rate.
func TestGeminiCostCountsCachedTokensAsReads(t *testing.T) {
	c, err := catalog.CostOf("google_genai:gemini-2.5-pro", llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000})
	require.NoError(t, err)
	assert.InDelta(t, 1.25+10+0.125, c.USD, 1e-9)
	assert.Equal(t, "gemini:gemini-2.5-pro", c.Model, "priced under the canonical spec")
	// A model declared under the alias is found under it; the alias still
	// reaches the listed ones.
	d, err := catalog.Default().With(catalog.Declaration{Spec: "google_genai:gemini-9-preview", ContextWindow: 2_000_000})
	require.NoError(t, err)
	m, err := d.Lookup("google_genai:gemini-9-preview")
	require.NoError(t, err)
	assert.Equal(t, 2_000_000, m.ContextWindow)
	m, err = d.Lookup("google_genai:gemini-2.5-pro")
	require.NoError(t, err)
	assert.Equal(t, "gemini:gemini-2.5-pro", m.Spec())
	_, err = catalog.Parse("bad.yaml", []byte("version: v\ncurrency: USD\nprovider_aliases: {a: a}\n"))
	assert.ErrorContains(t, err, "bad.yaml:3: provider_aliases")
}

func TestParseErrorsNameFileLineAndField(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"unknown field", "version: v\ncurrency: USD\nmodels:\n  - provider: a\n    id: b\n    contxt_window: 3\n", "bad.yaml: [6:5] unknown field \"contxt_window\""},
		{"negative price", "version: v\ncurrency: USD\nmodels:\n  - provider: a\n    id: b\n    price:\n      input: -1\n      output: 2\n", "bad.yaml:7: models[0] (a:b): price.input must be a non-negative number"},
		{"missing id", "version: v\ncurrency: USD\nmodels:\n  - provider: a\n", "bad.yaml:4: models[0]: provider and id are required"},
		{"duplicate alias", "version: v\ncurrency: USD\nmodels:\n  - {provider: a, id: b}\n  - {provider: a, id: c, aliases: [b]}\n", "bad.yaml:5: models[1]: a:b is already listed by models[0]"},
		{"no version", "currency: USD\n", "bad.yaml: version is required"},
		{"currency", "version: v\ncurrency: EUR\n", "bad.yaml:2: currency \"EUR\" is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := catalog.Parse("bad.yaml", []byte(tt.data))
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "got %q", err.Error())
		})
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	m, err := catalog.Lookup("anthropic:claude-haiku-4-5")
	require.NoError(t, err)
	m.Price.Input = 99
	m.Aliases[0] = "changed"
	again, err := catalog.Lookup("anthropic:claude-haiku-4-5")
	require.NoError(t, err)
	assert.Equal(t, 1.0, again.Price.Input)
	assert.Equal(t, "claude-haiku-4-5-20251001", again.Aliases[0])
	assert.False(t, errors.Is(err, catalog.ErrUnknownModel))
}

func TestContextWindow(t *testing.T) {
	w, ok := catalog.ContextWindow(llm.Identity{Provider: "anthropic", Model: "claude-sonnet-4-6"})
	assert.True(t, ok)
	assert.Positive(t, w)
	_, ok = catalog.ContextWindow(llm.Identity{Provider: "local", Model: "model-a"})
	assert.False(t, ok, "unknown models have no window")
}

// TestCloudRoutes: Bedrock ids say their route (global, geographic or
// in-region, or an ARN of either), and from the 4.5 models on the routes
// other than global cost 10% more; Vertex AI and Azure OpenAI entries are
// priced at their global route. Cloud prices are never marked verified.
func TestCloudRoutes(t *testing.T) {
	tests := []struct {
		spec, want string
		input      float64
	}{
		{"bedrock:global.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock:global.anthropic.claude-sonnet-4-5-20250929-v1:0", 3},
		{"bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0", 3.3},
		{"bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0", 3.3},
		{"bedrock:arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock:anthropic.claude-haiku-4-5-20251001-v1:0", 1.1},
		{"bedrock:apac.anthropic.claude-sonnet-4-20250514-v1:0", "bedrock:anthropic.claude-sonnet-4-20250514-v1:0", 3},
		{"bedrock:global.anthropic.claude-sonnet-4-20250514-v1:0", "bedrock:anthropic.claude-sonnet-4-20250514-v1:0", 3},
		{"vertex:claude-sonnet-4-5@20250929", "vertex:claude-sonnet-4-5@20250929", 3},
		{"vertex:claude-opus-4-6", "vertex:claude-opus-4-6", 5},
		{"azure_openai:gpt-4.1", "azure_openai:gpt-4.1", 2},
	}
	for _, tt := range tests {
		m, err := catalog.Lookup(tt.spec)
		require.NoError(t, err, tt.spec)
		assert.Equal(t, tt.want, m.Spec(), tt.spec)
		require.NotNil(t, m.Price, tt.spec)
		assert.InDelta(t, tt.input, m.Price.Input, 1e-9, tt.spec)
		assert.False(t, m.Verified, "%s: secondary sources only", tt.spec)
		assert.Positive(t, m.ContextWindow, tt.spec)
	}
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}
	global, err := catalog.CostOf("bedrock:global.anthropic.claude-sonnet-4-5-20250929-v1:0", u)
	require.NoError(t, err)
	geo, err := catalog.CostOf("bedrock:eu.anthropic.claude-sonnet-4-5-20250929-v1:0", u)
	require.NoError(t, err)
	assert.InDelta(t, 18, global.USD, 1e-9)
	assert.InDelta(t, 19.8, geo.USD, 1e-9)
	assert.Contains(t, geo.String(), "unverified price")
	_, err = catalog.Lookup("bedrock:amazon.nova-pro-v1:0")
	assert.ErrorIs(t, err, catalog.ErrUnknownModel)
}

// BenchmarkParseEmbedded is what the first Lookup of a process pays: every
// CLI command that sizes or prices a model parses the catalog once.
func BenchmarkParseEmbedded(b *testing.B) {
	for b.Loop() {
		if _, err := catalog.Parse("models.yaml", catalog.EmbeddedYAML()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDefault is what Default pays once per process: decoding the
// embedded catalog (models_gen.go).
func BenchmarkDefault(b *testing.B) {
	for b.Loop() {
		if _, err := catalog.DecodeEmbedded(); err != nil {
			b.Fatal(err)
		}
	}
}
