package anthropic_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

// TestARequestGoesOutInOneWrite: the SDK wraps each attempt's body so
// that net/http cannot tell it is in memory, and would send the headers
// and the body in writes of their own, waking the server twice per call.
func TestARequestGoesOutInOneWrite(t *testing.T) {
	s := newScript(t, reply(200, nil, okMessage), reply(200, nil, okMessage))
	wc := providertest.NewWriteCounter(t)
	var h harness
	m := h.model(t, s.URL, func(c *provider.Config) { c.HTTPClient = wc.Client })
	req := &llm.Request{System: []llm.Block{llm.TextBlock(providertest.LongSystemPrompt(9000))}, Messages: []llm.Message{llm.User("hi")}}
	for range 2 {
		_, err := m.Generate(context.Background(), req)
		require.NoError(t, err)
	}
	require.Equal(t, 2, s.Count())
	assert.Equal(t, 2, wc.Writes(), "one write per request of %d bytes", s.Requests()[0].ContentLength)
}
