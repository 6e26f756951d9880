package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/dageval/dageval/harness/provider/openai"
)

const canary = "sk-proj-canary-4d2c8e1f09"

const okChat = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"fine"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}`

type harness struct {
	waits []time.Duration
	logs  bytes.Buffer
}

func (h *harness) model(t *testing.T, url string, mutate ...func(*provider.Config)) *openai.Model {
	t.Helper()
	no := false
	cfg := provider.Config{
		Provider: "openai", Kind: provider.KindOpenAI, Model: "gpt-4o", BaseURL: url, APIKey: canary, UseResponsesAPI: &no,
		Retry:  provider.RetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, Sleep: func(_ context.Context, d time.Duration) error { h.waits = append(h.waits, d); return nil }},
		Logger: slog.New(slog.NewTextHandler(&h.logs, nil)),
	}
	for _, f := range mutate {
		f(&cfg)
	}
	m, err := openai.New(cfg)
	require.NoError(t, err)
	return m
}

func TestRateLimitRetryAfterMilliseconds(t *testing.T) {
	s := newScript(t,
		reply(429, map[string]string{"retry-after-ms": "1500", "x-request-id": "req_rl"}, `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`),
		reply(200, nil, okChat),
	)
	var h harness
	resp, err := h.model(t, s.URL).Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, "fine", resp.Message.Text())
	assert.Equal(t, llm.Usage{InputTokens: 6, OutputTokens: 2, CacheReadTokens: 4}, resp.Usage, "cached prompt tokens are split out")
	assert.Equal(t, []time.Duration{1500 * time.Millisecond}, h.waits)
	for _, r := range s.Requests() {
		assert.Equal(t, "Bearer "+canary, r.Header.Get("Authorization"))
	}
	assert.Contains(t, h.logs.String(), "request_id=req_rl")
	assert.NotContains(t, h.logs.String(), canary)
}

func TestOpenAIServerFaults(t *testing.T) {
	tests := []struct {
		name     string
		steps    []http.HandlerFunc
		kind     llm.ErrorKind
		requests int
	}{
		{"500 then 500 then 500", []http.HandlerFunc{
			reply(500, nil, `{"error":{"message":"The server had an error","type":"server_error"}}`),
			reply(500, nil, `{"error":{"message":"The server had an error","type":"server_error"}}`),
			reply(500, nil, `{"error":{"message":"The server had an error","type":"server_error"}}`),
		}, llm.ErrServer, 3},
		{"503 overloaded", []http.HandlerFunc{
			reply(503, nil, `{"error":{"message":"The engine is currently overloaded","type":"server_error"}}`),
			reply(503, nil, `{"error":{"message":"The engine is currently overloaded","type":"server_error"}}`),
			reply(503, nil, `{"error":{"message":"The engine is currently overloaded","type":"server_error"}}`),
		}, llm.ErrOverloaded, 3},
		{"context length", []http.HandlerFunc{
			reply(400, nil, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`),
		}, llm.ErrContextOverflow, 1},
		{"bad key echoed", []http.HandlerFunc{
			reply(401, nil, `{"error":{"message":"Incorrect API key provided: `+canary+`.","type":"invalid_request_error","code":"invalid_api_key"}}`),
		}, llm.ErrAuthentication, 1},
		{"ollama model missing", []http.HandlerFunc{
			reply(404, nil, `{"error":"model \"llama9\" not found, try pulling it first"}`),
		}, llm.ErrInvalidRequest, 1},
		{"html from a proxy", []http.HandlerFunc{
			reply(502, map[string]string{"Content-Type": "text/html"}, `<html><body>Bad Gateway</body></html>`),
			reply(200, nil, okChat),
		}, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(t, tt.steps...)
			var h harness
			_, err := h.model(t, s.URL).Generate(context.Background(), userRequest("hi"))
			assert.Equal(t, tt.requests, s.Count())
			if tt.kind == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.kind, err.Error())
			assert.NotContains(t, err.Error(), canary)
			assert.NotContains(t, h.logs.String(), canary)
		})
	}
}

