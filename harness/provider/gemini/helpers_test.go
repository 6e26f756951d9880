package gemini_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/gemini"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
	"github.com/dageval/dageval/internal/netguard"
)

// TestMain fails the run if any test dials a non-loopback address.
func TestMain(m *testing.M) { netguard.Main(m) }

var (
	collect     = providertest.Collect
	userRequest = providertest.UserRequest
)

// noEnv keeps tests hermetic: nothing is read from the environment.
func noEnv(string) string { return "" }

// seen is one request a wireServer received.
type seen struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// JSON decodes the request body.
func (s seen) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(s.Body, &m), string(s.Body))
	return m
}

// wireServer answers its n-th request with the n-th answer (status,
// content type, body) and keeps what it received.
type wireServer struct {
	*httptest.Server
	mu      sync.Mutex
	answers []answer
	got     []seen
}

type answer struct {
	status      int
	contentType string
	body        string
	header      http.Header
}

func jsonAnswer(body string) answer { return answer{200, "application/json; charset=UTF-8", body, nil} }
func sseAnswer(body string) answer  { return answer{200, "text/event-stream", body, nil} }

func newWireServer(t *testing.T, answers ...answer) *wireServer {
	t.Helper()
	s := &wireServer{answers: answers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		i := len(s.got)
		s.got = append(s.got, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
		s.mu.Unlock()
		if i >= len(s.answers) {
			t.Errorf("unexpected request %d", i)
			http.Error(w, "unexpected", http.StatusTeapot)
			return
		}
		a := s.answers[i]
		for k, vs := range a.header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *wireServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

// newModel builds the adapter against base with a key and no environment.
func newModel(t *testing.T, base string, mutate ...func(*provider.Config)) *gemini.Model {
	t.Helper()
	cfg := provider.Config{Model: "gemini-2.5-flash", BaseURL: base, APIKey: "test-key-0123456789", Getenv: noEnv,
		Retry: provider.RetryPolicy{MaxAttempts: 1}}
	for _, f := range mutate {
		f(&cfg)
	}
	m, err := gemini.New(cfg)
	require.NoError(t, err)
	return m
}

// okAnswer is a minimal successful answer.
const okAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4},"modelVersion":"gemini-2.5-flash","responseId":"r-ok"}`

func newModelErr(cfg provider.Config) (*gemini.Model, error) { return gemini.New(cfg) }

// untimed checks the clock's latency on a live answer (a first event only
// when it was streamed) and returns the response without it, for
// comparing answers.
func untimed(t *testing.T, r *llm.Response, streamed bool) *llm.Response {
	t.Helper()
	if r == nil {
		return nil
	}
	if assert.NotNil(t, r.Latency, "a live call is timed") {
		assert.False(t, r.Latency.Recorded)
		assert.Positive(t, r.Latency.Duration)
		if streamed {
			assert.Positive(t, r.Latency.FirstEvent)
			assert.LessOrEqual(t, r.Latency.FirstEvent, r.Latency.Duration)
		} else {
			assert.Zero(t, r.Latency.FirstEvent)
		}
	}
	out := *r
	out.Latency = nil
	return &out
}
