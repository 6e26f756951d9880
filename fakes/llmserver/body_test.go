package llmserver

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
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
			elems, _, _, ok := decodeBody(&antSkeletons, []byte(body), &got, "messages", nil)
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
		_, _, _, ok := decodeBody(&antSkeletons, []byte(body), &got, "messages", nil)
		assert.False(t, ok, body)
	}
}

// TestResponsesDerivedFromSkeletonMatchWholeDecode: a Responses request's
// tools, tool_choice and text format, derived once per request remainder
// and kept, give the requests that share it the same result and the same
// error as a request decoded whole (its "input" key spelled with an
// escape, which decodeBody leaves to strictDecode), every time.
func TestResponsesDerivedFromSkeletonMatchWholeDecode(t *testing.T) {
	const url = "http://127.0.0.1/v1/responses"
	tool := `{"type":"function","name":"f","parameters":{"type":"object"}}`
	rests := []string{
		`"tools":[` + tool + `],"tool_choice":{"type":"function","name":"f"}`,
		`"tools":[` + tool + `],"text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}`,
		`"tools":[` + tool + `,` + tool + `]`,
		`"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"bogus":1}]`,
		`"tools":[{"type":"web_search"}]`,
		`"tools":[` + tool + `],"tool_choice":{"type":"function","name":"g"}`,
		`"text":{"format":{"type":"json_schema","schema":{"type":"object"}}}`,
	}
	for _, rest := range rests {
		whole := `{"model":"m","inp\u0075t":[{"role":"user","content":"hi"}],` + rest + `}`
		wantReq, _, _, wantErr := DecodeRequest(url, []byte(whole))
		for turn := range 3 {
			items := `{"role":"user","content":"hi"}`
			for range turn {
				items += `,{"role":"assistant","content":"ok"},{"role":"user","content":"more"}`
			}
			body := `{"model":"m","input":[` + items + `],` + rest + `}`
			got, _, _, err := DecodeRequest(url, []byte(body))
			if wantErr != nil {
				require.Error(t, err, body)
				assert.Equal(t, wantErr.Error(), err.Error(), body)
				continue
			}
			require.NoError(t, err, body)
			assert.Equal(t, wantReq.Tools, got.Tools, body)
			assert.Equal(t, wantReq.ToolChoice, got.ToolChoice, body)
			assert.Equal(t, wantReq.ResponseFormat, got.ResponseFormat, body)
		}
	}
}

// TestResponsesResumedPrefixStillChecksNewItems: the items a Responses
// request shares with a recent one are not checked as JSON again, but an
// invalid item after them gives the error strictDecode gives for the body.
func TestResponsesResumedPrefixStillChecksNewItems(t *testing.T) {
	const url = "http://127.0.0.1/v1/responses"
	prefix := `{"role":"user","content":"resumed prefix"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}`
	_, _, _, err := DecodeRequest(url, []byte(`{"model":"m","input":[`+prefix+`]}`))
	require.NoError(t, err)
	var items []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(`[`+prefix+`,{}]`), &items))
	k, _, _ := respResumes.find(items)
	require.Equal(t, 3, k, "the prefix is kept")
	for _, bad := range []string{`{"role":"user","content":tru}`, `{"role":"user" "content":"x"}`, `{"role":"user","content":"x",}`, `nul`} {
		body := []byte(`{"model":"m","input":[` + prefix + `,` + bad + `]}`)
		want := strictDecode(body, &respRequest{}, "request body")
		require.NotNil(t, want, bad)
		_, _, _, got := DecodeRequest(url, body)
		require.Error(t, got, bad)
		assert.Equal(t, want.msg, got.Error(), bad)
	}
}