func TestTimeout(t *testing.T) {
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	var h harness
	_, err := h.model(t, s.URL, func(c *provider.Config) { c.Timeout = 50 * time.Millisecond; c.Retry.MaxAttempts = 1 }).Generate(context.Background(), userRequest("hi"))
	require.Error(t, err)
	assert.True(t, llm.IsTimeout(err), err.Error())
}

const (
	chunkRole  = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
	chunkHello = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n"
	chunkWorld = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},\"finish_reason\":null}]}\n\n"
	chunkStop  = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	chunkUsage = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n"
	chunkDone  = "data: [DONE]\n\n"
	chunkError = "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\"}}\n\n"
)

func TestTruncatedChatStream(t *testing.T) {
	s := newScript(t, sse(chunkRole, chunkHello))
	var h harness
	got := collect(t, h.model(t, s.URL), userRequest("hi"))
	require.Error(t, got.Err)
	assert.ErrorIs(t, got.Err, llm.ErrConnection)
	assert.Len(t, got.Chunks, 1, "the delivered text is not retried")
	assert.Equal(t, 1, s.Count())

	s = newScript(t, sse(chunkRole), sse(chunkRole, chunkHello, chunkWorld, chunkStop, chunkUsage, chunkDone))
	got = collect(t, h.model(t, s.URL), userRequest("hi"))
	require.NoError(t, got.Err)
	assert.Equal(t, "Hello world", got.Final.Message.Text())
	assert.Equal(t, llm.Usage{InputTokens: 3, OutputTokens: 2}, got.Final.Usage)
	assert.Equal(t, 2, s.Count())
}

func TestErrorDocumentInsideChatStream(t *testing.T) {
	s := newScript(t, sse(chunkRole, chunkError), sse(chunkRole, chunkHello, chunkStop, chunkDone))
	var h harness
	got := collect(t, h.model(t, s.URL), userRequest("hi"))
	require.NoError(t, got.Err, "a server error before any chunk is retried")
	assert.Equal(t, "Hello", got.Final.Message.Text())

	s = newScript(t, sse(chunkRole, chunkHello, chunkError))
	got = collect(t, h.model(t, s.URL), userRequest("hi"))
	require.Error(t, got.Err)
	assert.ErrorIs(t, got.Err, llm.ErrServer)
}

func TestResponsesStreamFaults(t *testing.T) {
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-4o\",\"output\":[]}}\n\n"
	delta := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n"
	failed := "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"model\":\"gpt-4o\",\"output\":[],\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n"
	yes := true
	responsesAPI := func(c *provider.Config) { c.UseResponsesAPI = &yes }

	s := newScript(t, sse(created, delta))
	var h harness
	got := collect(t, h.model(t, s.URL, responsesAPI), userRequest("hi"))
	require.Error(t, got.Err)
	assert.ErrorIs(t, got.Err, llm.ErrConnection)
	assert.Contains(t, got.Err.Error(), "response.completed")

	s = newScript(t, sse(created, failed))
	got = collect(t, h.model(t, s.URL, responsesAPI), userRequest("hi"))
	require.Error(t, got.Err)
	assert.True(t, llm.IsContextOverflow(got.Err), got.Err.Error())
	assert.Equal(t, 1, s.Count(), "context overflow is not retried")
}

