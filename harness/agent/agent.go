package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// DefaultRecursionLimit bounds the number of steps (model calls plus tool
// steps) of one invocation unless Config or WithRecursionLimit says otherwise.
const DefaultRecursionLimit = 25

// Config describes an agent.
type Config struct {
	// Name labels the agent in events ("main" when empty).
	Name string
	// Model is called at every model step. Required.
	Model llm.ChatModel
	// System is the system prompt, as content blocks.
	System []llm.Block
	// Tools are the caller's tools; middleware tools come first.
	Tools []tool.Tool
	// Middleware, in stack order.
	Middleware []Middleware
	// ResponseFormat asks for a structured final answer.
	ResponseFormat *ResponseFormat
	// Checkpointer persists threads; required for interrupts and resume.
	Checkpointer Checkpointer
	// RecursionLimit bounds the steps of one invocation (DefaultRecursionLimit when 0).
	RecursionLimit int
	// MaxTokens, Temperature and Seed are sent with every model call.
	MaxTokens   int
	Temperature *float64
	Seed        *int64
}

// Strategy says how a structured response is obtained.
type Strategy string

// Structured output strategies.
const (
	// StrategyTool offers the schema as a tool the model calls to answer.
	StrategyTool Strategy = "tool"
	// StrategyProvider asks the provider for JSON output matching the schema.
	StrategyProvider Strategy = "provider"
)

// ResponseFormat describes a structured final answer.
type ResponseFormat struct {
	// Name of the answer tool (StrategyTool) or schema; "structured_response" when empty.
	Name        string
	Description string
	Schema      json.RawMessage
	Strategy    Strategy
}

// Agent is a configured model→tools loop. It is safe for concurrent use:
// each invocation keeps its own state.
type Agent struct {
	cfg      Config
	name     string
	tools    map[string]tool.Tool
	specs    []llm.ToolSpec
	keys     map[string]StateKey
	private  map[string]bool
	format   *ResponseFormat
	schema   *tool.Schema
	limit    int
	mwNames  []string
	formatTS llm.ToolSpec
	// nodes names each middleware's hook per phase, as events and errors
	// report it ("before_model:FilesystemMiddleware"), by hookPhases index.
	nodes [len(hookPhases)][]string
	// toolChain is every middleware's WrapToolCall around the tool itself.
	toolChain ToolHandler
}

// Errors returned by New and Invoke.
var (
	ErrNoModel         = errors.New("agent: no model configured")
	ErrNothingToResume = errors.New("agent: nothing to resume: the thread has no pending interrupt")
	ErrNoCheckpointer  = errors.New("agent: interrupts need a checkpointer and a thread id")
	ErrResumeWithInput = errors.New("agent: a resume cannot carry new messages; resume first, then send the next input")
)

// RecursionLimitError reports a run that did not finish within its step budget.
type RecursionLimitError struct{ Limit int }

func (e *RecursionLimitError) Error() string {
	return fmt.Sprintf("agent: recursion limit of %d steps reached before the agent finished; raise it with WithRecursionLimit or Config.RecursionLimit", e.Limit)
}

// New validates the configuration and returns an agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, ErrNoModel
	}
	a := &Agent{
		cfg:     cfg,
		name:    cfg.Name,
		keys:    map[string]StateKey{},
		private: map[string]bool{},
		limit:   cfg.RecursionLimit,
	}
	if a.name == "" {
		a.name = "main"
	}
	if a.limit <= 0 {
		a.limit = DefaultRecursionLimit
	}
	// Sized up front: harness.New builds several agents per assembly.
	a.mwNames = make([]string, 0, len(cfg.Middleware))
	all := make([]tool.Tool, 0, len(cfg.Tools)+2*len(cfg.Middleware))
	for _, mw := range cfg.Middleware {
		if mw == nil {
			return nil, errors.New("agent: nil middleware in stack")
		}
		name := mw.Name()
		if slices.Contains(a.mwNames, name) {
			return nil, fmt.Errorf("agent: middleware %q appears twice in the stack; names must be unique", name)
		}
		a.mwNames = append(a.mwNames, name)
		all = append(all, mw.Tools()...)
		for _, k := range mw.StateKeys() {
			a.keys[k.Name] = k
			if k.Private {
				a.private[k.Name] = true
			}
		}
	}
	a.nameNodes()
	all = append(all, cfg.Tools...)
	a.tools = make(map[string]tool.Tool, len(all))
	a.specs = make([]llm.ToolSpec, 0, len(all))
	for _, t := range all {
		spec := t.Spec()
		if spec.Name == "" {
			return nil, errors.New("agent: a tool has an empty name")
		}
		if _, dup := a.tools[spec.Name]; dup {
			return nil, fmt.Errorf("agent: two tools are named %q", spec.Name)
		}
		a.tools[spec.Name] = t
		a.specs = append(a.specs, spec)
	}
	a.toolChain = a.executeTool
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		mw, next := cfg.Middleware[i], a.toolChain
		a.toolChain = func(ctx context.Context, req *ToolRequest) (*ToolResponse, error) {
			return mw.WrapToolCall(ctx, req, next)
		}
	}
	if cfg.ResponseFormat != nil {
		f := *cfg.ResponseFormat
		if f.Name == "" {
			f.Name = "structured_response"
		}
		if f.Strategy == "" {
			f.Strategy = StrategyTool
		}
		s, err := tool.ParseSchema(f.Schema)
		if err != nil {
			return nil, fmt.Errorf("agent: response format %s: %w", f.Name, err)
		}
		a.format, a.schema = &f, s
		if f.Strategy == StrategyTool {
			if _, dup := a.tools[f.Name]; dup {
				return nil, fmt.Errorf("agent: response format tool %q collides with a tool of the same name", f.Name)
			}
			desc := f.Description
			if desc == "" {
				desc = "Give your final answer by calling this tool with arguments that match its schema."
			}
			a.formatTS = llm.ToolSpec{Name: f.Name, Description: desc, Parameters: s.JSON()}
		}
	}
	return a, nil
}

