package llmserver

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// A client resends its whole conversation on every call, so the server's
// two passes over every body (the FNV-1a hash that seeds its ids, and
// historyMember's split of the history into its elements) made a long
// run's server side quadratic. seenBodies keeps the latest bodies with
// the hash's state every bodyChunk bytes and where their history's
// elements lie, so that a body that starts like a kept one, byte for byte,
// as a conversation's next call does, is hashed and split from where it
// stops being alike; what either pass gives is the same as from scratch.
var seenBodies bodyCache

// bodyChunk is how far apart a seenBody keeps the hash's state.
const bodyChunk = 4 << 10

// Bounds of what seenBodies keeps: a few conversations served at once,
// and their bytes.
const (
	maxSeenBodies    = 8
	maxSeenBodyBytes = 16 << 20
)

type bodyCache struct {
	mu   sync.Mutex
	kept []*seenBody // most recent first
}

type seenBody struct {
	api  string
	body []byte
	sums []uint64 // sums[i]: the FNV-1a state after api, 0 and body[:i*bodyChunk]
	// split is how historyMember split body, once it did.
	split atomic.Pointer[bodySplit]
	// hint is the split of the kept body this one starts like, and alike
	// how many bytes they start with alike (for historyMember).
	hint  *bodySplit
	alike int
}

// bodySplit is where a body's history array starts and where each of its
// elements lies.
type bodySplit struct {
	key    string
	start  int
	bounds [][2]int
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// alikeLen counts the bytes a and b start with alike.
func alikeLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+bodyChunk <= n && bytes.Equal(a[i:i+bodyChunk], b[i:i+bodyChunk]) {
		i += bodyChunk
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// hash returns the FNV-1a hash of api, a zero byte and body (what idsFor
// seeds ids with) and keeps body as the latest one seen. body must not be
// modified afterwards.
func (c *bodyCache) hash(api string, body []byte) uint64 {
	c.mu.Lock()
	kept := append([]*seenBody(nil), c.kept...)
	c.mu.Unlock()
	var from *seenBody
	alike := 0
	for _, p := range kept {
		if p.api != api {
			continue
		}
		if n := alikeLen(p.body, body); n > alike {
			from, alike = p, n
			if 2*n >= len(p.body) {
				break // the conversation's latest call: no other is likely to be longer alike
			}
		}
	}
	sb := &seenBody{api: api, body: body, alike: alike}
	sb.sums = make([]uint64, 0, len(body)/bodyChunk+1)
	h := fnvAdd(fnvAdd(fnvOffset64, []byte(api)), []byte{0})
	if from != nil {
		sb.hint = from.split.Load()
		n := min(alike/bodyChunk+1, len(from.sums))
		sb.sums = append(sb.sums, from.sums[:n]...)
		h = from.sums[n-1]
	} else {
		sb.sums = append(sb.sums, h)
	}
	for i := (len(sb.sums) - 1) * bodyChunk; ; i += bodyChunk {
		if i+bodyChunk > len(body) {
			h = fnvAdd(h, body[i:])
			break
		}
		h = fnvAdd(h, body[i:i+bodyChunk])
		sb.sums = append(sb.sums, h)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	next := []*seenBody{sb}
	size := len(body)
	for _, p := range c.kept {
		if p == from && 2*alike >= len(p.body) {
			continue // sb supersedes the call it follows
		}
		if len(next) == maxSeenBodies || size+len(p.body) > maxSeenBodyBytes {
			break
		}
		next = append(next, p)
		size += len(p.body)
	}
	c.kept = next
	return h
}

// find returns the kept entry of body itself (the same bytes in memory),
// or nil.
func (c *bodyCache) find(body []byte) *seenBody {
	if len(body) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.kept {
		if len(p.body) == len(body) && &p.body[0] == &body[0] {
			return p
		}
	}
	return nil
}
