package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/tool"
)

// bodies keeps every response body that passes through it, in order.
type bodies struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  []string
}

func (b *bodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.got = append(b.got, string(data))
	b.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, nil
}

// streamedRun is a family run whose agent streams (or not) every model call
// through a resolver whose HTTP client is rt.
type streamedRun struct {
	res    *agent.Result
	deltas string // the text deltas of model_chunk events
	chunks int
	ends   []*llm.Response
}

func runStreamed(t *testing.T, rt http.RoundTripper, replay bool, wc wireCase, options map[string]any, stream bool) (streamedRun, error) {
	t.Helper()
	cfg := provider.Config{Getenv: canaryEnv, HTTPClient: &http.Client{Transport: rt}, Replay: replay, Retry: provider.RetryPolicy{MaxAttempts: 1}}
	m, err := builtin.NewResolver(cfg).ResolveWith(wc.spec, options)
	require.NoError(t, err)
	a, err := agent.New(agent.Config{
		Model:  m,
		System: []llm.Block{llm.TextBlock("Answer questions about the family with the lookup tool.")},
		Tools:  []tool.Tool{facts(family)},
	})
	require.NoError(t, err)
	var out streamedRun
	var text strings.Builder
	opts := []agent.Option{agent.WithEvents(func(ev agent.Event) {
		switch ev.Type {
		case agent.EventModelChunk:
			out.chunks++
			text.WriteString(ev.Chunk.TextDelta)
		case agent.EventModelEnd:
			out.ends = append(out.ends, ev.Response)
		}
	})}
	if stream {
		opts = append(opts, agent.WithTokenStream())
	}
	out.res, err = a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("Who is the youngest of Alice, Bob and Carol?")}}, opts...)
	out.deltas = text.String()
	return out, err
}

// TestStreamedRunRoundTrip: in each wire format, an agent that streams
// every model call records a run against the local server and replays it
// with the SSE bodies byte for byte, the same messages, usage and text
// deltas, and the recorded latency; replayed in order with plain calls it
// gives the same answers; replayed by body with plain calls it misses
// with a message saying the only difference is stream (for Gemini, the
// method in the path: see cassette.RoutePath).
func TestStreamedRunRoundTrip(t *testing.T) {
	for _, wc := range wireCases {
		t.Run(wc.name, func(t *testing.T) {
			srv := newServer(wc, llmserver.WithAPIKey(canary))
			defer srv.Close()
			path := filepath.Join(t.TempDir(), wc.name+".yaml")
			live := &bodies{next: liveTransport(wc, srv)}
			rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(canaryEnv),
				recorder.WithRecordedHost(wc.host), recorder.WithRealTransport(live))
			require.NoError(t, err)
			recorded, err := runStreamed(t, rec, false, wc, wc.options(srv), true)
			require.NoError(t, err)
			require.NoError(t, rec.Stop())
			assert.Equal(t, "Carol is the youngest.", recorded.res.Text())
			require.Len(t, live.got, 3)
			for i, s := range srv.Requests() {
				assert.True(t, s.Stream, "#%d streams", i)
				assert.Equal(t, wc.api, s.API)
			}
			assert.Positive(t, recorded.chunks)

			c, err := cassette.Read(path)
			require.NoError(t, err)
			for i, it := range c.Interactions {
				assert.True(t, provider.IsEventStream(it.Response.Headers.Get("Content-Type")), "#%d", i)
				assert.Equal(t, live.got[i], it.Response.Body, "#%d: the cassette holds the server's bytes", i)
				assert.Positive(t, it.Response.Duration, "#%d", i)
				assert.NotEmpty(t, it.Response.Headers.Get(provider.FirstEventHeader), "#%d", i)
			}

			// Streamed replay: the same bytes reach the SDK, and the agent
			// sees the same deltas, messages, usage and the recorded latency.
			rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			served := &bodies{next: rep}
			replayed, err := runStreamed(t, served, true, wc, wc.replayed, true)
			require.NoError(t, err)
			assert.Equal(t, live.got, served.got, "SSE bodies replay byte for byte")
			assert.Empty(t, rep.Unplayed())
			assertSameRun(t, recorded, replayed)
			assert.Equal(t, recorded.deltas, replayed.deltas)
			assert.Equal(t, recorded.chunks, replayed.chunks)
			for i, it := range c.Interactions {
				first, err := time.ParseDuration(it.Response.Headers.Get(provider.FirstEventHeader))
				require.NoError(t, err)
				assert.Equal(t, &llm.Latency{Duration: it.Response.Duration, FirstEvent: first, Recorded: true}, replayed.ends[i].Latency, "#%d: the recorded latency", i)
			}

			// Plain calls against the streamed recording, in order: each
			// answer is decoded as the stream it was.
			ordered, err := recorder.New(path, recorder.WithGetenv(noEnv), recorder.WithMatch(cassette.MatchOrder))
			require.NoError(t, err)
			plain, err := runStreamed(t, ordered, true, wc, wc.replayed, false)
			require.NoError(t, err)
			assertSameRun(t, recorded, plain)
			assert.Zero(t, plain.chunks)

			// Plain calls matched by body: the miss says why.
			byBody, err := recorder.New(path, recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			_, err = runStreamed(t, byBody, true, wc, wc.replayed, false)
			var miss *recorder.MissError
			require.ErrorAs(t, err, &miss)
			assert.Contains(t, miss.Error(), "only in `stream`: the recording was streamed (stream: true) and this run's call is not streamed (stream: false)")
			if wc.api == cassette.APIGemini {
				// The bodies are equal; Gemini streams by calling
				// :streamGenerateContent, and the miss says so.
				assert.Contains(t, miss.Error(), "Gemini asks for a stream in the path: the recording called :streamGenerateContent, this run calls :generateContent.")
			}
		})
	}
}

func assertSameRun(t *testing.T, want, got streamedRun) {
	t.Helper()
	w, err := json.Marshal(want.res.State.Messages)
	require.NoError(t, err)
	g, err := json.Marshal(got.res.State.Messages)
	require.NoError(t, err)
	assert.Equal(t, string(w), string(g))
	assert.Equal(t, want.res.Usage, got.res.Usage)
	assert.NotZero(t, got.res.Usage.InputTokens)
}
