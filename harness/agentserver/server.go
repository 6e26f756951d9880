package agentserver

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dageval/dageval/harness/agent"
)

// Options configures a Server.
type Options struct {
	// Checkpointer keeps the threads' states (in memory when nil).
	Checkpointer agent.Checkpointer
	// Clock stamps threads and runs and is every run's clock (agent.WithClock);
	// the wall clock when nil, and runs then keep their own.
	Clock func() time.Time
	// NewID returns the id of a new "thread" or "run"; nil numbers them,
	// deterministically, per server.
	NewID func(kind string) string
	// RunOptions are added to every run's invocation.
	RunOptions []agent.Option
}

// Server serves graphs over the LangGraph Agent Protocol subset (see the
// package doc). It is an http.Handler; Close stops its runs.
type Server struct {
	opts Options
	cp   agent.Checkpointer
	mux  *http.ServeMux
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	graphs  map[string]*graph
	threads map[string]*thread
	order   []string // thread ids in creation order
	ids     map[string]int
	closed  bool
	// active counts the runs not yet ended; idle is closed (and replaced)
	// whenever a run ends, for Wait.
	active int
	idle   chan struct{}
}

type graph struct {
	id, assistantID string
	agent           *agent.Agent
	private         map[string]bool
	created         time.Time
}

// New returns a server with no graphs; Add them before serving.
func New(opts Options) *Server {
	s := &Server{opts: opts, cp: opts.Checkpointer, graphs: map[string]*graph{}, threads: map[string]*thread{}, ids: map[string]int{}}
	if s.cp == nil {
		s.cp = agent.NewMemoryCheckpointer()
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.routes()
	return s
}

// Add serves a under graphID; clients name it as the assistant_id (the
// graph id, or the assistant id derived from it).
func (s *Server) Add(graphID string, a *agent.Agent) error {
	if graphID == "" {
		return errors.New("agentserver: a graph needs an id")
	}
	if a == nil {
		return fmt.Errorf("agentserver: graph %q has no agent", graphID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.graphs[graphID]; dup {
		return fmt.Errorf("agentserver: graph %q is added twice", graphID)
	}
	private := map[string]bool{}
	for _, k := range a.PrivateKeys() {
		private[k] = true
	}
	s.graphs[graphID] = &graph{id: graphID, assistantID: hashID("assistant " + graphID), agent: a, private: private, created: s.now()}
	return nil
}

// Graphs returns the graph ids served, sorted.
func (s *Server) Graphs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.graphs))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close cancels every run and waits for them to stop; new runs are refused.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

// Wait returns once no run is pending or running (runs may start more
// runs: it waits for those too), or with ctx's error. An eval waits so
// before it ends a cell, so that what the served agents do is all in it.
func (s *Server) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.active == 0 {
			s.mu.Unlock()
			return nil
		}
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		ch := s.idle
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ended counts a run out, waking Wait.
func (s *Server) ended() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

func (s *Server) now() time.Time {
	if s.opts.Clock != nil {
		return s.opts.Clock().UTC()
	}
	return time.Now().UTC()
}

// newID must be called with s.mu held.
func (s *Server) newID(kind string) string {
	if s.opts.NewID != nil {
		return s.opts.NewID(kind)
	}
	s.ids[kind]++
	return hashID(kind + " " + strconv.Itoa(s.ids[kind]))
}

// hashID is a name-based (version 5 style) UUID: stable across processes,
// so a served conversation replays with the same ids.
func hashID(name string) string {
	h := sha1.Sum([]byte("dageval agentserver " + name))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func stampOf(t time.Time) string { return t.Format(time.RFC3339Nano) }

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, map[string]bool{"ok": true}) })
	m.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": "dageval", "flags": map[string]bool{"assistants": true, "crons": false}})
	})
	m.HandleFunc("POST /assistants/search", s.searchAssistants)
	m.HandleFunc("GET /assistants/{assistant_id}", s.getAssistant)
	m.HandleFunc("POST /threads", s.createThread)
	m.HandleFunc("POST /threads/search", s.searchThreads)
	m.HandleFunc("GET /threads/{thread_id}", s.getThread)
	m.HandleFunc("DELETE /threads/{thread_id}", s.deleteThread)
	m.HandleFunc("GET /threads/{thread_id}/state", s.getState)
	m.HandleFunc("POST /threads/{thread_id}/runs", s.runOn(modeBackground))
	m.HandleFunc("POST /threads/{thread_id}/runs/wait", s.runOn(modeWait))
	m.HandleFunc("POST /threads/{thread_id}/runs/stream", s.runOn(modeStream))
	m.HandleFunc("GET /threads/{thread_id}/runs", s.listRuns)
	m.HandleFunc("GET /threads/{thread_id}/runs/{run_id}", s.getRun)
	m.HandleFunc("DELETE /threads/{thread_id}/runs/{run_id}", s.deleteRun)
	m.HandleFunc("GET /threads/{thread_id}/runs/{run_id}/join", s.joinRun)
	m.HandleFunc("GET /threads/{thread_id}/runs/{run_id}/stream", s.joinStream)
	m.HandleFunc("POST /threads/{thread_id}/runs/{run_id}/cancel", s.cancelRun)
	m.HandleFunc("POST /runs", s.runOn(modeBackground))
	m.HandleFunc("POST /runs/wait", s.runOn(modeWait))
	m.HandleFunc("POST /runs/stream", s.runOn(modeStream))
	s.mux = m
}

