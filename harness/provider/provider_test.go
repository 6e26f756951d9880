package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// fakeModel records the configuration its factory received.
type fakeModel struct{ cfg provider.Config }

func (m *fakeModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if _, _, err := m.cfg.Credentials(); err != nil {
		return nil, err
	}
	return &llm.Response{Message: llm.Assistant("ok")}, nil
}

func (m *fakeModel) Identity() llm.Identity { return m.cfg.Identity() }

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func newResolver(t *testing.T, vars map[string]string) *provider.Resolver {
	t.Helper()
	r := provider.NewResolver(provider.Config{Getenv: env(vars)})
	for _, k := range provider.Kinds() {
		require.NoError(t, r.Register(k, func(c provider.Config) (llm.ChatModel, error) { return &fakeModel{cfg: c}, nil }))
	}
	return r
}

func TestResolveSpecsThroughEntries(t *testing.T) {
	r := newResolver(t, nil)
	require.NoError(t, r.SetEntry("local", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "http://127.0.0.1:9999/v1", APIKeyEnv: "LOCAL_KEY"}))
	tests := []struct {
		spec, provider, model, kind, base, keyEnv string
		responses                                 bool
	}{
		{"anthropic:claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6", provider.KindAnthropic, "https://api.anthropic.com", "ANTHROPIC_API_KEY", false},
		{"openai:gpt-5", "openai", "gpt-5", provider.KindOpenAI, "https://api.openai.com/v1", "OPENAI_API_KEY", true},
		{"ollama:llama3:8b", "ollama", "llama3:8b", provider.KindOpenAICompatible, "http://localhost:11434/v1", "OLLAMA_API_KEY", false},
		{"vllm:Qwen/Qwen3-32B", "vllm", "Qwen/Qwen3-32B", provider.KindOpenAICompatible, "http://localhost:8000/v1", "VLLM_API_KEY", false},
		{"llamacpp:any", "llamacpp", "any", provider.KindOpenAICompatible, "http://localhost:8080/v1", "LLAMACPP_API_KEY", false},
		{"openrouter:mistralai/mistral-small", "openrouter", "mistralai/mistral-small", provider.KindOpenAICompatible, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", false},
		{"groq:llama-3.3-70b-versatile", "groq", "llama-3.3-70b-versatile", provider.KindOpenAICompatible, "https://api.groq.com/openai/v1", "GROQ_API_KEY", false},
		{"gemini:gemini-2.5-pro", "gemini", "gemini-2.5-pro", provider.KindGemini, "https://generativelanguage.googleapis.com", "GEMINI_API_KEY", false},
		{"google_genai:gemini-2.5-flash", "google_genai", "gemini-2.5-flash", provider.KindGemini, "https://generativelanguage.googleapis.com", "GOOGLE_API_KEY", false},
		{"gemini-openai:gemini-2.5-pro", "gemini-openai", "gemini-2.5-pro", provider.KindOpenAICompatible, "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY", false},
		{"local:model-a", "local", "model-a", provider.KindOpenAICompatible, "http://127.0.0.1:9999/v1", "LOCAL_KEY", false},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			m, err := r.Resolve(tt.spec)
			require.NoError(t, err, "resolving never needs a key")
			c := m.(*fakeModel).cfg
			assert.Equal(t, tt.provider, c.Provider)
			assert.Equal(t, tt.model, c.Model)
			assert.Equal(t, tt.kind, c.Kind)
			assert.Equal(t, tt.base, c.BaseURL)
			assert.Equal(t, tt.keyEnv, c.APIKeyEnv)
			assert.Equal(t, tt.responses, c.ResponsesAPI())
			id, ok := llm.IdentityOf(m)
			require.True(t, ok)
			assert.Equal(t, tt.spec, id.String())
		})
	}
}

