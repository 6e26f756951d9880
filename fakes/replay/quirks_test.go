package replay_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/replay"
	"github.com/dageval/dageval/harness/llm"
)

// quirks holds reproduced recordings of what real servers send.
var quirks = filepath.Join("..", "..", "cassettes", "quirks")

func readQuirk(t *testing.T, name string) *cassette.Cassette {
	t.Helper()
	c, err := cassette.Read(filepath.Join(quirks, name))
	require.NoError(t, err)
	return c
}

// TestStreamWithoutFinishReasonDecodesWithAWarning: an OpenRouter stream
// whose chunks never carry finish_reason but that ends with [DONE] is a
// complete answer; the stop reason is inferred and a warning says so.
func TestStreamWithoutFinishReasonDecodesWithAWarning(t *testing.T) {
	c := readQuirk(t, "openrouter-no-finish-reason.yaml")
	first, err := replay.Decode(context.Background(), c.Interactions[0])
	require.NoError(t, err)
	assert.Equal(t, llm.StopToolUse, first.StopReason)
	require.Len(t, first.Message.ToolCalls, 1)
	assert.Equal(t, "get_capital", first.Message.ToolCalls[0].Name)
	assert.JSONEq(t, `{"country":"UK"}`, string(first.Message.ToolCalls[0].Args))
	assert.Equal(t, llm.Usage{InputTokens: 212, OutputTokens: 18}, first.Usage)
	require.Len(t, first.Warnings, 1)
	assert.Contains(t, first.Warnings[0], "no chunk carried a finish_reason")
	assert.Equal(t, &llm.Latency{Duration: 1204 * time.Millisecond, FirstEvent: 412 * time.Millisecond, Recorded: true}, first.Latency, "the recorded latency, not the decode's")

	second, err := replay.Decode(context.Background(), c.Interactions[1])
	require.NoError(t, err)
	assert.Equal(t, llm.StopEndTurn, second.StopReason)
	assert.Equal(t, "The capital of the UK is London.", second.Message.Text())

	// The same stream cut off before [DONE] is still an incomplete answer.
	cut := *c.Interactions[1]
	cut.Response.Body = cut.Response.Body[:len(cut.Response.Body)-len("data: [DONE]\n\n")]
	_, err = replay.Decode(context.Background(), &cut)
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrConnection)
	assert.Contains(t, err.Error(), "ended before a finish_reason")
}

// TestStreamWithoutUsageReportsUnknownUsage: no usage chunk means usage
// unknown, never 0/0.
func TestStreamWithoutUsageReportsUnknownUsage(t *testing.T) {
	c := readQuirk(t, "chat-stream-without-usage.yaml")
	resp, err := replay.Decode(context.Background(), c.Interactions[0])
	require.NoError(t, err)
	assert.Equal(t, "The capital of the UK is London.", resp.Message.Text())
	assert.False(t, resp.Usage.Known())
	assert.Equal(t, llm.UnknownUsage(), resp.Usage)
	assert.Nil(t, resp.Latency, "the recording has no duration")
	shown := replay.Inspect(context.Background(), c)
	assert.True(t, shown[0].Response.Usage.Unknown)
}

// TestStreamErrorEventsAreProviderErrors: an error event inside a 200
// stream decodes to the provider's error in every wire format, and show
// counts it as a recorded answer, not a broken recording.
func TestStreamErrorEventsAreProviderErrors(t *testing.T) {
	c := readQuirk(t, "stream-error-events.yaml")
	for i, want := range []struct {
		kind llm.ErrorKind
		code string
	}{
		{llm.ErrOverloaded, "overloaded_error"},
		{llm.ErrServer, "server_error"},
		{llm.ErrServer, "server_error"},
	} {
		_, err := replay.Decode(context.Background(), c.Interactions[i])
		e, ok := llm.AsError(err)
		require.True(t, ok, "#%d: %v", i, err)
		assert.Equal(t, want.kind, e.Kind, "#%d", i)
		assert.Equal(t, want.code, e.Code, "#%d", i)
	}
	for _, in := range replay.Inspect(context.Background(), c) {
		assert.Equal(t, replay.OutcomeProviderError, in.Outcome, "#%d", in.Index)
		assert.False(t, in.Failed(), "#%d", in.Index)
	}
}

// TestTrafficThatIsNoModelCall: an image download and a trace export are
// listed as such, not as answers no adapter could read.
func TestTrafficThatIsNoModelCall(t *testing.T) {
	got := replay.Inspect(context.Background(), readQuirk(t, "not-model-calls.yaml"))
	require.Len(t, got, 3)
	for i, want := range []replay.Outcome{replay.OutcomeNotModelCall, replay.OutcomeAnswer, replay.OutcomeNotModelCall} {
		assert.Equal(t, want, got[i].Outcome, "#%d", i)
		assert.False(t, got[i].Failed(), "#%d", i)
		assert.Empty(t, got[i].Error, "#%d", i)
	}
	assert.Equal(t, &replay.Latency{DurationMS: 2310}, got[1].Latency)
}
