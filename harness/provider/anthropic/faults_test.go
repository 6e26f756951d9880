package anthropic_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
)

const canary = "sk-ant-canary-7f3a9c1e5b"

const okMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":3,"cache_creation_input_tokens":2}}`

func apiError(typ, msg string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_body"}`, typ, msg)
}

type harness struct {
	waits []time.Duration
	logs  bytes.Buffer
}

func (h *harness) model(t *testing.T, url string, mutate ...func(*provider.Config)) *anthropic.Model {
	t.Helper()
	cfg := provider.Config{
		Model: "claude-sonnet-4-6", BaseURL: url, APIKey: canary,
		Retry:  provider.RetryPolicy{MaxAttempts: 3, InitialBackoff: 250 * time.Millisecond, Sleep: func(_ context.Context, d time.Duration) error { h.waits = append(h.waits, d); return nil }},
		Logger: slog.New(slog.NewTextHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, f := range mutate {
		f(&cfg)
	}
	m, err := anthropic.New(cfg)
	require.NoError(t, err)
	return m
}

func TestRateLimitIsRetriedAfterTheServersWait(t *testing.T) {
	s := newScript(t,
		reply(429, map[string]string{"retry-after": "2", "request-id": "req_429"}, apiError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")),
		reply(200, nil, okMessage),
	)
	var h harness
	resp, err := h.model(t, s.URL).Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, "fine", resp.Message.Text())
	assert.Equal(t, llm.Usage{InputTokens: 5, OutputTokens: 1, CacheReadTokens: 3, CacheWriteTokens: 2}, resp.Usage)
	assert.Equal(t, []time.Duration{2 * time.Second}, h.waits, "the retry-after header sets the wait")
	assert.Equal(t, 2, s.Count())
	for _, r := range s.Requests() {
		hd := r.Header
		assert.Equal(t, "Bearer "+canary, hd.Get("Authorization"), "v2 sends the key as a bearer token")
		assert.Equal(t, "2026-10-21", hd.Get("Anthropic-Version"))
	}
	assert.Contains(t, h.logs.String(), "model call failed; retrying")
	assert.Contains(t, h.logs.String(), "request_id=req_429")
	assert.NotContains(t, h.logs.String(), canary)
}

func TestServerErrorsAreRetriedWithBackoff(t *testing.T) {
	s := newScript(t,
		reply(500, nil, apiError("api_error", "Internal server error")),
		reply(500, nil, apiError("api_error", "Internal server error")),
		reply(200, nil, okMessage),
	)
	var h harness
	_, err := h.model(t, s.URL).Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}, h.waits)
}

func TestOverloadedUntilAttemptsRunOut(t *testing.T) {
	over := reply(529, map[string]string{"request-id": "req_529"}, apiError("overloaded_error", "Overloaded"))
	s := newScript(t, over, over, over)
	var h harness
	_, err := h.model(t, s.URL).Generate(context.Background(), userRequest("hi"))
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrOverloaded)
	e, ok := llm.AsError(err)
	require.True(t, ok)
	assert.Equal(t, 529, e.StatusCode)
	assert.Equal(t, "req_529", e.RequestID)
	assert.Equal(t, "anthropic", e.Provider)
	assert.Equal(t, "anthropic: overloaded (HTTP 529, overloaded_error, request req_529): Overloaded", e.Error())
	assert.Equal(t, 3, s.Count())
	assert.Len(t, h.waits, 2)
}

func TestReplayNeverRetries(t *testing.T) {
	s := newScript(t, reply(529, nil, apiError("overloaded_error", "Overloaded")))
	var h harness
	_, err := h.model(t, s.URL, func(c *provider.Config) { c.Replay = true; c.APIKey = "" }).Generate(context.Background(), userRequest("hi"))
	assert.ErrorIs(t, err, llm.ErrOverloaded)
	assert.Equal(t, 1, s.Count())
	assert.Empty(t, s.Requests()[0].Header.Get("Authorization"))
}

func TestNonRetryableFailures(t *testing.T) {
	tests := []struct {
		name string
		step http.HandlerFunc
		kind llm.ErrorKind
	}{
		{"context overflow", reply(400, nil, apiError("invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum")), llm.ErrContextOverflow},
		{"auth echoing the key", reply(401, nil, apiError("authentication_error", "invalid x-api-key: "+canary)), llm.ErrAuthentication},
		{"bad request", reply(400, nil, apiError("invalid_request_error", "messages: at least one message is required")), llm.ErrInvalidRequest},
		{"not json", reply(200, map[string]string{"Content-Type": "text/plain"}, "method=POST pathname=/v1/messages"), llm.ErrBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(t, tt.step)
			var h harness
			_, err := h.model(t, s.URL).Generate(context.Background(), userRequest("hi"))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.kind, err.Error())
			assert.Equal(t, 1, s.Count())
			assert.NotContains(t, err.Error(), canary)
			assert.Empty(t, h.waits)
		})
	}
}

func TestMissingKeyFailsBeforeAnyRequest(t *testing.T) {
	s := newScript(t)
	m, err := anthropic.New(provider.Config{Model: "claude-sonnet-4-6", BaseURL: s.URL, APIKeyEnv: "ANTHROPIC_API_KEY", Getenv: func(string) string { return "" }})
	require.NoError(t, err, "building the model needs no key")
	_, err = m.Generate(context.Background(), userRequest("hi"))
	assert.True(t, llm.IsAuthentication(err))
	assert.ErrorContains(t, err, "set ANTHROPIC_API_KEY")
	for _, err := range m.Stream(context.Background(), userRequest("hi")) {
		assert.True(t, llm.IsAuthentication(err))
	}
	assert.Zero(t, s.Count())
}

