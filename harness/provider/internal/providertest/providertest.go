package providertest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
)

// Script is a loopback server that answers its n-th request with the n-th
// step and keeps every request it received.
type Script struct {
	*httptest.Server
	mu       sync.Mutex
	steps    []http.HandlerFunc
	requests []*http.Request
}

// NewScript starts a Script that is closed when the test ends. A request
// beyond the last step fails the test.
func NewScript(t testing.TB, steps ...http.HandlerFunc) *Script {
	s := &Script{steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		i := len(s.requests)
		s.requests = append(s.requests, r.Clone(context.Background()))
		s.mu.Unlock()
		if i >= len(s.steps) {
			t.Errorf("unexpected request %d", i)
			http.Error(w, "unexpected", http.StatusTeapot)
			return
		}
		s.steps[i](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Count is the number of requests received so far.
func (s *Script) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Requests returns the requests received so far (their bodies already read).
func (s *Script) Requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.requests...)
}

// Reply answers with status, header and body (JSON unless header says otherwise).
func Reply(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// SSE answers with a server-sent event stream, flushing after each event.
func SSE(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			_, _ = io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

// FixedServer answers streaming requests ("stream": true in the body) with
// sse and the others with whole, until the test ends.
func FixedServer(t testing.TB, whole, sse []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(sse)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(whole)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// CrossedServer answers the other way round from FixedServer: streaming
// requests with whole, the others with sse, as a replay does when the agent
// calls a model differently from how the recording was made.
func CrossedServer(t testing.TB, whole, sse []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(whole)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		_, _ = w.Write(sse)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// UserRequest is a one-message conversation.
func UserRequest(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.User(text)}}
}

// Streamed is what a stream delivered: its chunks (the final one included),
// the final response and the error that ended it.
type Streamed struct {
	Chunks []llm.Chunk
	Final  *llm.Response
	Err    error
}

// Collect reads m's stream for req to its end or its first error.
func Collect(t testing.TB, m llm.StreamingModel, req *llm.Request) Streamed {
	t.Helper()
	var s Streamed
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			s.Err = err
			break
		}
		s.Chunks = append(s.Chunks, c)
		if c.Response != nil {
			s.Final = c.Response
		}
	}
	return s
}

// Answer asks m for the answer to "hi" the way it was recorded: through
// Stream when streamed, through Generate otherwise. Any error fails the test.
func Answer(t testing.TB, m llm.StreamingModel, streamed bool, label string) *llm.Response {
	t.Helper()
	if streamed {
		s := Collect(t, m, UserRequest("hi"))
		require.NoError(t, s.Err, label)
		return s.Final
	}
	resp, err := m.Generate(context.Background(), UserRequest("hi"))
	require.NoError(t, err, label)
	return resp
}

// Thirds cuts s into three pieces on rune boundaries (s itself when shorter
// than three runes), for re-sending an answer as deltas.
func Thirds(s string) []string {
	r := []rune(s)
	n := len(r)
	if n < 3 {
		return []string{s}
	}
	return []string{string(r[:n/3]), string(r[n/3 : 2*n/3]), string(r[2*n/3:])}
}

// BenchGenerate measures m.Generate for req.
func BenchGenerate(b *testing.B, m llm.ChatModel, req *llm.Request) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchStream measures reading m's whole stream for req.
func BenchStream(b *testing.B, m llm.StreamingModel, req *llm.Request) {
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range m.Stream(context.Background(), req) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Wire is an http.RoundTripper that never dials: it keeps every request,
// body included, and answers the n-th with the n-th handler. Adapters whose
// SDK picks the host itself (the cloud routes) are tested through it.
type Wire struct {
	t      testing.TB
	mu     sync.Mutex
	steps  []http.HandlerFunc
	reqs   []*http.Request
	bodies []string
}

// NewWire returns a Wire answering with steps; a request beyond the last
// step fails the test.
func NewWire(t testing.TB, steps ...http.HandlerFunc) *Wire { return &Wire{t: t, steps: steps} }

// RoundTrip implements http.RoundTripper.
func (w *Wire) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		_ = r.Body.Close()
	}
	w.mu.Lock()
	i := len(w.reqs)
	w.reqs = append(w.reqs, r.Clone(context.Background()))
	w.bodies = append(w.bodies, string(body))
	w.mu.Unlock()
	rec := httptest.NewRecorder()
	if i >= len(w.steps) {
		w.t.Errorf("unexpected request %d to %s", i, r.URL)
		http.Error(rec, "unexpected", http.StatusTeapot)
	} else {
		w.steps[i](rec, r)
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// Requests returns the requests received so far.
func (w *Wire) Requests() []*http.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*http.Request(nil), w.reqs...)
}

// Body returns the body of request i.
func (w *Wire) Body(i int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bodies[i]
}

// Env is a getenv over vars that notes every name asked for, so a test can
// tell which variables an adapter read.
type Env struct {
	vars  map[string]string
	mu    sync.Mutex
	asked []string
}

// NewEnv returns an Env over vars.
func NewEnv(vars map[string]string) *Env { return &Env{vars: vars} }

// Getenv has the shape of os.Getenv.
func (e *Env) Getenv(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, name)
	return e.vars[name]
}

// Asked returns the names asked for so far, in order.
func (e *Env) Asked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.asked...)
}

// WriteCounter is an HTTP client whose connections count the writes they
// make to the socket, with a write buffer that holds a whole request, as
// the transport of an eval run has.
type WriteCounter struct {
	Client *http.Client
	writes atomic.Int64
}

// NewWriteCounter makes a WriteCounter whose idle connections are closed
// when the test ends.
func NewWriteCounter(t testing.TB) *WriteCounter {
	w := &WriteCounter{}
	var d net.Dialer
	tr := &http.Transport{
		WriteBufferSize: 64 << 10,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countedConn{Conn: c, writes: &w.writes}, nil
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	w.Client = &http.Client{Transport: tr}
	return w
}

// Writes is the number of writes made so far.
func (w *WriteCounter) Writes() int { return int(w.writes.Load()) }

type countedConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countedConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// LongSystemPrompt is a system prompt of about n bytes, so that a request
// is as large as one of an agent with the default stack.
func LongSystemPrompt(n int) string {
	return strings.Repeat("Keep the plan in the todo list and the files in the workspace. ", n/64+1)
}

// OneWritePerRequest sends two requests as large as an agent's with the
// default stack through the model that build makes for a server answering
// ok, over a WriteCounter's client, and checks each went out in one write.
func OneWritePerRequest(t *testing.T, ok string, build func(url string, client *http.Client) llm.ChatModel) {
	t.Helper()
	s := NewScript(t, Reply(200, nil, ok), Reply(200, nil, ok))
	wc := NewWriteCounter(t)
	m := build(s.URL, wc.Client)
	req := &llm.Request{System: []llm.Block{llm.TextBlock(LongSystemPrompt(9000))}, Messages: []llm.Message{llm.User("hi")}}
	for range 2 {
		_, err := m.Generate(context.Background(), req)
		require.NoError(t, err)
	}
	require.Equal(t, 2, s.Count())
	if got := wc.Writes(); got != 2 {
		t.Errorf("2 requests of %d bytes took %d writes, want one each", s.Requests()[0].ContentLength, got)
	}
}