// hookPhases are the phases whose hooks each middleware has, in the order
// of Agent.nodes.
var hookPhases = [...]Phase{PhaseBeforeAgent, PhaseBeforeModel, PhaseAfterModel, PhaseAfterAgent}

// nameNodes names the hooks of the middleware (a.mwNames) per phase. The
// names of a stack are the same in every agent built with it (harness.New
// builds several agents per assembly and an eval run one assembly per
// cell), and never change: agents with the same middleware share them.
func (a *Agent) nameNodes() {
	if len(a.mwNames) == 0 {
		return
	}
	key := stackKey(a.mwNames)
	hookNames.mu.RLock()
	e, ok := hookNames.m[key]
	hookNames.mu.RUnlock()
	if ok && slices.Equal(e.names, a.mwNames) {
		a.nodes = e.nodes
		return
	}
	e = &stackNodes{names: slices.Clone(a.mwNames), nodes: makeNodes(a.mwNames)}
	a.nodes = e.nodes
	hookNames.mu.Lock()
	defer hookNames.mu.Unlock()
	if hookNames.m == nil || len(hookNames.m) >= maxStacksNamed {
		// A process that builds ever new stacks names them afresh.
		hookNames.m = map[uint64]*stackNodes{}
	}
	hookNames.m[key] = e
}

// hookNames holds the node names of the stacks agents were built with,
// by a hash of their middleware names (stackKey).
var hookNames struct {
	mu sync.RWMutex
	m  map[uint64]*stackNodes
}

// maxStacksNamed bounds hookNames.
const maxStacksNamed = 256

type stackNodes struct {
	names []string
	nodes [len(hookPhases)][]string
}

var stackSeed = maphash.MakeSeed()

