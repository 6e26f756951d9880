package middleware

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"unsafe"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// convMemo is what SummarizationMiddleware carries over from one model call
// of a run to the next (see agent.RunMemo), so that a call costs the same
// at the thousandth step as at the tenth: the token counts of the messages
// seen so far, which of them have arguments to truncate, the decoded event,
// the view built on it and the list last handed to the model. It describes
// a prefix of the run's history, whose messages never change once written
// (see agent.State), and starts over when the history is not an extension
// of that prefix.
type convMemo struct {
	mu sync.Mutex
	// hist is the prefix of the history the fields below describe.
	hist []llm.Message
	// cum[i] is the approximate token count of hist[:i], as far as counted;
	// breaks[i] the number of cache-control breakpoints in hist[:i].
	cum, breaks []int
	// checked messages of hist were checked for arguments to truncate;
	// trunc holds those that have some, in history order.
	checked int
	trunc   []truncatedMessage
	// calls remembers the truncated tool calls of every assistant message
	// checked, by the identity of its tool calls, so that starting over (a
	// history that moved, or one whose message was replaced) decodes no
	// argument twice. A replaced message comes with tool calls of its own.
	calls map[*llm.ToolCall]truncatedCalls

	// eventRaw is the state value ev was decoded from.
	eventRaw      json.RawMessage
	ev            *SummarizationEvent
	summaryTokens int
	summaryBreaks int
	// view is the model's view under viewEvent: its summary, then hist
	// from the cutoff on. Nothing past its length was ever handed out, so
	// it grows in place.
	view      []llm.Message
	viewEvent *SummarizationEvent
	// gen numbers the views: it changes whenever the view starts over
	// (another history, another event), which out and the lent list follow.
	gen uint64

	// out is the view with truncated arguments, once any was truncated in
	// view gen outGen: it mirrors the view, except that the messages of
	// trunc[outLo:outHi] are their truncated copies. It is rewritten in
	// place from call to call (the model is lent it for the call).
	out          []llm.Message
	outGen       uint64
	outEvent     *SummarizationEvent
	outLo, outHi int
	// dirty lists the indices of out rewritten by this call.
	dirty []int

	// seq counts the calls that lent a list, lent; lastGen, lastEvent and
	// lastLen describe the list lent by call seq, when lastOK.
	seq       uint64
	lent      lentList
	lastOK    bool
	lastGen   uint64
	lastEvent *SummarizationEvent
	lastLen   int

	// policy is the policy for the model policyID names, whose context
	// window was looked up once.
	policyID  llm.Identity
	policy    policy
	policySet bool
}

type truncatedMessage struct {
	pos   int         // index in the history
	msg   llm.Message // the message with its arguments truncated
	saved int         // approximate tokens the truncation saves
	// savedTo is the tokens saved by this entry and every earlier one.
	savedTo int
}

// truncatedCalls are a message's tool calls with their arguments truncated
// (nil: nothing to truncate); n is how many calls the message has.
type truncatedCalls struct {
	n     int
	calls []llm.ToolCall
}

type convMemoKey struct{ m *SummarizationMiddleware }

// memoFor returns the run's memo, locked and synced with the request's
// messages, or nil when they are not the state's own history (an earlier
// middleware changed them), which alone is known never to change, or when
// another call of the run is using the memo. The caller unlocks it once
// the model has answered: the list lent to the model is the memo's.
func (m *SummarizationMiddleware) memoFor(ctx context.Context, req *agent.ModelRequest) *convMemo {
	if req.State == nil || !sameMessages(req.Messages, req.State.Messages) {
		return nil
	}
	memo := agent.RunMemo(ctx, convMemoKey{m}, func() *convMemo { return &convMemo{} })
	if !memo.mu.TryLock() {
		return nil
	}
	memo.sync(req.Messages)
	memo.dirty = memo.dirty[:0]
	return memo
}

