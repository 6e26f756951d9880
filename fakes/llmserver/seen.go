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

// bodyChunk is how far apart a seenBody keeps the hash's state: a body is
// hashed again from the last of them before it stops being alike, so the
// closer they are the less is hashed again (a grader's calls start alike
// for their 2 KiB system prompt).
const bodyChunk = 1 << 10

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
	// sums[i]: the FNV-1a state after api, 0 and body[:i*bodyChunk], up to
	// where the body's hashing was finished through seenSuffixes.
	sums []uint64
	// split is how historyMember split body, once it did.
	split atomic.Pointer[bodySplit]
	// hint is the split of the kept body this one starts like, and alike
	// how many bytes they start with alike (for historyMember).
	hint  *bodySplit
	alike int
	// endsLike is how decodeBody took apart the kept body this one ends
	// like for endAlike bytes (at most as far back as it was hashed), and
	// decoded how it took this one apart, once it did (for decodeBody).
	endsLike *bodyDecoded
	endAlike int
	decoded  atomic.Pointer[bodyDecoded]
}

// bodyDecoded is how decodeBody took a valid body apart: where the
// history array under key ends, what comes before it, and the skeleton
// and the value decoded from it (a T of decodeBody's).
type bodyDecoded struct {
	key      string
	end      int
	size     int // the body's length
	prefix   []byte
	skeleton []byte
	value    any
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
	for i+compareBlock <= n && bytes.Equal(a[i:i+compareBlock], b[i:i+compareBlock]) {
		i += compareBlock
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// endAlikeLen counts the bytes a and b end with alike, up to limit.
func endAlikeLen(a, b []byte, limit int) int {
	n := min(len(a), len(b), limit)
	i := 0
	for i+bodyChunk <= n && bytes.Equal(a[len(a)-i-bodyChunk:len(a)-i], b[len(b)-i-bodyChunk:len(b)-i]) {
		i += bodyChunk
	}
	for i+compareBlock <= n && bytes.Equal(a[len(a)-i-compareBlock:len(a)-i], b[len(b)-i-compareBlock:len(b)-i]) {
		i += compareBlock
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// compareBlock is how much alikeLen and endAlikeLen compare at a time
// within the bodyChunk where two bodies differ, before they compare
// bytes.
const compareBlock = 64

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
	start := (len(sb.sums) - 1) * bodyChunk
	// The end that body has alike with a kept one (the tools and settings
	// after the conversation, as a rule), in whole suffixSteps, is
	// finished through seenSuffixes.
	rest := len(body) - start
	tail := 0
	for _, p := range kept {
		if p.api == api {
			n := endAlikeLen(p.body, body, rest)
			if d := p.decoded.Load(); d != nil && n > sb.endAlike {
				sb.endsLike, sb.endAlike = d, n
			}
			tail = max(tail, n/suffixStep*suffixStep)
			if tail == rest/suffixStep*suffixStep {
				break // no longer one is to be had
			}
		}
	}
	if tail < minSuffix {
		tail = 0
	}
	end := len(body) - tail
	for i := start; ; i += bodyChunk {
		if i+bodyChunk > end {
			h = fnvAdd(h, body[i:end])
			break
		}
		h = fnvAdd(h, body[i:i+bodyChunk])
		sb.sums = append(sb.sums, h)
	}
	if tail > 0 {
		h = seenSuffixes.add(h, body[end:])
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

// FNV-1a over bytes s from a state h is h·fnvPrime64^len(s) plus a term
// that depends only on s and h's low byte: xoring a byte c into h changes
// its low byte alone (h^c = h - h&0xff + (h&0xff)^c), so each step adds
// to h·fnvPrime64 a multiple of the prime that the low bytes before it
// determine, and the low byte of a product depends only on the factors'
// low bytes. Bodies that end alike (each call of an eval resends the same
// tools after a different conversation) are finished from the term kept
// for their end and the state's low byte: two multiplications instead of
// a pass over the end, once each of the 256 low bytes has been seen.
var seenSuffixes suffixCache

// suffixStep is the granularity of the ends seenSuffixes keeps, so that
// bodies which end alike for about as long share the same one, and
// minSuffix the shortest end worth a look-up.
const (
	suffixStep = 256
	minSuffix  = 2 * suffixStep
)

type suffixCache struct {
	mu    sync.Mutex
	m     map[string]*suffixSum
	bytes int
}

type suffixSum struct {
	pow   uint64 // fnvPrime64^len(the end)
	term  [256]uint64
	known [256]bool
}

// add returns fnvAdd(h, s), and keeps the term for h's low byte.
func (c *suffixCache) add(h uint64, s []byte) uint64 {
	low := h & 0xff
	c.mu.Lock()
	sum := c.m[string(s)]
	if sum != nil && sum.known[low] {
		h = h*sum.pow + sum.term[low]
		c.mu.Unlock()
		return h
	}
	c.mu.Unlock()
	out := fnvAdd(h, s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if sum = c.m[string(s)]; sum == nil {
		// The kept ends and their terms are bounded like a memo's pieces.
		const termsSize = 8 + 256*8 + 256
		if c.m == nil || c.bytes+len(s)+termsSize > memoLimit {
			c.m, c.bytes = map[string]*suffixSum{}, 0
		}
		sum = &suffixSum{pow: fnvPow(len(s))}
		c.m[string(s)] = sum
		c.bytes += len(s) + termsSize
	}
	sum.term[low], sum.known[low] = out-h*sum.pow, true
	return out
}

// fnvPow returns fnvPrime64^n (mod 2^64).
func fnvPow(n int) uint64 {
	r, b := uint64(1), uint64(fnvPrime64)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r *= b
		}
		b *= b
	}
	return r
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
