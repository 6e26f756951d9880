package provider

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
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
	// UseResponsesAPI overrides the kind's default API (OpenAI and Azure OpenAI).
	UseResponsesAPI *bool `yaml:"use_responses_api,omitempty" json:"use_responses_api,omitempty"`
	// Region is the AWS region (bedrock) or Google Cloud location (vertex);
	// empty means the adapter's environment variables.
	Region string `yaml:"region,omitempty" json:"region,omitempty"`
	// Project is the Google Cloud project (vertex); empty means the
	// adapter's environment variables.
	Project string `yaml:"project,omitempty" json:"project,omitempty"`
	// APIVersion is Azure OpenAI's api-version (azure-openai); empty means
	// OPENAI_API_VERSION, then the adapter's default.
	APIVersion string `yaml:"api_version,omitempty" json:"api_version,omitempty"`
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
	// The cloud routes Deep Agents resolves. Bedrock signs with the AWS
	// credential chain unless a Bedrock API key is set; Vertex uses Google
	// credentials; Azure OpenAI's deployment API takes the api-key when it
	// is set and a Microsoft Entra ID token otherwise. Their base URLs come
	// from the region (or the endpoint) unless base_url overrides them.
	"bedrock":      {Kind: KindBedrock, APIKeyEnv: "AWS_BEARER_TOKEN_BEDROCK", KeyOptional: true},
	"vertex":       {Kind: KindVertex, KeyOptional: true},
	"azure_openai": {Kind: KindAzureOpenAI, BaseURL: "${AZURE_OPENAI_ENDPOINT}", APIKeyEnv: "AZURE_OPENAI_API_KEY", KeyOptional: true},
}

// BuiltinEntries returns copies of the entries dageval ships, by name.
func BuiltinEntries() map[string]Entry {
	out := make(map[string]Entry, len(builtins))
	for name, e := range builtins {
		out[name] = e.clone()
	}
	return out
}

// builtinEntries is the built-in entries for resolvers to share: a
// resolver copies the map before it changes it, and replaces entries
// rather than modifying them.
var builtinEntries = sync.OnceValue(BuiltinEntries)

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

