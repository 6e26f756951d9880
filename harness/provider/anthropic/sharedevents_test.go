package anthropic_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
)

// sharedStream is a Messages API stream that calls read_file. Its tool
// block starts with an input (as some gateways send it) and more input
// follows, which the adapter appends, as the SDK's accumulator does: the
// delta is short enough to fit in the room encoding/json leaves after the
// decoded input, where an append that did not copy would write. Its
// message_delta carries no output_tokens (which then count as 0) and a
// changed input_tokens. which tells the two variants apart: they share
// every event but the tool block's delta. It returns the stream up to
// message_stop and message_stop.
func sharedStream(which string) (string, string) {
	events := [][2]string{
		{"message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading."}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"/a/b/c"}}}`},
		{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":%q}}`, `{"`+which+`":1}`)},
		{"content_block_stop", `{"type":"content_block_stop","index":1}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":30}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	var b strings.Builder
	for _, e := range events[:len(events)-1] {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e[0], e[1])
	}
	last := events[len(events)-1]
	return b.String(), fmt.Sprintf("event: %s\ndata: %s\n\n", last[0], last[1])
}

// TestReplayedStreamEventsStayUnchanged: a replay parses each distinct
// stream event once per process and shares it between runs, so the
// stream loop must not write into it. Two streams that share all but one
// event are replayed many times at once; every run gets the answer a lone
// run gets. Under -race any write into a shared event is a race: the
// server holds every run's message_stop until all runs were sent the rest,
// so that the runs read the shared events while the others may be writing
// into them, not one after the other through the cache's lock.
func TestReplayedStreamEventsStayUnchanged(t *testing.T) {
	const runs = 16
	var sent sync.WaitGroup
	sent.Add(runs)
	allSent := make(chan struct{})
	go func() { sent.Wait(); close(allSent) }()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		which := "a"
		if strings.Contains(string(body), "variant b") {
			which = "b"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		most, stop := sharedStream(which)
		_, _ = io.WriteString(w, most)
		if strings.Contains(string(body), "together") {
			w.(http.Flusher).Flush()
			sent.Done()
			select {
			case <-allSent:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, stop)
	}))
	t.Cleanup(srv.Close)
	model := func(replay bool) llm.StreamingModel {
		m, err := anthropic.New(provider.Config{Model: "claude-sonnet-4-6", BaseURL: srv.URL, Replay: replay, APIKey: "test-key"})
		require.NoError(t, err)
		return m
	}
	want := func(which string) *llm.Response {
		// Replay off: nothing is shared.
		s := collect(t, model(false), userRequest("variant "+which))
		require.NoError(t, s.Err)
		return s.Final
	}
	wants := map[string]*llm.Response{"a": want("a"), "b": want("b")}
	for which, w := range wants {
		require.Len(t, w.Message.ToolCalls, 1, which)
		assert.Equal(t, `{"path":"/a/b/c"}{"`+which+`":1}`, string(w.Message.ToolCalls[0].Args), which)
		assert.Equal(t, "Reading.", w.Message.Text(), which)
		assert.Equal(t, llm.StopToolUse, w.StopReason, which)
		assert.Equal(t, 30, w.Usage.InputTokens, which)
		assert.Equal(t, 0, w.Usage.OutputTokens, which)
		assert.Equal(t, 7, w.Usage.CacheWriteTokens, which)
		assert.Equal(t, 3, w.Usage.CacheReadTokens, which)
	}

	got := make([]*llm.Response, runs)
	errs := make([]error, runs)
	m := model(true)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			s := collect(t, m, userRequest("together, variant "+"ab"[i%2:i%2+1]))
			got[i], errs[i] = s.Final, s.Err
		})
	}
	wg.Wait()
	for i := range runs {
		require.NoError(t, errs[i], "run %d", i)
		w := wants["ab"[i%2:i%2+1]]
		g := *got[i]
		g.Latency = w.Latency
		assert.Equal(t, w, &g, "run %d", i)
	}
}
