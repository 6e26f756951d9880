package fakes_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/llm"
)

func TestScripted(t *testing.T) {
	boom := errors.New("boom")
	m := fakes.NewScripted(
		fakes.Calls("looking", fakes.Call("ls", map[string]string{"path": "/"})),
		fakes.Reply("done"),
	).FailOn(2, boom).WithIdentity("anthropic", "claude-sonnet-4-6")
	req := &llm.Request{System: []llm.Block{llm.TextBlock("sys")}, Messages: []llm.Message{llm.User("hi")}}

	r1, err := m.Generate(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "call_1_1", r1.Message.ToolCalls[0].ID, "deterministic call ids")
	assert.JSONEq(t, `{"path":"/"}`, string(r1.Message.ToolCalls[0].Args))
	assert.Equal(t, llm.StopToolUse, r1.StopReason)
	assert.Equal(t, "claude-sonnet-4-6", r1.Model)
	assert.Positive(t, r1.Usage.InputTokens)

	_, err = m.Generate(t.Context(), req)
	require.ErrorIs(t, err, boom, "injected error on call 2")

	r3, err := m.Generate(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "done", r3.Message.Text())

	_, err = m.Generate(t.Context(), req)
	require.ErrorIs(t, err, fakes.ErrExhausted)
	assert.Contains(t, err.Error(), `call 4; the script has 2 steps; last user message: "hi"`)

	// Recorded requests are copies.
	req.Messages[0].Content[0].Text = "mutated"
	reqs := m.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "hi", reqs[0].Messages[0].Text())
	assert.Equal(t, "sys", reqs[0].SystemText())
	id, ok := llm.IdentityOf(m)
	assert.True(t, ok)
	assert.Equal(t, "anthropic:claude-sonnet-4-6", id.String())
}

func TestScriptedStream(t *testing.T) {
	m := fakes.NewScripted(fakes.Calls("one two three", fakes.Call("ls", nil)))
	var text string
	var final *llm.Response
	for c, err := range m.Stream(t.Context(), &llm.Request{Messages: []llm.Message{llm.User("x")}}) {
		require.NoError(t, err)
		text += c.TextDelta
		if c.Response != nil {
			final = c.Response
		}
	}
	assert.Equal(t, "one two three", text)
	require.NotNil(t, final)
	assert.Len(t, final.Message.ToolCalls, 1)
}

func TestRuleModel(t *testing.T) {
	m := fakes.NewRuleModel(
		fakes.Rule{Name: "after tool", When: fakes.LastIsToolResult("get_weather"), Reply: func(*llm.Request) (*llm.Response, error) {
			return &llm.Response{Message: llm.Assistant("sunny")}, nil
		}},
		fakes.Rule{Name: "weather", When: fakes.LastUserContains("weather"), Reply: func(*llm.Request) (*llm.Response, error) {
			return &llm.Response{Message: llm.Assistant("", fakes.Call("get_weather", `{"city":"Paris"}`))}, nil
		}},
	)
	r, err := m.Generate(t.Context(), &llm.Request{Messages: []llm.Message{llm.User("weather?")}})
	require.NoError(t, err)
	assert.Equal(t, "get_weather", r.Message.ToolCalls[0].Name)
	r, err = m.Generate(t.Context(), &llm.Request{Messages: []llm.Message{llm.User("weather?"), r.Message, llm.ToolResult("call_1_1", "get_weather", "sunny", false)}})
	require.NoError(t, err)
	assert.Equal(t, "sunny", r.Message.Text())
	_, err = m.Generate(t.Context(), &llm.Request{Messages: []llm.Message{llm.User("hello")}})
	require.ErrorContains(t, err, "no rule matches call 3")
}
