package thirdparty_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address.
func TestMain(m *testing.M) { netguard.Main(m) }

// TestThirdPartyRecordings replays pydantic-ai's recordings through the
// agent: every cell must pass, offline, and report the usage the real
// providers returned.
func TestThirdPartyRecordings(t *testing.T) {
	oc := evals.Run(t, "suite.yaml", evals.WithGetenv(func(string) string { return "" }))
	require.Len(t, oc.Results, 7)
	usage := map[string][2]int{}
	for _, r := range oc.Results {
		usage[r.Case] = [2]int{r.Usage.Agent.InputTokens, r.Usage.Agent.OutputTokens}
	}
	// From the recorded answers: 20 in / 10 out for the plain answer; the
	// two calls of the structured answer add up to 445+497 in, 23+56 out.
	assert.Equal(t, [2]int{20, 10}, usage["anthropic-plain-answer"])
	assert.Equal(t, [2]int{942, 79}, usage["anthropic-structured-answer"])
	assert.True(t, oc.Summary.Passed, oc.Summary.Reasons)
}