func stackKey(names []string) uint64 {
	var h maphash.Hash
	h.SetSeed(stackSeed)
	for _, name := range names {
		h.WriteString(name)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// makeNodes names the hooks of the middleware names per phase: all the
// names are cut from one string, with one slice of them.
func makeNodes(names []string) (nodes [len(hookPhases)][]string) {
	n := len(names)
	size := 0
	for _, ph := range hookPhases {
		for _, name := range names {
			size += len(ph) + 1 + len(name)
		}
	}
	var b strings.Builder
	b.Grow(size)
	for _, ph := range hookPhases {
		for _, name := range names {
			b.WriteString(string(ph))
			b.WriteByte(':')
			b.WriteString(name)
		}
	}
	text := b.String()
	all := make([]string, 0, len(hookPhases)*n)
	at := 0
	for _, ph := range hookPhases {
		for _, name := range names {
			end := at + len(ph) + 1 + len(name)
			all = append(all, text[at:end])
			at = end
		}
	}
	for i := range hookPhases {
		nodes[i] = all[i*n : (i+1)*n : (i+1)*n]
	}
	return nodes
}

// hookNodes is the node names of phase's hooks, by middleware index.
func (a *Agent) hookNodes(phase Phase) []string {
	for i, ph := range hookPhases {
		if ph == phase {
			return a.nodes[i]
		}
	}
	return nil
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.name }

// ToolSpecs returns the tools the model is offered before middleware filter them.
func (a *Agent) ToolSpecs() []llm.ToolSpec { return slices.Clone(a.specs) }

// Middleware returns the middleware names in stack order.
func (a *Agent) Middleware() []string { return slices.Clone(a.mwNames) }

// PrivateKeys returns the names of the private state keys, sorted.
func (a *Agent) PrivateKeys() []string {
	var ks []string
	for k := range a.private {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Config returns the agent's configuration.
func (a *Agent) Config() Config { return a.cfg }

// Input starts or continues a thread.
type Input struct {
	Messages []llm.Message
	Files    map[string]FileData
	Values   map[string]json.RawMessage
	// Resume answers the pending interrupt(s) of the thread: a single value
	// when one interrupt is pending, or a ResumeMap keyed by interrupt id.
	Resume any
}

// ResumeMap answers several pending interrupts at once.
type ResumeMap map[string]any

// Result is the outcome of an invocation.
type Result struct {
	// State is the final state without private keys.
	State *State
	// Interrupts is non-empty when the run paused; resume with Input.Resume.
	Interrupts []PendingInterrupt
	// Steps counts model calls and tool steps of this invocation.
	Steps int
	// Usage sums the token usage of this agent's own model calls.
	Usage llm.Usage
}

// Interrupted reports whether the run paused for an answer.
func (r *Result) Interrupted() bool { return len(r.Interrupts) > 0 }

// Text returns the agent's answer: the last non-empty assistant text.
func (r *Result) Text() string { return r.State.LastText() }

type options struct {
	thread      string
	limit       int
	events      func(Event)
	clock       func() time.Time
	config      map[string]any
	tokenStream *bool
	path        string
	lane        string
	cp          Checkpointer
}

// Option configures one invocation.
type Option func(*options)

// WithThread runs on the given thread: state is loaded from and saved to the
// checkpointer under that id.
func WithThread(id string) Option { return func(o *options) { o.thread = id } }

// WithRecursionLimit overrides the step budget of this invocation.
func WithRecursionLimit(n int) Option { return func(o *options) { o.limit = n } }

// WithEvents delivers the run's stream events to fn, synchronously and in order.
func WithEvents(fn func(Event)) Option { return func(o *options) { o.events = fn } }

// WithClock sets the clock hooks and tools read through Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithConfig sets a per-run configuration value read through Configurable.
func WithConfig(key string, value any) Option {
	return func(o *options) {
		if o.config == nil {
			o.config = map[string]any{}
		}
		o.config[key] = value
	}
}

// WithTokenStream streams model output as model_chunk events when the model
// supports it: the model is called through llm.StreamingModel.Stream, as
// Deep Agents apps call theirs. Nested agents (subagents) inherit the choice
// of the run they are called from unless they are given their own.
func WithTokenStream() Option { return WithTokenStreaming(true) }

// WithTokenStreaming says whether this invocation streams model output (see
// WithTokenStream); false keeps a nested agent, such as a grader, on plain
// calls inside a streaming run.
func WithTokenStreaming(on bool) Option { return func(o *options) { o.tokenStream = &on } }

// WithCheckpointer makes this invocation save and load its thread with cp
// instead of the configured checkpointer; nested agents (subagents) use it to
// share their parent's.
func WithCheckpointer(cp Checkpointer) Option { return func(o *options) { o.cp = cp } }

// WithLane sets the run's replay lane (see Lane); nested agents use it.
func WithLane(lane string) Option { return func(o *options) { o.lane = lane } }

// WithAgentPath sets the path events are labelled with; nested agents use it.
func WithAgentPath(path string) Option { return func(o *options) { o.path = path } }

// GetState returns the full state (private keys included) saved for a thread.
func (a *Agent) GetState(ctx context.Context, thread string) (*State, error) {
	if a.cfg.Checkpointer == nil {
		return nil, ErrNoCheckpointer
	}
	cp, err := a.cfg.Checkpointer.Get(ctx, thread)
	if err != nil || cp == nil {
		return nil, err
	}
	return cp.State, nil
}

// Invoke runs the agent until it finishes, pauses on an interrupt, fails, or
// ctx is cancelled (then it returns ctx.Err()).
func (a *Agent) Invoke(ctx context.Context, in Input, opts ...Option) (*Result, error) {
	o := options{limit: a.limit}
	for _, opt := range opts {
		opt(&o)
	}
	if o.path == "" {
		o.path = a.name
	}
	if o.cp == nil {
		o.cp = a.cfg.Checkpointer
	}
	r := &run{thread: o.thread, emitter: o.events, clock: o.clock, config: o.config, path: o.path, lane: o.lane, cp: o.cp}
	if o.tokenStream != nil {
		r.tokenStream = *o.tokenStream
	}
	if parent := runFrom(ctx); parent != nil {
		if r.clock == nil {
			r.clock = parent.clock
		}
		if o.tokenStream == nil {
			r.tokenStream = parent.tokenStream
		}
	}
	ctx = context.WithValue(ctx, runKey{}, r)
	// A nested agent (a subagent run from a parent's tool) must not see the
	// parent's tool call as its own.
	ctx = context.WithValue(ctx, toolKey{}, (*toolRun)(nil))
	ex := &exec{a: a, r: r, limit: o.limit, tokenStream: r.tokenStream, st: &State{}, pos: Position{Phase: PhaseBeforeAgent}}

	var cp *Checkpoint
	if o.thread != "" && r.cp != nil {
		var err error
		if cp, err = r.cp.Get(ctx, o.thread); err != nil {
			return nil, fmt.Errorf("agent: load thread %s: %w", o.thread, err)
		}
	}
	if cp != nil && cp.State != nil {
		ex.st = cp.State
	}
	if in.Resume != nil {
		if len(in.Messages) > 0 {
			return nil, ErrResumeWithInput
		}
		if cp == nil || len(cp.Interrupts) == 0 {
			return nil, ErrNothingToResume
		}
		resume, err := resumeValues(cp.Interrupts, in.Resume)
		if err != nil {
			return nil, err
		}
		for id, v := range cp.Resumed {
			if _, ok := resume[id]; !ok {
				resume[id] = v
			}
		}
		r.resume = resume
		ex.pos, ex.steps, ex.pendingTools = cp.Next, cp.Steps, cp.ToolResults
		r.step.Store(int64(ex.steps))
	} else {
		if cp != nil && len(cp.ToolResults) > 0 {
			// The caller abandons a paused tool step: the calls that had
			// finished did run, so their results and state changes stay.
			if err := ex.keepFinished(cp.ToolResults); err != nil {
				return nil, err
			}
		}
		u := &Update{Messages: in.Messages, Values: in.Values}
		if len(in.Files) > 0 {
			u.Files = make(map[string]*FileData, len(in.Files))
			for p, fd := range in.Files {
				u.Files[p] = &fd
			}
		}
		st, err := ex.apply(u)
		if err != nil {
			return nil, fmt.Errorf("agent: input: %w", err)
		}
		ex.st = st
	}
	defer ex.stopWorkers()
	return ex.loop(ctx)
}

// keepFinished applies the results of tool calls that finished before an
// interrupt, in call order.
func (ex *exec) keepFinished(done map[string]*ToolResponse) error {
	_, calls := ex.pendingCalls()
	for _, call := range calls {
		resp, ok := done[call.ID]
		if !ok || resp == nil {
			continue
		}
		u := resp.Update.Merge(&Update{Messages: []llm.Message{resp.Message}})
		u.JumpTo = JumpNone
		st, err := ex.apply(u)
		if err != nil {
			return fmt.Errorf("agent: tool %s: %w", call.Name, err)
		}
		ex.st = st
	}
	return nil
}

func resumeValues(pending []PendingInterrupt, v any) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if m, ok := v.(ResumeMap); ok {
		for _, in := range pending {
			val, ok := m[in.ID]
			if !ok {
				return nil, fmt.Errorf("agent: resume has no answer for interrupt %s", in.ID)
			}
			raw, err := json.Marshal(val)
			if err != nil {
				return nil, fmt.Errorf("agent: resume value for %s: %w", in.ID, err)
			}
			out[in.ID] = raw
		}
		return out, nil
	}
	if len(pending) != 1 {
		ids := make([]string, len(pending))
		for i, p := range pending {
			ids[i] = p.ID
		}
		return nil, fmt.Errorf("agent: %d interrupts are pending (%s); resume with a ResumeMap keyed by interrupt id", len(pending), strings.Join(ids, ", "))
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("agent: resume value: %w", err)
	}
	out[pending[0].ID] = raw
	return out, nil
}

// exec is the state of one invocation's loop.
type exec struct {
	a            *Agent
	r            *run
	st           *State
	pos          Position
	steps        int
	limit        int
	usage        llm.Usage
	tokenStream  bool
	pendingTools map[string]*ToolResponse
	hist         history
	ts           toolSteps
	// afterCtxs are the slot contexts of the coming after-model chain,
	// allocated with the before-model chain's and seen by no hook yet.
	afterCtxs []slotCtx
	chain     ModelHandler // every WrapModelCall around callModel
	// jobs hands the extra calls of a turn with several tool calls to
	// the invocation's workers (see runParallel); workers counts them.
	jobs    chan toolJob
	workers int
	wg      sync.WaitGroup // waits for the workers' jobs of a tool step
}

// apply applies u to the run's state, appending messages to its history.
func (ex *exec) apply(u *Update) (*State, error) { return apply(ex.st, u, ex.a.keys, &ex.hist) }

func (ex *exec) loop(ctx context.Context) (*Result, error) {
	a := ex.a
	n := len(a.cfg.Middleware)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		switch ex.pos.Phase {
		case PhaseBeforeAgent, PhaseBeforeModel, PhaseAfterModel, PhaseAfterAgent:
			phase := ex.pos.Phase
			jump, done, res, err := ex.hooks(ctx, phase, n)
			if err != nil || res != nil {
				return res, err
			}
			if !done {
				continue
			}
			ex.pos = ex.route(phase, jump)
		case PhaseModel:
			res, err := ex.model(ctx)
			if err != nil || res != nil {
				return res, err
			}
			ex.pos = Position{Phase: PhaseAfterModel}
		case PhaseTools:
			res, err := ex.toolStep(ctx)
			if err != nil || res != nil {
				return res, err
			}
			ex.pos = Position{Phase: PhaseBeforeModel}
			if ex.structuredDone() {
				ex.pos = Position{Phase: PhaseAfterAgent}
			}
		case PhaseDone:
			if err := ex.save(ctx, nil, nil); err != nil {
				return nil, err
			}
			return &Result{State: ex.st.Public(a.private), Steps: ex.steps, Usage: ex.usage}, nil
		default:
			return nil, fmt.Errorf("agent: unknown phase %q in checkpoint", ex.pos.Phase)
		}
	}
}

// route decides where the loop goes after a chain of hooks.
func (ex *exec) route(phase Phase, jump Jump) Position {
	switch phase {
	case PhaseBeforeAgent:
		if jump == JumpEnd {
			return Position{Phase: PhaseAfterAgent}
		}
		return Position{Phase: PhaseBeforeModel}
	case PhaseBeforeModel:
		switch jump {
		case JumpEnd:
			return Position{Phase: PhaseAfterAgent}
		case JumpTools:
			return Position{Phase: PhaseTools}
		}
		return Position{Phase: PhaseModel}
	case PhaseAfterModel:
		switch jump {
		case JumpEnd:
			return Position{Phase: PhaseAfterAgent}
		case JumpModel:
			return Position{Phase: PhaseBeforeModel}
		case JumpTools:
			return Position{Phase: PhaseTools}
		}
		if ex.structuredDone() {
			return Position{Phase: PhaseAfterAgent}
		}
		if ex.structuredRetry() {
			return Position{Phase: PhaseBeforeModel}
		}
		last, calls := ex.pendingCalls()
		if len(calls) > 0 {
			return Position{Phase: PhaseTools}
		}
		if last != nil && len(last.ToolCalls) > 0 {
			// Every call was answered already (e.g. rejected by a human):
			// let the model see the answers.
			return Position{Phase: PhaseBeforeModel}
		}
		return Position{Phase: PhaseAfterAgent}
	default: // PhaseAfterAgent
		if jump == JumpModel {
			return Position{Phase: PhaseBeforeModel}
		}
		return Position{Phase: PhaseDone}
	}
}

// hooks runs one phase's hook chain from ex.pos.Index. It returns done=true
// when the chain finished or jumped.
func (ex *exec) hooks(ctx context.Context, phase Phase, n int) (jump Jump, done bool, res *Result, err error) {
	mws, nodes := ex.a.cfg.Middleware, ex.a.hookNodes(phase)
	// One allocation for the slot contexts of the whole chain instead of
	// one per hook; each hook still gets a context of its own, which it
	// may keep.
	var ctxs []slotCtx
	if m := n - ex.pos.Index; m > 0 {
		switch {
		case phase == PhaseAfterModel && len(ex.afterCtxs) == m:
			ctxs = ex.afterCtxs
		case phase == PhaseBeforeModel && m == n:
			// The after-model chain's contexts come with these:
			// one allocation per model step for both chains.
			both := make([]slotCtx, 2*n)
			ctxs, ex.afterCtxs = both[:n:n], both[n:]
		default:
			ctxs = make([]slotCtx, m)
		}
		if phase == PhaseAfterModel {
			ex.afterCtxs = nil
		}
	}
	for k := ex.pos.Index; k < n; k++ {
		i := k
		if phase == PhaseAfterModel || phase == PhaseAfterAgent {
			i = n - 1 - k
		}
		mw := mws[i]
		var fn func(context.Context, *State) (*Update, error)
		switch phase {
		case PhaseBeforeAgent:
			fn = mw.BeforeAgent
		case PhaseBeforeModel:
			fn = mw.BeforeModel
		case PhaseAfterModel:
			fn = mw.AfterModel
		default:
			fn = mw.AfterAgent
		}
		node := nodes[i]
		hctx := &ctxs[k-ex.pos.Index]
		hctx.Context, hctx.slot.id = ctx, node
		u, herr := fn(hctx, ex.st)
		if herr != nil {
			ex.pos.Index = k
			if res, err := ex.interrupted(ctx, herr, nil); res != nil || err != nil {
				return "", false, res, err
			}
			return "", false, nil, fmt.Errorf("agent: %s: %w", node, herr)
		}
		if !u.IsEmpty() {
			st, aerr := ex.apply(u)
			if aerr != nil {
				return "", false, nil, fmt.Errorf("agent: %s: %w", node, aerr)
			}
			ex.st = st
			ex.r.emit(Event{Type: EventUpdate, Agent: ex.r.path, Step: ex.steps, Node: node, Update: u})
			if u.JumpTo != JumpNone {
				return u.JumpTo, true, nil, nil
			}
		}
	}
	return JumpNone, true, nil, nil
}

// interrupted turns an *InterruptError into a saved checkpoint and a paused
// result. It returns nils when err is not an interrupt.
func (ex *exec) interrupted(ctx context.Context, err error, done map[string]*ToolResponse, more ...PendingInterrupt) (*Result, error) {
	var ie *InterruptError
	if !errors.As(err, &ie) && len(more) == 0 {
		return nil, nil
	}
	var ints []PendingInterrupt
	if ie != nil {
		ints = append(ints, PendingInterrupt{ID: ie.ID, Value: ie.Value})
	}
	ints = append(ints, more...)
	if ex.r.thread == "" || ex.r.cp == nil {
		return nil, ErrNoCheckpointer
	}
	if serr := ex.save(ctx, ints, done); serr != nil {
		return nil, serr
	}
	ex.r.emit(Event{Type: EventInterrupt, Agent: ex.r.path, Step: ex.steps, Interrupts: ints})
	return &Result{State: ex.st.Public(ex.a.private), Interrupts: ints, Steps: ex.steps, Usage: ex.usage}, nil
}

func (ex *exec) save(ctx context.Context, ints []PendingInterrupt, done map[string]*ToolResponse) error {
	if ex.r.thread == "" || ex.r.cp == nil {
		return nil
	}
	cp := &Checkpoint{State: ex.st, Next: ex.pos, Steps: ex.steps, Interrupts: ints, ToolResults: done}
	if len(ints) > 0 {
		// Answers given so far stay available while the step is unfinished.
		cp.Resumed = ex.r.resume
	} else {
		ex.r.resume = nil
	}
	if err := ex.r.cp.Put(ctx, ex.r.thread, cp); err != nil {
		return fmt.Errorf("agent: save thread %s: %w", ex.r.thread, err)
	}
	return nil
}

func (ex *exec) step() error {
	if ex.steps >= ex.limit {
		return &RecursionLimitError{Limit: ex.limit}
	}
	ex.steps++
	ex.r.step.Store(int64(ex.steps))
	return nil
}

// model performs one model step.
func (ex *exec) model(ctx context.Context) (*Result, error) {
	if err := ex.step(); err != nil {
		return nil, err
	}
	a := ex.a
	ex.r.emit(Event{Type: EventModelStart, Agent: ex.r.path, Step: ex.steps})
	ms := &modelStep{
		req: ModelRequest{
			Request: llm.Request{
				System:      a.cfg.System,
				Messages:    ex.st.Messages,
				Tools:       a.specs,
				MaxTokens:   a.cfg.MaxTokens,
				Temperature: a.cfg.Temperature,
				Seed:        a.cfg.Seed,
			},
			Model: a.cfg.Model,
			State: ex.st,
		},
		ctx: slotCtx{Context: ctx, slot: slot{id: "model"}},
	}
	if ex.chain == nil {
		ex.chain = ex.modelChain()
	}
	resp, err := ex.chain(&ms.ctx, &ms.req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ex.pos = Position{Phase: PhaseModel}
		ex.steps--
		ex.r.step.Store(int64(ex.steps))
		if res, ierr := ex.interrupted(ctx, err, nil); res != nil || ierr != nil {
			return res, ierr
		}
		ex.steps++
		return nil, fmt.Errorf("agent: model call: %w", err)
	}
	if resp == nil || resp.Response == nil {
		return nil, errors.New("agent: model call returned no response")
	}
	msg := resp.Response.Message
	msg.Role = llm.RoleAssistant
	if msg.Usage == nil && !resp.Response.Usage.IsZero() {
		u := resp.Response.Usage
		msg.Usage = &u
	}
	ex.usage.Add(resp.Response.Usage)
	// The wrapper's update (e.g. a summarization event) lands before the
	// new message; jumps belong to hooks, not to model wrappers.
	ms.msg[0] = msg
	ms.u.Messages = ms.msg[:]
	u := &ms.u
	if sa := ex.structuredAnswer(msg); resp.Update != nil || !sa.IsEmpty() {
		u = resp.Update.Merge(u).Merge(sa)
	}
	u.JumpTo = JumpNone
	st, err := ex.apply(u)
	if err != nil {
		return nil, fmt.Errorf("agent: model step: %w", err)
	}
	ex.st = st
	if ex.r.emitter != nil {
		final := *resp.Response
		if m, ok := ex.st.LastAssistant(); ok {
			final.Message = m
		}
		ex.r.emit(Event{Type: EventModelEnd, Agent: ex.r.path, Step: ex.steps, Response: &final})
	}
	return nil, ex.save(ctx, nil, nil)
}

// modelStep is what a model step allocates, in one allocation: the
// request, the model slot's context, and the update that adds the answer
// (which apply copies, so nothing keeps it).
type modelStep struct {
	req ModelRequest
	ctx slotCtx
	u   Update
	msg [1]llm.Message
}

func (ex *exec) modelChain() ModelHandler {
	a := ex.a
	h := ModelHandler(ex.callModel)
	mws := a.cfg.Middleware
	for i := len(mws) - 1; i >= 0; i-- {
		mw, next := mws[i], h
		h = func(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
			return mw.WrapModelCall(ctx, req, next)
		}
	}
	return h
}

// callModel is the innermost model handler: it adds the structured output
// contract and calls the model.
func (ex *exec) callModel(ctx context.Context, mr *ModelRequest) (*ModelResponse, error) {
	c := &modelCall{req: mr.Request}
	req := &c.req
	if f := ex.a.format; f != nil {
		if f.Strategy == StrategyTool {
			req.Tools = append(slices.Clip(req.Tools), ex.a.formatTS)
		} else {
			req.ResponseFormat = &llm.ResponseFormat{Name: f.Name, Description: f.Description, Schema: ex.a.schema.JSON(), Strict: true}
		}
	}
	model := mr.Model
	if model == nil {
		model = ex.a.cfg.Model
	}
	if sm, ok := model.(llm.StreamingModel); ok && ex.tokenStream {
		return ex.streamModel(ctx, sm, req)
	}
	resp, err := model.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	c.resp.Response = resp
	return &c.resp, nil
}

// modelCall is the model's copy of a request and the response it gave, in
// one allocation.
type modelCall struct {
	req  llm.Request
	resp ModelResponse
}

// streamModel calls the model through Stream, emitting its chunks. It is
// apart from callModel because ranging over an iterator moves the
// function's results to the heap, which a plain call need not pay for.
func (ex *exec) streamModel(ctx context.Context, sm llm.StreamingModel, req *llm.Request) (*ModelResponse, error) {
	var final *llm.Response
	for chunk, err := range sm.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		c := chunk
		ex.r.emit(Event{Type: EventModelChunk, Agent: ex.r.path, Step: ex.steps, Chunk: &c})
		if chunk.Response != nil {
			final = chunk.Response
		}
	}
	if final == nil {
		return nil, errors.New("stream ended without a final response")
	}
	return &ModelResponse{Response: final}, nil
}

// pendingCalls returns the last assistant message and its tool calls that have
// no tool message yet.
func (ex *exec) pendingCalls() (*llm.Message, []llm.ToolCall) {
	msgs := ex.st.Messages
	idx := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, nil
	}
	last := &msgs[idx]
	// Only the few messages after the call can answer it: a scan beats a set.
	answers := msgs[idx+1:]
	if !slices.ContainsFunc(answers, func(m llm.Message) bool { return m.Role == llm.RoleTool }) {
		// Nothing answered yet (every tool step starts so): all of them,
		// capped so that no append can reach the message's array.
		return last, slices.Clip(last.ToolCalls)
	}
	var pending []llm.ToolCall
	for _, tc := range last.ToolCalls {
		if slices.ContainsFunc(answers, func(m llm.Message) bool { return m.Role == llm.RoleTool && m.ToolCallID == tc.ID }) {
			continue
		}
		if pending == nil {
			pending = make([]llm.ToolCall, 0, len(last.ToolCalls))
		}
		pending = append(pending, tc)
	}
	return last, pending
}