func TestMissingKeyFailsOnlyAtCallTime(t *testing.T) {
	r := newResolver(t, map[string]string{"GROQ_API_KEY": "gsk-test-1234567890"})
	m, err := r.Resolve("anthropic:claude-haiku-4-5")
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), &llm.Request{})
	require.Error(t, err)
	assert.True(t, llm.IsAuthentication(err))
	assert.ErrorIs(t, err, provider.ErrNoAPIKey)
	assert.Contains(t, err.Error(), "set ANTHROPIC_API_KEY")
	assert.False(t, llm.IsRetryable(err))

	// A local server needs no key; a set variable is used as a bearer token.
	for spec, want := range map[string][2]string{
		"ollama:llama3:8b":               {"", ""},
		"groq:llama-3.3-70b-versatile":   {"Authorization", "Bearer gsk-test-1234567890"},
		"anthropic:claude-sonnet-4-6-rp": {"", ""},
	} {
		c, err := r.Config(spec, nil)
		require.NoError(t, err)
		if strings.HasSuffix(spec, "-rp") {
			c.Replay = true // replay needs no key either
		}
		h, v, err := c.Credentials()
		require.NoError(t, err, spec)
		assert.Equal(t, want, [2]string{h, v}, spec)
	}
}

func TestAzureEntryNeedsItsEndpoint(t *testing.T) {
	r := newResolver(t, map[string]string{"AZURE_OPENAI_API_KEY": "azure-secret-key-123"})
	c, err := r.Config("azure:my-gpt5-deployment", nil)
	require.NoError(t, err, "a missing endpoint variable is reported at call time, not at assembly")
	_, _, err = c.Credentials()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "set AZURE_OPENAI_ENDPOINT")

	r = newResolver(t, map[string]string{"AZURE_OPENAI_API_KEY": "azure-secret-key-123", "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com"})
	c, err = r.Config("azure:my-gpt5-deployment", nil)
	require.NoError(t, err)
	assert.Equal(t, "https://res.openai.azure.com/openai/v1", c.BaseURL)
	h, v, err := c.Credentials()
	require.NoError(t, err)
	assert.Equal(t, "api-key", h)
	assert.Equal(t, "azure-secret-key-123", v)
}

func TestEntriesFromYAML(t *testing.T) {
	src := `
local:
  kind: openai-compatible
  base_url: http://localhost:8000/v1
  api_key_env: LOCAL_KEY
  headers:
    X-Team: evals
proxy:
  kind: anthropic
  base_url: https://llm-proxy.internal
  api_key_env: PROXY_KEY
`
	var entries map[string]provider.Entry
	require.NoError(t, yaml.UnmarshalWithOptions([]byte(src), &entries, yaml.Strict()))
	r := newResolver(t, nil)
	require.NoError(t, r.SetEntries(entries))
	c, err := r.Config("local:model-a", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"X-Team": "evals"}, c.Headers)
	c, err = r.Config("proxy:claude-sonnet-4-6", nil)
	require.NoError(t, err)
	assert.Equal(t, provider.KindAnthropic, c.Kind)
	assert.Equal(t, "https://llm-proxy.internal", c.BaseURL)
	assert.Contains(t, r.Names(), "proxy")
}

func TestEntryValidation(t *testing.T) {
	yes := true
	tests := []struct {
		name  string
		entry provider.Entry
		want  string
	}{
		{"local", provider.Entry{}, "provider entry local: kind is required"},
		{"local", provider.Entry{Kind: "converse"}, `provider entry local: kind "converse" is not one of anthropic, openai, openai-compatible, gemini, bedrock, vertex, azure-openai`},
		{"local", provider.Entry{Kind: provider.KindAzureOpenAI}, "provider entry local: base_url is required for kind azure-openai"},
		{"local", provider.Entry{Kind: provider.KindAnthropic, Region: "us-east-1"}, "provider entry local: region applies to kind bedrock or vertex only, not anthropic"},
		{"local", provider.Entry{Kind: provider.KindBedrock, Project: "p"}, "provider entry local: project applies to kind vertex only"},
		{"local", provider.Entry{Kind: provider.KindVertex, APIVersion: "2024-10-21"}, "provider entry local: api_version applies to kind azure-openai only"},
		{"local", provider.Entry{Kind: provider.KindVertex, Project: "a/../b"}, `provider entry local: project "a/../b" may not contain '/'`},
		{"local", provider.Entry{Kind: provider.KindOpenAICompatible}, "provider entry local: base_url is required for kind openai-compatible"},
		{"local", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "localhost:8000"}, `provider entry local: base_url "localhost:8000" is not an http(s) URL`},
		{"local", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "http://x", APIKeyEnv: "not a var"}, `api_key_env "not a var" is not an environment variable name`},
		{"local", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "http://x", UseResponsesAPI: &yes}, "use_responses_api needs kind openai or azure-openai"},
		{"Local", provider.Entry{Kind: provider.KindAnthropic}, `provider entry "Local": name must be lower-case`},
	}
	r := newResolver(t, nil)
	for _, tt := range tests {
		err := r.SetEntry(tt.name, tt.entry)
		require.Error(t, err, tt.want)
		assert.Contains(t, err.Error(), tt.want)
	}
	err := r.SetEntries(map[string]provider.Entry{"good": {Kind: provider.KindAnthropic}, "bad": {Kind: "x"}})
	require.Error(t, err)
	_, ok := r.Entry("good")
	assert.False(t, ok, "SetEntries is all or nothing")
}

