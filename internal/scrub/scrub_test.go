package scrub_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/internal/scrub"
)

func TestStringReplacesConfiguredValuesAndKeyShapes(t *testing.T) {
	s := scrub.New("configured-secret-1", "short")
	for _, tt := range []struct{ in, want string }{
		{"key configured-secret-1 here", "key [REDACTED] here"},
		{"short stays: placeholder keys are too short to search for", "short stays: placeholder keys are too short to search for"},
		{"Authorization: Bearer abcdefghijklmnop0123", "Authorization: Bearer [REDACTED]"},
		{"bearer abcdefghijklmnop0123", "bearer [REDACTED]"},
		{"an Anthropic key sk-ant-api03-abcdefghijklmnop and more", "an Anthropic key [REDACTED] and more"},
		{"sk-proj-abcdefghijklmnopqrstuvwx", "[REDACTED]"},
		{"AKIAABCDEFGHIJKLMNOP", "[REDACTED]"},
		{"AIza" + strings.Repeat("x", 35), "[REDACTED]"},
		{"xoxb-1234567890-abcdef", "[REDACTED]"},
		{"ghp_" + strings.Repeat("a", 36), "[REDACTED]"},
		{"task-sk-ant-api03-abcdefghijklmnop is a word, not a key", "task-sk-ant-api03-abcdefghijklmnop is a word, not a key"},
		{`"line one\nsk-ant-api03-abcdefghijklmnop"`, `"line one\n[REDACTED]"`},
		{"nothing to see", "nothing to see"},
	} {
		assert.Equal(t, tt.want, s.String(tt.in), tt.in)
	}
	var none *scrub.Scrubber
	assert.Equal(t, "x [REDACTED]", none.String("x sk-ant-api03-abcdefghijklmnop"), "the nil scrubber still knows key shapes")
}

// A secret is found in the forms JSON and HTML give it, and scrubbed JSON
// stays valid.
func TestEscapedForms(t *testing.T) {
	secret := `se"cret+<key>/value`
	s := scrub.New(secret)
	raw, err := json.Marshal(map[string]string{"text": "echo " + secret})
	require.NoError(t, err)
	out := s.Bytes(raw)
	assert.True(t, json.Valid(out), string(out))
	assert.Equal(t, `{"text":"echo [REDACTED]"}`, string(out))
	assert.Equal(t, "[REDACTED]", s.String("se&#34;cret&#43;&lt;key&gt;/value"))
	clean := []byte(`{"text":"clean"}`)
	assert.Same(t, &clean[0], &s.Bytes(clean)[0], "clean bytes are returned as they are")
}

func TestFindNamesWhatItFound(t *testing.T) {
	s := scrub.New("bbbbbbbbbbbb", "aaaaaaaaaaaa")
	text := "x bbbbbbbbbbbb y sk-ant-api03-abcdefghijklmnop"
	fs := s.Find(text)
	require.Len(t, fs, 2)
	assert.Equal(t, 2, fs[0].Secret, "numbered in sorted order")
	assert.Equal(t, "an Anthropic API key", fs[1].Kind)
	assert.Equal(t, "sk-ant-api03-abcdefghijklmnop", text[fs[1].Start:fs[1].End])
}

type record struct {
	Name  string
	Tags  []string
	Meta  map[string]string
	Raw   json.RawMessage
	Any   any
	Inner *record
	n     string
}

func TestValueScrubsInPlace(t *testing.T) {
	s := scrub.New("secret-value-1")
	r := &record{Name: "a secret-value-1", Tags: []string{"ok", "secret-value-1"}, Meta: map[string]string{"k": "secret-value-1"},
		Raw: json.RawMessage(`{"a":"secret-value-1"}`), Any: map[string]any{"x": []any{"secret-value-1"}}, n: "secret-value-1"}
	r.Inner = r
	assert.True(t, s.Value(r))
	assert.Equal(t, "a [REDACTED]", r.Name)
	assert.Equal(t, []string{"ok", "[REDACTED]"}, r.Tags)
	assert.Equal(t, "[REDACTED]", r.Meta["k"])
	assert.JSONEq(t, `{"a":"[REDACTED]"}`, string(r.Raw))
	assert.Equal(t, map[string]any{"x": []any{"[REDACTED]"}}, r.Any)
	assert.Equal(t, "secret-value-1", r.n, "unexported fields are not reached")
	clean := &record{Name: "clean"}
	assert.False(t, s.Value(clean))
}

func TestWriterAndHandler(t *testing.T) {
	s := scrub.New("secret-value-1")
	var b bytes.Buffer
	_, err := s.Writer(&b).Write([]byte("progress secret-value-1\n"))
	require.NoError(t, err)
	assert.Equal(t, "progress [REDACTED]\n", b.String())

	b.Reset()
	log := slog.New(scrub.Handler(slog.NewTextHandler(&b, nil), s)).With("k", "secret-value-1")
	log.Warn("failed with secret-value-1", "error", errString("boom secret-value-1"), slog.Group("g", "v", "secret-value-1"))
	assert.NotContains(t, b.String(), "secret-value-1")
	assert.Equal(t, 4, strings.Count(b.String(), "[REDACTED]"), b.String())
}

type errString string

func (e errString) Error() string { return string(e) }

// BenchmarkBytesClean is what a replay pays per request: a clean 64 KB
// body checked against the environment's secrets and every key shape.
func BenchmarkBytesClean(b *testing.B) {
	s := scrub.New("configured-secret-1", "configured-secret-2", "another-secret-value")
	body := bytes.Repeat([]byte(`{"role":"user","content":"The weather in Paris is sunny and 21C today."},`), 900)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s.Bytes(body)
	}
}