// toolStep runs the pending tool calls, concurrently when there are several,
// and applies their results in call order.
func (ex *exec) toolStep(ctx context.Context) (*Result, error) {
	_, calls := ex.pendingCalls()
	if len(calls) == 0 {
		return nil, nil
	}
	if err := ex.step(); err != nil {
		return nil, err
	}
	for i := range calls {
		ex.r.emit(Event{Type: EventToolStart, Agent: ex.r.path, Step: ex.steps, ToolCall: &calls[i]})
	}
	outs := ex.startTools(ctx, calls)
	// The step's slices are the invocation's, reused by the next step;
	// none of what they hold is kept past this function.
	defer ex.endTools()
	ex.runParallel(len(calls), ex.ts.run)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ints []PendingInterrupt
	for i, o := range outs {
		if o.err == nil {
			continue
		}
		var ie *InterruptError
		if !errors.As(o.err, &ie) {
			return nil, fmt.Errorf("agent: tool %s: %w", calls[i].Name, o.err)
		}
		ints = append(ints, PendingInterrupt{ID: ie.ID, Value: ie.Value})
	}
	if len(ints) > 0 {
		done := map[string]*ToolResponse{}
		for i, o := range outs {
			if o.err == nil {
				// Copied: the checkpoint keeps it, and a response
				// may live in its call's context (see execute).
				r := o.resp
				if r != nil {
					c := *r
					r = &c
				}
				done[calls[i].ID] = r
			}
		}
		for _, o := range outs {
			for _, ev := range o.events {
				ex.r.emit(ev)
			}
		}
		ex.pos = Position{Phase: PhaseTools}
		ex.steps--
		ex.r.step.Store(int64(ex.steps))
		return ex.interrupted(ctx, nil, done, ints...)
	}
	if ex.r.emitter == nil {
		if u := joinResults(len(outs), func(i int) *ToolResponse { return outs[i].resp }, &ex.ts); u != nil {
			st, err := ex.apply(u)
			if err != nil {
				return nil, fmt.Errorf("agent: tools: %w", err)
			}
			ex.st = st
			ex.pendingTools = nil
			return nil, ex.save(ctx, nil, nil)
		}
	}
	for i, o := range outs {
		for _, ev := range o.events {
			ex.r.emit(ev)
		}
		u := &Update{Messages: []llm.Message{o.resp.Message}}
		if o.resp.Update != nil {
			// The tool's changes, then its message: Merge without the
			// copies, as nothing but apply reads this update.
			c := *o.resp.Update
			c.Messages = append(slices.Clip(c.Messages), o.resp.Message)
			c.JumpTo = JumpNone
			u = &c
		}
		st, err := ex.apply(u)
		if err != nil {
			return nil, fmt.Errorf("agent: tool %s: %w", calls[i].Name, err)
		}
		ex.st = st
		if ex.r.emitter != nil {
			msg := ex.st.Messages[len(ex.st.Messages)-1]
			ex.r.emit(Event{Type: EventToolEnd, Agent: ex.r.path, Step: ex.steps, ToolCall: &calls[i], ToolResult: &msg})
		}
	}
	ex.pendingTools = nil
	return nil, ex.save(ctx, nil, nil)
}

