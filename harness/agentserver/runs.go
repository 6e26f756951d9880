package agentserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/dageval/dageval/harness/agent"
)

// run is one invocation of a graph on a thread.
type run struct {
	id               string
	thread           *thread
	graph            *graph
	created, updated time.Time
	status           string // pending, running, success, error, interrupted
	strategy         string
	metadata         map[string]any
	err              string
	in               agent.Input
	config           map[string]any
	limit            int
	// prev is the run this one waits for (the thread's runs go one at a time).
	prev *run
	// rollback restores the thread to before the runs this one replaces.
	rollback []*run
	// before is the thread's checkpoint when the run started.
	before  *agent.Checkpoint
	started bool
	ctx     context.Context
	cancel  context.CancelFunc
	// cancelled says the run was asked to stop; it ends "interrupted".
	cancelled bool
	// saved says the run checkpointed its thread at least once.
	saved    bool
	finished bool
	done     chan struct{}
	// frames are the stream events so far; notify is closed (and
	// replaced) whenever one is added.
	frames []frame
	notify chan struct{}
	final  map[string]any
}

// frame is one server-sent event.
type frame struct {
	event string
	data  []byte
}

// cancelLocked asks the run to stop; s.mu held.
func (r *run) cancelLocked() {
	if r.finished {
		return
	}
	r.cancelled = true
	r.cancel()
}

// push adds a stream event; s.mu held.
func (r *run) push(event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"error": "EncodeError", "message": err.Error()})
		event = "error"
	}
	r.frames = append(r.frames, frame{event: event, data: data})
	close(r.notify)
	r.notify = make(chan struct{})
}

func (r *run) json() map[string]any {
	out := map[string]any{
		"run_id": r.id, "thread_id": r.thread.id, "assistant_id": r.graph.assistantID,
		"created_at": stampOf(r.created), "updated_at": stampOf(r.updated),
		"status": r.status, "metadata": r.metadata, "multitask_strategy": r.strategy, "kwargs": map[string]any{},
	}
	if r.err != "" {
		out["error"] = r.err
	}
	return out
}

// runCreate is the body of a run request.
type runCreate struct {
	AssistantID string          `json:"assistant_id"`
	Input       json.RawMessage `json:"input"`
	Command     *struct {
		Resume json.RawMessage `json:"resume"`
		Goto   json.RawMessage `json:"goto"`
		Update json.RawMessage `json:"update"`
	} `json:"command"`
	Metadata map[string]any `json:"metadata"`
	Config   *struct {
		Configurable   map[string]any `json:"configurable"`
		RecursionLimit int            `json:"recursion_limit"`
	} `json:"config"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	IfNotExists       string          `json:"if_not_exists"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
}

type runMode int

const (
	modeBackground runMode = iota
	modeWait
	modeStream
)

// streamModes are the modes served; messages-tuple is sent as messages.
var streamModes = map[string]string{"values": "values", "updates": "updates", "custom": "custom", "messages": "messages", "messages-tuple": "messages"}

func parseModes(raw json.RawMessage) (map[string]bool, *httpError) {
	var list []string
	if len(raw) > 0 && string(raw) != "null" {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			list = []string{one}
		} else if err := json.Unmarshal(raw, &list); err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, "stream_mode: a mode or a list of modes: %v", err)
		}
	}
	if len(list) == 0 {
		list = []string{"values"}
	}
	out := map[string]bool{}
	for _, m := range list {
		ev, ok := streamModes[m]
		if !ok {
			return nil, errorf(http.StatusUnprocessableEntity, "stream_mode %q is not served (values, updates, custom, messages, messages-tuple)", m)
		}
		out[ev] = true
	}
	return out, nil
}

func (s *Server) runOn(mode runMode) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		var body runCreate
		if e := decode(req, &body); e != nil {
			writeErr(w, e)
			return
		}
		modes, e := parseModes(body.StreamMode)
		if e != nil {
			writeErr(w, e)
			return
		}
		r, e := s.createRun(req.Context(), req.PathValue("thread_id"), &body)
		if e != nil {
			writeErr(w, e)
			return
		}
		w.Header().Set("Content-Location", "/threads/"+r.thread.id+"/runs/"+r.id)
		switch mode {
		case modeBackground:
			s.mu.Lock()
			out := r.json()
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, out)
		case modeWait:
			s.writeFinal(w, req, r)
		case modeStream:
			s.stream(w, req, r, modes)
		}
	}
}

