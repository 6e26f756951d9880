package cassette

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// Redacted replaces the value of every sensitive header and query parameter
// in a saved cassette.
const Redacted = "REDACTED"

// SensitiveHeaders carry credentials or account identifiers; their values are
// replaced by Redacted before an interaction is kept in memory or saved.
//
// Authorization covers every cloud route: AWS SigV4 signatures and Bedrock
// API keys, Google OAuth bearer tokens, Microsoft Entra ID tokens; Azure
// OpenAI's key travels in Api-Key; temporary AWS credentials add their
// session token in X-Amz-Security-Token.
var SensitiveHeaders = []string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key",
	"X-Amz-Security-Token",
	"Openai-Organization", "Openai-Project", "Anthropic-Organization-Id",
	"Cookie", "Set-Cookie",
}

// SigningHeaders are the parts of an AWS SigV4 signature besides the
// Authorization header: the signed date and the signed body hash. They are
// dropped on save, since they differ on every signing and replay matching
// never looks at them, and the secret scan refuses a cassette that has them.
var SigningHeaders = []string{"X-Amz-Date", "X-Amz-Content-Sha256"}

// SensitiveQueryParams are URL query parameters that carry credentials
// (Gemini's native API and Azure SAS URLs put keys there).
var SensitiveQueryParams = []string{"key", "api_key", "api-key", "apikey", "access_token", "token"}

// VolatileHeaders differ between two recordings of the same exchange (the
// recording machine, the retry count, the time) and are dropped on save so
// that re-recording an unchanged conversation rewrites an identical file.
var VolatileHeaders = []string{
	"X-Stainless-Os", "X-Stainless-Arch", "X-Stainless-Runtime-Version",
	"X-Stainless-Retry-Count", "X-Stainless-Timeout", "Date",
	// Google's SDKs send the seconds left before the caller's deadline.
	"X-Server-Timeout",
}

// DefaultSecretEnv names the environment variables that hold provider keys.
// Their values, when set, must appear nowhere in a saved cassette.
// The cloud routes' credential variables are here too: AWS keys and session
// tokens, Bedrock API keys, a Google OAuth access token handed over in
// GOOGLE_OAUTH_ACCESS_TOKEN, Entra ID tokens and client secrets.
var DefaultSecretEnv = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY",
	"OPENROUTER_API_KEY", "GROQ_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
	"MISTRAL_API_KEY", "XAI_API_KEY", "DEEPSEEK_API_KEY", "TOGETHER_API_KEY", "FIREWORKS_API_KEY",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
	"GOOGLE_OAUTH_ACCESS_TOKEN", "AZURE_OPENAI_AD_TOKEN", "AZURE_CLIENT_SECRET",
}

// minSecretLen is the shortest configured secret that is searched for.
// Local servers take placeholder keys such as "ollama"; searching for those
// would reject every cassette that names the server.
const minSecretLen = 8