func TestResolveErrors(t *testing.T) {
	r := newResolver(t, nil)
	_, err := r.Resolve("nowhere:model")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown provider "nowhere"`)
	assert.Contains(t, err.Error(), "anthropic, azure, azure_openai, bedrock, gemini")

	_, err = r.Resolve("gpt-5")
	assert.ErrorContains(t, err, "has no provider")

	bare := provider.NewResolver(provider.Config{})
	_, err = bare.Resolve("openai:gpt-5")
	assert.ErrorContains(t, err, "no adapter registered for kind openai")
	assert.Error(t, bare.Register("converse", func(provider.Config) (llm.ChatModel, error) { return nil, nil }))

	failing := provider.NewResolver(provider.Config{})
	require.NoError(t, failing.Register(provider.KindAnthropic, func(provider.Config) (llm.ChatModel, error) { return nil, errors.New("boom") }))
	_, err = failing.Resolve("anthropic:x")
	assert.EqualError(t, err, "provider anthropic: boom")
}

func TestOptionsMap(t *testing.T) {
	r := newResolver(t, nil)
	c, err := r.Config("openai:gpt-5", map[string]any{
		"use_responses_api":     false,
		"base_url":              "http://127.0.0.1:1234/v1",
		"timeout":               "90s",
		"max_retries":           uint64(5),
		"max_tokens":            float64(2048),
		"headers":               map[string]any{"X-A": "b"},
		"retry_initial_backoff": 2,
		"retry_max_backoff":     "1m",
		"extra_body":            map[string]any{"reasoning_effort": "low"},
		"api_key_env":           "MY_OPENAI_KEY",
	})
	require.NoError(t, err)
	assert.False(t, c.ResponsesAPI())
	assert.Equal(t, "http://127.0.0.1:1234/v1", c.BaseURL)
	assert.Equal(t, 90*time.Second, c.Timeout)
	assert.Equal(t, 6, c.Retry.MaxAttempts)
	assert.Equal(t, 2048, c.MaxTokens)
	assert.Equal(t, 2*time.Second, c.Retry.InitialBackoff)
	assert.Equal(t, time.Minute, c.Retry.MaxBackoff)
	assert.Equal(t, map[string]string{"X-A": "b"}, c.Headers)
	assert.Equal(t, map[string]any{"reasoning_effort": "low"}, c.ExtraBody)
	assert.Equal(t, "MY_OPENAI_KEY", c.APIKeyEnv)

	bad := []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"temperature": 0.2}, "option temperature: unknown provider option; known options: api_key_env,"},
		{map[string]any{"api_key": "sk-live"}, "option api_key: literal API keys are not accepted"},
		{map[string]any{"use_responses_api": "yes"}, "option use_responses_api: want true or false, got string"},
		{map[string]any{"max_tokens": 1.5}, "option max_tokens: want a whole number"},
		{map[string]any{"max_tokens": 0}, "option max_tokens: must be positive"},
		{map[string]any{"timeout": "soon"}, "option timeout: want a duration"},
		{map[string]any{"headers": map[string]any{"X": 1}}, "option headers: value of X: want a string, got int"},
		{map[string]any{"base_url": "ftp://x"}, `base_url "ftp://x" is not an http(s) URL`},
		{map[string]any{"max_retries": -1}, "option max_retries: must not be negative"},
	}
	for _, b := range bad {
		_, err := r.Config("openai:gpt-5", b.opts)
		require.Error(t, err, b.opts)
		assert.Contains(t, err.Error(), b.want)
		assert.True(t, strings.HasPrefix(err.Error(), `model spec "openai:gpt-5": `) || strings.Contains(err.Error(), "base_url"), err.Error())
	}
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	const key = "sk-ant-canary-0123456789"
	c := provider.Config{Provider: "anthropic", Model: "m", Kind: provider.KindAnthropic, APIKey: key,
		Headers: map[string]string{"X-Proxy-Token": "proxy-secret-abcdef"}}
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("config", "cfg", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), buf.String()} {
		assert.NotContains(t, s, key)
		assert.NotContains(t, s, "proxy-secret-abcdef")
	}
	assert.Equal(t, "error: [REDACTED] and [REDACTED]", c.Scrub("error: "+key+" and proxy-secret-abcdef"))
}

func TestClassify(t *testing.T) {
	c := provider.Config{Provider: "p", APIKey: "sk-secret-key-value"}
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		kind       llm.ErrorKind
		code, msg  string
		retryAfter time.Duration
		requestID  string
	}{
		{"anthropic overloaded", 529, h("request-id", "req_1"), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, llm.ErrOverloaded, "overloaded_error", "Overloaded", 0, "req_1"},
		{"anthropic rate limit", 429, h("retry-after", "7"), `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`, llm.ErrRateLimit, "rate_limit_error", "slow", 7 * time.Second, ""},
		{"anthropic prompt too long", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`, llm.ErrContextOverflow, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum", 0, ""},
		{"anthropic max tokens over limit", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 197000 + 8192 > 200000"}}`, llm.ErrContextOverflow, "invalid_request_error", "", 0, ""},
		{"anthropic 413", 413, nil, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, llm.ErrContextOverflow, "request_too_large", "", 0, ""},
		{"anthropic auth", 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, llm.ErrAuthentication, "authentication_error", "", 0, ""},
		{"anthropic stream error event", 200, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, llm.ErrOverloaded, "overloaded_error", "", 0, ""},
		{"openai context", 400, h("x-request-id", "req_o"), `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, llm.ErrContextOverflow, "invalid_request_error/context_length_exceeded", "", 0, "req_o"},
		{"openai TPM is a rate limit", 429, h("retry-after-ms", "1500"), `{"error":{"message":"Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000. The input or output tokens must be reduced","type":"tokens","code":"rate_limit_exceeded"}}`, llm.ErrRateLimit, "tokens/rate_limit_exceeded", "", 1500 * time.Millisecond, ""},
		{"openai quota", 429, nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, llm.ErrBilling, "insufficient_quota", "", 0, ""},
		{"openai key echoed", 401, nil, `{"error":{"message":"Incorrect API key provided: sk-secret-key-value.","type":"invalid_request_error","code":"invalid_api_key"}}`, llm.ErrAuthentication, "invalid_request_error/invalid_api_key", "Incorrect API key provided: [REDACTED].", 0, ""},
		{"openai 500", 500, nil, `{"error":{"message":"The server had an error","type":"server_error"}}`, llm.ErrServer, "server_error", "", 0, ""},
		{"ollama plain", 404, nil, `{"error":"model \"llama9\" not found, try pulling it first"}`, llm.ErrInvalidRequest, "", "model \"llama9\" not found, try pulling it first", 0, ""},
		{"vllm context", 400, nil, `{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.","type":"BadRequestError","param":null,"code":400}`, llm.ErrContextOverflow, "BadRequestError/400", "", 0, ""},
		{"llama.cpp context", 400, nil, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`, llm.ErrContextOverflow, "exceed_context_size_error/400", "", 0, ""},
		{"gemini context", 400, nil, `[{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`, llm.ErrContextOverflow, "INVALID_ARGUMENT", "", 0, ""},
		// Recorded by crewAI's test suite: an invalid key is a 400 whose ErrorInfo says why.
		{"gemini invalid key", 400, nil, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, llm.ErrAuthentication, "API_KEY_INVALID", "API key not valid. Please pass a valid API key.", 0, ""},
		{"gemini quota", 429, nil, `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"23s"}]}}`, llm.ErrRateLimit, "RESOURCE_EXHAUSTED", "", 23 * time.Second, ""},
		{"gemini overloaded", 503, nil, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, llm.ErrOverloaded, "UNAVAILABLE", "", 0, ""},
		{"bedrock throttling", 429, h("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "x-amzn-RequestId", "req_b"), `{"message":"Too many requests, please wait before trying again."}`, llm.ErrRateLimit, "ThrottlingException", "Too many requests, please wait before trying again.", 0, "req_b"},
		{"bedrock input too long", 400, h("x-amzn-ErrorType", "ValidationException"), `{"message":"Input is too long for requested model."}`, llm.ErrContextOverflow, "ValidationException", "", 0, ""},
		{"bedrock bad signature", 403, h("x-amzn-ErrorType", "UnrecognizedClientException"), `{"message":"The security token included in the request is invalid."}`, llm.ErrAuthentication, "UnrecognizedClientException", "", 0, ""},
		{"bedrock stream exception", 200, nil, `{"type":"error","error":{"type":"throttlingException","message":"slow down"}}`, llm.ErrRateLimit, "throttlingException", "", 0, ""},
		{"vertex quota", 429, nil, `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model","status":"RESOURCE_EXHAUSTED"}}`, llm.ErrRateLimit, "RESOURCE_EXHAUSTED", "", 0, ""},
		{"503 html", 503, nil, `<html>Service Unavailable</html>`, llm.ErrOverloaded, "", "<html>Service Unavailable</html>", 0, ""},
		{"504", 504, nil, ``, llm.ErrTimeout, "", "Gateway Timeout", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := c.Classify(provider.Failure{StatusCode: tt.status, Header: tt.header, Body: []byte(tt.body)})
			assert.Equal(t, tt.kind, e.Kind)
			assert.Equal(t, tt.code, e.Code)
			if tt.msg != "" {
				assert.Equal(t, tt.msg, e.Message)
			}
			assert.Equal(t, tt.retryAfter, e.RetryAfter)
			assert.Equal(t, tt.requestID, e.RequestID)
			assert.Equal(t, "p", e.Provider)
			assert.NotContains(t, e.Error(), "sk-secret-key-value")
		})
	}
}

