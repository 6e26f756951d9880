package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
	"github.com/dageval/dageval/harness/provider/internal/recorded"
	"github.com/dageval/dageval/harness/provider/openai"
)

func decode(in recorded.Interaction, nMessages int) (*llm.Response, error) {
	if strings.HasSuffix(in.URL.Path, "/responses") {
		return openai.DecodeResponsesAnswer(context.Background(), in.Answer())
	}
	return openai.DecodeChatAnswer(context.Background(), in.Answer(), nMessages)
}

// TestDecodeAnswersReadEveryRecording decodes each recorded answer without
// a server and gets what the adapter returns for it on the wire.
func TestDecodeAnswersReadEveryRecording(t *testing.T) {
	for name, turns := range openaiRecordings {
		c := recorded.MustLoad(t, name)
		require.Len(t, c.Interactions, len(turns))
		for i, want := range turns {
			label := fmt.Sprintf("%s #%d", name, i)
			in := c.Interactions[i]
			got, err := decode(in, 1)
			if want.bad {
				require.Error(t, err, label)
				assert.ErrorIs(t, err, llm.ErrBadResponse, label)
				continue
			}
			require.NoError(t, err, label)
			checkTurn(t, label, want, got)

			// The same answer through a loopback server, Generate or Stream,
			// for a one-message conversation.
			one := &recorded.Cassette{Name: name, Interactions: c.Interactions[i : i+1]}
			srv := recorded.Serve(t, one)
			m := modelFor(t, one, srv.BaseURL())
			wire := providertest.Answer(t, m, in.Streamed(), label)
			assert.Equal(t, wire, got, label)
		}
	}
}

// TestDecodeChatAnswerSynthesisesIDsPerTurn: ids the server left out are
// derived from the conversation length, as in a replayed run.
func TestDecodeChatAnswerSynthesisesIDsPerTurn(t *testing.T) {
	in := recorded.MustLoad(t, "test_openai/test_compatible_api_with_tool_calls_without_id.yaml").Interactions[0]
	a, err := openai.DecodeChatAnswer(context.Background(), in.Answer(), 1)
	require.NoError(t, err)
	again, err := openai.DecodeChatAnswer(context.Background(), in.Answer(), 1)
	require.NoError(t, err)
	later, err := openai.DecodeChatAnswer(context.Background(), in.Answer(), 3)
	require.NoError(t, err)
	assert.Regexp(t, synthesized, a.Message.ToolCalls[0].ID)
	assert.Equal(t, a.Message.ToolCalls[0].ID, again.Message.ToolCalls[0].ID)
	assert.NotEqual(t, a.Message.ToolCalls[0].ID, later.Message.ToolCalls[0].ID)
}

// TestDecodeAnswerStreamAndWholeAgree decodes a recorded chat stream and
// the completion the SDK accumulates from it.
func TestDecodeAnswerStreamAndWholeAgree(t *testing.T) {
	for i, in := range recorded.MustLoad(t, "test_openai/test_run_stream_sync_streams_real_model.yaml").Interactions {
		require.True(t, in.Streamed())
		streamed, err := openai.DecodeChatAnswer(context.Background(), in.Answer(), 1)
		require.NoError(t, err)
		whole, err := openai.DecodeChatAnswer(context.Background(), provider.RecordedAnswer{
			StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: accumulateChat(t, in.Body)}, 1)
		require.NoError(t, err)
		assert.Equal(t, whole, streamed, "#%d", i)
	}
}

func TestDecodeAnswerFailures(t *testing.T) {
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	tests := []struct {
		name      string
		responses bool
		answer    provider.RecordedAnswer
		kind      llm.ErrorKind
		check     func(t *testing.T, e *llm.Error)
	}{
		{"chat rate limit", false, provider.RecordedAnswer{StatusCode: 429,
			Header: http.Header{"Content-Type": {"application/json"}, "Retry-After-Ms": {"1500"}, "X-Request-Id": {"req_9"}},
			Body:   []byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)}, llm.ErrRateLimit,
			func(t *testing.T, e *llm.Error) {
				assert.Equal(t, 1500*time.Millisecond, e.RetryAfter)
				assert.Equal(t, "req_9", e.RequestID)
			}},
		{"responses server error", true, provider.RecordedAnswer{StatusCode: 500, Header: jsonHeader, Body: []byte(`{"error":{"message":"boom","type":"server_error"}}`)}, llm.ErrServer, nil},
		{"chat context overflow", false, provider.RecordedAnswer{StatusCode: 400, Header: jsonHeader, Body: []byte(`{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`)}, llm.ErrContextOverflow, nil},
		{"chat truncated stream", false, provider.RecordedAnswer{StatusCode: 200, Header: sse,
			Body: []byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")},
			llm.ErrConnection, nil},
		{"responses truncated stream", true, provider.RecordedAnswer{StatusCode: 200, Header: sse,
			Body: []byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\",\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"sequence_number\":1}\n\n")},
			llm.ErrConnection, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.responses {
				_, err = openai.DecodeResponsesAnswer(context.Background(), tt.answer)
			} else {
				_, err = openai.DecodeChatAnswer(context.Background(), tt.answer, 1)
			}
			require.Error(t, err)
			e, ok := llm.AsError(err)
			require.True(t, ok, "%T %v", err, err)
			assert.Equal(t, tt.kind, e.Kind, e.Error())
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}