// toolOutcome is what one call of a tool step returned.
type toolOutcome struct {
	resp   *ToolResponse
	err    error
	events []Event
}

// toolSteps holds what the calls of the tool step in progress share, kept
// on the invocation so that a step allocates neither its outcomes nor the
// function its workers run (runTool, bound once).
type toolSteps struct {
	ctx   context.Context
	calls []llm.ToolCall
	outs  []toolOutcome
	run   func(i int)
	// u and msgs are the update joinResults builds.
	u    Update
	msgs []llm.Message
}

// startTools readies the step's calls and returns their outcome slots.
func (ex *exec) startTools(ctx context.Context, calls []llm.ToolCall) []toolOutcome {
	ts := &ex.ts
	if ts.run == nil {
		ts.run = ex.runTool
	}
	if cap(ts.outs) < len(calls) {
		ts.outs = make([]toolOutcome, len(calls))
	}
	ts.ctx, ts.calls, ts.outs = ctx, calls, ts.outs[:len(calls)]
	return ts.outs
}

// endTools drops the step's references, so that the invocation keeps no
// response or event of a finished step alive. The joined messages are left
// as they are: the history holds the same messages.
func (ex *exec) endTools() {
	ts := &ex.ts
	clear(ts.outs)
	ts.ctx, ts.calls, ts.outs, ts.msgs, ts.u = nil, nil, ts.outs[:0], ts.msgs[:0], Update{}
}

