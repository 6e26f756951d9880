package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

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
