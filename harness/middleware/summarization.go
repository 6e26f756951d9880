package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
)

// Private state keys of SummarizationMiddleware.
const (
	// SummarizationEventKey holds the latest SummarizationEvent.
	SummarizationEventKey = "_summarization_event"
	// SummarizationSessionKey holds the session id naming the history file.
	SummarizationSessionKey = "_summarization_session_id"
)

// Defaults of SummarizationMiddleware (Deep Agents' values).
const (
	// defaultTriggerFraction of a known context window starts summarization.
	defaultTriggerFraction = 0.85
	// defaultKeepFraction of a known context window is kept verbatim.
	defaultKeepFraction = 0.10
	// defaultTriggerTokens starts summarization when the window is unknown.
	defaultTriggerTokens = 170_000
	// defaultKeepMessages are kept verbatim when the window is unknown.
	defaultKeepMessages = 6
	// defaultTruncateMessages is the argument-truncation trigger and keep
	// (in messages) when the window is unknown.
	defaultTruncateMessages = 20
	// defaultTruncateMaxLength is the longest write_file/edit_file argument
	// (in characters) left alone in old messages.
	defaultTruncateMaxLength = 2000
	// defaultTruncationText replaces the rest of a truncated argument.
	defaultTruncationText = "...(argument truncated)"
	// truncatedPrefixChars of an argument survive truncation.
	truncatedPrefixChars = 20
	// keepWithoutWindow messages are kept by a fraction policy whose window is unknown.
	keepWithoutWindow = 20
	// summaryTrimFraction of a known window bounds what the summariser reads
	// when TrimTokensToSummarize is zero, so that summarizing after a
	// context overflow does not overflow again.
	summaryTrimFraction = 0.75
)

// Threshold is one clause of a summarization policy. In a trigger every
// field that is set must be reached (AND) and a trigger is a list of clauses
// of which any one fires (OR); a keep policy sets exactly one field. Zero
// fields are unset.
type Threshold struct {
	// Fraction of the model's context window, in (0, 1]. A clause with a
	// fraction is never met when the window is unknown.
	Fraction float64 `json:"fraction,omitempty"`
	// Tokens counted over the system prompt, messages and tools.
	Tokens int `json:"tokens,omitempty"`
	// Messages in the conversation the model would see.
	Messages int `json:"messages,omitempty"`
}

func (t Threshold) isZero() bool { return t == Threshold{} }

func (t Threshold) validate(field string) error {
	if t.isZero() {
		return fmt.Errorf("%s: a clause must set fraction, tokens or messages", field)
	}
	if t.Fraction != 0 && (math.IsNaN(t.Fraction) || t.Fraction <= 0 || t.Fraction > 1) {
		return fmt.Errorf("%s: fraction must be in (0, 1], got %v", field, t.Fraction)
	}
	if t.Tokens < 0 {
		return fmt.Errorf("%s: tokens must be positive, got %d", field, t.Tokens)
	}
	if t.Messages < 0 {
		return fmt.Errorf("%s: messages must be positive, got %d", field, t.Messages)
	}
	return nil
}