// runTool runs call i of the step in progress into its outcome slot.
func (ex *exec) runTool(i int) {
	ts := &ex.ts
	call := ts.calls[i]
	if prev, ok := ex.pendingTools[call.ID]; ok {
		ts.outs[i] = toolOutcome{resp: prev}
		return
	}
	tc := &toolCtx{Context: ts.ctx, slot: slot{prefix: "tools:", id: call.ID}, tr: toolRun{call: call, base: ex.st, keys: ex.a.keys}}
	tc.req = ToolRequest{Call: call, Tool: ex.a.tools[call.Name], State: ex.st}
	tr := &tc.tr
	resp, err := ex.callTool(tc, tr, &tc.req)
	tr.mu.Lock()
	ts.outs[i] = toolOutcome{resp: resp, err: err, events: tr.events}
	tr.mu.Unlock()
}

// joinResults returns one update that applies the results of a tool step
// as applying them one by one would, or nil when it cannot say so: a step
// applies as one state instead of one state (and one copy of the files)
// per call. It joins results whose updates change files only and whose
// messages have no id (so each appends); a later call's file wins, as it
// would applied after.
func joinResults(n int, resp func(i int) *ToolResponse, ts *toolSteps) *Update {
	var files map[string]*FileData
	shared := false // files is a response's own map
	for i := range n {
		r := resp(i)
		if r.Message.ID != "" {
			return nil
		}
		u := r.Update
		if u == nil {
			continue
		}
		if u.ReplaceMessages || len(u.Messages) > 0 || len(u.RemoveMessages) > 0 || u.Todos != nil ||
			u.StructuredResponse != nil || len(u.Values) > 0 {
			return nil
		}
		switch {
		case len(u.Files) == 0:
		case files == nil:
			files, shared = u.Files, true
		default:
			if shared {
				files, shared = maps.Clone(files), false
			}
			maps.Copy(files, u.Files)
		}
	}
	// Built in the step's scratch: apply copies what it keeps.
	msgs := slices.Grow(ts.msgs[:0], n)[:n]
	for i := range msgs {
		msgs[i] = resp(i).Message
	}
	ts.msgs = msgs
	ts.u = Update{Messages: msgs, Files: files}
	return &ts.u
}