// TestChatDerivedFromSkeletonMatchWholeDecode is
// TestResponsesDerivedFromSkeletonMatchWholeDecode for Chat Completions.
func TestChatDerivedFromSkeletonMatchWholeDecode(t *testing.T) {
	const url = "http://127.0.0.1/v1/chat/completions"
	tool := `{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}`
	rests := []string{
		`"tools":[` + tool + `],"tool_choice":{"type":"function","function":{"name":"f"}}`,
		`"tools":[` + tool + `],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}`,
		`"tools":[{"type":"function","function":{"name":"g"}}]`,
		`"tools":[` + tool + `,` + tool + `]`,
		`"tools":[{"type":"function","function":{"name":"f"},"bogus":1}]`,
		`"tools":[` + tool + `],"tool_choice":{"type":"function","function":{"name":"g"}}`,
		`"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}`,
	}
	for _, rest := range rests {
		whole := `{"model":"m","mess\u0061ges":[{"role":"user","content":"hi"}],` + rest + `}`
		wantReq, _, _, wantErr := DecodeRequest(url, []byte(whole))
		for turn := range 3 {
			msgs := `{"role":"user","content":"hi"}`
			for range turn {
				msgs += `,{"role":"assistant","content":"ok"},{"role":"user","content":"more"}`
			}
			body := `{"model":"m","messages":[` + msgs + `],` + rest + `}`
			got, _, _, err := DecodeRequest(url, []byte(body))
			if wantErr != nil {
				require.Error(t, err, body)
				assert.Equal(t, wantErr.Error(), err.Error(), body)
				continue
			}
			require.NoError(t, err, body)
			assert.Equal(t, wantReq.Tools, got.Tools, body)
			assert.Equal(t, wantReq.ToolChoice, got.ToolChoice, body)
			assert.Equal(t, wantReq.ResponseFormat, got.ResponseFormat, body)
		}
	}
}

// TestSeenBodiesResumeAlike: a body that starts like one seen before is
// hashed and split from where they differ, and gets what it would from
// scratch: the same hash, the same elements, the same refusals.
func TestSeenBodiesResumeAlike(t *testing.T) {
	msg := func(i int) string {
		return fmt.Sprintf(`{"role":"user","content":%q}`, strings.Repeat(fmt.Sprintf("m%d ", i), 300))
	}
	var msgs []string
	var bodies []string
	for i := range 40 {
		msgs = append(msgs, msg(i))
		tail := `],"model":"m","max_tokens":5}`
		bodies = append(bodies, `{"messages":[`+strings.Join(msgs, ",")+tail)
		if i%5 == 4 {
			// The same conversation with its latest message broken, or
			// an earlier one changed.
			broken := slices.Clone(msgs)
			broken[len(broken)-1] = `{"role":"user","content":"x"`
			bodies = append(bodies, `{"messages":[`+strings.Join(broken, ",")+tail)
			changed := slices.Clone(msgs)
			changed[i/2] = msg(1000)
			bodies = append(bodies, `{"messages":[`+strings.Join(changed, ",")+tail)
			bodies = append(bodies, `{"messages":[`+strings.Join(msgs, " ,\n")+tail)
		}
	}
	for i, s := range bodies {
		body := []byte(s)
		h := fnv.New64a()
		h.Write([]byte("api\x00"))
		h.Write(body)
		require.Equal(t, h.Sum64(), seenBodies.hash("api", body), "body %d", i)
		var got, want antRequest
		elems, _, _, ok := decodeBody(&antSkeletons, body, &got, "messages", nil)
		wantElems, _, _, wantOK := decodeBody(&antSkeletons, []byte(s), &want, "messages", nil)
		require.Equal(t, wantOK, ok, "body %d", i)
		require.Equal(t, wantElems, elems, "body %d", i)
		require.Equal(t, want, got, "body %d", i)
	}
}

