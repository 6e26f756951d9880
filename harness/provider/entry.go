package provider

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Entry is a named provider: which protocol it speaks, where it lives and
// how to authenticate. Suite and agent files declare their own under
// `providers:`, e.g.
//
//	providers:
//	  local:
//	    kind: openai-compatible
//	    base_url: http://localhost:8000/v1
//	    api_key_env: LOCAL_API_KEY
//
// after which the spec "local:model-a" resolves through it. BaseURL and
// header values may reference environment variables as ${NAME}; they are
// expanded when a model is resolved.
type Entry struct {
	Kind      string `yaml:"kind" json:"kind"`
	BaseURL   string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// Headers are sent with every request to this provider.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// AuthHeader carries the bare key instead of "Authorization: Bearer"
	// (Azure OpenAI: "api-key").
	AuthHeader string `yaml:"auth_header,omitempty" json:"auth_header,omitempty"`
	// KeyOptional lets calls go out without a key (local servers).
	KeyOptional bool `yaml:"key_optional,omitempty" json:"key_optional,omitempty"`
	// UseResponsesAPI overrides the kind's default API (OpenAI only).
	UseResponsesAPI *bool `yaml:"use_responses_api,omitempty" json:"use_responses_api,omitempty"`
}

// Built-in entries. Local servers take any key and listen on their usual
// ports; hosted ones read the provider's usual key variable.
var builtins = map[string]Entry{
	"anthropic":  {Kind: KindAnthropic, BaseURL: "https://api.anthropic.com", APIKeyEnv: "ANTHROPIC_API_KEY"},
	"openai":     {Kind: KindOpenAI, BaseURL: "https://api.openai.com/v1", APIKeyEnv: "OPENAI_API_KEY"},
	"ollama":     {Kind: KindOpenAICompatible, BaseURL: "http://localhost:11434/v1", APIKeyEnv: "OLLAMA_API_KEY", KeyOptional: true},
	"vllm":       {Kind: KindOpenAICompatible, BaseURL: "http://localhost:8000/v1", APIKeyEnv: "VLLM_API_KEY", KeyOptional: true},
	"llamacpp":   {Kind: KindOpenAICompatible, BaseURL: "http://localhost:8080/v1", APIKeyEnv: "LLAMACPP_API_KEY", KeyOptional: true},
	"openrouter": {Kind: KindOpenAICompatible, BaseURL: "https://openrouter.ai/api/v1", APIKeyEnv: "OPENROUTER_API_KEY"},
	"groq":       {Kind: KindOpenAICompatible, BaseURL: "https://api.groq.com/openai/v1", APIKeyEnv: "GROQ_API_KEY"},
	// Gemini's native API, under both names Deep Agents (LangChain's
	// init_chat_model) users write: google_genai is LangChain's provider
	// name and reads GOOGLE_API_KEY as langchain-google-genai does.
	"gemini":       {Kind: KindGemini, BaseURL: "https://generativelanguage.googleapis.com", APIKeyEnv: "GEMINI_API_KEY", AuthHeader: "x-goog-api-key"},
	"google_genai": {Kind: KindGemini, BaseURL: "https://generativelanguage.googleapis.com", APIKeyEnv: "GOOGLE_API_KEY", AuthHeader: "x-goog-api-key"},
	// Gemini's OpenAI-compatible endpoint, for agents (and recordings)
	// that speak Chat Completions to Gemini.
	"gemini-openai": {Kind: KindOpenAICompatible, BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", APIKeyEnv: "GEMINI_API_KEY"},
	// Azure OpenAI's v1 API: https://<resource>.openai.azure.com/openai/v1,
	// authenticated with the bare key in an api-key header.
	"azure": {Kind: KindOpenAICompatible, BaseURL: "${AZURE_OPENAI_ENDPOINT}/openai/v1", APIKeyEnv: "AZURE_OPENAI_API_KEY", AuthHeader: "api-key"},
}

// BuiltinEntries returns copies of the entries dageval ships, by name.
func BuiltinEntries() map[string]Entry {
	out := make(map[string]Entry, len(builtins))
	for name, e := range builtins {
		out[name] = e.clone()
	}
	return out
}

// BuiltinNames lists the built-in entry names, sorted.
func BuiltinNames() []string { return slices.Sorted(maps.Keys(builtins)) }

func (e Entry) clone() Entry {
	e.Headers = maps.Clone(e.Headers)
	if e.UseResponsesAPI != nil {
		v := *e.UseResponsesAPI
		e.UseResponsesAPI = &v
	}
	return e
}

var entryName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// Validate checks an entry declared under name. Errors name the entry and field.
func (e Entry) Validate(name string) error {
	if !entryName.MatchString(name) {
		return fmt.Errorf("provider entry %q: name must be lower-case letters, digits, '-' or '_', starting with a letter", name)
	}
	if !slices.Contains(Kinds(), e.Kind) {
		if e.Kind == "" {
			return fmt.Errorf("provider entry %s: kind is required (one of %s)", name, strings.Join(Kinds(), ", "))
		}
		return fmt.Errorf("provider entry %s: kind %q is not one of %s", name, e.Kind, strings.Join(Kinds(), ", "))
	}
	if e.Kind == KindOpenAICompatible && e.BaseURL == "" {
		return fmt.Errorf("provider entry %s: base_url is required for kind %s", name, e.Kind)
	}
	if e.BaseURL != "" && !strings.Contains(e.BaseURL, "${") {
		u, err := url.Parse(e.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("provider entry %s: base_url %q is not an http(s) URL", name, e.BaseURL)
		}
	}
	if e.APIKeyEnv != "" && !envName.MatchString(e.APIKeyEnv) {
		return fmt.Errorf("provider entry %s: api_key_env %q is not an environment variable name", name, e.APIKeyEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return fmt.Errorf("provider entry %s: header name %q is not valid", name, k)
		}
	}
	if e.UseResponsesAPI != nil && *e.UseResponsesAPI && e.Kind != KindOpenAI {
		return fmt.Errorf("provider entry %s: use_responses_api needs kind %s; compatible servers speak Chat Completions", name, KindOpenAI)
	}
	return nil
}

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envRef  = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// expand replaces ${NAME} references and reports the unset ones.
func expand(s string, getenv func(string) string) (string, []string) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	return out, missing
}

// config turns the entry into a model configuration on top of base, which
// supplies the shared fields (HTTP client, retry, replay, logger, getenv).
func (e Entry) config(name, model string, base Config) Config {
	c := base.Clone()
	c.Provider, c.Model, c.Kind = name, model, e.Kind
	c.APIKeyEnv, c.AuthHeader, c.KeyOptional = e.APIKeyEnv, e.AuthHeader, e.KeyOptional
	if e.UseResponsesAPI != nil {
		v := *e.UseResponsesAPI
		c.UseResponsesAPI = &v
	}
	var missing []string
	c.BaseURL, missing = expand(e.BaseURL, c.getenv)
	if len(e.Headers) > 0 {
		if c.Headers == nil {
			c.Headers = map[string]string{}
		}
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			v, m := expand(e.Headers[k], c.getenv)
			c.Headers[k] = v
			missing = append(missing, m...)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		c.pending = fmt.Errorf("provider %s: set %s (referenced by its base_url or headers)", name, strings.Join(slices.Compact(missing), ", "))
	}
	return c
}
