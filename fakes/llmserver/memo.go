package llmserver

import "sync"

// memoLimit bounds the raw bytes one memo keeps; past it the memo starts
// over. A 200-step agent run's history is a few hundred KiB, so every
// call of such a run still hits, and the dozen memos of a long-lived
// process hold a few tens of MiB at most.
const memoLimit = 2 << 20

// memo keeps what a valid piece of a request (one message, one content
// list) decoded to, by its exact bytes. A client resends the whole history
// on every call, byte for byte as before, so without it the server decoded
// every earlier message again on each call, which made a long run's
// server side quadratic. Only successful decodings are kept: an error
// names the piece's place in the request, which differs between requests.
// Kept values are shared by every request that hits them and must not be
// modified.
type memo[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	bytes int
}

// decode returns the kept value for raw, or calls f and keeps what it
// returns when it succeeds.
func (c *memo[V]) decode(raw []byte, f func() (V, *apiError)) (V, *apiError) {
	c.mu.Lock()
	v, ok := c.m[string(raw)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, e := f()
	if e != nil {
		return v, e
	}
	c.mu.Lock()
	if c.m == nil || c.bytes+len(raw) > memoLimit {
		c.m, c.bytes = map[string]V{}, 0
	}
	c.m[string(raw)] = v
	c.bytes += len(raw)
	c.mu.Unlock()
	return v, nil
}

// strictDecodeMemo is strictDecode through a memo: v gets a shallow copy
// of the kept value, whose pointers and slices it shares.
func strictDecodeMemo[T any](c *memo[T], raw []byte, v *T, at string) *apiError {
	d, e := c.decode(raw, func() (T, *apiError) {
		var t T
		e := strictDecode(raw, &t, at)
		return t, e
	})
	if e == nil {
		*v = d
	}
	return e
}

// The memos of the OpenAI formats' messages, items and parts.
var (
	chatMessages  memo[chatMessage]
	chatToolCalls memo[chatToolCall]
	chatParts     memo[chatPart]
	respItems     memo[respItem]
	respParts     memo[respPart]
)

// The memos of the requests' remainders without their history (see
// decodeBody).
var (
	antSkeletons  memo[antRequest]
	chatSkeletons memo[chatRequest]
	respSkeletons memo[respRequest]
)
