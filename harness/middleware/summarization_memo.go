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
// seen so far, which of them have arguments to truncate, the decoded event
// and the view built on it. It describes a prefix of the run's history,
// whose messages never change once written (see agent.State), and starts
// over when the history is not an extension of that prefix.
type convMemo struct {
	mu sync.Mutex
	// hist is the prefix of the history the fields below describe.
	hist []llm.Message
	// cum[i] is the approximate token count of hist[:i], as far as counted.
	cum []int
	// checked messages of hist were checked for arguments to truncate;
	// trunc holds those that have some, in history order.
	checked int
	trunc   []truncatedMessage

	// eventRaw is the state value ev was decoded from.
	eventRaw      json.RawMessage
	ev            *SummarizationEvent
	summaryTokens int
	// view is the model's view under viewEvent: its summary, then hist
	// from the cutoff on. Nothing past its length was ever handed out, so
	// it grows in place.
	view      []llm.Message
	viewEvent *SummarizationEvent

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
}

type convMemoKey struct{ m *SummarizationMiddleware }

// memoFor returns the run's memo, locked and synced with the request's
// messages, or nil when they are not the state's own history (an earlier
// middleware changed them), which alone is known never to change.
func (m *SummarizationMiddleware) memoFor(ctx context.Context, req *agent.ModelRequest) *convMemo {
	if req.State == nil || !sameMessages(req.Messages, req.State.Messages) {
		return nil
	}
	memo := agent.RunMemo(ctx, convMemoKey{m}, func() *convMemo { return &convMemo{} })
	memo.mu.Lock()
	memo.sync(req.Messages)
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
		c.cum, c.checked, c.trunc, c.view, c.viewEvent = c.cum[:0], 0, c.trunc[:0], nil, nil
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
	c.eventRaw, c.ev, c.summaryTokens = raw, ev, messageTokens(&ev.SummaryMessage)
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

// truncated is truncateArgs for a view of the memo's history: v.msgs with
// the messages before cut truncated, checking only messages no earlier call
// checked. saved is -1 unless counted says the tokens are to be counted.
func (c *convMemo) truncated(v *view, cut int, ta TruncateArgsOptions, counted bool) ([]llm.Message, int, bool) {
	from := v.firstNew()
	if cut <= from {
		return v.msgs, 0, false
	}
	lo, hi := v.stateIndex(from), v.stateIndex(cut-1)+1
	for ; c.checked < hi; c.checked++ {
		msg := &c.hist[c.checked]
		if t, ok := truncateMessage(msg, ta); ok {
			c.trunc = append(c.trunc, truncatedMessage{pos: c.checked, msg: t, saved: messageTokens(msg) - messageTokens(&t)})
		}
	}
	first, _ := slices.BinarySearchFunc(c.trunc, lo, func(t truncatedMessage, pos int) int { return t.pos - pos })
	if first == len(c.trunc) || c.trunc[first].pos >= hi {
		return v.msgs, 0, false
	}
	out := slices.Clone(v.msgs)
	saved := 0
	for _, t := range c.trunc[first:] {
		if t.pos >= hi {
			break
		}
		out[t.pos-lo+from] = t.msg
		saved += t.saved
	}
	if !counted {
		saved = -1
	}
	return out, saved, true
}
