package recorder

import (
	"strings"
	"sync"

	"github.com/dageval/dageval/internal/scrub"
)

// A replay scrubs every request before matching it (see RoundTrip), and a
// replayed run sends the requests it sent the last time it was replayed
// (an eval's repeats and cells, a benchmark); scrubbing them again was a
// tenth of a replayed run's CPU time. cleanBodies remembers the request
// bodies in which a scrubber of the same secrets found nothing, by their
// exact bytes, so that each is scrubbed once per process. A scrubber's
// key shapes are fixed, so its secrets say all it finds.
var cleanBodies cleanMemo

// cleanLimit bounds the bodies cleanBodies keeps; past it, it starts over.
const cleanLimit = 32 << 20

type cleanMemo struct {
	mu    sync.Mutex
	by    map[string]map[string]struct{} // scrubber key → clean bodies
	bytes int
}

// scrubKey identifies what a scrubber finds.
func scrubKey(sc *scrub.Scrubber) string { return strings.Join(sc.Secrets(), "\x00") }

// scrub returns sc.Bytes(body): body itself when it is clean.
func (c *cleanMemo) scrub(sc *scrub.Scrubber, key string, body []byte) []byte {
	c.mu.Lock()
	_, clean := c.by[key][string(body)]
	c.mu.Unlock()
	if clean {
		return body
	}
	kept := sc.Bytes(body)
	if len(kept) != len(body) || len(body) == 0 || &kept[0] != &body[0] {
		return kept // Bytes copies a body it scrubs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil || c.bytes+len(body) > cleanLimit {
		c.by, c.bytes = map[string]map[string]struct{}{}, 0
	}
	bodies := c.by[key]
	if bodies == nil {
		bodies = map[string]struct{}{}
		c.by[key] = bodies
	}
	if _, ok := bodies[string(body)]; !ok {
		bodies[string(body)] = struct{}{}
		c.bytes += len(body)
	}
	return body
}
