package recorder

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dageval/dageval/internal/scrub"
)

// A body kept as clean for one scrubber is still scrubbed by another that
// knows a secret in it, and a body holding a secret is never kept.
func TestCleanBodiesAreKeptPerScrubber(t *testing.T) {
	var c cleanMemo
	plain := scrub.New()
	knowing := scrub.New("a-secret-value")
	body := []byte(`{"content":"the key is a-secret-value"}`)
	for range 2 {
		got := c.scrub(plain, scrubKey(plain), body)
		assert.Same(t, &body[0], &got[0], "a clean body is served as it is")
	}
	assert.Len(t, c.by[scrubKey(plain)], 1)
	for range 2 {
		assert.Equal(t, `{"content":"the key is [REDACTED]"}`, string(c.scrub(knowing, scrubKey(knowing), body)))
	}
	assert.Empty(t, c.by[scrubKey(knowing)])
	keyed := []byte(`{"content":"sk-ant-api03-abcdefghijklmnopqrstuvwxyz"}`)
	for range 2 {
		assert.Equal(t, `{"content":"[REDACTED]"}`, string(c.scrub(plain, scrubKey(plain), keyed)))
	}
	assert.Len(t, c.by[scrubKey(plain)], 1)
}