// httpError is a protocol error: a status and a detail.
type httpError struct {
	code   int
	detail string
}

func (e *httpError) Error() string { return e.detail }

func errorf(code int, format string, args ...any) *httpError {
	return &httpError{code: code, detail: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, e *httpError) {
	writeJSON(w, e.code, map[string]string{"detail": e.detail})
}

// decode reads an optional JSON body into v.
func decode(r *http.Request, v any) *httpError {
	if r.Body == nil {
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 32<<20))
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return errorf(http.StatusUnprocessableEntity, "request body: %v", err)
	}
	return nil
}

func (g *graph) json() map[string]any {
	return map[string]any{
		"assistant_id": g.assistantID, "graph_id": g.id, "name": g.id, "config": map[string]any{}, "context": map[string]any{},
		"metadata": map[string]any{"created_by": "system"}, "version": 1,
		"created_at": stampOf(g.created), "updated_at": stampOf(g.created),
	}
}

// graphFor resolves an assistant_id (a graph id or an assistant id); s.mu held.
func (s *Server) graphFor(id string) (*graph, *httpError) {
	if g, ok := s.graphs[id]; ok {
		return g, nil
	}
	for _, g := range s.graphs {
		if g.assistantID == id {
			return g, nil
		}
	}
	return nil, errorf(http.StatusNotFound, "Assistant %q not found (graphs served: %v)", id, slices.Sorted(maps.Keys(s.graphs)))
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) {
	var q struct {
		GraphID string `json:"graph_id"`
		Limit   int    `json:"limit"`
		Offset  int    `json:"offset"`
	}
	if e := decode(r, &q); e != nil {
		writeErr(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, id := range slices.Sorted(maps.Keys(s.graphs)) {
		if q.GraphID == "" || q.GraphID == id {
			out = append(out, s.graphs[id].json())
		}
	}
	writeJSON(w, http.StatusOK, page(out, q.Offset, q.Limit))
}

func page[T any](items []T, offset, limit int) []T {
	if limit <= 0 {
		limit = 10
	}
	offset = min(max(offset, 0), len(items))
	items = items[offset:]
	if len(items) > limit {
		items = items[:limit]
	}
	if items == nil {
		items = []T{}
	}
	return items
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, e := s.graphFor(r.PathValue("assistant_id"))
	if e != nil {
		writeErr(w, e)
		return
	}
	writeJSON(w, http.StatusOK, g.json())
}
