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
	// endpoint, Azure OpenAI's v1 API, ...).
	KindOpenAICompatible = "openai-compatible"
	// KindGemini is Google's Gemini API (generateContent and
	// streamGenerateContent), the native protocol behind Gemini's
	// thought signatures and cached-token counts.
	KindGemini = "gemini"
	// KindBedrock is Claude on Amazon Bedrock (InvokeModel), signed with
	// AWS SigV4 or a Bedrock API key.
	KindBedrock = "bedrock"
	// KindVertex is Claude on Google Vertex AI (rawPredict), authorised
	// with a Google OAuth token.
	KindVertex = "vertex"
	// KindAzureOpenAI is Azure OpenAI's deployment API: Chat Completions by
	// default, the Responses API on request, with an api-version and an
	// api-key or a Microsoft Entra ID token.
	KindAzureOpenAI = "azure-openai"
)

// Kinds lists the wire protocols in a stable order.
func Kinds() []string {
	return []string{KindAnthropic, KindOpenAI, KindOpenAICompatible, KindGemini, KindBedrock, KindVertex, KindAzureOpenAI}
}

// CredentialEnv names the environment variables from which a kind's
// credential chain may read secrets besides the entry's api_key_env; their
// values are kept out of errors and logs (Config.Secrets) and out of
// cassettes (the recorder adds cassette.DefaultSecretEnv, which lists them too).
func CredentialEnv(kind string) []string {
	switch kind {
	case KindBedrock:
		return []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"}
	case KindVertex:
		return []string{"GOOGLE_OAUTH_ACCESS_TOKEN"}
	case KindAzureOpenAI:
		return []string{"AZURE_OPENAI_AD_TOKEN", "AZURE_CLIENT_SECRET"}
	}
	return nil
}

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
	// KindOpenAI, Chat Completions for KindOpenAICompatible and
	// KindAzureOpenAI.
	UseResponsesAPI *bool
	// Region is the AWS region (KindBedrock) or the Google Cloud location
	// (KindVertex) calls go to. Empty means the adapter's environment
	// variables (see the bedrock and vertex adapters).
	Region string
	// Project is the Google Cloud project (KindVertex). Empty means the
	// adapter's environment variables.
	Project string
	// APIVersion is Azure OpenAI's api-version (KindAzureOpenAI). Empty
	// means the adapter's environment variables, then its default.
	APIVersion string
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
	// Limiters paces calls per provider entry across every model built
	// from this config — an eval run shares one among all its cells — and
	// pauses them all when the provider throttles, instead of each call
	// retrying its 429s alone; nil leaves calls unpaced. Replayed calls
	// are never paced.
	Limiters *Limiters
	// Logger receives retry notices and warnings about odd answers; nil
	// discards them. Keys and headers are never logged.
	Logger *slog.Logger
	// Getenv reads environment variables; nil means os.Getenv. Tests set it
	// to stay hermetic.
	Getenv func(string) string

	// unsetURL and unsetHeaders name the variables a resolved entry's
	// base_url and headers reference but the environment does not set:
	// an error that only matters once a live call happens, and that a
	// base_url option replacing the entry's URL clears.
	unsetURL, unsetHeaders []string
	// shared is the resolver's store of what its models share (see
	// Shared); nil for a config that no resolver made.
	shared *sync.Map
}

// Shared returns what build made for key when a model was first built
// from the resolver that made c, building it now if none was: the models
// of one resolver share its base (the HTTP client above all), so that an
// adapter builds its SDK client once per resolver (an eval run's cells
// each build their models) rather than once per model. The key must
// capture everything the value is made of other than the resolver's
// base, and the value must never change. A config no resolver made shares
// nothing.
func (c Config) Shared(key any, build func() any) any {
	if c.shared == nil {
		return build()
	}
	if v, ok := c.shared.Load(key); ok {
		return v
	}
	v, _ := c.shared.LoadOrStore(key, build())
	return v
}

