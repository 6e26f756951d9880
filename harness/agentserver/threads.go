package agentserver

import (
	"context"
	"net/http"
	"time"

	"github.com/dageval/dageval/harness/agent"
)

// thread is one conversation; its state lives in the checkpointer under its id.
type thread struct {
	id               string
	created, updated time.Time
	metadata         map[string]any
	// status is the thread's status when no run is active: idle,
	// interrupted or error.
	status string
	runs   []*run // in creation order
	// graph is the graph of the thread's latest run, whose private keys
	// its values leave out.
	graph *graph
	// carry holds the inputs of cancelled runs that never checkpointed,
	// for the thread's next run.
	carry []agent.Input
}

// busy reports whether a run of the thread is pending or running; s.mu held.
func (t *thread) busy() bool {
	for _, r := range t.runs {
		if !r.finished {
			return true
		}
	}
	return false
}

// last is the thread's most recent run, which a new one waits for; s.mu held.
func (t *thread) last() *run {
	if len(t.runs) == 0 {
		return nil
	}
	return t.runs[len(t.runs)-1]
}

func (t *thread) statusNow() string {
	if t.busy() {
		return "busy"
	}
	return t.status
}

// newThread registers a thread; s.mu held.
func (s *Server) newThread(id string, metadata map[string]any) *thread {
	if id == "" {
		id = s.newID("thread")
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	now := s.now()
	t := &thread{id: id, created: now, updated: now, metadata: metadata, status: "idle"}
	s.threads[id] = t
	s.order = append(s.order, id)
	return t
}

// thread finds a thread by id; s.mu held.
func (s *Server) thread(id string) (*thread, *httpError) {
	t, ok := s.threads[id]
	if !ok {
		return nil, errorf(http.StatusNotFound, "Thread with ID %s not found", id)
	}
	return t, nil
}

// checkpoint loads a thread's checkpoint (nil when it has none).
func (s *Server) checkpoint(ctx context.Context, id string) (*agent.Checkpoint, *httpError) {
	cp, err := s.cp.Get(ctx, id)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "thread %s: %v", id, err)
	}
	return cp, nil
}

// threadJSON renders a thread with its values; call without s.mu.
func (s *Server) threadJSON(ctx context.Context, t *thread) (map[string]any, *httpError) {
	cp, e := s.checkpoint(ctx, t.id)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]any{
		"thread_id": t.id, "created_at": stampOf(t.created), "updated_at": stampOf(t.updated),
		"metadata": t.metadata, "status": t.statusNow(), "config": map[string]any{},
	}
	var private map[string]bool
	if t.graph != nil {
		private = t.graph.private
	}
	var st *agent.State
	interrupts := map[string][]interruptOut{}
	if cp != nil {
		st = cp.State
		for _, in := range interruptsOut(cp.Interrupts) {
			interrupts[in.ID] = []interruptOut{in}
		}
	}
	out["values"] = values(st, private, nil)
	out["interrupts"] = interrupts
	return out, nil
}

func (s *Server) createThread(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ThreadID string         `json:"thread_id"`
		Metadata map[string]any `json:"metadata"`
		IfExists string         `json:"if_exists"`
	}
	if e := decode(r, &body); e != nil {
		writeErr(w, e)
		return
	}
	s.mu.Lock()
	t, exists := s.threads[body.ThreadID]
	switch {
	case exists && body.IfExists == "do_nothing":
	case exists:
		s.mu.Unlock()
		writeErr(w, errorf(http.StatusConflict, "Thread with ID %s already exists", body.ThreadID))
		return
	default:
		t = s.newThread(body.ThreadID, body.Metadata)
	}
	s.mu.Unlock()
	s.writeThread(w, r, t)
}

func (s *Server) writeThread(w http.ResponseWriter, r *http.Request, t *thread) {
	out, e := s.threadJSON(r.Context(), t)
	if e != nil {
		writeErr(w, e)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t, e := s.thread(r.PathValue("thread_id"))
	s.mu.Unlock()
	if e != nil {
		writeErr(w, e)
		return
	}
	s.writeThread(w, r, t)
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Status   string         `json:"status"`
		Metadata map[string]any `json:"metadata"`
		Limit    int            `json:"limit"`
		Offset   int            `json:"offset"`
	}
	if e := decode(r, &q); e != nil {
		writeErr(w, e)
		return
	}
	s.mu.Lock()
	var picked []*thread
	for i := len(s.order) - 1; i >= 0; i-- {
		t := s.threads[s.order[i]]
		if q.Status != "" && t.statusNow() != q.Status {
			continue
		}
		if !matches(t.metadata, q.Metadata) {
			continue
		}
		picked = append(picked, t)
	}
	s.mu.Unlock()
	out := []map[string]any{}
	for _, t := range page(picked, q.Offset, q.Limit) {
		j, e := s.threadJSON(r.Context(), t)
		if e != nil {
			writeErr(w, e)
			return
		}
		out = append(out, j)
	}
	writeJSON(w, http.StatusOK, out)
}

// matches reports whether every key of want has an equal value in have.
func matches(have, want map[string]any) bool {
	for k, v := range want {
		h, ok := have[k]
		if !ok || !jsonEqual(h, v) {
			return false
		}
	}
	return true
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t, e := s.thread(r.PathValue("thread_id"))
	if e != nil {
		s.mu.Unlock()
		writeErr(w, e)
		return
	}
	delete(s.threads, t.id)
	for i, id := range s.order {
		if id == t.id {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	runs := append([]*run(nil), t.runs...)
	for _, rn := range runs {
		rn.cancelLocked()
	}
	s.mu.Unlock()
	// The thread's id may be used again: its runs stop writing before its
	// state is cleared.
	for _, rn := range runs {
		select {
		case <-rn.done:
		case <-r.Context().Done():
			return
		}
	}
	if err := s.cp.Put(r.Context(), t.id, &agent.Checkpoint{State: &agent.State{}}); err != nil {
		writeErr(w, errorf(http.StatusInternalServerError, "thread %s: %v", t.id, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t, e := s.thread(r.PathValue("thread_id"))
	var g *graph
	if t != nil {
		g = t.graph
	}
	s.mu.Unlock()
	if e != nil {
		writeErr(w, e)
		return
	}
	cp, e := s.checkpoint(r.Context(), t.id)
	if e != nil {
		writeErr(w, e)
		return
	}
	var private map[string]bool
	if g != nil {
		private = g.private
	}
	var st *agent.State
	var ints []agent.PendingInterrupt
	steps := 0
	next := []string{}
	tasks := []map[string]any{}
	if cp != nil {
		st, ints, steps = cp.State, cp.Interrupts, cp.Steps
		if len(ints) > 0 {
			next = append(next, string(cp.Next.Phase))
			tasks = append(tasks, map[string]any{"id": hashID("task " + t.id + " " + itoa(steps)), "name": string(cp.Next.Phase), "interrupts": interruptsOut(ints)})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"values": values(st, private, nil), "next": next, "tasks": tasks, "interrupts": interruptsOut(ints),
		"checkpoint": map[string]any{"thread_id": t.id, "checkpoint_ns": "", "checkpoint_id": hashID("checkpoint " + t.id + " " + itoa(steps))},
		"metadata":   map[string]any{"step": steps}, "created_at": stampOf(s.now()),
	})
}