func TestRetryHonoursRetryAfterAndBacksOff(t *testing.T) {
	var waits []time.Duration
	var logs bytes.Buffer
	c := provider.Config{
		Provider: "anthropic", Model: "m", APIKey: "sk-canary-key-000",
		Retry:  provider.RetryPolicy{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }},
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	}
	failures := []error{
		&llm.Error{Kind: llm.ErrRateLimit, RetryAfter: 3 * time.Second, Message: "echo sk-canary-key-000"},
		&llm.Error{Kind: llm.ErrOverloaded},
		&llm.Error{Kind: llm.ErrServer},
	}
	calls := 0
	got, err := provider.Do(context.Background(), c, func(ctx context.Context) (string, error) {
		assert.NotNil(t, ctx.Done(), "every attempt runs under its own timeout")
		calls++
		if calls <= len(failures) {
			return "", failures[calls-1]
		}
		return "done", nil
	})
	require.NoError(t, err)
	assert.Equal(t, "done", got)
	assert.Equal(t, 4, calls)
	assert.Equal(t, []time.Duration{3 * time.Second, 200 * time.Millisecond, 400 * time.Millisecond}, waits)
	assert.Equal(t, 3, strings.Count(logs.String(), "model call failed; retrying"))
	assert.NotContains(t, logs.String(), "sk-canary-key-000")
	var first map[string]any
	require.NoError(t, json.Unmarshal(bytes.SplitN(logs.Bytes(), []byte("\n"), 2)[0], &first))
	assert.Equal(t, "rate_limit", first["kind"])
	assert.Equal(t, float64(3*time.Second), first["wait"])
}