func (t Threshold) validateKeep(field string) error {
	if err := t.validate(field); err != nil {
		return err
	}
	set := 0
	for _, on := range []bool{t.Fraction != 0, t.Tokens != 0, t.Messages != 0} {
		if on {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("%s: a keep policy sets exactly one of fraction, tokens or messages", field)
	}
	return nil
}

// TruncateArgsOptions configures the shortening of old write_file and
// edit_file arguments, which are often whole files the model no longer needs
// to see verbatim. The zero value enables it with Deep Agents' defaults.
type TruncateArgsOptions struct {
	// Disabled turns argument truncation off.
	Disabled bool
	// Trigger starts truncation; nil means 85% of a known context window,
	// else 20 messages.
	Trigger []Threshold
	// Keep protects the most recent messages; zero means 10% of a known
	// window, else 20 messages.
	Keep Threshold
	// MaxLength is the longest argument (characters) left alone; 0 means
	// 2000.
	MaxLength int
	// Text replaces the truncated rest; "" means "...(argument truncated)".
	Text string
}

// SummarizationOptions configures SummarizationMiddleware. The zero value
// works: State backend, the agent's own model as summariser, and Deep
// Agents' default policies.
type SummarizationOptions struct {
	// Backend receives the offloaded history; nil means a State backend.
	Backend backend.Backend
	// Model writes the summaries; nil means the model of the call being
	// summarized (the agent's model).
	Model llm.ChatModel
	// Trigger starts summarization when any clause is met; nil means 85%
	// of a known context window, else 170 000 tokens.
	Trigger []Threshold
	// Keep is how much recent conversation stays verbatim; zero means 10% of
	// a known context window, else the last 6 messages.
	Keep Threshold
	// TruncateArgs configures argument truncation of old file edits.
	TruncateArgs TruncateArgsOptions
	// SummaryPrompt is sent to the summariser; it must contain {messages}.
	// "" means the default prompt, which asks for what the agent needs to
	// carry on.
	SummaryPrompt string
	// TrimTokensToSummarize bounds what the summariser reads: only the most
	// recent messages to summarize that fit are sent. 0 means 75% of a known
	// context window, or no bound when it is unknown; negative means no bound.
	TrimTokensToSummarize int
	// ContextWindow reports a model's context window in tokens (the model
	// catalog); nil or false means unknown.
	ContextWindow func(llm.Identity) (int, bool)
	// CountTokens estimates a call's size; nil means an approximate count
	// (about four ASCII characters per token) that needs no tokenizer.
	CountTokens TokenCounter
	// Logger receives warnings (history that could not be saved); nil means
	// slog.Default().
	Logger *slog.Logger
}

// defaultSummaryPrompt asks the summariser for a summary that lets the agent
// carry on. {messages} is replaced by the rendered conversation.
const defaultSummaryPrompt = `You are condensing the earlier part of a conversation between a user and an AI agent, so that the agent can keep working with a much shorter context. The agent will see only your summary followed by the most recent messages.

Write a summary that lets the agent continue without asking again for anything already settled. Include:
- the user's goals, requirements and constraints, in their own words where they matter;
- decisions made and the reasons for them;
- work done so far: files created or changed (with paths), commands run, results obtained;
- facts discovered that are still needed: names, numbers, identifiers, errors and their causes;
- what remains to be done and what the agent was about to do next.

Leave out greetings, dead ends that no longer matter and anything superseded by later messages. Keep references such as <image url="..."/> or <file url="..."/> exactly as they appear, so the agent can open them again. Answer with the summary only.

<conversation>
{messages}
</conversation>`

// SummarizationEvent records one summarization. History in state is never
// rewritten: the model sees SummaryMessage followed by the state's messages
// from CutoffIndex on.
type SummarizationEvent struct {
	CutoffIndex    int         `json:"cutoff_index"`
	SummaryMessage llm.Message `json:"summary_message"`
	// FilePath is where the summarized messages were saved; "" when saving failed.
	FilePath string `json:"file_path,omitempty"`
	// StateLen is how many messages the state held when the event was
	// recorded. Usage reported by earlier assistant messages describes a
	// request from before this summary and is not used to calibrate counts.
	StateLen int `json:"state_len"`
}

// SummarizationMiddleware keeps a long conversation within the model's
// context window. Before each model call it estimates the call's tokens once
// (calibrated by the usage the provider reported for the previous call); when
// a trigger is met it saves the older messages to
// <artifacts root>/conversation_history/<session id>.md in the backend, asks
// a model for a summary, and sends the model the summary followed by the
// most recent messages. The history in state is never rewritten: a private
// SummarizationEvent changes what the model sees. A context-overflow error
// from the model triggers one summarization and retry.
//
// Choices where Deep Agents behaves accidentally: a summary that cannot be
// generated fails the model call with an explanatory error (Deep Agents
// would embed an empty summary); the session id is derived from the agent
// path and the summarized conversation, so replays write the same file
// names; token triggers use the calibrated estimate rather than comparing
// the provider's figure and the estimate separately; what the summariser
// reads is bounded by default when the window is known.
//
// Within a run, what a call costs does not grow with the history: counts,
// truncations and the model's view carry over from call to call, and the
// message list handed down (the view with its old arguments truncated) is
// one list rewritten in place where its messages changed, lent to the
// middleware after it and the model for the call only (see llm.ChatModel),
// with a description of what changed that prompt caching and memory use.
type SummarizationMiddleware struct {
	agent.Base
	opts    SummarizationOptions
	backend backend.Backend
	log     *slog.Logger
	count   TokenCounter
	// tools backs count when it is the approximate counter, which is then
	// additive: a call's count is the sum of its parts' counts, so the
	// counts of messages are carried over between calls (see convMemo).
	tools    *toolCache
	sessions sessionCounter
	// withWindow and withoutWindow are the policies with their defaults
	// resolved; the window itself is looked up per call.
	withWindow, withoutWindow policy
	// lastModel is the model of the most recent call, which
	// compact_conversation uses when no summariser model is configured.
	lastModel atomic.Pointer[modelRef]
}

type modelRef struct{ m llm.ChatModel }

// NewSummarization validates the options and returns the middleware.
func NewSummarization(opts SummarizationOptions) (*SummarizationMiddleware, error) {
	for i, c := range opts.Trigger {
		if err := c.validate(fmt.Sprintf("SummarizationMiddleware: trigger[%d]", i)); err != nil {
			return nil, err
		}
	}
	if !opts.Keep.isZero() {
		if err := opts.Keep.validateKeep("SummarizationMiddleware: keep"); err != nil {
			return nil, err
		}
	}
	ta := &opts.TruncateArgs
	for i, c := range ta.Trigger {
		if err := c.validate(fmt.Sprintf("SummarizationMiddleware: truncate_args.trigger[%d]", i)); err != nil {
			return nil, err
		}
	}
	if !ta.Keep.isZero() {
		if err := ta.Keep.validateKeep("SummarizationMiddleware: truncate_args.keep"); err != nil {
			return nil, err
		}
	}
	if ta.MaxLength < 0 {
		return nil, fmt.Errorf("SummarizationMiddleware: truncate_args.max_length must be positive, got %d", ta.MaxLength)
	}
	if ta.MaxLength == 0 {
		ta.MaxLength = defaultTruncateMaxLength
	}
	if ta.Text == "" {
		ta.Text = defaultTruncationText
	}
	if opts.SummaryPrompt == "" {
		opts.SummaryPrompt = defaultSummaryPrompt
	}
	if !strings.Contains(opts.SummaryPrompt, "{messages}") {
		return nil, errors.New("SummarizationMiddleware: summary prompt must contain the {messages} placeholder")
	}
	m := &SummarizationMiddleware{opts: opts, backend: opts.Backend, log: opts.Logger, count: opts.CountTokens,
		withWindow: opts.resolvePolicy(true), withoutWindow: opts.resolvePolicy(false)}
	if m.backend == nil {
		m.backend = backend.NewState()
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.count == nil {
		m.tools = newToolCache()
		m.count = approxCounterWith(m.tools)
	}
	return m, nil
}

// Name implements agent.Middleware.
func (m *SummarizationMiddleware) Name() string { return SummarizationName }

// StateKeys implements agent.Middleware: the event and session id are private.
func (m *SummarizationMiddleware) StateKeys() []agent.StateKey {
	return []agent.StateKey{{Name: SummarizationEventKey, Private: true}, {Name: SummarizationSessionKey, Private: true}}
}

// policy is the options resolved against one model's context window.
type policy struct {
	window       int
	known        bool
	trigger      []Threshold
	keep         Threshold
	truncTrigger []Threshold
	truncKeep    Threshold
}

func (m *SummarizationMiddleware) policyFor(model llm.ChatModel) policy {
	return m.policyForMemo(model, nil)
}

// policyForMemo is policyFor asking ContextWindow once per run and model.
func (m *SummarizationMiddleware) policyForMemo(model llm.ChatModel, memo *convMemo) policy {
	if m.opts.ContextWindow != nil {
		if id, ok := llm.IdentityOf(model); ok {
			if memo != nil && memo.policySet && memo.policyID == id {
				return memo.policy
			}
			p := m.withoutWindow
			if w, ok := m.opts.ContextWindow(id); ok && w > 0 {
				p = m.withWindow
				p.window = w
			}
			if memo != nil {
				memo.policyID, memo.policy, memo.policySet = id, p, true
			}
			return p
		}
	}
	return m.withoutWindow
}

// resolvePolicy fills in the defaults for a known or an unknown window.
func (o *SummarizationOptions) resolvePolicy(known bool) policy {
	p := policy{known: known, trigger: o.Trigger, keep: o.Keep}
	if p.trigger == nil {
		if known {
			p.trigger = []Threshold{{Fraction: defaultTriggerFraction}}
		} else {
			p.trigger = []Threshold{{Tokens: defaultTriggerTokens}}
		}
	}
	if p.keep.isZero() {
		if known {
			p.keep = Threshold{Fraction: defaultKeepFraction}
		} else {
			p.keep = Threshold{Messages: defaultKeepMessages}
		}
	}
	ta := o.TruncateArgs
	if !ta.Disabled {
		p.truncTrigger, p.truncKeep = ta.Trigger, ta.Keep
		if p.truncTrigger == nil {
			if known {
				p.truncTrigger = []Threshold{{Fraction: defaultTriggerFraction}}
			} else {
				p.truncTrigger = []Threshold{{Messages: defaultTruncateMessages}}
			}
		}
		if p.truncKeep.isZero() {
			if known {
				p.truncKeep = Threshold{Fraction: defaultKeepFraction}
			} else {
				p.truncKeep = Threshold{Messages: defaultTruncateMessages}
			}
		}
	}
	return p
}

// fractionTokens is a fraction of the window in tokens.
func (p policy) fractionTokens(f float64) int { return int(float64(p.window) * f) }

// met reports whether a clause is reached; scale (1 normally, 0.5 for
// compact_conversation's eligibility) lowers every threshold.
func (p policy) met(c Threshold, tokens, messages int, scale float64) bool {
	lower := func(v int) int {
		if scale == 1 {
			return v
		}
		return max(1, int(float64(v)*scale))
	}
	if c.Messages > 0 && messages < lower(c.Messages) {
		return false
	}
	if c.Tokens > 0 && tokens < lower(c.Tokens) {
		return false
	}
	if c.Fraction > 0 && (!p.known || tokens < lower(p.fractionTokens(c.Fraction))) {
		return false
	}
	return true
}

func (p policy) anyMet(clauses []Threshold, tokens, messages int, scale float64) bool {
	for _, c := range clauses {
		if p.met(c, tokens, messages, scale) {
			return true
		}
	}
	return false
}

// view is the conversation as the model sees it under the current event.
type view struct {
	event *SummarizationEvent
	// msgs is the summary (when there is an event) followed by the state's
	// messages from the cutoff on.
	msgs []llm.Message
	// stateLen is the number of messages in state.
	stateLen int
	// memo, when set, describes the run's history that msgs views; see
	// convMemo. truncated says msgs has truncated arguments the memo's
	// token counts do not reflect.
	memo      *convMemo
	truncated bool
}

// stateIndex maps an index of v.msgs to the index of the same message in state.
func (v *view) stateIndex(i int) int {
	if v.event == nil {
		return i
	}
	return v.event.CutoffIndex + i - 1
}

// newCutoff is the state cutoff of a summary that covers v.msgs[:cut].
func (v *view) newCutoff(cut int) int {
	if v.event == nil {
		return cut
	}
	return v.event.CutoffIndex + cut - 1
}

// firstNew is the first index of v.msgs that is a message of the state rather than the previous summary.
func (v *view) firstNew() int {
	if v.event == nil {
		return 0
	}
	return 1
}

func (m *SummarizationMiddleware) viewOf(msgs []llm.Message, s *agent.State, memo *convMemo) view {
	v := view{msgs: msgs, stateLen: len(msgs)}
	if s == nil {
		return v
	}
	raw, ok := s.Values[SummarizationEventKey]
	if !ok || raw == nil {
		v.memo = memo
		return v
	}
	ev := memo.event(raw)
	if ev == nil {
		ev = &SummarizationEvent{}
		if err := json.Unmarshal(raw, ev); err != nil || ev.CutoffIndex < 0 {
			m.log.Warn("SummarizationMiddleware: ignoring a malformed summarization event; the model sees the full history", "error", err)
			return view{msgs: msgs, stateLen: len(msgs)}
		}
		memo.setEvent(raw, ev)
	}
	v.event = ev
	if memo != nil && ev.CutoffIndex <= len(msgs) {
		v.memo = memo
		v.msgs = memo.viewOn(ev, msgs)
		return v
	}
	cut := min(ev.CutoffIndex, len(msgs))
	out := make([]llm.Message, 0, len(msgs)-cut+1)
	out = append(out, ev.SummaryMessage)
	v.msgs = append(out, msgs[cut:]...)
	return v
}

// tokens counts a call once. When the latest assistant message in view
// reports the provider's usage, that figure replaces the estimate of
// everything up to and including it.
func (m *SummarizationMiddleware) tokens(system []llm.Block, v *view, tools []llm.ToolSpec) int {
	if j, used := v.reportedUsage(); j >= 0 {
		return used + m.viewTokens(v, j+1, len(v.msgs))
	}
	if m.tools != nil && v.memo != nil {
		return blocksTokens(system) + m.viewTokens(v, 0, len(v.msgs)) + m.tools.total(tools)
	}
	return m.count(system, v.msgs, tools)
}

// viewTokens counts v.msgs[i:j], from the run's memo when the counter is
// additive and the view is the memo's.
func (m *SummarizationMiddleware) viewTokens(v *view, i, j int) int {
	if m.tools == nil || v.memo == nil || v.truncated {
		return m.count(nil, v.msgs[i:j], nil)
	}
	n := 0
	if v.event != nil && i == 0 && j > 0 {
		n += v.memo.summaryTokens
		i = 1
	}
	if i < j {
		n += v.memo.tokensTo(v.stateIndex(j-1)+1) - v.memo.tokensTo(v.stateIndex(i))
	}
	return n
}

// reportedUsage finds the last assistant message in view that reports usage
// for a request made under the current summary; it returns its index in
// v.msgs and the tokens it reported, or -1.
func (v *view) reportedUsage() (int, int) {
	for i := len(v.msgs) - 1; i >= v.firstNew(); i-- {
		msg := &v.msgs[i]
		if msg.Role != llm.RoleAssistant {
			continue
		}
		if msg.Usage == nil || msg.Usage.IsZero() || !msg.Usage.Known() {
			// A provider that reported no usage leaves the estimate to the counter.
			return -1, 0
		}
		if v.event != nil && v.stateIndex(i) < v.event.StateLen {
			return -1, 0
		}
		return i, msg.Usage.Total()
	}
	return -1, 0
}

// remember notes the model of a call for compact_conversation.
func (m *SummarizationMiddleware) remember(model llm.ChatModel) {
	if model == nil {
		return
	}
	if cur := m.lastModel.Load(); cur == nil || cur.m != model {
		m.lastModel.Store(&modelRef{m: model})
	}
}

// WrapModelCall implements agent.Middleware.
func (m *SummarizationMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	m.remember(req.Model)
	memo := m.memoFor(ctx, req)
	if memo != nil {
		// Held until the model has answered: the list it is lent is the memo's.
		defer memo.mu.Unlock()
	}
	v, p, total := m.prepare(req, memo)
	if !p.anyMet(p.trigger, total, len(v.msgs), 1) {
		lctx := ctx
		if v.memo != nil {
			lctx = v.memo.lend(ctx, &v, v.msgs)
		} else {
			memo.lost()
		}
		resp, err := next(lctx, withMessages(req, v.msgs))
		if err == nil || !isContextOverflow(err) {
			return resp, err
		}
		m.log.Info("SummarizationMiddleware: the model reported a context overflow; summarizing and retrying once", "error", err)
		memo.lost()
		return m.summarizeAndCall(ctx, req, next, &v, p, err)
	}
	memo.lost()
	return m.summarizeAndCall(ctx, req, next, &v, p, nil)
}

// prepare builds what the model would see without a new summary, with its
// policy and its token count.
func (m *SummarizationMiddleware) prepare(req *agent.ModelRequest, memo *convMemo) (view, policy, int) {
	v := m.viewOf(req.Messages, req.State, memo)
	p := m.policyForMemo(req.Model, memo)
	total := m.tokens(req.System, &v, req.Tools)
	msgs, saved, changed := m.truncateArgs(&v, total, p)
	v.msgs = msgs
	if changed {
		v.truncated = true
		if saved >= 0 {
			// Truncation only shortens assistant messages before the
			// cutoff; with reported usage none is counted.
			if j, _ := v.reportedUsage(); j < 0 {
				total -= saved
			}
		} else {
			total = m.tokens(req.System, &v, req.Tools)
		}
	}
	return v, p, total
}

// withMessages returns req, or a copy sending msgs when they differ.
func withMessages(req *agent.ModelRequest, msgs []llm.Message) *agent.ModelRequest {
	if len(msgs) == len(req.Messages) && (len(msgs) == 0 || &msgs[0] == &req.Messages[0]) {
		return req
	}
	c := req.Clone()
	c.Messages = msgs
	return c
}

func (m *SummarizationMiddleware) summarizeAndCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler, v *view, p policy, overflow error) (*agent.ModelResponse, error) {
	cut := m.cutoff(v.msgs, p.keep, p, true, nil)
	if cut <= v.firstNew() {
		if overflow != nil {
			return nil, fmt.Errorf("SummarizationMiddleware: the conversation does not fit the context window and there is nothing older to summarize: %w", overflow)
		}
		return next(ctx, withMessages(req, v.msgs))
	}
	sctx, stage := backend.WithStateStage(ctx, req.State)
	preserved := v.msgs[cut:]
	var clipped []llm.Message
	if overflow != nil {
		preserved, clipped = m.clipTail(sctx, v.msgs, cut, p)
	}
	model := m.opts.Model
	if model == nil {
		model = req.Model
	}
	out, err := m.summarize(ctx, sctx, model, req.State, v, cut, p)
	if err != nil {
		return nil, fmt.Errorf("SummarizationMiddleware: generating the summary: %w", err)
	}
	sent := make([]llm.Message, 0, len(preserved)+1)
	sent = append(sent, out.event.SummaryMessage)
	sent = append(sent, preserved...)
	resp, err := next(ctx, withMessages(req, sent))
	if err != nil {
		return nil, err
	}
	u := out.update.Merge(&agent.Update{Messages: clipped}).Merge(stage.Update()).Merge(resp.Update)
	return &agent.ModelResponse{Response: resp.Response, Update: u}, nil
}
