package cassette

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/internal/scrub"
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

// DefaultSecretEnv names the environment variables that hold provider
// credentials (scrub.SecretEnv). Their values, when set, must appear
// nowhere in a saved cassette.
var DefaultSecretEnv = scrub.SecretEnv

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
// were not redacted, the values of configured secrets, and key-shaped
// strings (what scrub.Scrubber finds).
type secretScanner struct {
	s *scrub.Scrubber
}

func newSecretScanner(values []string) *secretScanner {
	return &secretScanner{s: scrub.New(values...)}
}

func (s *secretScanner) text(where, text string) []secretFinding {
	var out []secretFinding
	secrets := s.s.Secrets()
	for _, f := range s.s.Find(text) {
		if f.Secret > 0 {
			out = append(out, secretFinding{where, fmt.Sprintf("contains the value of configured secret #%d (%d characters)", f.Secret, len(secrets[f.Secret-1]))})
			continue
		}
		out = append(out, secretFinding{where, fmt.Sprintf("contains what looks like %s (%q…, %d characters)", f.Kind, text[f.Start:min(f.Start+4, f.End)], f.End-f.Start)})
	}
	return out
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

// Scrub replaces the secrets s finds in an interaction's URL, header
// values, form values and bodies with scrub.Marker, keeping the content
// lengths in step, and reports whether it changed anything. A recording
// runs it after Redact, so that an answer echoing a key is kept (and
// replayed) with the key replaced, as everything else dageval writes is;
// a replay scrubs each request the same way before matching it. Secrets
// inside a binary event stream's frames are beyond it: Write's scan
// still refuses those.
func Scrub(i *vcr.Interaction, s *scrub.Scrubber) bool {
	changed := false
	str := func(p *string) {
		if t := s.String(*p); t != *p {
			*p, changed = t, true
		}
	}
	headers := func(h http.Header) {
		for _, vals := range h {
			for j := range vals {
				str(&vals[j])
			}
		}
	}
	str(&i.Request.URL)
	headers(i.Request.Headers)
	headers(i.Response.Headers)
	for _, vals := range i.Request.Form {
		for j := range vals {
			str(&vals[j])
		}
	}
	if b := i.Request.Body; b != "" {
		str(&i.Request.Body)
		if i.Request.Body != b && i.Request.ContentLength > 0 {
			i.Request.ContentLength = int64(len(i.Request.Body))
		}
	}
	if b := i.Response.Body; b != "" && !IsEventStreamType(i.Response.Headers.Get("Content-Type")) {
		str(&i.Response.Body)
		if i.Response.Body != b {
			if i.Response.ContentLength > 0 {
				i.Response.ContentLength = int64(len(i.Response.Body))
			}
			if i.Response.Headers.Get("Content-Length") != "" {
				i.Response.Headers.Set("Content-Length", strconv.Itoa(len(i.Response.Body)))
			}
		}
	}
	return changed
}