// sameMessages reports whether a and b are the same slice.
func sameMessages(a, b []llm.Message) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// sync makes the memo describe msgs, keeping what it knows when msgs
// extends the prefix it describes.
func (c *convMemo) sync(msgs []llm.Message) {
	if len(msgs) < len(c.hist) || len(c.hist) > 0 && unsafe.SliceData(msgs) != unsafe.SliceData(c.hist) {
		c.cum, c.breaks, c.checked, c.trunc, c.view, c.viewEvent = c.cum[:0], c.breaks[:0], 0, c.trunc[:0], nil, nil
		c.gen++
	}
	c.hist = msgs
}

// event returns the event decoded from raw earlier, or nil.
func (c *convMemo) event(raw json.RawMessage) *SummarizationEvent {
	if c == nil || c.ev == nil || len(raw) != len(c.eventRaw) || unsafe.SliceData(raw) != unsafe.SliceData(c.eventRaw) {
		return nil
	}
	return c.ev
}

func (c *convMemo) setEvent(raw json.RawMessage, ev *SummarizationEvent) {
	if c == nil {
		return
	}
	c.eventRaw, c.ev = raw, ev
	c.summaryTokens, c.summaryBreaks = messageTokens(&ev.SummaryMessage), messageBreakpoints([]llm.Message{ev.SummaryMessage})
}

// viewOn returns ev's summary followed by msgs from ev's cutoff on,
// extending the view of the previous call when it can.
func (c *convMemo) viewOn(ev *SummarizationEvent, msgs []llm.Message) []llm.Message {
	cut := ev.CutoffIndex
	if c.viewEvent == ev && cut+len(c.view)-1 <= len(msgs) {
		c.view = append(c.view, msgs[cut+len(c.view)-1:]...)
	} else {
		c.view = make([]llm.Message, 0, 2*(len(msgs)-cut+1))
		c.view = append(append(c.view, ev.SummaryMessage), msgs[cut:]...)
		c.viewEvent = ev
		c.gen++
	}
	// Capped, so that nobody else appends into the spare capacity.
	return c.view[:len(c.view):len(c.view)]
}

// tokensTo returns the approximate token count of hist[:n].
func (c *convMemo) tokensTo(n int) int {
	if len(c.cum) == 0 {
		c.cum = append(c.cum, 0)
	}
	for i := len(c.cum) - 1; i < n; i++ {
		c.cum = append(c.cum, c.cum[i]+messageTokens(&c.hist[i]))
	}
	return c.cum[n]
}

// breaksTo returns the number of cache-control breakpoints in hist[:n].
func (c *convMemo) breaksTo(n int) int {
	if len(c.breaks) == 0 {
		c.breaks = append(c.breaks, 0)
	}
	for i := len(c.breaks) - 1; i < n; i++ {
		c.breaks = append(c.breaks, c.breaks[i]+messageBreakpoints(c.hist[i:i+1]))
	}
	return c.breaks[n]
}

// check notes whether hist[i] has arguments to truncate.
func (c *convMemo) check(i int, ta TruncateArgsOptions) {
	msg := &c.hist[i]
	if msg.Role != llm.RoleAssistant || len(msg.ToolCalls) == 0 {
		return
	}
	if !slices.ContainsFunc(msg.ToolCalls, func(tc llm.ToolCall) bool { return truncatedTools[tc.Name] && len(tc.Args) > ta.MaxLength }) {
		return // nothing to decode, nothing to remember
	}
	key := unsafe.SliceData(msg.ToolCalls)
	tc, ok := c.calls[key]
	if !ok || tc.n != len(msg.ToolCalls) {
		tc = truncatedCalls{n: len(msg.ToolCalls)}
		if t, ok := truncateMessage(msg, ta); ok {
			tc.calls = t.ToolCalls
		}
		if c.calls == nil {
			c.calls = map[*llm.ToolCall]truncatedCalls{}
		}
		c.calls[key] = tc
	}
	if tc.calls == nil {
		return
	}
	t := *msg
	t.ToolCalls = tc.calls
	e := truncatedMessage{pos: i, msg: t, saved: messageTokens(msg) - messageTokens(&t)}
	e.savedTo = e.saved
	if n := len(c.trunc); n > 0 {
		e.savedTo += c.trunc[n-1].savedTo
	}
	c.trunc = append(c.trunc, e)
}