func TestTimeoutIsClassifiedAndRetried(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	s := newScript(t, hang, reply(200, nil, okMessage))
	var h harness
	m := h.model(t, s.URL, func(c *provider.Config) { c.Timeout = 50 * time.Millisecond })
	resp, err := m.Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err, "the second attempt answers")
	assert.Equal(t, "fine", resp.Message.Text())
	assert.Len(t, h.waits, 1)

	s = newScript(t, hang)
	m = h.model(t, s.URL, func(c *provider.Config) { c.Timeout = 50 * time.Millisecond; c.Retry.MaxAttempts = 1 })
	_, err = m.Generate(context.Background(), userRequest("hi"))
	require.Error(t, err)
	assert.True(t, llm.IsTimeout(err), err.Error())
}

const (
	evStart     = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n"
	evTextStart = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	evHello     = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
	evWorld     = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" world\"}}\n\n"
	evTextStop  = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	evDelta     = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n"
	evStop      = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	evOverload  = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
)

func TestTruncatedStream(t *testing.T) {
	// Cut off after text was delivered: the partial answer is not retried.
	s := newScript(t, sse(evStart, evTextStart, evHello))
	var h harness
	got := collect(t, h.model(t, s.URL), userRequest("hi"))
	require.Error(t, got.Err)
	assert.ErrorIs(t, got.Err, llm.ErrConnection)
	assert.Contains(t, got.Err.Error(), "ended before message_stop")
	assert.Len(t, got.Chunks, 1)
	assert.Nil(t, got.Final)
	assert.Equal(t, 1, s.Count())

	// Cut off before any chunk: retried, and the second stream completes.
	s = newScript(t, sse(evStart), sse(evStart, evTextStart, evHello, evWorld, evTextStop, evDelta, evStop))
	got = collect(t, h.model(t, s.URL), userRequest("hi"))
	require.NoError(t, got.Err)
	assert.Equal(t, "Hello world", got.Final.Message.Text())
	assert.Equal(t, llm.Usage{InputTokens: 7, OutputTokens: 2}, got.Final.Usage)
	assert.Equal(t, 2, s.Count())
}

func TestErrorEventInsideTheStream(t *testing.T) {
	s := newScript(t, sse(evStart, evOverload), sse(evStart, evOverload), sse(evStart, evOverload))
	var h harness
	got := collect(t, h.model(t, s.URL), userRequest("hi"))
	require.Error(t, got.Err)
	assert.ErrorIs(t, got.Err, llm.ErrOverloaded)
	assert.Equal(t, 3, s.Count(), "nothing was delivered, so each attempt is retried")
}

// TestStreamDeliversChunksBeforeTheAnswerEnds holds the server in the middle
// of its answer until the first chunk has reached the caller.
func TestStreamDeliversChunksBeforeTheAnswerEnds(t *testing.T) {
	release := make(chan struct{})
	var finished bool
	var mu sync.Mutex
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		sse(evStart, evTextStart, evHello)(w, r)
		<-release
		sse(evWorld, evTextStop, evDelta, evStop)(w, r)
		mu.Lock()
		finished = true
		mu.Unlock()
	})
	var h harness
	var text strings.Builder
	var final *llm.Response
	for c, err := range h.model(t, s.URL).Stream(context.Background(), userRequest("hi")) {
		require.NoError(t, err)
		if c.TextDelta == "Hello" {
			mu.Lock()
			assert.False(t, finished, "the first chunk arrives while the server is still answering")
			mu.Unlock()
			close(release)
		}
		text.WriteString(c.TextDelta)
		if c.Response != nil {
			final = c.Response
		}
	}
	assert.Equal(t, "Hello world", text.String())
	require.NotNil(t, final)
	assert.Equal(t, llm.StopEndTurn, final.StopReason)
}

func TestStreamCancellation(t *testing.T) {
	serverSawCancel := make(chan struct{})
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		sse(evStart, evTextStart, evHello)(w, r)
		select {
		case <-r.Context().Done():
			close(serverSawCancel)
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var h harness
	var chunks int
	var last error
	for c, err := range h.model(t, s.URL).Stream(ctx, userRequest("hi")) {
		if err != nil {
			last = err
			break
		}
		chunks++
		if c.TextDelta == "Hello" {
			cancel()
		}
	}
	assert.Equal(t, 1, chunks)
	assert.True(t, errors.Is(last, context.Canceled), "got %v", last)
	select {
	case <-serverSawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request end")
	}
	assert.Equal(t, 1, s.Count())
}

func TestStoppingEarlyEndsTheStream(t *testing.T) {
	s := newScript(t, sse(evStart, evTextStart, evHello, evWorld, evTextStop, evDelta, evStop))
	var h harness
	n := 0
	for range h.model(t, s.URL).Stream(context.Background(), userRequest("hi")) {
		n++
		break
	}
	assert.Equal(t, 1, n)
}

// TestEnvironmentDoesNotLeakIntoTheClient sets every variable the SDK
// would read by default; none of them may reach the request.
func TestEnvironmentDoesNotLeakIntoTheClient(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://192.0.2.1:9")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	s := newScript(t, reply(200, nil, okMessage))
	m, err := anthropic.New(provider.Config{Model: "claude-sonnet-4-6", BaseURL: s.URL, Replay: true, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err)
	hd := s.Requests()[0].Header
	assert.Empty(t, hd.Get("Authorization"))
	assert.Empty(t, hd.Get("X-Api-Key"))
	assert.Empty(t, hd.Get("X-Leak"))
}
