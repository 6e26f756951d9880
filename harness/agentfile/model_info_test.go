package agentfile_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
)

// summarised reports whether the agent, on a conversation of about 4 500
// tokens, asked its model for a summary before answering.
func summarised(t *testing.T, agentYAML string, opts agentfile.Options) bool {
	t.Helper()
	af, err := agentfile.Parse("agent.yaml", []byte(agentYAML))
	require.NoError(t, err)
	model := fakes.NewScripted(fakes.Reply("Summary: the user asked about rivers."), fakes.Reply("done")).WithIdentity("ollama", "qwen3")
	opts.ResolveModel = func(string) (llm.ChatModel, error) { return model, nil }
	cfg, err := af.Config(opts)
	require.NoError(t, err)
	a, err := harness.New(cfg)
	require.NoError(t, err)
	var msgs []llm.Message
	for i := range 3 {
		msgs = append(msgs, llm.User(strings.Repeat("Tell me about rivers. ", 140)+string(rune('a'+i))), llm.Assistant(strings.Repeat("Rivers flow to the sea. ", 130)))
	}
	msgs = append(msgs, llm.User("And lakes?"))
	_, err = a.Invoke(t.Context(), agent.Input{Messages: msgs})
	require.NoError(t, err)
	first := model.Requests()[0]
	return strings.Contains(first.Messages[len(first.Messages)-1].Text(), "condensing the earlier part of a conversation")
}

func TestModelInfoContextWindowTriggersSummarization(t *testing.T) {
	const base = "model: ollama:qwen3\n"
	assert.False(t, summarised(t, base, agentfile.Options{}),
		"the catalog does not know ollama:qwen3, so summarization waits for 170 000 tokens")
	assert.True(t, summarised(t, base+"model_info:\n  - spec: ollama:qwen3\n    context_window: 4000\n", agentfile.Options{}),
		"a declared 4 000-token window triggers at 85% of it")
	assert.True(t, summarised(t, base, agentfile.Options{ModelInfo: []catalog.Declaration{{Spec: "ollama:qwen3", ContextWindow: 4000}}}),
		"a caller's declaration (a suite's models) works the same")
	assert.False(t, summarised(t, base+"model_info:\n  - {spec: ollama:qwen3, context_window: 4000}\n",
		agentfile.Options{ModelInfo: []catalog.Declaration{{Spec: "ollama:qwen3", ContextWindow: 1_000_000}}}),
		"the caller's declaration wins over the file's")
	assert.True(t, summarised(t, base+"middleware:\n  - name: SummarizationMiddleware\n    options: {keep: {messages: 2}}\nmodel_info:\n  - {spec: ollama:qwen3, context_window: 4000}\n", agentfile.Options{}),
		"a SummarizationMiddleware the file configures uses the declared window too")
}
