package evals_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
)

// reader is a local model that reads three chapters (each a large tool
// result) and answers; it writes a summary when asked for one.
type reader struct {
	mu         sync.Mutex
	summarised int
}

func (m *reader) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1].Text()
	if strings.Contains(last, "condensing the earlier part of a conversation") {
		m.mu.Lock()
		m.summarised++
		m.mu.Unlock()
		return &llm.Response{Message: say("Summary: chapters one to three were read.")}, nil
	}
	calls := 0
	for _, msg := range req.Messages {
		calls += len(msg.ToolCalls)
		if strings.Contains(msg.Text(), "Summary: chapters") {
			calls = 3 // what was read is in the summary
		}
	}
	if calls < 3 {
		return &llm.Response{Message: say("", call("read_chapter", `{"n": `+string(rune('1'+calls))+`}`))}, nil
	}
	return &llm.Response{Message: say("The book is about rivers.")}, nil
}

func (m *reader) summaries() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.summarised
}

// The facts a suite declares about a model the catalog does not know drive
// summarization (at 85% of the declared window) and price the run.
func TestDeclaredModelFacts(t *testing.T) {
	chapter := strings.Repeat("The river runs to the sea. ", 120)
	run := func(t *testing.T, model string) (*reader, evals.CellResult) {
		m := &reader{}
		srv := server(t, m)
		suite := liveHeader(srv.URL) + "models: [" + model + `]
agent: {tools: [{name: read_chapter, parameters: {type: object, properties: {n: {type: integer}}}}]}
tools: {read_chapter: {mock: {result: "` + chapter + `"}}}
cases: [{id: book, input: "What is the book about?", checks: [{final_answer: {contains: rivers}}]}]
`
		oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
		return m, oc.Results[0]
	}

	m, r := run(t, "local:qwen3")
	assert.Equal(t, evals.StatusPass, r.Status, r.Error)
	assert.Zero(t, m.summaries(), "an unknown model is summarised only at 170 000 tokens")
	assert.False(t, r.CostKnown, "an unknown model's cost is unknown")

	m, r = run(t, "{spec: local:qwen3, context_window: 4000, prices: {input_per_mtok: 1, output_per_mtok: 2}}")
	assert.Equal(t, evals.StatusPass, r.Status, r.Error)
	assert.Positive(t, m.summaries(), "the declared 4 000-token window triggers summarization")
	assert.True(t, r.CostKnown)
	want := float64(r.Usage.Total().InputTokens)*1/1e6 + float64(r.Usage.Total().OutputTokens)*2/1e6
	assert.InDelta(t, want, r.CostUSD, 1e-9, "priced at the declared prices")
}

func TestUnknownModelWarnings(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte(`version: 1
name: w
agent: {name: a}
models:
  - openai:gpt5
  - {spec: ollama:qwen3, context_window: 32768}
  - anthropic:claude-sonnet-4-6
cases: [{id: a, input: hi}]
`))
	require.NoError(t, err)
	require.Len(t, s.Warnings, 1, "a declared model and a listed one are not warned about")
	assert.Equal(t, "suite.yaml:5:5: models[0]: openai:gpt5 is not in the catalog; did you mean openai:gpt-5? Its cost is unknown and summarization cannot use its context window; "+
		"if the spec is right, declare them: {spec: openai:gpt5, context_window: …, prices: {input_per_mtok: …, output_per_mtok: …}}", s.Warnings[0])
	assert.Equal(t, []string{"openai:gpt5", "ollama:qwen3", "anthropic:claude-sonnet-4-6"}, s.Models)
	require.Len(t, s.ModelInfo, 1)
	assert.Equal(t, 32768, s.ModelInfo[0].ContextWindow)
}

func TestUnknownModelWithoutSuggestionWarning(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte("version: 1\nname: w\nproviders: {local: {kind: openai-compatible, base_url: \"http://127.0.0.1:1/v1\"}}\nagent: {name: a}\nmodels: [local:model-a]\ncases: [{id: a, input: hi}]\n"))
	require.NoError(t, err)
	require.Len(t, s.Warnings, 1)
	assert.Equal(t, "suite.yaml:5:10: models[0]: local:model-a is not in the catalog. Its cost is unknown and summarization cannot use its context window; "+
		"if the spec is right, declare them: {spec: local:model-a, context_window: …, prices: {input_per_mtok: …, output_per_mtok: …}}", s.Warnings[0])
}

func TestModelEntryErrors(t *testing.T) {
	head := "version: 1\nname: w\nagent: {name: a}\ncases: [{id: a, input: hi}]\nmodels:\n"
	for entry, want := range map[string]string{
		"  - {context_window: 5}\n":                 "suite.yaml:6:6: models[0]: a model entry needs a spec (provider:model)",
		"  - {spec: local:m}\n":                     "suite.yaml:6:6: models[0]: the declaration gives no facts",
		"  - {spec: local:m, prices: {input: 1}}\n": `suite.yaml:6:30: models[0].prices.input: unknown key "input"`,
		"  - {spec: local:m, context_window: -1}\n": "suite.yaml:6:21: models[0].context_window: must not be negative, got -1",
		"  - [local:m]\n":                           "suite.yaml:6:5: models[0]: want a model spec (provider:model) or {spec, alias, stream, context_window, prices}, got a list",
		"  - {spec: nope:m, context_window: 5}\n":   `suite.yaml:6:6: models[0].spec: unknown provider "nope" in model nope:m`,
	} {
		_, err := evals.Parse("suite.yaml", []byte(head+entry))
		assert.ErrorContains(t, err, want, entry)
	}
}
