// Package scrub replaces credentials in what dageval writes with a marker.
package scrub

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Marker replaces every secret found.
const Marker = "[REDACTED]"

// MinSecretLen is the shortest configured secret that is searched for.
// Local servers take placeholder keys such as "ollama"; replacing those
// would mangle ordinary text.
const MinSecretLen = 8

// SecretEnv names the environment variables that hold provider
// credentials: API keys, the cloud routes' AWS keys and session tokens,
// Bedrock API keys, a Google OAuth access token handed over in
// GOOGLE_OAUTH_ACCESS_TOKEN, Entra ID tokens and client secrets. Their
// values, when set, are scrubbed from everything dageval writes.
var SecretEnv = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY",
	"OPENROUTER_API_KEY", "GROQ_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
	"MISTRAL_API_KEY", "XAI_API_KEY", "DEEPSEEK_API_KEY", "TOGETHER_API_KEY", "FIREWORKS_API_KEY",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
	"GOOGLE_OAUTH_ACCESS_TOKEN", "AZURE_OPENAI_AD_TOKEN", "AZURE_CLIENT_SECRET",
}

// EnvValues returns the values of SecretEnv and of the extra variables
// named (nil getenv means os.Getenv).
func EnvValues(getenv func(string) string, extra ...string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []string
	for _, n := range append(slices.Clone(SecretEnv), extra...) {
		if v := getenv(n); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// A pattern recognises a kind of credential by its shape. Its regexp is
// tried only when the text holds one of its literal prefixes, which keeps
// clean text cheap. When the regexp has a group, only the group is the
// secret (the token after "Bearer ").
type pattern struct {
	kind     string
	prefixes []string
	re       *regexp.Regexp
}

// patterns are compiled at the first scrub: their bounded repetitions
// make them the costliest part of the package's start-up, and most
// commands scrub nothing.
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		{"an Anthropic API key", []string{"sk-ant-"}, regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{16,}`)},
		{"an OpenAI-style API key", []string{"sk-"}, regexp.MustCompile(`sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}`)},
		{"a Google API key", []string{"AIza"}, regexp.MustCompile(`AIza[0-9A-Za-z_\-]{35}`)},
		{"a Groq API key", []string{"gsk_"}, regexp.MustCompile(`gsk_[A-Za-z0-9]{20,}`)},
		{"an xAI API key", []string{"xai-"}, regexp.MustCompile(`xai-[A-Za-z0-9]{20,}`)},
		{"a Hugging Face token", []string{"hf_"}, regexp.MustCompile(`hf_[A-Za-z0-9]{30,}`)},
		{"a GitHub token", []string{"ghp_", "gho_", "ghs_", "ghu_", "github_pat_"}, regexp.MustCompile(`(?:ghp|gho|ghs|ghu)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{40,}`)},
		{"a Slack token", []string{"xox"}, regexp.MustCompile(`xox[abposr]-[A-Za-z0-9\-]{10,}`)},
		{"an AWS access key id", []string{"AKIA", "ASIA"}, regexp.MustCompile(`(?:AKIA|ASIA)[0-9A-Z]{16}`)},
		// Bedrock API keys: long-term ones are base64 of "BedrockAPIKey-…"
		// and start ABSK, short-term ones start bedrock-api-key-.
		{"an Amazon Bedrock API key", []string{"ABSK", "bedrock-api-key-"}, regexp.MustCompile(`ABSK[A-Za-z0-9+/]{40,}={0,2}|bedrock-api-key-[A-Za-z0-9+/]{40,}={0,2}`)},
		{"a Google OAuth access token", []string{"ya29."}, regexp.MustCompile(`ya29\.[0-9A-Za-z_\-]{20,}`)},
		{"a bearer token", []string{"Bearer", "bearer", "BEARER"}, regexp.MustCompile(`(?i:bearer)[ \t]+([A-Za-z0-9._~+/\-]{16,}=*)`)},
	}
})

// Scrubber finds and replaces secrets: the configured values (in the forms
// JSON and HTML escape them to as well) and key-shaped strings. The nil
// Scrubber knows no values and still replaces key-shaped strings. A
// Scrubber is immutable and safe for concurrent use.
type Scrubber struct {
	secrets []string // as configured, sorted, for numbering findings
	forms   []string // every form of every secret, longest first
}

// New returns a Scrubber of the given values; values shorter than
// MinSecretLen (after trimming spaces) are not searched for.
func New(secrets ...string) *Scrubber { return (*Scrubber)(nil).With(secrets...) }

// FromEnv is New of EnvValues.
func FromEnv(getenv func(string) string, extra ...string) *Scrubber {
	return New(EnvValues(getenv, extra...)...)
}

// With returns a Scrubber that also replaces the given values.
func (s *Scrubber) With(secrets ...string) *Scrubber {
	out := &Scrubber{}
	if s != nil {
		out.secrets = slices.Clone(s.secrets)
	}
	for _, v := range secrets {
		v = strings.TrimSpace(v)
		if len(v) >= MinSecretLen && !slices.Contains(out.secrets, v) {
			out.secrets = append(out.secrets, v)
		}
	}
	slices.Sort(out.secrets)
	for _, v := range out.secrets {
		for _, f := range forms(v) {
			if !slices.Contains(out.forms, f) {
				out.forms = append(out.forms, f)
			}
		}
	}
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortStableFunc(out.forms, func(a, b string) int { return len(b) - len(a) })
	return out
}

// forms are the ways v can appear in what dageval writes: as it is,
// escaped in a JSON string, and escaped in HTML (where html/template also
// escapes '+').
func forms(v string) []string {
	out := []string{v}
	// JSON as dageval writes it (HTML left alone) and as encoding/json
	// does by default ('<', '>' and '&' as \u escapes).
	for _, escapeHTML := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if enc.Encode(v) == nil {
			if j := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(b.String(), "\n"), `"`), `"`); !slices.Contains(out, j) {
				out = append(out, j)
			}
		}
	}
	if h := html.EscapeString(v); !slices.Contains(out, h) {
		out = append(out, h)
	}
	if h := strings.ReplaceAll(html.EscapeString(v), "+", "&#43;"); h != v && !slices.Contains(out, h) {
		out = append(out, h)
	}
	return out
}

// Secrets returns the configured values searched for, sorted.
func (s *Scrubber) Secrets() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.secrets)
}

// Finding is a secret found in a text: where it is, and what it is
// (Secret, the 1-based index into Secrets, or Kind, a pattern's
// description). It never holds the secret.
type Finding struct {
	Start, End int
	Secret     int
	Kind       string
}

// Find returns the secrets in text: configured values first, in the order
// of Secrets, then key-shaped strings, each span once.
func (s *Scrubber) Find(text string) []Finding {
	var out []Finding
	if s != nil {
		for i, sec := range s.secrets {
			for _, f := range forms(sec) {
				if j := strings.Index(text, f); j >= 0 {
					out = append(out, Finding{Start: j, End: j + len(f), Secret: i + 1})
					break
				}
			}
		}
	}
	var taken [][2]int
	for _, p := range patterns() {
		if !hasPrefix(text, p.prefixes) {
			continue
		}
		for _, m := range p.re.FindAllStringSubmatchIndex(text, -1) {
			if !boundary(text, m[0]) {
				continue
			}
			start, end := m[0], m[1]
			if len(m) >= 4 && m[2] >= 0 {
				start, end = m[2], m[3]
			}
			if slices.ContainsFunc(taken, func(t [2]int) bool { return start < t[1] && t[0] < end }) {
				continue
			}
			taken = append(taken, [2]int{start, end})
			out = append(out, Finding{Start: start, End: end, Kind: p.kind})
		}
	}
	return out
}

func hasPrefix(text string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// prefixesAt lists, by their first byte, the literal prefixes of all
// patterns with the index of their pattern.
var prefixesAt = sync.OnceValue(func() *[256][]prefixAt {
	var t [256][]prefixAt
	ps := patterns()
	if len(ps) > 64 {
		panic("scrub: more patterns than a mask holds")
	}
	for k, p := range ps {
		for _, pre := range p.prefixes {
			t[pre[0]] = append(t[pre[0]], prefixAt{pre, k})
		}
	}
	return &t
})

// prefixAt is one literal prefix and the index of its pattern.
type prefixAt struct {
	prefix  string
	pattern int
}

// prefixPairs has bit a<<8|b set when some prefix starts with the bytes
// a, b (every prefix has two at least).
var prefixPairs = sync.OnceValue(func() *[1 << 16 / 64]uint64 {
	var t [1 << 16 / 64]uint64
	for _, p := range patterns() {
		for _, pre := range p.prefixes {
			if len(pre) < 2 {
				panic("scrub: a prefix of one byte")
			}
			k := uint16(pre[0])<<8 | uint16(pre[1])
			t[k>>6] |= 1 << (k & 63)
		}
	}
	return &t
})

// candidates returns the patterns (bit k for patterns[k]) one of whose
// prefixes text holds, as hasPrefix would find them pattern by pattern,
// in one pass over text: a run scrubs every string of every cell, and
// long clean texts (system prompts, tool descriptions) were searched once
// for each of the twenty-odd prefixes. A position is looked at further
// only when its two bytes start a prefix, which few do in any text:
// replays scrub every request, and the lookup of the prefixes by the
// first byte alone, which starts words of every language, was a tenth of
// a replayed run's CPU time.
func candidates[T string | []byte](text T) uint64 {
	var mask uint64
	table, pairs := prefixesAt(), prefixPairs()
	for i := 0; i+1 < len(text); i++ {
		if k := uint16(text[i])<<8 | uint16(text[i+1]); pairs[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, c := range table[text[i]] {
			if mask&(1<<c.pattern) == 0 && len(text)-i >= len(c.prefix) && string(text[i:i+len(c.prefix)]) == c.prefix {
				mask |= 1 << c.pattern
			}
		}
	}
	return mask
}

// boundary reports whether a key shape may start at i: at the start of a
// word, or right after an escape such as JSON's \n, whose letter is not
// part of the key.
func boundary(text string, i int) bool {
	if i == 0 || !isWordByte(text[i-1]) {
		return true
	}
	return i >= 2 && text[i-2] == '\\' && strings.IndexByte("nrtbf", text[i-1]) >= 0
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// String returns text with every secret replaced by Marker; text itself
// when it holds none.
func (s *Scrubber) String(text string) string {
	if text == "" {
		return text
	}
	if s != nil {
		for _, f := range s.forms {
			if strings.Contains(text, f) {
				text = strings.ReplaceAll(text, f, Marker)
			}
		}
	}
	mask := candidates(text)
	for k, p := range patterns() {
		if mask&(1<<k) == 0 {
			continue
		}
		ms := p.re.FindAllStringSubmatchIndex(text, -1)
		if len(ms) == 0 {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range ms {
			if !boundary(text, m[0]) {
				continue
			}
			start, end := m[0], m[1]
			if len(m) >= 4 && m[2] >= 0 {
				start, end = m[2], m[3]
			}
			b.WriteString(text[last:start])
			b.WriteString(Marker)
			last = end
		}
		if last > 0 {
			b.WriteString(text[last:])
			text = b.String()
			mask = candidates(text) // the text the later patterns see
		}
	}
	return text
}

// Bytes is String for bytes: b itself when it holds no secret, else a
// scrubbed copy. The marker holds no character JSON, HTML or XML escape,
// so scrubbed JSON stays valid.
func (s *Scrubber) Bytes(b []byte) []byte {
	if !s.dirty(b) {
		return b
	}
	return []byte(s.String(string(b)))
}

// dirty is a cheap test for whether b may hold a secret.
func (s *Scrubber) dirty(b []byte) bool {
	if s != nil {
		for _, f := range s.forms {
			if bytes.Contains(b, []byte(f)) {
				return true
			}
		}
	}
	mask := candidates(b)
	for k, p := range patterns() {
		if mask&(1<<k) != 0 && p.re.Match(b) {
			return true
		}
	}
	return false
}

// Writer returns a writer that scrubs each write before passing it to w.
// A secret split across two writes is not found, so it suits writers fed
// whole lines, as progress and logs are.
func (s *Scrubber) Writer(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return writer{w: w, s: s}
}

type writer struct {
	w io.Writer
	s *Scrubber
}

func (w writer) Write(p []byte) (int, error) {
	q := w.s.Bytes(p)
	if _, err := w.w.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}
