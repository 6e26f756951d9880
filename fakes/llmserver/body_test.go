package llmserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeBodyMatchesStrictDecode: where decodeBody takes a body it
// decodes it as strictDecode does, and it leaves every body it cannot
// vouch for to strictDecode.
func TestDecodeBodyMatchesStrictDecode(t *testing.T) {
	taken := []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		` { "messages" : [ {"role":"user","content":"a, ]}"} , {"role":"assistant","content":[{"type":"text","text":"\"x\""}]} ] , "model":"m","max_tokens":5 } `,
		`{"model":"m","max_tokens":5,"messages":[]}`,
		`{"model":"m","max_tokens":5,"messages":[ ]}`,
		`{"model":"m","max_tokens":5,"messages":[1,"two",null,[3]]}`,
	}
	for _, body := range taken {
		var want antRequest
		require.Nil(t, strictDecode([]byte(body), &want, "request body"), body)
		for range 2 { // the second time from the kept skeleton
			var got antRequest
			elems, _, ok := decodeBody(&antSkeletons, []byte(body), &got, "messages")
			require.True(t, ok, body)
			got.Messages = elems
			assert.Equal(t, want, got, body)
		}
	}
	left := []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}] "x":1}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user" "content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[1 2]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"messages":[]}`,
		`{"model":"m","max_tokens":5,"Messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"unknown":1}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]} {}`,
		`{"model":"m","max_tokens":5,"mess\u0061ges":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":"hi"}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]`,
		`[{"messages":[]}]`,
	}
	for _, body := range left {
		var got antRequest
		_, _, ok := decodeBody(&antSkeletons, []byte(body), &got, "messages")
		assert.False(t, ok, body)
	}
}
