package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
)

// TestDecodeAnswerReadsEveryRecording decodes each recorded answer without a
// server and gets what the adapter returns for it on the wire.
func TestDecodeAnswerReadsEveryRecording(t *testing.T) {
	for name, turns := range anthropicRecordings {
		c := recorded.MustLoad(t, name)
		require.Len(t, c.Interactions, len(turns))
		for i, want := range turns {
			label := fmt.Sprintf("%s #%d", name, i)
			got, err := anthropic.DecodeAnswer(context.Background(), c.Interactions[i].Answer())
			require.NoError(t, err, label)
			checkTurn(t, label, want, got)

			// The same answer through a loopback server and Generate or Stream.
			srv := recorded.Serve(t, &recorded.Cassette{Name: name, Interactions: c.Interactions[i : i+1]})
			m := replayModel(t, srv.BaseURL(), "claude-sonnet-4-5")
			wire := providertest.Answer(t, m, c.Interactions[i].Streamed(), label)
			assert.Equal(t, wire, got, label)
		}
	}
}

// TestDecodeAnswerStreamAndWholeAgree decodes a recorded stream and the
// message the SDK accumulates from it, and gets equal responses.
func TestDecodeAnswerStreamAndWholeAgree(t *testing.T) {
	in := recorded.MustLoad(t, "test_anthropic/test_anthropic_model_thinking_part_stream.yaml").Interactions[0]
	require.True(t, in.Streamed())
	streamed, err := anthropic.DecodeAnswer(context.Background(), in.Answer())
	require.NoError(t, err)
	whole, err := anthropic.DecodeAnswer(context.Background(), provider.RecordedAnswer{
		StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: accumulate(t, in.Body)})
	require.NoError(t, err)
	assert.Equal(t, whole, streamed)
}

func TestDecodeAnswerFailures(t *testing.T) {
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name   string
		answer provider.RecordedAnswer
		kind   llm.ErrorKind
		check  func(t *testing.T, e *llm.Error)
	}{
		{"rate limit with retry-after", provider.RecordedAnswer{StatusCode: 429,
			Header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"7"}, "Request-Id": {"req_1"}},
			Body:   []byte(apiError("rate_limit_error", "slow down"))}, llm.ErrRateLimit,
			func(t *testing.T, e *llm.Error) {
				assert.Equal(t, 7*time.Second, e.RetryAfter)
				assert.Equal(t, "req_1", e.RequestID)
				assert.Equal(t, "slow down", e.Message)
				assert.Equal(t, 429, e.StatusCode)
			}},
		{"overloaded", provider.RecordedAnswer{StatusCode: 529, Header: jsonHeader, Body: []byte(apiError("overloaded_error", "Overloaded"))}, llm.ErrOverloaded, nil},
		{"context overflow", provider.RecordedAnswer{StatusCode: 400, Header: jsonHeader, Body: []byte(apiError("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))}, llm.ErrContextOverflow, nil},
		{"not a message", provider.RecordedAnswer{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("hello")}, llm.ErrBadResponse, nil},
		{"truncated stream", provider.RecordedAnswer{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")},
			llm.ErrConnection, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropic.DecodeAnswer(context.Background(), tt.answer)
			require.Error(t, err)
			e, ok := llm.AsError(err)
			require.True(t, ok, "%T %v", err, err)
			assert.Equal(t, tt.kind, e.Kind, e.Error())
			assert.Equal(t, "anthropic", e.Provider)
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}
