package builtin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/provider/gemini"
	"github.com/dageval/dageval/harness/provider/openai"
)

// TestEveryBuiltinEntryBuildsARealModelWithoutAKey is what assembling an
// agent relies on: resolving never needs credentials.
func TestEveryBuiltinEntryBuildsARealModelWithoutAKey(t *testing.T) {
	env := map[string]string{"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com"}
	r := builtin.NewResolver(provider.Config{Getenv: func(k string) string { return env[k] }})
	for _, name := range provider.BuiltinNames() {
		spec := name + ":some-model"
		m, err := r.Resolve(spec)
		require.NoError(t, err, spec)
		switch name {
		case "anthropic", "bedrock", "vertex":
			assert.IsType(t, &anthropic.Model{}, m)
		case "gemini", "google_genai":
			assert.IsType(t, &gemini.Model{}, m)
		case "azure_openai":
			require.IsType(t, &openai.Model{}, m)
			assert.False(t, m.(*openai.Model).Config().ResponsesAPI(), "Azure deployments default to Chat Completions, as in Deep Agents")
		default:
			require.IsType(t, &openai.Model{}, m)
			assert.Equal(t, name == "openai", m.(*openai.Model).Config().ResponsesAPI(), spec)
		}
		id, ok := llm.IdentityOf(m)
		require.True(t, ok)
		assert.Equal(t, spec, id.String())
		if _, isStreaming := m.(llm.StreamingModel); !isStreaming {
			t.Errorf("%s does not stream", spec)
		}
	}
	// The first live call is where a missing key surfaces.
	m, err := r.Resolve("openai:gpt-5")
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	assert.True(t, llm.IsAuthentication(err))
	assert.ErrorContains(t, err, "set OPENAI_API_KEY")

	m, err = r.Resolve("google_genai:gemini-2.5-flash")
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	assert.True(t, llm.IsAuthentication(err))
	assert.ErrorContains(t, err, "set GOOGLE_API_KEY")
}