func TestRetryStopsWhenItMust(t *testing.T) {
	sleepless := provider.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }}
	count := func(c provider.Config, fail error) (int, error) {
		n := 0
		_, err := provider.Do(context.Background(), c, func(context.Context) (int, error) { n++; return 0, fail })
		return n, err
	}
	tests := []struct {
		name  string
		cfg   provider.Config
		fail  error
		calls int
	}{
		{"not retryable", provider.Config{Retry: sleepless}, &llm.Error{Kind: llm.ErrContextOverflow}, 1},
		{"unclassified", provider.Config{Retry: sleepless}, errors.New("weird"), 1},
		{"replay never retries", provider.Config{Retry: sleepless, Replay: true}, &llm.Error{Kind: llm.ErrOverloaded}, 1},
		{"default attempts", provider.Config{Retry: sleepless}, &llm.Error{Kind: llm.ErrServer}, provider.DefaultMaxAttempts},
		{"disabled", provider.Config{Retry: provider.RetryPolicy{MaxAttempts: 1}}, &llm.Error{Kind: llm.ErrServer}, 1},
		{"retry-after too long", provider.Config{Retry: sleepless}, &llm.Error{Kind: llm.ErrRateLimit, RetryAfter: time.Hour}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := count(tt.cfg, tt.fail)
			assert.Equal(t, tt.calls, n)
			assert.Equal(t, tt.fail, err)
		})
	}
}

