package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dageval/dageval/harness/llm"
)

// run is the per-invocation context shared by hooks and tools.
type run struct {
	thread  string
	emitter func(Event)
	clock   func() time.Time
	config  map[string]any
	resume  map[string]json.RawMessage // interrupt id → resume value
	path    string                     // agent path for events, e.g. "main/task:researcher"
	lane    string                     // replay lane; the path unless set
	cp      Checkpointer
	step    atomic.Int64 // steps taken so far, stamped on custom events
	// tokenStream says whether model calls stream; nested runs inherit it.
	tokenStream bool

	memoMu sync.Mutex
	memos  map[any]any // see RunMemo
}

type runKey struct{}

// slot identifies the hook or tool call that is currently executing, so an
// interrupt raised there can be matched to its resume value.
type slot struct {
	// The slot's id is prefix+id: a tool call's is "tools:" and its call
	// id, joined only when an interrupt needs it.
	prefix, id string
	count      int
	mu         sync.Mutex
}

type slotKey struct{}

// toolRun is the per-tool-call context.
type toolRun struct {
	call    llm.ToolCall
	base    *State
	keys    map[string]StateKey
	mu      sync.Mutex
	updates []*Update
	// first backs updates while a call has made one update, as most do.
	first [1]*Update
	// consumed counts the updates already folded into the tool's response.
	consumed int
	view     *State
	events   []Event
	// resp is the response of the call's first run (see execute).
	resp     ToolResponse
	answered bool
}

type toolKey struct{}

func runFrom(ctx context.Context) *run {
	r, _ := ctx.Value(runKey{}).(*run)
	return r
}

// ThreadID returns the thread of the current run, or "" outside a run or without a thread.
func ThreadID(ctx context.Context) string {
	if r := runFrom(ctx); r != nil {
		return r.thread
	}
	return ""
}

// AgentPath names the agent that is running, e.g. "main" or "main/task:researcher".
func AgentPath(ctx context.Context) string {
	if r := runFrom(ctx); r != nil {
		return r.path
	}
	return ""
}

// Lane identifies the run for ordered replay of its model calls: the agent
// path, refined with the tool-call ids of the task calls that started it, so
// two parallel runs of the same subagent never share a lane.
func Lane(ctx context.Context) string {
	if r := runFrom(ctx); r != nil {
		if r.lane != "" {
			return r.lane
		}
		return r.path
	}
	return ""
}

// Now returns the run's clock time (time.Now unless the run set a clock), so
// that replayed runs can stamp files deterministically.
func Now(ctx context.Context) time.Time {
	if r := runFrom(ctx); r != nil && r.clock != nil {
		return r.clock()
	}
	return time.Now()
}

// Configurable returns a per-run configuration value set with WithConfig.
func Configurable(ctx context.Context, key string) (any, bool) {
	if r := runFrom(ctx); r != nil {
		v, ok := r.config[key]
		return v, ok
	}
	return nil, false
}

// RunMemo returns the value stored under key for the running invocation,
// storing init() there on first use. Middleware keep in it what they
// computed for the messages of a run, so that the next model call of the
// run extends that work instead of redoing it for the whole history.
// Outside a run it returns init() without storing it. The hooks, model
// calls and tools of a run share the value: guard it if they may use it at
// the same time.
func RunMemo[T any](ctx context.Context, key any, init func() T) T {
	r := runFrom(ctx)
	if r == nil {
		return init()
	}
	r.memoMu.Lock()
	defer r.memoMu.Unlock()
	if v, ok := r.memos[key].(T); ok {
		return v
	}
	v := init()
	if r.memos == nil {
		r.memos = map[any]any{}
	}
	r.memos[key] = v
	return v
}

// CheckpointerFrom returns the checkpointer of the current run, which nested
// agents (subagents) use to persist their own threads.
func CheckpointerFrom(ctx context.Context) Checkpointer {
	if r := runFrom(ctx); r != nil {
		return r.cp
	}
	return nil
}

// Emit sends a custom event to the run's stream. Inside a tool call the event
// is buffered and delivered in tool-call order, so the stream stays
// deterministic when tools run in parallel.
func Emit(ctx context.Context, name string, payload any) {
	raw, err := json.Marshal(payload)
	if err != nil {
		raw, _ = json.Marshal(fmt.Sprintf("unencodable event payload: %v", err))
	}
	EmitEvent(ctx, Event{Type: EventCustom, Name: name, Payload: raw})
}