var entryName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*$`) })

// Validate checks an entry declared under name. Errors name the entry and field.
func (e Entry) Validate(name string) error {
	if !entryName().MatchString(name) {
		return fmt.Errorf("provider entry %q: name must be lower-case letters, digits, '-' or '_', starting with a letter", name)
	}
	if !slices.Contains(Kinds(), e.Kind) {
		if e.Kind == "" {
			return fmt.Errorf("provider entry %s: kind is required (one of %s)", name, strings.Join(Kinds(), ", "))
		}
		return fmt.Errorf("provider entry %s: kind %q is not one of %s", name, e.Kind, strings.Join(Kinds(), ", "))
	}
	if (e.Kind == KindOpenAICompatible || e.Kind == KindAzureOpenAI) && e.BaseURL == "" {
		return fmt.Errorf("provider entry %s: base_url is required for kind %s", name, e.Kind)
	}
	if e.BaseURL != "" && !strings.Contains(e.BaseURL, "${") {
		u, err := url.Parse(e.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("provider entry %s: base_url %q is not an http(s) URL", name, e.BaseURL)
		}
	}
	if e.APIKeyEnv != "" && !envName().MatchString(e.APIKeyEnv) {
		return fmt.Errorf("provider entry %s: api_key_env %q is not an environment variable name", name, e.APIKeyEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return fmt.Errorf("provider entry %s: header name %q is not valid", name, k)
		}
	}
	if e.UseResponsesAPI != nil && *e.UseResponsesAPI && e.Kind != KindOpenAI && e.Kind != KindAzureOpenAI {
		return fmt.Errorf("provider entry %s: use_responses_api needs kind %s or %s; compatible servers speak Chat Completions", name, KindOpenAI, KindAzureOpenAI)
	}
	for _, f := range []struct {
		field, value string
		kinds        []string
	}{
		{"region", e.Region, []string{KindBedrock, KindVertex}},
		{"project", e.Project, []string{KindVertex}},
		{"api_version", e.APIVersion, []string{KindAzureOpenAI}},
	} {
		if f.value != "" && !slices.Contains(f.kinds, e.Kind) {
			return fmt.Errorf("provider entry %s: %s applies to kind %s only, not %s", name, f.field, strings.Join(f.kinds, " or "), e.Kind)
		}
		if err := checkSegment(f.field, f.value); err != nil {
			return fmt.Errorf("provider entry %s: %w", name, err)
		}
	}
	return nil
}

// checkSegment refuses a region, project or api-version that would change
// the URL it is put into rather than fill its place.
func checkSegment(field, value string) error {
	if strings.ContainsAny(value, "/?#% \t\r\n") {
		return fmt.Errorf("%s %q may not contain '/', '?', '#', '%%' or spaces (it becomes part of a URL)", field, value)
	}
	return nil
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// expand replaces ${NAME} references (NAME as envName has it) and reports
// the unset ones. It scans rather than matching a regular expression:
// every model an eval cell resolves expands its entry's base URL.
func expand(s string, getenv func(string) string) (string, []string) {
	var missing []string
	var b strings.Builder
	last := 0
	for i := strings.Index(s, "${"); i >= 0; {
		name, end, ok := envRefAt(s, i)
		if !ok {
			next := strings.Index(s[i+1:], "${")
			if next < 0 {
				break
			}
			i += 1 + next
			continue
		}
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		b.WriteString(s[last:i])
		b.WriteString(v)
		last = end
		next := strings.Index(s[end:], "${")
		if next < 0 {
			break
		}
		i = end + next
	}
	if last == 0 {
		return s, nil
	}
	b.WriteString(s[last:])
	return b.String(), missing
}

// envRefAt reports whether a reference ${NAME} starts at s[i], with its
// name and where it ends.
func envRefAt(s string, i int) (name string, end int, ok bool) {
	if !strings.HasPrefix(s[i:], "${") {
		return "", 0, false
	}
	j := i + 2
	for j < len(s) && isEnvNameByte(s[j], j == i+2) {
		j++
	}
	if j == i+2 || j == len(s) || s[j] != '}' {
		return "", 0, false
	}
	return s[i+2 : j], j + 1, true
}

func isEnvNameByte(c byte, first bool) bool {
	return c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || !first && '0' <= c && c <= '9'
}

// ReplayHost stands in for a base URL's host when a replay finds the
// variable naming it unset: replay matching ignores the host, so a CI job
// replaying an Azure cassette needs no AZURE_OPENAI_ENDPOINT.
const ReplayHost = "https://replay.invalid"

// config turns the entry into a model configuration on top of base, which
// supplies the shared fields (HTTP client, retry, replay, logger, getenv).
func (e Entry) config(name, model string, base Config) Config {
	c := base.Clone()
	c.Provider, c.Model, c.Kind = name, model, e.Kind
	c.APIKeyEnv, c.AuthHeader, c.KeyOptional = e.APIKeyEnv, e.AuthHeader, e.KeyOptional
	c.Region, c.Project, c.APIVersion = e.Region, e.Project, e.APIVersion
	if e.UseResponsesAPI != nil {
		v := *e.UseResponsesAPI
		c.UseResponsesAPI = &v
	}
	getenv := c.getenv
	if leading, _, ok := envRefAt(e.BaseURL, 0); c.Replay && ok {
		// Only a leading reference names the scheme and host; a variable
		// later in the URL may be part of the path, which replay matches.
		getenv = func(n string) string {
			if v := c.getenv(n); v != "" || n != leading {
				return v
			}
			return ReplayHost
		}
	}
	c.BaseURL, c.unsetURL = expand(e.BaseURL, getenv)
	if len(e.Headers) > 0 {
		if c.Headers == nil {
			c.Headers = map[string]string{}
		}
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			v, m := expand(e.Headers[k], c.getenv)
			c.Headers[k] = v
			c.unsetHeaders = append(c.unsetHeaders, m...)
		}
	}
	return c
}