// runParallel runs run(0) … run(n-1) at the same time and returns when all
// have returned. run(0) runs on this goroutine, whose stack has already
// grown to what tools need; the others run on the invocation's workers.
//
// Workers live as long as the invocation, so each keeps the stack its
// first call grew: a goroutine started per call begins with a small stack
// that every call grows again, and copying it cost more than the rest of a
// read_file. Every call still starts before run(0) does, each on a
// goroutine of its own, so calls that wait on each other behave as before.
func (ex *exec) runParallel(n int, run func(i int)) {
	if n <= 1 {
		if n == 1 {
			run(0)
		}
		return
	}
	// One WaitGroup per invocation and jobs sent as values: a tool step
	// allocates nothing here.
	wg := &ex.wg
	wg.Add(n - 1)
	for i := 1; i < n; i++ {
		job := toolJob{run: run, i: i, wg: wg}
		if i <= ex.workers {
			// Every worker is idle or about to be: the previous step
			// waited for its job. A worker takes one job at a time, so
			// these sends reach i distinct workers before run(0).
			ex.jobs <- job
			continue
		}
		if ex.jobs == nil {
			ex.jobs = make(chan toolJob)
		}
		ex.workers++
		go toolWorker(ex.jobs, job)
	}
	run(0)
	wg.Wait()
}

