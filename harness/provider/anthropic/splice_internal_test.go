package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

// TestSplicedRequestsAreTheSDKEncoding: a spliced request's body is byte
// for byte what the SDK encodes the same parameters to, with text the
// SDK escapes (it escapes HTML), on the first call and from the caches.
func TestSplicedRequestsAreTheSDKEncoding(t *testing.T) {
	req := &llm.Request{
		System: []llm.Block{{Type: llm.BlockText, Text: "<rules>Be terse & exact.</rules>\u2028", CacheControl: llm.Ephemeral()}},
		Messages: []llm.Message{
			llm.User("Find <it> & \u2029 report."),
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Looking.")}, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "find", Args: json.RawMessage(`{"q": "<a> & b"}`)}}},
			llm.ToolResult("t1", "find", "</tool_result>\x00", false),
			llm.User("Thanks."),
		},
		Tools: []llm.ToolSpec{
			{Name: "find", Description: "Finds <things> & more.", Parameters: json.RawMessage(`{"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}`)},
			{Name: "plain", Parameters: json.RawMessage(`{"type":"object"}`), CacheControl: llm.Ephemeral()},
		},
		ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceAuto},
		MaxTokens:  512,
	}
	for _, r := range []*llm.Request{req, {Messages: []llm.Message{llm.User("hi")}}} {
		m, err := New(provider.Config{Model: "claude-sonnet-4-5", Replay: true})
		require.NoError(t, err)
		for range 2 {
			p, err := m.fields(r)
			require.NoError(t, err)
			want, err := p.MarshalJSON()
			require.NoError(t, err)
			settings, keyed := provider.SettingsOf(r)
			s := m.spliced(p, settings, keyed)
			_, isSpliced := s.Overrides()
			assert.True(t, isSpliced, "request not spliced")
			got, err := s.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
			assert.Equal(t, p.MaxTokens, s.MaxTokens, "the SDK reads max_tokens for its timeout")
		}
	}
}

// A model's shell follows the settings of each request.
func TestSplicedRequestsFollowTheirSettings(t *testing.T) {
	m, err := New(provider.Config{Model: "claude-sonnet-4-5", Replay: true})
	require.NoError(t, err)
	req := &llm.Request{
		System:   []llm.Block{llm.TextBlock("Be terse.")},
		Messages: []llm.Message{llm.User("hi")},
		Tools:    []llm.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "b", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	for i, r := range providertest.SettingsVariants(req) {
		p, err := m.fields(r)
		require.NoError(t, err)
		want, err := p.MarshalJSON()
		require.NoError(t, err)
		got, err := m.params(r)
		require.NoError(t, err)
		body, err := got.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(body), "variant %d", i)
	}
}
