package llm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in       string
		provider string
		model    string
		err      string
	}{
		{in: "anthropic:claude-sonnet-4-6", provider: "anthropic", model: "claude-sonnet-4-6"},
		{in: "ollama:llama3:8b", provider: "ollama", model: "llama3:8b"},
		{in: "openai:gpt-5", provider: "openai", model: "gpt-5"},
		{in: "", err: "empty"},
		{in: "claude-sonnet-4-6", err: "has no provider"},
		{in: ":gpt-5", err: "empty provider"},
		{in: "openai:", err: "empty model id"},
		{in: "open ai:gpt-5", err: "whitespace"},
		{in: "openai:gpt-5 ", err: "whitespace"},
		{in: "openai :gpt-5", err: "whitespace"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := llm.ParseSpec(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.provider, s.Provider)
			assert.Equal(t, tt.model, s.Model)
			assert.Equal(t, tt.in, s.String())
		})
	}
}

func TestMessageHelpers(t *testing.T) {
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		{Type: llm.BlockThinking, Thinking: "hmm", Signature: "sig"},
		llm.TextBlock("one"),
		llm.TextBlock("two"),
	}, Metadata: map[string]string{llm.MetaSource: "x"}, ToolCalls: []llm.ToolCall{{ID: "1", Name: "ls", Args: []byte(`{}`)}}}
	assert.Equal(t, "one\ntwo", m.Text())
	c := m.Clone()
	c.Content[1].Text = "changed"
	c.Metadata[llm.MetaSource] = "y"
	c.ToolCalls[0].Args[0] = '['
	assert.Equal(t, "one", m.Content[1].Text, "clone shares no blocks")
	assert.Equal(t, "x", m.Metadata[llm.MetaSource], "clone shares no metadata")
	assert.Equal(t, `{}`, string(m.ToolCalls[0].Args), "clone shares no args")

	req := llm.Request{System: []llm.Block{llm.TextBlock("base"), llm.TextBlock("\n\nsuffix")}}
	assert.Equal(t, "base\n\nsuffix", req.SystemText())

	u := llm.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}
	u.Add(llm.Usage{InputTokens: 1})
	assert.Equal(t, 11, u.Total())
	assert.Equal(t, "anthropic:claude", llm.Identity{Provider: "anthropic", Model: "claude"}.String())
}
