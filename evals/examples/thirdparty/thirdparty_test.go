package thirdparty_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address.
func TestMain(m *testing.M) { netguard.Main(m) }

// TestThirdPartyRecordings replays pydantic-ai's recordings (and the
// reproduced wire quirks) through the agent: every cell must pass, offline,
// and report the usage the real providers returned.
func TestThirdPartyRecordings(t *testing.T) {
	oc := evals.Run(t, "suite.yaml", evals.WithGetenv(func(string) string { return "" }))
	require.Len(t, oc.Results, 12)
	results := map[string]evals.CellResult{}
	for _, r := range oc.Results {
		results[r.Case] = r
	}
	usage := func(c string) llm.Usage { return results[c].Usage.Agent }
	// From the recorded answers: 20 in / 10 out for the plain answer; the
	// two calls of the structured answer add up to 445+497 in, 23+56 out.
	assert.Equal(t, llm.Usage{InputTokens: 20, OutputTokens: 10}, usage("anthropic-plain-answer"))
	assert.Equal(t, llm.Usage{InputTokens: 942, OutputTokens: 79}, usage("anthropic-structured-answer"))
	// The streamed tool loop: 53+78 in, 15+9 out, whether the agent streams
	// or makes plain calls against the streamed recording.
	for _, c := range []string{"openai-chat-streamed-tool-loop", "openai-chat-streamed-recording-plain-calls"} {
		assert.Equal(t, llm.Usage{InputTokens: 131, OutputTokens: 24}, usage(c), c)
		assert.Equal(t, []string{"get_capital"}, results[c].ToolCalls, c)
	}
	assert.Equal(t, llm.Usage{InputTokens: 43, OutputTokens: 282}, usage("anthropic-thinking-stream"))
	// The OpenRouter stream without finish reasons decodes with a warning,
	// and reports the latency its cassette recorded (1204+806 ms; first
	// events after 412 and 388 ms).
	nf := results["quirk-no-finish-reason"]
	assert.Equal(t, llm.Usage{InputTokens: 459, OutputTokens: 27}, nf.Usage.Agent)
	require.Len(t, nf.Warnings, 1)
	assert.Contains(t, nf.Warnings[0], "no chunk carried a finish_reason")
	assert.Equal(t, &evals.Latency{Calls: 2, Timed: 2, ModelMS: 2010, FirstEventMS: 400, Recorded: true}, nf.Latency)
	assert.Nil(t, results["anthropic-plain-answer"].Latency, "vcrpy recordings have no timings")
	// A stream without a usage chunk: usage unknown, not zero.
	nu := usage("quirk-no-usage")
	assert.False(t, nu.Known())
	assert.Equal(t, 1, nu.UnknownCalls)
	assert.True(t, oc.Summary.Passed, oc.Summary.Reasons)
}