func TestRetryTimeoutAndCancellation(t *testing.T) {
	c := provider.Config{Provider: "p", Timeout: 20 * time.Millisecond, Retry: provider.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond}}
	calls := 0
	_, err := provider.Do(context.Background(), c, func(ctx context.Context) (int, error) {
		calls++
		<-ctx.Done()
		return 0, ctx.Err()
	})
	require.Error(t, err)
	assert.True(t, llm.IsTimeout(err), "an expired attempt is a timeout: %v", err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 2, calls, "timeouts are retried")

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = provider.Do(ctx, c, func(ctx context.Context) (int, error) {
		calls++
		cancel()
		return 0, &llm.Error{Kind: llm.ErrServer}
	})
	assert.Equal(t, context.Canceled, err, "the caller's cancellation is reported as such")
	assert.Equal(t, 1, calls)
}

func TestBackoffGrowsToItsLimit(t *testing.T) {
	p := provider.RetryPolicy{InitialBackoff: time.Second, MaxBackoff: 5 * time.Second}
	var got []time.Duration
	for i := 1; i <= 5; i++ {
		got = append(got, p.Backoff(i))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	assert.Equal(t, provider.DefaultInitialBackoff, provider.RetryPolicy{}.Backoff(1))
}

// streamAttempt is one scripted streaming attempt: the chunks it emits,
// then its outcome.
type streamAttempt struct {
	chunks []string
	err    error
}

func TestDoStream(t *testing.T) {
	overloaded := &llm.Error{Kind: llm.ErrOverloaded}
	tests := []struct {
		name     string
		attempts []streamAttempt
		stopAt   int // the consumer stops after this many chunks (0: never)
		want     []string
		wantErr  error
		calls    int
	}{
		{"first attempt answers", []streamAttempt{{chunks: []string{"a", "b"}}}, 0, []string{"a", "b", "final"}, nil, 1},
		{"failure before the first chunk is retried", []streamAttempt{{err: overloaded}, {chunks: []string{"a"}}}, 0, []string{"a", "final"}, nil, 2},
		{"failure after a chunk ends the stream", []streamAttempt{{chunks: []string{"a"}, err: overloaded}, {chunks: []string{"never"}}}, 0, []string{"a"}, overloaded, 1},
		{"attempts run out", []streamAttempt{{err: overloaded}, {err: overloaded}, {err: overloaded}}, 0, nil, overloaded, 3},
		{"consumer stops", []streamAttempt{{chunks: []string{"a", "b", "c"}}}, 1, []string{"a"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := provider.Config{Retry: provider.RetryPolicy{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }}}
			calls := 0
			stream := func(yield func(llm.Chunk, error) bool) {
				provider.DoStream(context.Background(), c, yield, func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error) {
					assert.NotNil(t, ctx.Done(), "every attempt runs under its own timeout")
					a := tt.attempts[calls]
					calls++
					for _, s := range a.chunks {
						if !emit(llm.Chunk{TextDelta: s}) {
							return nil, nil
						}
					}
					if a.err != nil {
						return nil, a.err
					}
					return &llm.Response{Message: llm.Assistant("final")}, nil
				})
			}
			var got []string
			var gotErr error
			for ch, err := range stream {
				if err != nil {
					gotErr = err
					continue
				}
				if ch.Response != nil {
					got = append(got, ch.Response.Message.Text())
				} else {
					got = append(got, ch.TextDelta)
				}
				if tt.stopAt > 0 && len(got) == tt.stopAt {
					break
				}
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantErr, gotErr)
			assert.Equal(t, tt.calls, calls)
		})
	}
}

