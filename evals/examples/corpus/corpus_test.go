package corpus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address.
func TestMain(m *testing.M) { netguard.Main(m) }

func noEnv(string) string { return "" }

// TestCorpusReplays replays the Gemini, Chat Completions and Responses
// recordings through the agent, streaming where the recorded client
// streamed: every cell passes offline, with the calls, final text and
// usage the real providers recorded.
func TestCorpusReplays(t *testing.T) {
	s, err := evals.Load("suite.yaml")
	require.NoError(t, err)
	var streamed []string
	for _, m := range s.Models {
		if s.Streams(m, nil) {
			streamed = append(streamed, m)
		}
	}
	assert.Equal(t, []string{"gemini:gemini-3-flash-preview", "gemini:gemini-2.5-flash", "gemini:gemini-2.0-flash-exp", "gemini:gemini-1.5-flash-latest"}, streamed,
		"the agent streams where the recorded client called :streamGenerateContent")
	rr := evals.Run(t, "suite.yaml", evals.WithGetenv(noEnv))
	require.Len(t, rr.Results, 8)
	usage := map[string][2]int{}
	for _, r := range rr.Results {
		usage[r.Case] = [2]int{r.Usage.Agent.InputTokens, r.Usage.Agent.OutputTokens}
	}
	// From the recorded answers: Gemini 3's two turns add up to 60+121 in
	// and 16+32 (thinking) +9 out; the stream's last chunk counts 163 in.
	assert.Equal(t, [2]int{181, 57}, usage["gemini-3-signed-tool-call"])
	assert.Equal(t, [2]int{163, 13}, usage["gemini-streamed-answer"])
	assert.Equal(t, [2]int{21, 119}, usage["gemini-3-signed-text"], "thinking tokens are output")
	assert.Equal(t, [2]int{92 + 118 + 146, 17 + 18 + 3}, usage["chat-two-chained-calls"])
	assert.True(t, rr.Summary.Passed, rr.Summary.Reasons)
}

// TestStreamedCorpusReplays replays the streamed Anthropic, Chat
// Completions and Responses recordings with the agent streaming from every
// model, as the recorded clients did: every cell passes, with the recorded
// usage, the recorded calls, and a warning for the OpenRouter stream that
// never carried a finish_reason.
func TestStreamedCorpusReplays(t *testing.T) {
	s, err := evals.Load("streamed.yaml")
	require.NoError(t, err)
	for _, m := range s.Models {
		assert.True(t, s.Streams(m, nil), "%s: the recorded client streamed", m)
	}
	rr, err := s.Run(t.Context(), evals.Options{Mode: recorder.ModeReplay, Getenv: noEnv})
	require.NoError(t, err)
	require.Len(t, rr.Results, 4)
	results := map[string]evals.CellResult{}
	for _, r := range rr.Results {
		assert.Equal(t, evals.StatusPass, r.Status, "%s: %s", r.Case, r.Error)
		results[r.Case] = r
	}
	usage := func(c string) [2]int {
		u := results[c].Usage.Agent
		return [2]int{u.InputTokens, u.OutputTokens}
	}
	assert.Equal(t, [2]int{310 + 465, 82 + 95}, usage("anthropic-streamed-parallel-calls"))
	assert.Equal(t, []string{"pelican_name_generator", "pelican_name_generator"}, results["anthropic-streamed-parallel-calls"].ToolCalls)
	assert.Equal(t, [2]int{57 + 107, 17 + 15}, usage("chat-streamed-tool-call-without-finish-reason"))
	quirk := results["chat-streamed-tool-call-without-finish-reason"]
	assert.Equal(t, []string{"llm_version"}, quirk.ToolCalls, "the name repeated on every delta is kept once")
	require.Len(t, quirk.Warnings, 1)
	assert.Contains(t, quirk.Warnings[0], "no chunk carried a finish_reason")
	assert.Equal(t, [2]int{27, 8}, usage("responses-streamed-answer"))
	assert.True(t, rr.Summary.Passed, rr.Summary.Reasons)
}