// toolJob is run(i) for a worker, which then marks wg done.
type toolJob struct {
	run func(i int)
	i   int
	wg  *sync.WaitGroup
}

func (j toolJob) do() {
	defer j.wg.Done()
	j.run(j.i)
}

// toolWorker runs job, then every job sent on jobs until it is closed.
func toolWorker(jobs <-chan toolJob, job toolJob) {
	for {
		job.do()
		var ok bool
		if job, ok = <-jobs; !ok {
			return
		}
	}
}

// stopWorkers ends the invocation's workers; no job is running by then.
func (ex *exec) stopWorkers() {
	if ex.jobs != nil {
		close(ex.jobs)
		ex.jobs, ex.workers = nil, 0
	}
}

func (ex *exec) callTool(ctx context.Context, tr *toolRun, req *ToolRequest) (*ToolResponse, error) {
	resp, err := ex.a.toolChain(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	// A wrapper may record state changes after the tool returned (e.g. a
	// file written while evicting a large result); keep them too.
	tr.mu.Lock()
	late := tr.updates[min(tr.consumed, len(tr.updates)):]
	tr.consumed = len(tr.updates)
	tr.mu.Unlock()
	for _, u := range late {
		resp.Update = resp.Update.Merge(u)
	}
	return resp, nil
}

// executeTool is the innermost tool handler. It finds the call's toolRun in
// ctx; a wrapper that called on with a context of its own has cut the tool
// off from its run, so the tool's state updates could not arrive anyway.
func (a *Agent) executeTool(ctx context.Context, req *ToolRequest) (*ToolResponse, error) {
	tr, _ := ctx.Value(toolKey{}).(*toolRun)
	if tr == nil {
		tr = &toolRun{call: req.Call}
	}
	return a.execute(ctx, tr, req)
}

// execute runs the tool of a call.
func (a *Agent) execute(ctx context.Context, tr *toolRun, req *ToolRequest) (resp *ToolResponse, err error) {
	call := req.Call
	msg := func(res tool.Result) *ToolResponse {
		m := llm.Message{Role: llm.RoleTool, Name: call.Name, ToolCallID: call.ID, Content: res.Content, IsError: res.IsError, Artifact: res.Artifact}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		var u *Update
		switch len(tr.updates) {
		case 0:
		case 1:
			// The tool handed the update over; nothing modifies it.
			u = tr.updates[0]
		default:
			for _, x := range tr.updates {
				u = u.Merge(x)
			}
		}
		tr.consumed = len(tr.updates)
		if !tr.answered {
			// The call's first response lives in its toolRun: one
			// allocation less per call. A wrapper that runs the tool
			// again gets responses of their own.
			tr.answered = true
			tr.resp = ToolResponse{Message: m, Update: u}
			return &tr.resp
		}
		return &ToolResponse{Message: m, Update: u}
	}
	if req.Tool == nil {
		return msg(tool.Errorf("Error: tool %q does not exist. Available tools: %s.", call.Name, strings.Join(a.availableTools(), ", "))), nil
	}
	defer func() {
		if p := recover(); p != nil {
			resp, err = msg(tool.Errorf("Error: tool %s crashed: %v\n%s", call.Name, p, firstFrames(debug.Stack()))), nil
		}
	}()
	res, cerr := req.Tool.Call(ctx, call.Args)
	if cerr != nil {
		var ie *InterruptError
		if errors.As(cerr, &ie) {
			return nil, cerr
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return msg(tool.Errorf("Error: %v", cerr)), nil
	}
	return msg(res), nil
}

func (a *Agent) availableTools() []string {
	names := make([]string, 0, len(a.specs))
	for _, s := range a.specs {
		names = append(names, s.Name)
	}
	return names
}

func firstFrames(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	if len(lines) > 12 {
		lines = lines[:12]
	}
	return strings.Join(lines, "\n")
}