func TestCachedSchema(t *testing.T) {
	var mu sync.RWMutex
	var cache map[string]int
	conversions := 0
	convert := func(raw string) func() (int, error) {
		return func() (int, error) {
			conversions++
			if raw == "bad" {
				return 0, errors.New("not a schema")
			}
			return len(raw), nil
		}
	}
	for range 2 {
		v, err := provider.CachedSchema(&mu, &cache, []byte("abc"), convert("abc"))
		require.NoError(t, err)
		assert.Equal(t, 3, v)
	}
	assert.Equal(t, 1, conversions, "a kept conversion is reused")

	_, err := provider.CachedSchema(&mu, &cache, []byte("bad"), convert("bad"))
	require.Error(t, err)
	assert.NotContains(t, cache, "bad", "failures are not kept")

	for i := range provider.MaxCachedSchemas + 5 {
		raw := fmt.Sprintf("s%d", i)
		v, err := provider.CachedSchema(&mu, &cache, []byte(raw), convert(raw))
		require.NoError(t, err)
		assert.Equal(t, len(raw), v, "conversions beyond the bound are still returned")
	}
	assert.Len(t, cache, provider.MaxCachedSchemas)
}

// TestCloudEntries: the cloud routes resolve without any environment;
// their region, project and api-version come from options (or the entry),
// and a base_url option replaces the entry's URL together with the
// variable it left unset.
func TestCloudEntries(t *testing.T) {
	r := newResolver(t, nil)
	c, err := r.Config("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", map[string]any{"region": "eu-west-1"})
	require.NoError(t, err)
	assert.Equal(t, provider.KindBedrock, c.Kind)
	assert.Equal(t, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", c.Model, "the model half keeps its colon")
	assert.Equal(t, "eu-west-1", c.Region)
	key, err := c.Key()
	require.NoError(t, err, "SigV4 needs no API key")
	assert.Empty(t, key)

	c, err = r.Config("vertex:claude-sonnet-4-5@20250929", map[string]any{"project": "p", "region": "us-east5"})
	require.NoError(t, err)
	assert.Equal(t, []string{"p", "us-east5"}, []string{c.Project, c.Region})

	c, err = r.Config("azure_openai:my-gpt", map[string]any{"api_version": "2024-10-21"})
	require.NoError(t, err)
	assert.Equal(t, "2024-10-21", c.APIVersion)
	assert.ErrorContains(t, c.Unresolved(), "set AZURE_OPENAI_ENDPOINT")
	c, err = r.Config("azure_openai:my-gpt", map[string]any{"base_url": "https://res.openai.azure.com"})
	require.NoError(t, err)
	assert.NoError(t, c.Unresolved(), "base_url replaces the entry's URL and its unset variable")

	_, err = r.Config("vertex:m", map[string]any{"project": "a/b"})
	assert.ErrorContains(t, err, `project "a/b" may not contain '/'`)
}

// TestReplayStandsInForAnUnsetEndpoint: replaying, an unset variable that
// names a base URL's scheme and host becomes provider.ReplayHost, since
// replay matching ignores hosts; one inside the path stays an error.
func TestReplayStandsInForAnUnsetEndpoint(t *testing.T) {
	r := provider.NewResolver(provider.Config{Getenv: env(nil), Replay: true})
	c, err := r.Config("azure:gpt-4o", nil)
	require.NoError(t, err)
	assert.Equal(t, provider.ReplayHost+"/openai/v1", c.BaseURL)
	assert.NoError(t, c.Unresolved())

	require.NoError(t, r.SetEntry("gw", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "https://gw.internal/${TENANT}/v1"}))
	c, err = r.Config("gw:m", nil)
	require.NoError(t, err)
	assert.ErrorContains(t, c.Unresolved(), "set TENANT", "a path variable changes what replay matches")

	live := provider.NewResolver(provider.Config{Getenv: env(nil)})
	c, err = live.Config("azure:gpt-4o", nil)
	require.NoError(t, err)
	assert.ErrorContains(t, c.Unresolved(), "set AZURE_OPENAI_ENDPOINT")
}

