package evals_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
)

// TestStreamPrecedence: a model entry's stream: wins over its profile's,
// which wins over the suite's; nothing said means plain calls.
func TestStreamPrecedence(t *testing.T) {
	s, err := evals.Parse("suite.yaml", []byte(`version: 1
name: s
agent: {name: a}
stream: true
models:
  - openai:gpt-5
  - {spec: anthropic:claude-sonnet-4-6, stream: false}
  - {spec: ollama:llama3, stream: true, context_window: 8192}
profiles:
  - {name: plain, stream: false}
  - {name: inherit}
cases: [{id: c, input: hi}]
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"openai:gpt-5", "anthropic:claude-sonnet-4-6", "ollama:llama3"}, s.Models)
	require.Len(t, s.ModelInfo, 1, "stream: alone declares no facts; with facts the entry declares them")
	assert.Equal(t, 8192, s.ModelInfo[0].ContextWindow)
	cells, err := s.Cells("", 0)
	require.NoError(t, err)
	got := map[string]bool{}
	for _, c := range cells {
		got[c.Model+" "+c.Profile] = c.Stream
	}
	assert.Equal(t, map[string]bool{
		"openai:gpt-5 plain":                  false, // the profile over the suite
		"openai:gpt-5 inherit":                true,  // the suite
		"anthropic:claude-sonnet-4-6 plain":   false, // the model entry
		"anthropic:claude-sonnet-4-6 inherit": false, // the model entry over the suite
		"ollama:llama3 plain":                 true,  // the model entry over the profile
		"ollama:llama3 inherit":               true,
	}, got)

	none, err := evals.Parse("suite.yaml", []byte("version: 1\nname: s\nagent: {name: a}\nmodels: [openai:gpt-5]\ncases: [{id: c, input: hi}]\n"))
	require.NoError(t, err)
	assert.False(t, none.Streams("openai:gpt-5", none.Profiles[0]))
}

func TestStreamSettingErrors(t *testing.T) {
	const head = "version: 1\nname: s\nagent: {name: a}\ncases: [{id: c, input: hi}]\n"
	for _, tt := range []struct{ yaml, want string }{
		{"models: [{spec: openai:gpt-5, stream: yes please}]\n", "suite.yaml:5:"},
		{"models: [{spec: openai:gpt-5, stream: yes please}]\n", "models[0].stream: got string, want true or false"},
		{"models: [{spec: openai:gpt-5, streaming: true}]\n", `models[0].streaming: unknown key "streaming"`},
		{"models: [{stream: true}]\n", "models[0]: a model entry needs a spec (provider:model)"},
		{"models: [[openai:gpt-5]]\n", "models[0]: want a model spec (provider:model) or {spec, alias, stream, context_window, prices}"},
		{"models: [openai:gpt-5, {spec: openai:gpt-5, stream: true}]\n", "models[1]: model openai:gpt-5 is listed twice"},
		{"models: [{spec: nope:gpt-5, stream: true}]\n", `unknown provider "nope"`},
		{"models: [openai:gpt-5]\nstream: often\n", "stream"},
	} {
		_, err := evals.Parse("suite.yaml", []byte(head+tt.yaml))
		require.Error(t, err, tt.yaml)
		assert.Contains(t, err.Error(), tt.want, tt.yaml)
	}
}

// TestGroupLatency: only fully timed cells count, and the percentiles are
// values that occurred.
func TestGroupLatency(t *testing.T) {
	assert.Nil(t, evals.GroupLatencyOf(nil))
	assert.Nil(t, evals.GroupLatencyOf([]*evals.Latency{nil, {Calls: 2, Timed: 1, ModelMS: 500}}), "a partly timed cell is not summed up")
	g := evals.GroupLatencyOf([]*evals.Latency{
		{Calls: 1, Timed: 1, ModelMS: 100, Recorded: true},
		{Calls: 2, Timed: 2, ModelMS: 300, FirstEventMS: 40, Recorded: true},
		nil,
		{Calls: 1, Timed: 1, ModelMS: 200, FirstEventMS: 20, Recorded: true},
		{Calls: 3, Timed: 2, ModelMS: 9000, Recorded: true},
	})
	assert.Equal(t, &evals.GroupLatency{Cells: 3, MeanMS: 200, P50MS: 200, P95MS: 300, FirstEventMS: 30, Recorded: true}, g)
}
