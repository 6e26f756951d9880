package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// bodies is a transport that keeps each request's body and refuses it.
type bodies struct {
	mu   sync.Mutex
	sent []string
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.sent = append(b.sent, string(raw))
	b.mu.Unlock()
	return &http.Response{StatusCode: http.StatusBadRequest, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"error":{"message":"no","type":"invalid_request_error"}}`)), Request: r}, nil
}

func (b *bodies) last(t *testing.T) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NotEmpty(t, b.sent)
	return b.sent[len(b.sent)-1]
}

// TestDirectBodiesAreTheSDKs: what Generate and Stream send, the spliced
// body handed over whole, is byte for byte what the SDK sends for the
// same parameters built field by field, extra body fields included (one
// of them replacing a field the request has), for Chat Completions and
// Responses, plain and streamed, spliced or not.
func TestDirectBodiesAreTheSDKs(t *testing.T) {
	for _, useResponses := range []bool{false, true} {
		for i, req := range []*llm.Request{conversation(), awkward(), {Messages: []llm.Message{llm.User("hi")}}, spaced()} {
			tr := &bodies{}
			m, err := New(provider.Config{Provider: "p", Model: "m", Kind: provider.KindOpenAI, BaseURL: "http://127.0.0.1:1/v1", UseResponsesAPI: &useResponses, Replay: true,
				HTTPClient: &http.Client{Transport: tr}, ExtraBody: map[string]any{"zeta": []any{"<a>", 1.5}, "model": "override", "alpha": map[string]any{"k": true}}})
			require.NoError(t, err)
			ctx := context.Background()
			for _, stream := range []bool{false, true} {
				var want string
				if useResponses {
					p, err := m.responsesFields(req)
					require.NoError(t, err)
					svc := responses.NewResponseService(append(m.base, option.WithHTTPClient(&http.Client{Transport: tr}))...)
					if stream {
						svc.NewStreaming(ctx, p).Close()
					} else {
						_, _ = svc.New(ctx, p)
					}
				} else {
					p, err := m.chatFields(req, stream)
					require.NoError(t, err)
					svc := sdk.NewChatCompletionService(append(m.base, option.WithHTTPClient(&http.Client{Transport: tr}))...)
					if stream {
						svc.NewStreaming(ctx, p).Close()
					} else {
						_, _ = svc.New(ctx, p)
					}
				}
				want = tr.last(t)
				if stream {
					for _, err := range m.Stream(ctx, req) {
						if err != nil {
							break
						}
					}
				} else {
					_, err = m.Generate(ctx, req)
					require.Error(t, err)
				}
				assert.Equal(t, want, tr.last(t), "responses %v, request %d, stream %v", useResponses, i, stream)
				assert.Contains(t, want, `"model":"override"`)
			}
		}
	}
}

// flaky is a transport that keeps each request's body and answers the
// first fails of them with a server error, the rest with a Chat
// Completions answer.
type flaky struct {
	bodies
	fails int
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, err := f.bodies.RoundTrip(r); err != nil {
		return nil, err
	}
	f.mu.Lock()
	n := len(f.sent)
	f.mu.Unlock()
	status, body := http.StatusOK, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"fine"}}]}`
	if n <= f.fails {
		status, body = http.StatusInternalServerError, `{"error":{"message":"try again","type":"server_error"}}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// TestRetriedAttemptsSendTheSameBody: every attempt of a retried call
// sends the body the SDK encodes for its parameters, byte for byte, the
// spliced body being handed to the SDK as it is on each attempt, with and
// without extra body fields set on it.
func TestRetriedAttemptsSendTheSameBody(t *testing.T) {
	for _, extra := range []map[string]any{nil, {"zeta": []any{"<a>", 1.5}, "model": "override"}} {
		for i, req := range []*llm.Request{conversation(), awkward(), spaced()} {
			tr := &flaky{fails: 2}
			no := false
			m, err := New(provider.Config{Provider: "p", Model: "m", Kind: provider.KindOpenAI, BaseURL: "http://127.0.0.1:1/v1", UseResponsesAPI: &no,
				APIKey: "k", HTTPClient: &http.Client{Transport: tr}, ExtraBody: extra,
				Retry: provider.RetryPolicy{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }}})
			require.NoError(t, err)
			p, err := m.chatFields(req, false)
			require.NoError(t, err)
			sdkTr := &bodies{}
			svc := sdk.NewChatCompletionService(append(m.base, option.WithHTTPClient(&http.Client{Transport: sdkTr}))...)
			_, _ = svc.New(context.Background(), p)
			want := sdkTr.last(t)
			resp, err := m.Generate(context.Background(), req)
			require.NoError(t, err, "request %d", i)
			assert.Equal(t, "fine", resp.Message.Text())
			require.Len(t, tr.sent, 3)
			for k, sent := range tr.sent {
				assert.Equal(t, want, sent, "extra %v, request %d, attempt %d", extra != nil, i, k)
			}
		}
	}
}