// TestCloudCredentialsAreSecrets: the values of a kind's credential
// variables are scrubbed from errors and logs.
func TestCloudCredentialsAreSecrets(t *testing.T) {
	vars := map[string]string{"AWS_SECRET_ACCESS_KEY": "canary-secret-value", "AWS_SESSION_TOKEN": "canary-session", "GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.canary-token"}
	c, err := newResolver(t, vars).Config("bedrock:m", nil)
	require.NoError(t, err)
	assert.Equal(t, "x [REDACTED] y [REDACTED]", c.Scrub("x canary-secret-value y canary-session"))
	assert.Equal(t, "ya29.canary-token", c.Scrub("ya29.canary-token"), "another kind's variables are not this one's")
	c, err = newResolver(t, vars).Config("vertex:m", nil)
	require.NoError(t, err)
	assert.Equal(t, "[REDACTED]", c.Scrub("ya29.canary-token"))
}

// TestResolversShareNothingThatChanges: resolvers share the built-in
// entries and, through WithBase, each other's entries and factories (an
// eval run derives a resolver per cell), yet what one of them is told
// never reaches another.
func TestResolversShareNothingThatChanges(t *testing.T) {
	local := provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "http://127.0.0.1:9999/v1"}
	a, b := newResolver(t, nil), newResolver(t, nil)
	require.NoError(t, a.SetEntry("openai", local))
	e, _ := b.Entry("openai")
	assert.Equal(t, provider.KindOpenAI, e.Kind, "a resolver's entry replaced another's built-in one")
	assert.Equal(t, provider.KindOpenAI, provider.BuiltinEntries()["openai"].Kind)

	parent := newResolver(t, nil)
	require.NoError(t, parent.SetEntry("local", local))
	child := parent.WithBase(provider.Config{Getenv: env(map[string]string{"K": "v"}), Timeout: time.Second})
	m, err := child.Resolve("local:model-a")
	require.NoError(t, err, "a derived resolver has its parent's entries and factories")
	assert.Equal(t, "http://127.0.0.1:9999/v1", m.(*fakeModel).cfg.BaseURL)
	assert.Equal(t, time.Second, m.(*fakeModel).cfg.Timeout, "a derived resolver has its own base")
	assert.Equal(t, "v", m.(*fakeModel).cfg.Env("K"))

	require.NoError(t, child.SetEntry("other", local))
	require.NoError(t, child.SetEntries(map[string]provider.Entry{"local": {Kind: provider.KindOpenAICompatible, BaseURL: "http://127.0.0.1:1/v1"}}))
	require.NoError(t, child.Register(provider.KindAnthropic, func(c provider.Config) (llm.ChatModel, error) { return nil, errors.New("child's factory") }))
	_, ok := parent.Entry("other")
	assert.False(t, ok, "an entry set on the derived resolver reached its parent")
	m, err = parent.Resolve("local:model-a")
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:9999/v1", m.(*fakeModel).cfg.BaseURL, "entries set on the derived resolver reached its parent")
	_, err = parent.Resolve("anthropic:claude-sonnet-4-6")
	assert.NoError(t, err, "a factory registered on the derived resolver reached its parent")

	sibling := parent.WithBase(provider.Config{})
	require.NoError(t, parent.SetEntry("late", local))
	_, ok = sibling.Entry("late")
	assert.False(t, ok, "an entry set on the parent reached a resolver derived before")
	_, ok = child.Entry("other")
	assert.True(t, ok)
}
