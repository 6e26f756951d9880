package middleware_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

func TestApproxTokens(t *testing.T) {
	msg := func(text string) []llm.Message { return []llm.Message{llm.User(text)} }
	tests := []struct {
		name string
		msgs []llm.Message
		want int
	}{
		{"empty message costs the overhead", msg(""), 3},
		{"four ASCII characters per token", msg(strings.Repeat("abcd", 100)), 100 + 3},
		{"other characters count double", msg(strings.Repeat("ж", 100)), 50 + 3},
		{"CJK", msg(strings.Repeat("数", 8)), 4 + 3},
		{"tool calls count their arguments", []llm.Message{llm.Assistant("", llm.ToolCall{ID: "c1", Name: "ls", Args: []byte(`{"path":"/"}`)})}, 4 + 3}, // 2 + 2 + 12 characters
		{"media blocks have a fixed cost", []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage, Data: "AAAA"}}}}, 1500 + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, middleware.ApproxTokens(nil, tt.msgs, nil))
			assert.Equal(t, tt.want, middleware.ApproxCounter()(nil, tt.msgs, nil))
		})
	}
	assert.Equal(t, 25, middleware.ApproxTokens([]llm.Block{llm.TextBlock(strings.Repeat("x", 100))}, nil, nil), "the system prompt counts")
}

// The cached counter agrees with the stateless one, also when a tool keeps
// its name but changes its description or schema.
func TestApproxCounterToolCache(t *testing.T) {
	count := middleware.ApproxCounter()
	base := benchTools(23)
	changedDesc := append([]llm.ToolSpec(nil), base...)
	changedDesc[3].Description += strings.Repeat(" More detail.", 50)
	changedSchema := append([]llm.ToolSpec(nil), changedDesc...)
	changedSchema[7].Parameters = []byte(`{"type":"object"}`)
	sameContentNewMemory := append([]llm.ToolSpec(nil), base...)
	sameContentNewMemory[0].Description = strings.Clone(base[0].Description)
	for i, tools := range [][]llm.ToolSpec{base, base, changedDesc, changedSchema, base[:5], sameContentNewMemory, base} {
		assert.Equal(t, middleware.ApproxTokens(nil, nil, tools), count(nil, nil, tools), "set %d", i)
	}
	assert.Greater(t, count(nil, nil, changedDesc), count(nil, nil, base))
}
