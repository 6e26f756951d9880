package provider

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dageval/dageval/harness/llm"
)

// Wire protocols a provider entry can speak. Each is served by a Factory
// registered under the same name.
const (
	// KindAnthropic is the Anthropic Messages API.
	KindAnthropic = "anthropic"
	// KindOpenAI is OpenAI itself: the Responses API by default, Chat
	// Completions on request.
	KindOpenAI = "openai"
	// KindOpenAICompatible is any server speaking OpenAI Chat Completions
	// (Ollama, vLLM, llama.cpp, OpenRouter, Groq, Gemini's compatible
	// endpoint, Azure OpenAI, ...).
	KindOpenAICompatible = "openai-compatible"
	// KindGemini is Google's Gemini API (generateContent and
	// streamGenerateContent), the native protocol behind Gemini's
	// thought signatures and cached-token counts.
	KindGemini = "gemini"
)

// Kinds lists the wire protocols in a stable order.
func Kinds() []string { return []string{KindAnthropic, KindOpenAI, KindOpenAICompatible, KindGemini} }

// Defaults used when a Config leaves a field zero.
const (
	// DefaultTimeout is how long an attempt may go without hearing from the
	// provider: waiting for the response headers (for a non-streaming call,
	// the whole answer), or between two reads of a streamed body. Two
	// minutes outlasts a slow answer and ends a hung connection long before
	// an agent's own time budget would, so a stall reads as the provider's
	// failure, not the agent's.
	DefaultTimeout   = 2 * time.Minute
	DefaultMaxTokens = 8192
)

// ErrNoAPIKey is wrapped by the authentication error returned when a live
// call is about to happen and no API key is configured.
var ErrNoAPIKey = errors.New("no API key")

// Config is everything a provider adapter needs to build one chat model.
// Constructing a model from a Config never needs the API key; the key is
// looked up when a live call is about to happen.
type Config struct {
	// Provider is the entry name the model was resolved through
	// ("anthropic", "openai", "ollama", or a user entry such as "local").
	// It is reported in errors and in the model's identity.
	Provider string
	// Model is the provider's model id, e.g. "claude-sonnet-4-6" or "llama3:8b".
	Model string
	// Kind is the wire protocol, one of Kinds().
	Kind string
	// BaseURL is the API root. For OpenAI-style APIs it includes the version
	// path ("http://localhost:11434/v1"); for Anthropic and Gemini it does
	// not (the Gemini adapter adds "v1beta").
	BaseURL string
	// APIKey is an explicit key. It wins over APIKeyEnv. It is never logged.
	APIKey string
	// APIKeyEnv names the environment variable holding the key.
	APIKeyEnv string
	// KeyOptional lets calls go out without a key (local servers).
	KeyOptional bool
	// AuthHeader is the header carrying the key. Empty means
	// "Authorization: Bearer <key>"; any other name carries the bare key
	// (Azure OpenAI uses "api-key", Gemini "x-goog-api-key").
	AuthHeader string
	// Headers are sent with every request. Values are never logged.
	Headers map[string]string
	// HTTPClient carries the requests; the go-vcr recorder sits in its
	// Transport. Nil means a client with no timeout of its own.
	HTTPClient *http.Client
	// UseResponsesAPI selects the OpenAI Responses API (true) or Chat
	// Completions (false). Nil means the kind's default: Responses for
	// KindOpenAI, Chat Completions for KindOpenAICompatible.
	UseResponsesAPI *bool
	// MaxTokens is sent when a request does not set one (Anthropic requires
	// it). Zero means DefaultMaxTokens for Anthropic and "not sent" for OpenAI.
	MaxTokens int
	// ExtraBody holds provider-specific top-level request fields sent as is,
	// e.g. {"reasoning_effort": "low"} or vLLM's {"top_k": 20}.
	ExtraBody map[string]any
	// Retry decides whether and when failed calls are repeated.
	Retry RetryPolicy
	// Timeout bounds each attempt's silences: the wait for the response
	// headers and, once the answer has begun, each gap between reads of its
	// body, so a long stream that keeps sending is never cut. A stalled
	// attempt fails with an llm timeout error wrapping ErrStalled and is
	// retried under Retry. Zero means DefaultTimeout; negative means no limit.
	Timeout time.Duration
	// Replay marks a run whose HTTP traffic is served from a cassette: no
	// retries (a recorded failure is the answer) and no API key required.
	Replay bool
	// Logger receives retry notices and warnings about odd answers; nil
	// discards them. Keys and headers are never logged.
	Logger *slog.Logger
	// Getenv reads environment variables; nil means os.Getenv. Tests set it
	// to stay hermetic.
	Getenv func(string) string

	// pending is an error found while resolving (for example an unset
	// variable in base_url) that only matters once a live call happens.
	pending error
}

// Clone returns a copy that shares no maps or pointers with c.
func (c Config) Clone() Config {
	c.Headers = maps.Clone(c.Headers)
	c.ExtraBody = maps.Clone(c.ExtraBody)
	if c.UseResponsesAPI != nil {
		v := *c.UseResponsesAPI
		c.UseResponsesAPI = &v
	}
	return c
}

// Identity is the provider:model identity of models built from c.
func (c Config) Identity() llm.Identity { return llm.Identity{Provider: c.Provider, Model: c.Model} }

// ResponsesAPI reports whether OpenAI calls go to the Responses API.
func (c Config) ResponsesAPI() bool {
	if c.UseResponsesAPI != nil {
		return *c.UseResponsesAPI
	}
	return c.Kind == KindOpenAI
}

