package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// An encoding is reused for the same message, also when the message was
// copied (as requests copy the history), and never once anything an
// adapter encodes has changed, even in place.
func TestEncodedMessages(t *testing.T) {
	var c provider.Encoded[string]
	m := llm.Assistant("looking", llm.ToolCall{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"file_path":"/a"}`)})
	c.PutMessage(&m, "enc", 3)
	copied := m
	got, ok := c.Message(&copied)
	assert.True(t, ok)
	assert.Equal(t, "enc", got)

	for name, change := range map[string]func(*llm.Message){
		"text in place":      func(m *llm.Message) { m.Content[0].Text = "changed" },
		"args in place":      func(m *llm.Message) { m.ToolCalls[0].Args[2] = 'F' },
		"cache marker":       func(m *llm.Message) { m.Content[0].CacheControl = llm.Ephemeral() },
		"error flag":         func(m *llm.Message) { m.IsError = true },
		"rebuilt":            func(m *llm.Message) { *m = llm.Assistant("looking", m.ToolCalls...) },
		"tool call appended": func(m *llm.Message) { m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: "c2"}) },
	} {
		var c provider.Encoded[string]
		m := llm.Assistant("looking", llm.ToolCall{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"file_path":"/a"}`)})
		c.PutMessage(&m, "enc", 3)
		change(&m)
		_, ok := c.Message(&m)
		assert.False(t, ok, name)
	}
}

func TestEncodedTools(t *testing.T) {
	var c provider.Encoded[int]
	spec := llm.ToolSpec{Name: "ls", Description: "Lists.", Parameters: json.RawMessage(`{"type":"object"}`)}
	c.PutTool(&spec, 1, 1)
	marked := spec
	marked.CacheControl = llm.Ephemeral()
	_, ok := c.Tool(&marked)
	assert.False(t, ok, "a marked tool is another encoding")
	c.PutTool(&marked, 2, 1)
	got, ok := c.Tool(&spec)
	assert.True(t, ok)
	assert.Equal(t, 1, got)
	got, _ = c.Tool(&marked)
	assert.Equal(t, 2, got)
	marked.CacheControl.TTL = "1h"
	_, ok = c.Tool(&marked)
	assert.False(t, ok, "a marker changed in place")
	spec.Description = "Lists files."
	_, ok = c.Tool(&spec)
	assert.False(t, ok)
}
