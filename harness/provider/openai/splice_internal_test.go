package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

// awkward is a request whose text holds what encoders treat specially:
// HTML characters, line and paragraph separators, quotes, a NUL.
func awkward() *llm.Request {
	req := conversation()
	req.System = []llm.Block{llm.TextBlock("<rules>Be brief & exact.</rules>\u2028\"quoted\"\x00")}
	req.Messages = append(req.Messages, llm.User("a <b> & c \u2029 d"),
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "weather", Args: json.RawMessage(`{"city": "<Oslo> & Bergen"}`)}}},
		llm.ToolResult("call_3", "weather", "</tool_result> \u2028", false))
	req.Tools = append(req.Tools, llm.ToolSpec{Name: "html", Description: "Renders <html> & more.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"a <query>"}}}`)})
	return req
}

// spaced has a tool schema with spaces, which the SDK sends as they are
// and would take out of JSON it is given whole: it is not spliced.
func spaced() *llm.Request {
	req := awkward()
	req.Tools[1].Parameters = json.RawMessage(`{"type": "object", "properties": {"q": {"type": "string", "description": "a <query>"}}}`)
	return req
}

// TestSplicedRequestsAreTheSDKEncoding: a spliced request's body is byte
// for byte what the SDK encodes the same parameters to, on the first call
// (messages just encoded) and on the next (from the caches).
func TestSplicedRequestsAreTheSDKEncoding(t *testing.T) {
	for i, req := range []*llm.Request{conversation(), awkward(), {Messages: []llm.Message{llm.User("hi")}}, spaced()} {
		wantSpliced := i != 3
		m := model(t, provider.KindOpenAI, true)
		for range 2 {
			p, err := m.responsesFields(req)
			require.NoError(t, err)
			want, err := p.MarshalJSON()
			require.NoError(t, err)
			settings, keyed := provider.SettingsOf(req)
			s := m.splicedResponses(p, settings, keyed)
			_, isSpliced := s.Overrides()
			assert.Equal(t, wantSpliced, isSpliced, "responses request %d spliced", i)
			got, err := s.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
			assert.False(t, strings.Contains(string(got), "dageval splice"))

			c, err := m.chatFields(req, true)
			require.NoError(t, err)
			want, err = c.MarshalJSON()
			require.NoError(t, err)
			sc := m.splicedChat(c, settings, keyed, true)
			_, isSpliced = sc.Overrides()
			assert.Equal(t, wantSpliced, isSpliced, "chat request %d spliced", i)
			got, err = sc.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		}
	}
}

// A model's shells follow the settings of each request.
func TestSplicedRequestsFollowTheirSettings(t *testing.T) {
	m := model(t, provider.KindOpenAI, true)
	req := conversation()
	req.Tools = append(req.Tools, llm.ToolSpec{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}, llm.ToolSpec{Name: "b", Parameters: json.RawMessage(`{"type":"object"}`)})
	for i, r := range providertest.SettingsVariants(req) {
		p, err := m.responsesFields(r)
		require.NoError(t, err)
		want, err := p.MarshalJSON()
		require.NoError(t, err)
		got, err := m.responsesParams(r)
		require.NoError(t, err)
		body, err := got.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(body), "responses variant %d", i)
		for _, stream := range []bool{false, true} {
			c, err := m.chatFields(r, stream)
			require.NoError(t, err)
			want, err := c.MarshalJSON()
			require.NoError(t, err)
			got, err := m.chatParams(r, stream)
			require.NoError(t, err)
			body, err := got.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(body), "chat variant %d", i)
		}
	}
}

// TestSharedShellsFollowTheirModels: models share the shells of their
// requests, and each model's request is still what the SDK encodes for
// it when the models differ in what their shells are built from (name,
// kind, default output limit) and take turns with the same request.
func TestSharedShellsFollowTheirModels(t *testing.T) {
	req := conversation()
	req.ResponseFormat, req.MaxTokens = nil, 0
	var models []*Model
	for _, c := range []struct {
		name, kind string
		maxTokens  int
	}{
		{"shared-a", provider.KindOpenAI, 0},
		{"shared-b", provider.KindOpenAI, 0},
		{"shared-a", provider.KindOpenAICompatible, 0},
		{"shared-a", provider.KindOpenAI, 64},
		{"shared-a", provider.KindOpenAICompatible, 64},
	} {
		for _, useResponses := range []bool{false, true} {
			if useResponses && c.kind != provider.KindOpenAI {
				continue
			}
			m, err := New(provider.Config{Provider: "p", Model: c.name, Kind: c.kind, MaxTokens: c.maxTokens, BaseURL: "http://127.0.0.1:1/v1", UseResponsesAPI: &useResponses, Replay: true})
			require.NoError(t, err)
			models = append(models, m)
		}
	}
	for round := range 2 {
		for i, m := range models {
			for _, stream := range []bool{false, true} {
				c, err := m.chatFields(req, stream)
				require.NoError(t, err)
				want, err := c.MarshalJSON()
				require.NoError(t, err)
				got, err := m.chatParams(req, stream)
				require.NoError(t, err)
				_, spliced := got.Overrides()
				assert.True(t, spliced, "model %d", i)
				body, err := got.MarshalJSON()
				require.NoError(t, err)
				assert.Equal(t, string(want), string(body), "round %d, chat model %d, stream %v", round, i, stream)
			}
			p, err := m.responsesFields(req)
			require.NoError(t, err)
			want, err := p.MarshalJSON()
			require.NoError(t, err)
			got, err := m.responsesParams(req)
			require.NoError(t, err)
			body, err := got.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, string(want), string(body), "round %d, responses model %d", round, i)
		}
	}
}