// AttemptTimeout is the effective per-attempt timeout, 0 for none.
func (c Config) AttemptTimeout() time.Duration {
	switch {
	case c.Timeout < 0:
		return 0
	case c.Timeout == 0:
		return DefaultTimeout
	}
	return c.Timeout
}

// Client is the HTTP client to use, never nil: HTTPClient (a plain client
// when nil) with its transport wrapped by WatchProgress, so that what the
// provider sends keeps each attempt's timeout from firing.
func (c Config) Client() *http.Client {
	var cl http.Client
	if c.HTTPClient != nil {
		cl = *c.HTTPClient
	}
	cl.Transport = WatchProgress(cl.Transport)
	return &cl
}

func (c Config) getenv(name string) string {
	if c.Getenv != nil {
		return c.Getenv(name)
	}
	return os.Getenv(name)
}

// Validate checks what must hold before a model can be built. It does not
// look at the API key.
func (c Config) Validate() error {
	if c.Model == "" {
		return fmt.Errorf("provider %s: model id is empty", c.name())
	}
	if !slices.Contains(Kinds(), c.Kind) {
		return fmt.Errorf("provider %s: unknown kind %q (want one of %s)", c.name(), c.Kind, strings.Join(Kinds(), ", "))
	}
	if c.Kind == KindOpenAICompatible && c.BaseURL == "" && c.pending == nil {
		return fmt.Errorf("provider %s: base_url is required for kind %s", c.name(), c.Kind)
	}
	if c.BaseURL != "" && c.pending == nil {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("provider %s: base_url %q is not an http(s) URL", c.name(), c.BaseURL)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return fmt.Errorf("provider %s: header name %q is not valid", c.name(), k)
		}
	}
	return nil
}

func (c Config) name() string {
	if c.Provider != "" {
		return c.Provider
	}
	return c.Kind
}

// Credentials returns the header that authenticates a live call, or an empty
// name when the call goes out without a key (replay, or a local server that
// needs none). A missing key on a live call is an *llm.Error of kind
// ErrAuthentication that names the variable to set. Errors found while
// resolving the config (an unset variable in base_url) surface here too.
func (c Config) Credentials() (header, value string, err error) {
	if c.pending != nil {
		return "", "", c.pending
	}
	key := c.APIKey
	if key == "" && c.APIKeyEnv != "" {
		key = c.getenv(c.APIKeyEnv)
	}
	if key == "" {
		if c.Replay || c.KeyOptional {
			return "", "", nil
		}
		hint := "set Config.APIKey"
		if c.APIKeyEnv != "" {
			hint = "set " + c.APIKeyEnv
		}
		return "", "", &llm.Error{
			Kind: llm.ErrAuthentication, Provider: c.name(),
			Message: fmt.Sprintf("no API key for %s: %s (or replay from a cassette)", c.Identity(), hint),
			Err:     ErrNoAPIKey,
		}
	}
	if c.AuthHeader == "" || strings.EqualFold(c.AuthHeader, "authorization") {
		return "Authorization", "Bearer " + key, nil
	}
	return c.AuthHeader, key, nil
}

// Secrets returns the values that must never appear in logs, errors or
// cassettes: the key and every configured header value.
func (c Config) Secrets() []string {
	var out []string
	if c.APIKey != "" {
		out = append(out, c.APIKey)
	}
	if c.APIKeyEnv != "" {
		if v := c.getenv(c.APIKeyEnv); v != "" {
			out = append(out, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		if v := c.Headers[k]; len(v) >= 8 {
			out = append(out, v)
		}
	}
	return out
}

// Scrub replaces every secret of c found in s with "[REDACTED]".
func (c Config) Scrub(s string) string {
	for _, secret := range c.Secrets() {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[REDACTED]")
		}
	}
	return s
}

// LogValue keeps the key and header values out of structured logs.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("provider", c.Provider), slog.String("model", c.Model), slog.String("kind", c.Kind),
		slog.String("base_url", c.BaseURL), slog.Bool("replay", c.Replay),
	}
	if c.APIKeyEnv != "" {
		attrs = append(attrs, slog.String("api_key_env", c.APIKeyEnv))
	}
	if len(c.Headers) > 0 {
		attrs = append(attrs, slog.Any("headers", slices.Sorted(maps.Keys(c.Headers))))
	}
	return slog.GroupValue(attrs...)
}

// String describes c without secrets.
func (c Config) String() string {
	return fmt.Sprintf("%s (%s at %s)", c.Identity(), c.Kind, c.BaseURL)
}

// GoString describes c without secrets, so %#v cannot leak the key either.
func (c Config) GoString() string { return "provider.Config{" + c.String() + "}" }

// MaxCachedSchemas bounds how many converted tool schemas an adapter's model
// keeps; an agent's tool set is far smaller, and a model fed ever-new
// schemas converts the rest on each call instead of growing without limit.
const MaxCachedSchemas = 256

// CachedSchema returns the conversion of a tool's raw schema kept in cache
// (guarded by mu), converting it on a miss and keeping the result while the
// cache holds fewer than MaxCachedSchemas entries. Failed conversions are
// not kept. Agents send the same tools on every turn, so adapters convert
// each schema once per model instead of once per call.
func CachedSchema[T any](mu *sync.RWMutex, cache *map[string]T, raw []byte, convert func() (T, error)) (T, error) {
	mu.RLock()
	v, ok := (*cache)[string(raw)]
	mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := convert()
	if err != nil {
		return v, err
	}
	mu.Lock()
	if *cache == nil {
		*cache = map[string]T{}
	}
	if len(*cache) < MaxCachedSchemas {
		(*cache)[string(raw)] = v
	}
	mu.Unlock()
	return v, nil
}