// createRun validates a run request and starts the run.
func (s *Server) createRun(ctx context.Context, threadID string, body *runCreate) (*run, *httpError) {
	if body.AssistantID == "" {
		return nil, errorf(http.StatusUnprocessableEntity, "assistant_id is required")
	}
	if len(body.InterruptBefore) > 0 && string(body.InterruptBefore) != "null" || len(body.InterruptAfter) > 0 && string(body.InterruptAfter) != "null" {
		return nil, errorf(http.StatusUnprocessableEntity, "interrupt_before and interrupt_after are not served: the agent's own interrupts (interrupt_on, permissions) pause it")
	}
	in, err := decodeInput(body.Input)
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	resume := body.Command != nil && len(body.Command.Resume) > 0 && string(body.Command.Resume) != "null"
	if body.Command != nil && (len(body.Command.Goto) > 0 && string(body.Command.Goto) != "null" || len(body.Command.Update) > 0 && string(body.Command.Update) != "null") {
		return nil, errorf(http.StatusUnprocessableEntity, "command: only resume is served (not goto or update)")
	}
	if resume && (len(in.Messages) > 0 || len(in.Files) > 0 || len(in.Values) > 0) {
		return nil, errorf(http.StatusUnprocessableEntity, "a run resumes (command.resume) or takes input, not both")
	}
	strategy := body.MultitaskStrategy
	switch strategy {
	case "":
		strategy = "reject"
	case "reject", "interrupt", "rollback", "enqueue":
	default:
		return nil, errorf(http.StatusUnprocessableEntity, "multitask_strategy %q is not one of reject, interrupt, rollback, enqueue", strategy)
	}
	var cp *agent.Checkpoint
	if resume && threadID != "" {
		var e *httpError
		if cp, e = s.checkpoint(ctx, threadID); e != nil {
			return nil, e
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errorf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	g, e := s.graphFor(body.AssistantID)
	if e != nil {
		return nil, e
	}
	var t *thread
	switch {
	case threadID == "":
		// A stateless run gets a thread of its own.
		if resume {
			return nil, errorf(http.StatusUnprocessableEntity, "a run without a thread has nothing to resume")
		}
		t = s.newThread("", nil)
	case s.threads[threadID] != nil:
		t = s.threads[threadID]
	case body.IfNotExists == "create":
		t = s.newThread(threadID, nil)
	default:
		return nil, errorf(http.StatusNotFound, "Thread with ID %s not found", threadID)
	}
	busy := t.busy()
	if busy && strategy == "reject" {
		return nil, errorf(http.StatusConflict, "Thread %s is already running a task. Wait for it to finish or choose a different multitask strategy.", t.id)
	}
	if resume && !busy && (cp == nil || len(cp.Interrupts) == 0) {
		return nil, errorf(http.StatusConflict, "Thread %s has no pending interrupt to resume (it was resumed already, or never paused)", t.id)
	}
	if resume {
		in.Resume = resumeValue(body.Command.Resume, cp)
	}
	now := s.now()
	r := &run{
		id: s.newID("run"), thread: t, graph: g, created: now, updated: now, status: "pending", strategy: strategy,
		metadata: body.Metadata, in: in, prev: t.last(), done: make(chan struct{}), notify: make(chan struct{}),
	}
	if r.metadata == nil {
		r.metadata = map[string]any{}
	}
	if !busy {
		// It starts at once: "pending" is for a run that waits for the
		// thread's earlier runs, so a status read right after the create
		// does not depend on when the goroutine is scheduled.
		r.status = "running"
	}
	if body.Config != nil {
		r.config, r.limit = body.Config.Configurable, body.Config.RecursionLimit
	}
	if busy && (strategy == "interrupt" || strategy == "rollback") {
		for _, old := range t.runs {
			if !old.finished {
				old.cancelLocked()
				if strategy == "rollback" {
					r.rollback = append(r.rollback, old)
				}
			}
		}
	}
	r.ctx, r.cancel = context.WithCancel(s.ctx)
	t.runs = append(t.runs, r)
	t.graph, t.updated = g, now
	s.wg.Add(1)
	s.active++
	go s.execute(r)
	return r, nil
}

// resumeValue is the resume answer: a map keyed by the pending interrupts'
// ids answers each, anything else answers the one pending interrupt.
func resumeValue(raw json.RawMessage, cp *agent.Checkpoint) any {
	var m map[string]json.RawMessage
	if cp != nil && len(cp.Interrupts) > 0 && json.Unmarshal(raw, &m) == nil && len(m) == len(cp.Interrupts) {
		rm := agent.ResumeMap{}
		for _, in := range cp.Interrupts {
			v, ok := m[in.ID]
			if !ok {
				return raw
			}
			rm[in.ID] = v
		}
		return rm
	}
	return raw
}

// execute runs r once the thread's earlier runs have stopped.
func (s *Server) execute(r *run) {
	defer s.wg.Done()
	defer s.ended()
	if r.prev != nil {
		<-r.prev.done
	}
	if len(r.rollback) > 0 {
		s.restore(r)
	}
	s.mu.Lock()
	if r.ctx.Err() != nil {
		s.mu.Unlock()
		s.finish(r, nil, r.ctx.Err())
		return
	}
	r.status, r.updated = "running", s.now()
	s.mu.Unlock()

	before, err := s.cp.Get(r.ctx, r.thread.id)
	if err != nil {
		s.finish(r, nil, fmt.Errorf("load thread %s: %w", r.thread.id, err))
		return
	}
	s.mu.Lock()
	r.before, r.started = before, true
	r.push("metadata", map[string]any{"run_id": r.id, "attempt": 1})
	if r.in.Resume == nil && len(r.thread.carry) > 0 {
		r.in = carried(r.thread.carry, r.in)
		r.thread.carry = nil
	}
	s.mu.Unlock()

	root := r.graph.agent.Name()
	opts := []agent.Option{
		agent.WithThread(r.thread.id),
		agent.WithCheckpointer(&publisher{Checkpointer: s.cp, s: s, r: r}),
		agent.WithEvents(func(ev agent.Event) { s.onEvent(r, root, ev) }),
	}
	if s.opts.Clock != nil {
		opts = append(opts, agent.WithClock(s.opts.Clock))
	}
	for k, v := range r.config {
		opts = append(opts, agent.WithConfig(k, v))
	}
	if r.limit > 0 {
		opts = append(opts, agent.WithRecursionLimit(r.limit))
	}
	opts = append(opts, s.opts.RunOptions...)
	res, err := r.graph.agent.Invoke(r.ctx, r.in, opts...)
	s.finish(r, res, err)
}

// restore puts the thread back to before the runs r rolls back, and
// forgets them, as the rollback strategy does.
func (s *Server) restore(r *run) {
	var before *agent.Checkpoint
	started := false
	for _, old := range r.rollback {
		s.mu.Lock()
		b, ran := old.before, old.started
		s.mu.Unlock()
		if ran {
			before, started = b, true
			break
		}
	}
	if started {
		if before == nil {
			before = &agent.Checkpoint{State: &agent.State{}}
		}
		_ = s.cp.Put(s.ctx, r.thread.id, before)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.thread.carry = nil
	keep := r.thread.runs[:0]
	for _, x := range r.thread.runs {
		dropped := false
		for _, old := range r.rollback {
			dropped = dropped || x == old
		}
		if !dropped {
			keep = append(keep, x)
		}
	}
	r.thread.runs = keep
}

// finish records how r ended and wakes whoever waits on it.
func (s *Server) finish(r *run, res *agent.Result, err error) {
	var cp *agent.Checkpoint
	if err == nil {
		cp, _ = s.cp.Get(s.ctx, r.thread.id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := r.thread
	switch {
	case err == nil:
		r.status = "success"
		t.status = "idle"
		var st *agent.State
		ints := res.Interrupts
		if cp != nil {
			st = cp.State
		} else {
			st = res.State
		}
		if len(ints) > 0 {
			t.status = "interrupted"
		}
		r.final = values(st, r.graph.private, ints)
		if data, _ := json.Marshal(r.final); !r.lastValues(data) {
			r.push("values", r.final)
		}
	case r.cancelled && (errors.Is(err, context.Canceled) || r.ctx.Err() != nil):
		r.status = "interrupted"
		t.status = "idle"
		if !r.saved && r.in.Resume == nil {
			// The agent saves a thread after its first step; a run stopped
			// before that would lose its input, which LangGraph keeps.
			t.carry = append(t.carry, r.in)
		}
	case r.ctx.Err() != nil:
		// The server is shutting down.
		r.status, r.err = "interrupted", "the server shut down before the run finished"
		t.status = "idle"
	default:
		r.status, r.err = "error", err.Error()
		t.status = "error"
		r.push("error", map[string]string{"error": errorName(err), "message": err.Error()})
	}
	r.updated, t.updated = s.now(), s.now()
	r.finished = true
	r.cancel()
	close(r.done)
	close(r.notify)
	r.notify = make(chan struct{})
}

func errorName(err error) string {
	var rl *agent.RecursionLimitError
	if errors.As(err, &rl) {
		return "GraphRecursionError"
	}
	return "RunError"
}

// lastValues reports whether the last values frame holds data; s.mu held.
func (r *run) lastValues(data []byte) bool {
	for i := len(r.frames) - 1; i >= 0; i-- {
		if r.frames[i].event == "values" {
			return bytes.Equal(r.frames[i].data, data)
		}
	}
	return false
}

// onEvent turns the root agent's events into stream frames (subagents'
// stay inside, as LangGraph streams subgraphs only when asked).
func (s *Server) onEvent(r *run, root string, ev agent.Event) {
	if ev.Agent != "" && ev.Agent != root {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Type {
	case agent.EventUpdate:
		r.push("updates", map[string]any{ev.Node: updateOut(ev.Update)})
	case agent.EventModelEnd:
		if ev.Response != nil {
			msg := toLC(ev.Response.Message)
			r.push("updates", map[string]any{"model": map[string]any{"messages": []lcMessage{msg}}})
			r.push("messages", []any{msg, map[string]any{"langgraph_node": "model", "langgraph_step": ev.Step}})
		}
	case agent.EventToolEnd:
		if ev.ToolResult != nil {
			msg := toLC(*ev.ToolResult)
			r.push("updates", map[string]any{"tools": map[string]any{"messages": []lcMessage{msg}}})
			r.push("messages", []any{msg, map[string]any{"langgraph_node": "tools", "langgraph_step": ev.Step}})
		}
	case agent.EventCustom:
		r.push("custom", ev.Payload)
	}
}

// publisher is the run's checkpointer: every save of the run's thread is
// also a values event, as LangGraph streams values after each step.
type publisher struct {
	agent.Checkpointer
	s *Server
	r *run
}

func (p *publisher) Put(ctx context.Context, thread string, cp *agent.Checkpoint) error {
	if err := p.Checkpointer.Put(ctx, thread, cp); err != nil {
		return err
	}
	if thread == p.r.thread.id {
		v := values(cp.State, p.r.graph.private, cp.Interrupts)
		p.s.mu.Lock()
		p.r.saved = true
		p.r.push("values", v)
		p.s.mu.Unlock()
	}
	return nil
}

// run finds a thread's run; s.mu held.
func (s *Server) run(threadID, runID string) (*run, *httpError) {
	t, e := s.thread(threadID)
	if e != nil {
		return nil, e
	}
	for _, r := range t.runs {
		if r.id == runID {
			return r, nil
		}
	}
	return nil, errorf(http.StatusNotFound, "Run %s not found on thread %s", runID, threadID)
}

func (s *Server) getRun(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, e := s.run(req.PathValue("thread_id"), req.PathValue("run_id"))
	if e != nil {
		writeErr(w, e)
		return
	}
	writeJSON(w, http.StatusOK, r.json())
}

func (s *Server) listRuns(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	offset, _ := strconv.Atoi(q.Get("offset"))
	status := q.Get("status")
	s.mu.Lock()
	defer s.mu.Unlock()
	t, e := s.thread(req.PathValue("thread_id"))
	if e != nil {
		writeErr(w, e)
		return
	}
	var out []map[string]any
	for i := len(t.runs) - 1; i >= 0; i-- {
		if status == "" || t.runs[i].status == status {
			out = append(out, t.runs[i].json())
		}
	}
	writeJSON(w, http.StatusOK, page(out, offset, limit))
}

func (s *Server) deleteRun(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, e := s.run(req.PathValue("thread_id"), req.PathValue("run_id"))
	if e != nil {
		writeErr(w, e)
		return
	}
	if !r.finished {
		writeErr(w, errorf(http.StatusConflict, "Run %s is %s; cancel it before deleting it", r.id, r.status))
		return
	}
	t := r.thread
	for i, x := range t.runs {
		if x == r {
			t.runs = append(t.runs[:i:i], t.runs[i+1:]...)
			break
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) cancelRun(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	switch q.Get("action") {
	case "", "interrupt":
	case "rollback":
		writeErr(w, errorf(http.StatusUnprocessableEntity, "cancel action rollback is not served; cancel with action=interrupt"))
		return
	default:
		writeErr(w, errorf(http.StatusUnprocessableEntity, "cancel action %q is not one of interrupt, rollback", q.Get("action")))
		return
	}
	s.mu.Lock()
	r, e := s.run(req.PathValue("thread_id"), req.PathValue("run_id"))
	if e == nil && r.finished {
		e = errorf(http.StatusConflict, "Run %s has already finished (%s); only a pending or running run can be cancelled", r.id, r.status)
	}
	if e != nil {
		s.mu.Unlock()
		writeErr(w, e)
		return
	}
	r.cancelLocked()
	s.mu.Unlock()
	if wait, _ := strconv.ParseBool(q.Get("wait")); wait {
		select {
		case <-r.done:
		case <-req.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) joinRun(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	r, e := s.run(req.PathValue("thread_id"), req.PathValue("run_id"))
	s.mu.Unlock()
	if e != nil {
		writeErr(w, e)
		return
	}
	s.writeFinal(w, req, r)
}

// writeFinal waits for r and writes the thread's values (with
// __interrupt__ when it paused), or the error it ended with.
func (s *Server) writeFinal(w http.ResponseWriter, req *http.Request, r *run) {
	select {
	case <-r.done:
	case <-req.Context().Done():
		return
	}
	s.mu.Lock()
	status, msg, final := r.status, r.err, r.final
	s.mu.Unlock()
	switch status {
	case "success":
		writeJSON(w, http.StatusOK, final)
	case "error":
		writeJSON(w, http.StatusOK, map[string]string{"__error__": msg, "error": "RunError", "message": msg})
	default:
		cp, e := s.checkpoint(req.Context(), r.thread.id)
		if e != nil {
			writeErr(w, e)
			return
		}
		var st *agent.State
		if cp != nil {
			st = cp.State
		}
		writeJSON(w, http.StatusOK, values(st, r.graph.private, nil))
	}
}

func (s *Server) joinStream(w http.ResponseWriter, req *http.Request) {
	modes, e := parseModes(json.RawMessage(strconv.Quote(orDefault(req.URL.Query().Get("stream_mode"), "values"))))
	if e != nil {
		writeErr(w, e)
		return
	}
	s.mu.Lock()
	r, e := s.run(req.PathValue("thread_id"), req.PathValue("run_id"))
	s.mu.Unlock()
	if e != nil {
		writeErr(w, e)
		return
	}
	s.stream(w, req, r, modes)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// stream writes r's events as server-sent events until it finishes: the
// metadata event first, then the events of the modes asked for, errors
// always.
func (s *Server) stream(w http.ResponseWriter, req *http.Request, r *run, modes map[string]bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	next := 0
	for {
		s.mu.Lock()
		frames, notify, finished := r.frames[next:], r.notify, r.finished
		next = len(r.frames)
		s.mu.Unlock()
		for _, f := range frames {
			if f.event == "metadata" || f.event == "error" || modes[f.event] {
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", f.event, f.data)
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if finished {
			return
		}
		select {
		case <-notify:
		case <-req.Context().Done():
			return
		}
	}
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return reflect.DeepEqual(a, b)
	}
	return bytes.Equal(ja, jb)
}

func itoa(n int) string { return strconv.Itoa(n) }

// carried prepends the inputs of cancelled runs that never reached a
// checkpoint to the next run's input.
func carried(carry []agent.Input, in agent.Input) agent.Input {
	out := agent.Input{}
	for _, c := range append(carry, in) {
		out.Messages = append(out.Messages, c.Messages...)
		for p, f := range c.Files {
			if out.Files == nil {
				out.Files = map[string]agent.FileData{}
			}
			out.Files[p] = f
		}
		for k, v := range c.Values {
			if out.Values == nil {
				out.Values = map[string]json.RawMessage{}
			}
			out.Values[k] = v
		}
	}
	return out
}