func TestStreamIsIncrementalAndCancellable(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	finished := false
	s := newScript(t, func(w http.ResponseWriter, r *http.Request) {
		sse(chunkRole, chunkHello)(w, r)
		<-release
		sse(chunkWorld, chunkStop, chunkDone)(w, r)
		mu.Lock()
		finished = true
		mu.Unlock()
	})
	var h harness
	var text strings.Builder
	for c, err := range h.model(t, s.URL).Stream(context.Background(), userRequest("hi")) {
		require.NoError(t, err)
		if c.TextDelta == "Hello" {
			mu.Lock()
			assert.False(t, finished, "the first chunk arrives while the server is still answering")
			mu.Unlock()
			close(release)
		}
		text.WriteString(c.TextDelta)
	}
	assert.Equal(t, "Hello world", text.String())

	sawCancel := make(chan struct{})
	s = newScript(t, func(w http.ResponseWriter, r *http.Request) {
		sse(chunkRole, chunkHello)(w, r)
		select {
		case <-r.Context().Done():
			close(sawCancel)
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for c, err := range h.model(t, s.URL).Stream(ctx, userRequest("hi")) {
		if err != nil {
			last = err
			break
		}
		if c.TextDelta == "Hello" {
			cancel()
		}
	}
	assert.True(t, errors.Is(last, context.Canceled), "got %v", last)
	select {
	case <-sawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request end")
	}
}

// TestCredentialsAndHeaders checks what goes on the wire: Azure's api-key
// header instead of a bearer token, configured headers, and nothing from
// the SDK's own environment variables.
func TestCredentialsAndHeaders(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://192.0.2.1:9/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env-should-not-be-used")
	t.Setenv("OPENAI_ORG_ID", "org-leak")
	t.Setenv("OPENAI_PROJECT_ID", "proj-leak")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	s := newScript(t, reply(200, nil, okChat), reply(200, nil, okChat))

	var h harness
	_, err := h.model(t, s.URL, func(c *provider.Config) {
		c.Provider, c.Kind, c.UseResponsesAPI = "azure", provider.KindOpenAICompatible, nil
		c.AuthHeader = "api-key"
		c.Headers = map[string]string{"X-Team": "evals"}
	}).Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err)
	r := s.Requests()[0]
	assert.Equal(t, canary, r.Header.Get("Api-Key"))
	assert.Empty(t, r.Header.Get("Authorization"))
	assert.Equal(t, "evals", r.Header.Get("X-Team"))
	for _, leak := range []string{"Openai-Organization", "Openai-Project", "X-Leak"} {
		assert.Empty(t, r.Header.Get(leak), leak)
	}

	// A local server with no key configured gets no Authorization header.
	_, err = h.model(t, s.URL, func(c *provider.Config) {
		c.Provider, c.Kind, c.UseResponsesAPI = "ollama", provider.KindOpenAICompatible, nil
		c.APIKey, c.APIKeyEnv, c.KeyOptional = "", "OLLAMA_API_KEY", true
		c.Getenv = func(string) string { return "" }
	}).Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err)
	assert.Empty(t, s.Requests()[1].Header.Get("Authorization"))
}

// TestChatStreamThatRepeatsTheCallsHead: a server that sends the call's id
// and whole name again with every delta (Novita behind OpenRouter, as
// recorded by LLM) gives one call with its name once, from Stream and from
// Generate reading the stream, and deltas that add up to it.
func TestChatStreamThatRepeatsTheCallsHead(t *testing.T) {
	call := func(args string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"0","type":"function","function":{"name":"llm_version","arguments":"` + args + `"}}]},"finish_reason":null}]}` + "\n\n"
	}
	stream := sse(call(""), call(`{\"a\":`), call(`1}`), `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\n", chunkDone)
	var h harness
	s := newScript(t, stream, stream)
	got := collect(t, h.model(t, s.URL), userRequest("hi"))
	require.NoError(t, got.Err)
	require.Len(t, got.Final.Message.ToolCalls, 1)
	assert.Equal(t, llm.ToolCall{ID: "0", Name: "llm_version", Args: json.RawMessage(`{"a":1}`)}, got.Final.Message.ToolCalls[0])
	var name, args strings.Builder
	for _, c := range got.Chunks {
		if d := c.ToolCallDelta; d != nil {
			name.WriteString(d.Name)
			args.WriteString(d.ArgsDelta)
		}
	}
	assert.Equal(t, "llm_version", name.String())
	assert.Equal(t, `{"a":1}`, args.String())

	whole, err := h.model(t, s.URL).Generate(context.Background(), userRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, got.Final.Message.ToolCalls, whole.Message.ToolCalls)
}