// secretPatterns recognise provider keys by shape. Each must start at a word
// boundary, which matchSecretPatterns checks.
var secretPatterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"an Anthropic API key", regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{16,}`)},
	{"an OpenAI-style API key", regexp.MustCompile(`sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}`)},
	{"a Google API key", regexp.MustCompile(`AIza[0-9A-Za-z_\-]{35}`)},
	{"a Groq API key", regexp.MustCompile(`gsk_[A-Za-z0-9]{20,}`)},
	{"an xAI API key", regexp.MustCompile(`xai-[A-Za-z0-9]{20,}`)},
	{"a Hugging Face token", regexp.MustCompile(`hf_[A-Za-z0-9]{30,}`)},
	{"a GitHub token", regexp.MustCompile(`(?:ghp|gho|ghs|ghu)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{40,}`)},
	{"an AWS access key id", regexp.MustCompile(`(?:AKIA|ASIA)[0-9A-Z]{16}`)},
	// Bedrock API keys: long-term ones are base64 of "BedrockAPIKey-…"
	// and start ABSK, short-term ones start bedrock-api-key-.
	{"an Amazon Bedrock API key", regexp.MustCompile(`ABSK[A-Za-z0-9+/]{40,}={0,2}|bedrock-api-key-[A-Za-z0-9+/]{40,}={0,2}`)},
	{"a Google OAuth access token", regexp.MustCompile(`ya29\.[0-9A-Za-z_\-]{20,}`)},
}

func isSensitiveHeader(name string) bool {
	return slices.ContainsFunc(SensitiveHeaders, func(h string) bool { return strings.EqualFold(h, name) })
}

func isSigningHeader(name string) bool {
	return slices.ContainsFunc(SigningHeaders, func(h string) bool { return strings.EqualFold(h, name) })
}

func isSensitiveParam(name string) bool {
	return slices.ContainsFunc(SensitiveQueryParams, func(p string) bool { return strings.EqualFold(p, name) })
}

// isRedactedValue reports whether a header value is a placeholder rather than
// a credential: empty, a redaction marker, or a run of * or x.
func isRedactedValue(v string) bool {
	v = strings.TrimSpace(v)
	for _, p := range []string{"Bearer ", "Basic ", "bearer ", "basic "} {
		v = strings.TrimPrefix(v, p)
	}
	switch strings.ToLower(strings.Trim(v, "[]<>\"' ")) {
	case "", "redacted", "filtered", "scrubbed", "removed", "none", "null", "dummy", "test", "placeholder":
		return true
	}
	return strings.Trim(v, "*") == "" || strings.Trim(strings.ToLower(v), "x") == ""
}

// headerSecrets returns the credential values in h, with and without their
// auth scheme, so the final scan also finds them where they were echoed.
func headerSecrets(h http.Header) []string {
	var out []string
	for name, vals := range h {
		if !isSensitiveHeader(name) {
			continue
		}
		for _, v := range vals {
			if isRedactedValue(v) {
				continue
			}
			out = append(out, v)
			if _, rest, ok := strings.Cut(v, " "); ok && (strings.EqualFold(name, "Authorization") || strings.EqualFold(name, "Proxy-Authorization")) {
				out = append(out, rest)
			}
		}
	}
	return out
}

// redactHeaders returns a copy of h with sensitive values replaced and
// volatile headers (when drop is set) removed.
func redactHeaders(h http.Header, extra []string, drop bool) http.Header {
	if h == nil {
		return nil
	}
	out := h.Clone()
	for name, vals := range out {
		switch {
		case drop && (slices.ContainsFunc(VolatileHeaders, func(v string) bool { return strings.EqualFold(v, name) }) || isSigningHeader(name)):
			delete(out, name)
		case isSensitiveHeader(name) || slices.ContainsFunc(extra, func(e string) bool { return strings.EqualFold(e, name) }):
			for i := range vals {
				vals[i] = Redacted
			}
		}
	}
	return out
}

// redactURL replaces the values of sensitive query parameters.
func redactURL(raw string) (string, []string) {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw, nil
	}
	q := u.Query()
	var secrets []string
	changed := false
	for k, vals := range q {
		if !isSensitiveParam(k) {
			continue
		}
		for i, v := range vals {
			if !isRedactedValue(v) {
				secrets = append(secrets, v)
				vals[i] = Redacted
				changed = true
			}
		}
	}
	if !changed {
		return raw, nil
	}
	u.RawQuery = q.Encode()
	return u.String(), secrets
}

// RedactURL returns raw with the values of credential query parameters
// (SensitiveQueryParams) replaced by Redacted, for printing a recorded URL.
func RedactURL(raw string) string {
	s, _ := redactURL(raw)
	return s
}

// RedactHeaders returns a copy of h with the values of SensitiveHeaders
// replaced by Redacted.
func RedactHeaders(h http.Header) http.Header { return redactHeaders(h, nil, false) }

// Redact prepares an interaction for keeping: sensitive headers (and the
// extra ones named), query parameters and form values become Redacted, and
// VolatileHeaders and SigningHeaders are dropped, so that re-recording an
// unchanged exchange writes the same file. It returns the credentials it removed, so that a
// later scan can find them wherever the server echoed them.
func Redact(i *vcr.Interaction, extraHeaders []string) (removed []string) {
	removed = append(headerSecrets(i.Request.Headers), headerSecrets(i.Response.Headers)...)
	i.Request.Headers = redactHeaders(i.Request.Headers, extraHeaders, true)
	i.Response.Headers = redactHeaders(i.Response.Headers, extraHeaders, true)
	var qs []string
	i.Request.URL, qs = redactURL(i.Request.URL)
	removed = append(removed, qs...)
	for k, vals := range i.Request.Form {
		if isSensitiveParam(k) {
			for j := range vals {
				vals[j] = Redacted
			}
		}
	}
	return removed
}

// A secretFinding says where a cassette holds something that looks secret.
// It never includes the secret itself.
type secretFinding struct {
	where string
	what  string
}

func (f secretFinding) String() string { return f.where + " " + f.what }

// secretScanner finds credentials in interactions: sensitive headers that
// were not redacted, the values of configured secrets, and key-shaped strings.
type secretScanner struct {
	secrets []string
}

func newSecretScanner(values []string) *secretScanner {
	s := &secretScanner{}
	seen := map[string]bool{}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen || seen[v] {
			continue
		}
		seen[v] = true
		s.secrets = append(s.secrets, v)
	}
	slices.Sort(s.secrets) // deterministic findings
	return s
}

func (s *secretScanner) text(where, text string) []secretFinding {
	var out []secretFinding
	for i, sec := range s.secrets {
		if strings.Contains(text, sec) {
			out = append(out, secretFinding{where, fmt.Sprintf("contains the value of configured secret #%d (%d characters)", i+1, len(sec))})
		}
	}
	var taken [][]int // spans already reported, so one key is reported once
	for _, p := range secretPatterns {
		for _, m := range p.re.FindAllStringIndex(text, -1) {
			if m[0] > 0 && isWordByte(text[m[0]-1]) {
				continue
			}
			if slices.ContainsFunc(taken, func(t []int) bool { return m[0] < t[1] && t[0] < m[1] }) {
				continue
			}
			taken = append(taken, m)
			out = append(out, secretFinding{where, fmt.Sprintf("contains what looks like %s (%q…, %d characters)", p.kind, text[m[0]:m[0]+4], m[1]-m[0])})
		}
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func (s *secretScanner) headers(where string, h http.Header) []secretFinding {
	var out []secretFinding
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range h[name] {
			if isSensitiveHeader(name) && !isRedactedValue(v) {
				out = append(out, secretFinding{where + " header " + name, "is not redacted (" + Redacted + " expected)"})
				continue
			}
			if isSigningHeader(name) && !isRedactedValue(v) {
				out = append(out, secretFinding{where + " header " + name, "is AWS signature material (recording drops it)"})
				continue
			}
			out = append(out, s.text(where+" header "+name, v)...)
		}
	}
	return out
}

func (s *secretScanner) url(where, raw string) []secretFinding {
	var out []secretFinding
	if u, err := url.Parse(raw); err == nil {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, v := range q[k] {
				if isSensitiveParam(k) && !isRedactedValue(v) {
					out = append(out, secretFinding{where + " query parameter " + k, "is not redacted"})
				}
			}
		}
	}
	return append(out, s.text(where, raw)...)
}

// interaction scans every place of an interaction a secret could hide.
func (s *secretScanner) interaction(i *vcr.Interaction) []secretFinding {
	var out []secretFinding
	out = append(out, s.url("request url", i.Request.URL)...)
	out = append(out, s.headers("request", i.Request.Headers)...)
	out = append(out, s.text("request body", i.Request.Body)...)
	keys := make([]string, 0, len(i.Request.Form))
	for k := range i.Request.Form {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range i.Request.Form[k] {
			out = append(out, s.text("request form "+k, v)...)
		}
	}
	out = append(out, s.headers("response", i.Response.Headers)...)
	out = append(out, s.text("response body", i.Response.Body)...)
	if IsEventStreamType(i.Response.Headers.Get("Content-Type")) {
		// Bedrock's events are base64 inside the framing, where the raw
		// bytes hide an echoed secret.
		out = append(out, s.text("response body (decoded event stream)", eventStreamText(i.Response.Body))...)
	}
	return out
}
