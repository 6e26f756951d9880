package provider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// TestStallEndsTheAttempt: a provider that never answers, or stops in the
// middle of an answer, ends the attempt once it has been silent for the
// per-attempt timeout; the error is a timeout wrapping ErrStalled and says
// which phase stalled. The handlers block until the client gives up, so
// nothing here depends on how long anything takes.
func TestStallEndsTheAttempt(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		// timeout is the per-attempt silence bound. The body-stops case
		// needs its first event to arrive within it even on a loaded
		// machine, so it gets more room than the case that never answers.
		timeout time.Duration
		began   bool
		message string
	}{
		{"no headers", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, 10 * time.Millisecond, false, "no answer within 10ms"},
		{"body stops", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: ping\ndata: {}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, 500 * time.Millisecond, true, "the answer stopped arriving: nothing for 500ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c := provider.Config{Provider: "p", Timeout: tt.timeout, Retry: provider.RetryPolicy{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }}}
			client := c.Client()
			calls := 0
			_, err := provider.Do(context.Background(), c, func(ctx context.Context) (string, error) {
				calls++
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				resp, err := client.Do(req)
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return string(b), err
			})
			require.Error(t, err)
			assert.True(t, llm.IsTimeout(err), "a stall is a timeout: %v", err)
			assert.ErrorIs(t, err, provider.ErrStalled)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			var se *provider.StallError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, tt.began, se.Began)
			assert.Contains(t, err.Error(), tt.message)
			assert.Contains(t, err.Error(), "per-attempt provider timeout; attempt 2 of 2")
			assert.Equal(t, 2, calls, "a stalled attempt is retried")
		})
	}
}

// slowBody yields chunks, sleeping gap before each one.
type slowBody struct {
	gap    time.Duration
	chunks int
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.chunks == 0 {
		return 0, io.EOF
	}
	time.Sleep(b.gap)
	b.chunks--
	return copy(p, "data: {}\n\n"), nil
}

func (b *slowBody) Close() error { return nil }

// slowTransport answers with a slowBody, after gap, giving up when the
// request's context ends.
type slowTransport struct{ gap time.Duration }

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-time.After(s.gap):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: &slowBody{gap: s.gap, chunks: 5}, Request: req}, nil
}

// TestTimeoutBoundsSilencesNotLength: the timeout bounds each silence, so
// an answer whose parts keep arriving completes however long it takes in
// total, and one that falls silent for longer fails. Time is synctest's,
// so the gaps are exact.
func TestTimeoutBoundsSilencesNotLength(t *testing.T) {
	read := func(gap time.Duration) (int, error) {
		c := provider.Config{Provider: "p", Timeout: 100 * time.Millisecond, Retry: provider.RetryPolicy{MaxAttempts: 1},
			HTTPClient: &http.Client{Transport: slowTransport{gap: gap}}}
		return provider.Do(context.Background(), c, func(ctx context.Context) (int, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider.test", nil)
			resp, err := c.Client().Do(req)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return len(b), err
		})
	}
	synctest.Test(t, func(t *testing.T) {
		n, err := read(60 * time.Millisecond) // 6 silences of 60ms: 360ms in all
		require.NoError(t, err)
		assert.Equal(t, 5*len("data: {}\n\n"), n)

		_, err = read(150 * time.Millisecond)
		require.ErrorIs(t, err, provider.ErrStalled)
		assert.Contains(t, err.Error(), "no answer within 100ms")
	})
}

func TestStalledAttemptIsNotAProviderTimeoutAnswer(t *testing.T) {
	// A 504 from the provider is a timeout too, but not ours: it does not
	// match ErrStalled.
	c := provider.Config{Provider: "p"}
	e := c.Classify(provider.Failure{StatusCode: 504})
	assert.True(t, llm.IsTimeout(e))
	assert.NotErrorIs(t, e, provider.ErrStalled)
}