// truncIndex is the index in trunc of the first entry at or after
// history index pos.
func (c *convMemo) truncIndex(pos int) int {
	i, _ := slices.BinarySearchFunc(c.trunc, pos, func(t truncatedMessage, pos int) int { return t.pos - pos })
	return i
}

// truncated is truncateArgs for a view of the memo's history: v.msgs with
// the messages before cut truncated, checking only messages no earlier call
// checked and rewriting only the messages of the previous call's list whose
// truncation changed. saved is -1 unless counted says the tokens are to be
// counted.
func (c *convMemo) truncated(v *view, cut int, ta TruncateArgsOptions, counted bool) ([]llm.Message, int, bool) {
	from := v.firstNew()
	cut = max(cut, from)
	lo, hi := v.stateIndex(from), v.stateIndex(cut)
	for ; c.checked < hi; c.checked++ {
		c.check(c.checked, ta)
	}
	first, last := c.truncIndex(lo), c.truncIndex(hi)
	if c.outGen != c.gen || c.outEvent != v.event || len(c.out) > len(v.msgs) {
		if first == last {
			return v.msgs, 0, false
		}
		c.out = make([]llm.Message, len(v.msgs), 2*len(v.msgs))
		copy(c.out, v.msgs)
		c.outGen, c.outEvent, c.outLo, c.outHi = c.gen, v.event, first, first
	} else {
		c.out = append(c.out, v.msgs[len(c.out):]...)
	}
	// Entries leaving the applied range get their message back, entries
	// joining it their truncated copy.
	at := func(k int) int { return c.trunc[k].pos - lo + from }
	restore := func(k int) { c.out[at(k)] = v.msgs[at(k)]; c.dirty = append(c.dirty, at(k)) }
	apply := func(k int) { c.out[at(k)] = c.trunc[k].msg; c.dirty = append(c.dirty, at(k)) }
	for k := c.outLo; k < min(c.outHi, first); k++ {
		restore(k)
	}
	for k := max(c.outLo, last); k < c.outHi; k++ {
		restore(k)
	}
	for k := first; k < min(last, c.outLo); k++ {
		apply(k)
	}
	for k := max(first, c.outHi); k < last; k++ {
		apply(k)
	}
	c.outLo, c.outHi = first, last
	saved := 0
	if first < last {
		saved = c.trunc[last-1].savedTo
		if first > 0 {
			saved -= c.trunc[first-1].savedTo
		}
	}
	if !counted {
		saved = -1
	}
	// Capped, so that nobody else appends into the spare capacity.
	return c.out[:len(c.out):len(c.out)], saved, first < last
}

// lend returns ctx carrying the description of msgs, the list this call
// hands down for v, as an edit of the list the memo's previous call handed
// down.
func (c *convMemo) lend(ctx context.Context, v *view, msgs []llm.Message) context.Context {
	c.seq++
	l := &c.lent
	*l = lentList{msgs: msgs, feed: c, seq: c.seq}
	if c.lastOK && c.lastGen == c.gen && c.lastEvent == v.event && len(msgs) >= c.lastLen {
		l.kept, l.dirty = c.lastLen, c.dirty
	}
	from := v.firstNew()
	l.marks = c.breaksTo(v.stateIndex(len(v.msgs))) - c.breaksTo(v.stateIndex(from))
	if from > 0 {
		l.marks += c.summaryBreaks
	}
	c.lastOK, c.lastGen, c.lastEvent, c.lastLen = true, c.gen, v.event, len(msgs)
	return withLent(ctx, l)
}

// lost notes that this call hands down a list the memo does not describe.
func (c *convMemo) lost() {
	if c != nil {
		c.seq++
		c.lastOK = false
	}
}
