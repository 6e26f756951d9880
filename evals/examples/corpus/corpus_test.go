package corpus_test

import (
	"strings"
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
// recordings through the agent: every cell passes offline, with the calls,
// final text and usage the real providers recorded.
func TestCorpusReplays(t *testing.T) {
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
// Completions and Responses recordings. The agent calls the model whole,
// and until it decodes a recorded answer by its content type (issue #13,
// streaming through the agent loop, on wave2/stream) those adapters refuse
// an event stream; the test skips, naming the cells, while that is the
// only reason they error.
func TestStreamedCorpusReplays(t *testing.T) {
	s, err := evals.Load("streamed.yaml")
	require.NoError(t, err)
	rr, err := s.Run(t.Context(), evals.Options{Mode: recorder.ModeReplay, Getenv: noEnv})
	require.NoError(t, err)
	require.Len(t, rr.Results, 4)
	var waiting []string
	for _, r := range rr.Results {
		if r.Status == evals.StatusError && strings.Contains(r.Error, "content-type 'text/event-stream") {
			waiting = append(waiting, r.Case)
		}
	}
	if len(waiting) > 0 {
		t.Skipf("needs #13 streaming (wave2/stream): streamed recordings do not replay through a whole call yet: %s", strings.Join(waiting, ", "))
	}
	for _, r := range rr.Results {
		assert.Equal(t, evals.StatusPass, r.Status, "%s: %s", r.Case, r.Error)
	}
	usage := map[string][2]int{}
	for _, r := range rr.Results {
		usage[r.Case] = [2]int{r.Usage.Agent.InputTokens, r.Usage.Agent.OutputTokens}
	}
	assert.Equal(t, [2]int{310 + 465, 82 + 95}, usage["anthropic-streamed-parallel-calls"])
	assert.Equal(t, [2]int{57 + 107, 17 + 15}, usage["chat-streamed-tool-call-without-finish-reason"])
	assert.Equal(t, [2]int{27, 8}, usage["responses-streamed-answer"])
}