// EmitEvent sends an event to the run's stream, filling in the agent path when
// empty. Nested agents use it to forward their events to the parent stream.
func EmitEvent(ctx context.Context, ev Event) {
	r := runFrom(ctx)
	if r == nil {
		return
	}
	if ev.Agent == "" {
		ev.Agent = r.path
	}
	if ev.Step == 0 && ev.Agent == r.path {
		ev.Step = int(r.step.Load())
	}
	if tr, ok := ctx.Value(toolKey{}).(*toolRun); ok && tr != nil {
		tr.mu.Lock()
		tr.events = append(tr.events, ev)
		tr.mu.Unlock()
		return
	}
	r.emit(ev)
}

func (r *run) emit(ev Event) {
	if r.emitter != nil {
		r.emitter(ev)
	}
}

// ToolCall returns the tool call being executed, inside a tool.
func ToolCall(ctx context.Context) (llm.ToolCall, bool) {
	if tr, ok := ctx.Value(toolKey{}).(*toolRun); ok && tr != nil {
		return tr.call, true
	}
	return llm.ToolCall{}, false
}

// ToolState returns the state as a tool sees it: the state at the start of the
// tool step plus every update this tool call has made so far (read your own
// writes). Outside a tool call it returns nil.
func ToolState(ctx context.Context) *State {
	tr, ok := ctx.Value(toolKey{}).(*toolRun)
	if !ok || tr == nil {
		return nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.view == nil {
		v := tr.base
		for _, u := range tr.updates {
			if nv, err := apply(v, u, tr.keys, nil); err == nil {
				v = nv
			}
		}
		tr.view = v
	}
	return tr.view
}

// ErrNoToolCall is returned by UpdateState outside a tool call.
var ErrNoToolCall = errors.New("agent: state updates from tools are only possible inside a tool call")

// UpdateState records a state change made by the running tool (for example a
// file written to the State backend). Updates are applied after the tool
// returns, in tool-call order.
func UpdateState(ctx context.Context, u *Update) error {
	tr, ok := ctx.Value(toolKey{}).(*toolRun)
	if !ok || tr == nil {
		return ErrNoToolCall
	}
	if u.IsEmpty() {
		return nil
	}
	tr.mu.Lock()
	if tr.updates == nil {
		tr.updates = tr.first[:0]
	}
	tr.updates = append(tr.updates, u)
	tr.view = nil
	tr.mu.Unlock()
	return nil
}

// InterruptError is returned by Interrupt when the run must pause. Hooks and
// tools return it unchanged; the runtime saves a checkpoint and hands the
// payload to the caller.
type InterruptError struct {
	ID    string
	Value json.RawMessage
}

func (e *InterruptError) Error() string { return "agent: interrupted at " + e.ID }

// Interrupt pauses the run with payload for a human (or the caller) to answer.
// The first time, it returns an *InterruptError that the hook or tool must
// return. When the caller resumes the thread, the same hook or tool runs again
// and Interrupt returns the caller's answer instead. A hook or tool that
// interrupts several times gets, on each re-run, the answers given so far in
// the order it asked for them.
func Interrupt(ctx context.Context, payload any) (json.RawMessage, error) {
	sl, _ := ctx.Value(slotKey{}).(*slot)
	if sl == nil {
		return nil, errors.New("agent: Interrupt called outside a running hook or tool")
	}
	sl.mu.Lock()
	key := strconv.Itoa(sl.count)
	sl.count++
	sl.mu.Unlock()
	return InterruptKey(ctx, key, payload)
}

// InterruptKey is Interrupt with a caller-chosen key instead of a call
// counter. A tool that relays the interrupts of a nested agent (the task tool
// relaying a subagent's human review) uses the nested pause's identity as the
// key, so that each pause is answered exactly once however often the tool
// re-runs.
func InterruptKey(ctx context.Context, key string, payload any) (json.RawMessage, error) {
	r := runFrom(ctx)
	sl, _ := ctx.Value(slotKey{}).(*slot)
	if r == nil || sl == nil {
		return nil, errors.New("agent: Interrupt called outside a running hook or tool")
	}
	id := sl.prefix + sl.id + "#" + key
	if v, ok := r.resume[id]; ok {
		return v, nil
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("agent: interrupt payload: %w", err)
	}
	return nil, &InterruptError{ID: id, Value: raw}
}

// slotCtx carries the slot of a hook or of the model call: one allocation
// per hook instead of a value context plus its slot, on the path every
// step takes several times.
type slotCtx struct {
	context.Context
	slot slot
}

func (c *slotCtx) Value(key any) any {
	if key == (slotKey{}) {
		return &c.slot
	}
	return c.Context.Value(key)
}

// toolCtx is slotCtx for a tool call, which also carries the call's toolRun
// and the request the tool chain starts from: one allocation for the three.
type toolCtx struct {
	context.Context
	slot slot
	tr   toolRun
	req  ToolRequest
}

func (c *toolCtx) Value(key any) any {
	switch key {
	case slotKey{}:
		return &c.slot
	case toolKey{}:
		return &c.tr
	}
	return c.Context.Value(key)
}
