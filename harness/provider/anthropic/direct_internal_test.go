package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
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
		Body: io.NopCloser(strings.NewReader(`{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`)), Request: r}, nil
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
// of them replacing a field the request has), plain and streamed, spliced
// or not (a tool schema with spaces is not).
func TestDirectBodiesAreTheSDKs(t *testing.T) {
	awkward := &llm.Request{
		System: []llm.Block{{Type: llm.BlockText, Text: "<rules>Be terse & exact.</rules>\u2028", CacheControl: llm.Ephemeral()}},
		Messages: []llm.Message{
			llm.User("Find <it> & \u2029 report."),
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Looking.")}, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "find", Args: json.RawMessage(`{"q":"<a> & b"}`)}}},
			llm.ToolResult("t1", "find", "</tool_result>\x00", false),
			llm.User("Thanks."),
		},
		Tools:      []llm.ToolSpec{{Name: "find", Description: "Finds <things> & more.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}},
		ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceAuto},
		MaxTokens:  512,
	}
	spaced := *awkward
	spaced.Tools = []llm.ToolSpec{{Name: "find", Parameters: json.RawMessage(`{"type": "object"}`)}}
	for i, req := range []*llm.Request{awkward, {Messages: []llm.Message{llm.User("hi")}}, &spaced} {
		tr := &bodies{}
		m, err := New(provider.Config{Model: "claude-sonnet-4-5", Replay: true, HTTPClient: &http.Client{Transport: tr},
			ExtraBody: map[string]any{"zeta": []any{"<a>", 1.5}, "max_tokens": 77, "alpha": map[string]any{"k": true}}})
		require.NoError(t, err)
		ctx := context.Background()
		for _, stream := range []bool{false, true} {
			p, err := m.fields(req)
			require.NoError(t, err)
			svc := sdk.NewClient(append(m.base, option.WithHTTPClient(&http.Client{Transport: tr}))...).Messages
			if stream {
				svc.NewStreaming(ctx, p).Close()
				for _, err := range m.Stream(ctx, req) {
					if err != nil {
						break
					}
				}
			} else {
				_, _ = svc.New(ctx, p, option.WithRequestTimeout(time.Hour))
				want := tr.last(t)
				_, err = m.Generate(ctx, req)
				require.Error(t, err)
				assert.Equal(t, want, tr.last(t), "request %d", i)
				continue
			}
			require.Len(t, tr.sent, 4)
			assert.Equal(t, tr.sent[2], tr.sent[3], "request %d streamed", i)
			assert.Contains(t, tr.sent[3], `"max_tokens":77`)
		}
	}
}