// TestSeenBodiesFinishAlikeEnds: bodies that end alike (another
// conversation, the same tools) are finished from the terms kept for
// their end, and get the hash they would from scratch.
func TestSeenBodiesFinishAlikeEnds(t *testing.T) {
	var tails []string
	for i := range 3 {
		tails = append(tails, fmt.Sprintf(`],"model":"m%d","tools":[%s]}`, i, strings.Repeat(fmt.Sprintf(`{"name":"tool%d","description":"does things"},`, i), 60+i*7)+`{}`))
	}
	check := func(body []byte, what string, i int) {
		t.Helper()
		h := fnv.New64a()
		h.Write([]byte("api\x00"))
		h.Write(body)
		require.Equal(t, h.Sum64(), seenBodies.hash("api", body), "%s %d", what, i)
	}
	for i := range 1500 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"question %d%s"}`, i, strings.Repeat("?", i%37)) + tails[i%len(tails)]
		check([]byte(body), "body", i)
		if i%50 == 0 {
			// Sent again, or changed where it is alike at both ends.
			check([]byte(body), "resent body", i)
			mid := []byte(body)
			mid[len(mid)/2+i%100] ^= 1
			check(mid, "body changed in its middle", i)
		}
	}
	seenSuffixes.mu.Lock()
	defer seenSuffixes.mu.Unlock()
	finished := 0
	for s, sum := range seenSuffixes.m {
		for _, k := range sum.known {
			if k && strings.HasSuffix(s, "{}]}") {
				finished++
			}
		}
	}
	assert.Greater(t, finished, 3*200, "terms kept for the tools' ends")
}

// TestDecodeBodyTakesAlikeEndsFromTheBodyItEndsLike: a body that ends like
// one decoded before, from its history array on, gets that body's
// skeleton and value, and what strictDecode gives it; one that only
// seems to, or is invalid, is decoded in full.
func TestDecodeBodyTakesAlikeEndsFromTheBodyItEndsLike(t *testing.T) {
	tools := `"tools":[` + strings.Repeat(`{"name":"t","description":"does things","input_schema":{"type":"object"}},`, 30) + `{"name":"u","input_schema":{"type":"object"}}]`
	heads := []string{`{"model":"m","max_tokens":5,"messages":[`, `{"model":"n","max_tokens":5,"messages":[`, `{"messages":[`}
	ends := []string{
		`],` + tools + `}`,
		`],"model":"m","max_tokens":5,` + tools + `}`,
		`],"model":"m","max_tokens":6,` + tools + `}`,
		`] , "model":"m","max_tokens":5,` + tools + ` } `,
		`],"model":"m","max_tokens":5,` + tools + `,"bogus":1}`,
		`],"model":"m","max_tokens":5,` + tools + `,"messages":[]}`,
		`],"model":"m","max_tokens":5,` + tools + `} {}`,
		`],"model":"m","max_tokens":5,` + tools,
	}
	type pair struct{ head, end string }
	bodies := []pair{
		// An end that is the end of the one before: not the same members.
		{heads[2], ends[1]}, {heads[2], ends[0]},
		// Ends as long as the one before, and not alike.
		{heads[0], ends[1]}, {heads[0], ends[2]},
	}
	for i := range 200 {
		combo := i / 4 // four bodies in a row end alike
		bodies = append(bodies, pair{heads[combo%len(heads)], ends[combo/len(heads)%len(ends)]})
	}
	shared := 0
	for i, p := range bodies {
		head, end := p.head, p.end
		msgs := fmt.Sprintf(`{"role":"user","content":"question %d"}`, i)
		if i%4 == 1 {
			msgs += `,{"role":"assistant","content":"a \"], \"model\""},{"role":"user","content":"more"}`
		}
		body := []byte(head + msgs + end)
		seenBodies.hash("api", body)
		var want antRequest
		wantErr := strictDecode(body, &want, "request body")
		var got antRequest
		elems, _, skeleton, ok := decodeBody(&antSkeletons, body, &got, "messages", nil)
		if !ok {
			continue // left to strictDecode
		}
		require.Nil(t, wantErr, "body %d: %s", i, body)
		if seen := seenBodies.find(body); seen != nil && seen.endsLike != nil && &seen.endsLike.skeleton[0] == &skeleton[0] {
			shared++
		}
		got.Messages = elems
		require.Equal(t, want, got, "body %d: %s", i, body)
		wantSkeleton := head[:len(head)-1] + "[]" + end[1:]
		require.Equal(t, wantSkeleton, string(skeleton), "body %d", i)
	}
	assert.Greater(t, shared, 50, "bodies that took their skeleton from the body they end like")
}