// pending is the error of unset variables, nil when there are none.
func (c Config) pending() error {
	missing := append(slices.Clone(c.unsetURL), c.unsetHeaders...)
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("provider %s: set %s (referenced by its base_url or headers)", c.name(), strings.Join(slices.Compact(missing), ", "))
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

// ResponsesAPI reports whether OpenAI or Azure OpenAI calls go to the Responses API.
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

// Env reads an environment variable through Getenv, so adapters that look
// up regions, projects or credentials stay as hermetic as the config.
func (c Config) Env(name string) string { return c.getenv(name) }

// FirstEnv returns the first of the named variables that is set, and its name.
func (c Config) FirstEnv(names ...string) (value, name string) {
	for _, n := range names {
		if v := c.getenv(n); v != "" {
			return v, n
		}
	}
	return "", ""
}

// Unresolved is the error found while resolving the config (an unset
// variable in base_url or a header) that a live call must report, or nil.
func (c Config) Unresolved() error { return c.pending() }

// Validate checks what must hold before a model can be built. It does not
// look at the API key.
func (c Config) Validate() error {
	if c.Model == "" {
		return fmt.Errorf("provider %s: model id is empty", c.name())
	}
	if !slices.Contains(Kinds(), c.Kind) {
		return fmt.Errorf("provider %s: unknown kind %q (want one of %s)", c.name(), c.Kind, strings.Join(Kinds(), ", "))
	}
	if (c.Kind == KindOpenAICompatible || c.Kind == KindAzureOpenAI) && c.BaseURL == "" && len(c.unsetURL) == 0 {
		return fmt.Errorf("provider %s: base_url is required for kind %s", c.name(), c.Kind)
	}
	if c.BaseURL != "" && len(c.unsetURL) == 0 {
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
	for _, f := range [][2]string{{"region", c.Region}, {"project", c.Project}, {"api_version", c.APIVersion}} {
		if err := checkSegment(f[0], f[1]); err != nil {
			return fmt.Errorf("provider %s: %w", c.name(), err)
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
	key, err := c.Key()
	if err != nil || key == "" {
		return "", "", err
	}
	if c.AuthHeader == "" || strings.EqualFold(c.AuthHeader, "authorization") {
		return "Authorization", "Bearer " + key, nil
	}
	return c.AuthHeader, key, nil
}

// Key returns the API key a live call sends, "" when it goes without one
// (replay, or an entry whose key is optional), and the same errors as
// Credentials. Cloud adapters whose SDK carries the key in its own way
// (a Bedrock API key, an Azure api-key) read it here.
func (c Config) Key() (string, error) {
	if err := c.pending(); err != nil {
		return "", err
	}
	key := c.APIKey
	if key == "" && c.APIKeyEnv != "" {
		key = c.getenv(c.APIKeyEnv)
	}
	if key == "" {
		if c.Replay || c.KeyOptional || hasOwnCredentials(c.Kind) {
			return "", nil
		}
		hint := "set Config.APIKey"
		if c.APIKeyEnv != "" {
			hint = "set " + c.APIKeyEnv
		}
		return "", &llm.Error{
			Kind: llm.ErrAuthentication, Provider: c.name(),
			Message: fmt.Sprintf("no API key for %s: %s (or replay from a cassette)", c.Identity(), hint),
			Err:     ErrNoAPIKey,
		}
	}
	return key, nil
}

// hasOwnCredentials reports whether a kind authenticates without an API
// key when it has none: Bedrock signs with the AWS chain, Vertex AI uses
// Google credentials, Azure OpenAI a Microsoft Entra ID token. Their
// adapters report missing credentials at the first call.
func hasOwnCredentials(kind string) bool {
	return kind == KindBedrock || kind == KindVertex || kind == KindAzureOpenAI
}

// Secrets returns the values that must never appear in logs, errors or
// cassettes: the key, the values of the kind's credential variables
// (CredentialEnv) and every configured header value.
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
	for _, name := range CredentialEnv(c.Kind) {
		// Short values (a region-like placeholder) are not searched for:
		// scrubbing them would mangle ordinary text.
		if v := c.getenv(name); len(v) >= 8 {
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
	for _, a := range []struct{ k, v string }{{"region", c.Region}, {"project", c.Project}, {"api_version", c.APIVersion}} {
		if a.v != "" {
			attrs = append(attrs, slog.String(a.k, a.v))
		}
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
