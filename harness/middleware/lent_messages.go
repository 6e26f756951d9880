package middleware

import (
	"context"
	"unsafe"

	"github.com/dageval/dageval/harness/llm"
)

// lentList describes the message list a middleware hands down the stack in
// one model call of a run, as an edit of the list it handed down in its
// previous call, so that the middleware after it (prompt caching, memory)
// can extend what they built for that list instead of going over the whole
// history again. The list is lent for the call (see llm.ChatModel): its
// producer rewrites it in place for its next call.
type lentList struct {
	// msgs is the request's message list, exactly: same array, same length.
	msgs []llm.Message
	// feed identifies the producer in its run; seq numbers its calls.
	feed any
	seq  uint64
	// kept is how many leading messages the list shares with the list of
	// call seq-1 of the same feed: msgs[:kept] equals that list's first kept
	// messages except at the indices in dirty. 0 claims nothing.
	kept  int
	dirty []int
	// marks counts the cache-control breakpoints in the messages' content.
	marks int
}

type lentKey struct{}

// withLent returns ctx carrying l for the rest of the call.
func withLent(ctx context.Context, l *lentList) context.Context {
	return context.WithValue(ctx, lentKey{}, l)
}

// lentFrom returns the description of msgs carried by ctx, or nil when the
// list a middleware lent was replaced on its way down.
func lentFrom(ctx context.Context, msgs []llm.Message) *lentList {
	l, _ := ctx.Value(lentKey{}).(*lentList)
	if l == nil || len(l.msgs) != len(msgs) || unsafe.SliceData(l.msgs) != unsafe.SliceData(msgs) {
		return nil
	}
	return l
}

// extends reports whether l continues the list of call seq of feed, whose
// length was n.
func (l *lentList) extends(feed any, seq uint64, n int) bool {
	return n > 0 && l.feed == feed && l.seq == seq+1 && l.kept == n && len(l.msgs) >= n
}
