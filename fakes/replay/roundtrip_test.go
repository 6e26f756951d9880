package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/fakes/replay"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/tool"
)

// canary is the API key of the recording runs. It is not shaped like a
// provider key, so only the recorder's configured-secret checks can find it.
const canary = "canary-7f3a9c1e5b20d4"

func canaryEnv(name string) string {
	if name == "ANTHROPIC_API_KEY" || name == "OPENAI_API_KEY" || name == "GEMINI_API_KEY" {
		return canary
	}
	return ""
}

// streamOn answers call n (from 1) through the adapter's Stream and every
// other call through Generate, so one run covers both paths.
type streamOn struct {
	m     llm.ChatModel
	n     int32
	calls atomic.Int32
}

func (s *streamOn) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if s.calls.Add(1) != s.n {
		return s.m.Generate(ctx, req)
	}
	var final *llm.Response
	for c, err := range s.m.(llm.StreamingModel).Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if c.Response != nil {
			final = c.Response
		}
	}
	return final, nil
}

// facts is the tool of the recorded runs; changing an answer changes the
// next request.
func facts(answers map[string]string) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "lookup", Description: "Look a person up.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)},
		Fn: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.Text(answers[in.Name]), nil
		},
	}
}

var family = map[string]string{"Alice": "Alice is 41.", "Bob": "Bob is 43.", "Carol": "Carol is 9."}

// script is the model behind the local server: two parallel lookups, one
// more lookup, then the answer.
func script() *fakes.Scripted {
	return fakes.NewScripted(
		fakes.Calls("Looking up Alice and Bob.", fakes.Call("lookup", map[string]string{"name": "Alice"}), fakes.Call("lookup", map[string]string{"name": "Bob"})),
		fakes.Calls("And Carol.", fakes.Call("lookup", map[string]string{"name": "Carol"})),
		fakes.Reply("Carol is the youngest."),
	)
}

type wireCase struct {
	name     string
	spec     string
	options  func(srv *llmserver.Server) map[string]any // where the recording run goes
	replayed map[string]any                             // replay keeps the entry's real base URL
	api      string
	host     string
}

var wireCases = []wireCase{
	{"anthropic", "anthropic:claude-sonnet-4-5", func(s *llmserver.Server) map[string]any { return map[string]any{"base_url": s.URL} }, nil, cassette.APIAnthropicMessages, "api.anthropic.com"},
	{"openai-chat", "openai:gpt-4o", func(s *llmserver.Server) map[string]any {
		return map[string]any{"base_url": s.OpenAIBaseURL(), "use_responses_api": false}
	}, map[string]any{"use_responses_api": false}, cassette.APIOpenAIChat, "api.openai.com"},
	{"openai-responses", "openai:gpt-4o", func(s *llmserver.Server) map[string]any { return map[string]any{"base_url": s.OpenAIBaseURL()} }, nil, cassette.APIOpenAIResponses, "api.openai.com"},
	// Gemini 3: the local server refuses a history whose calls lost their
	// thought signatures, so the round trip shows they go back.
	{"gemini", "gemini:gemini-3-flash-preview", func(s *llmserver.Server) map[string]any { return map[string]any{"base_url": s.URL} }, nil, cassette.APIGemini, "generativelanguage.googleapis.com"},
}

func runFamily(t *testing.T, r *provider.Resolver, spec string, options map[string]any, answers map[string]string) (*agent.Result, error) {
	t.Helper()
	m, err := r.ResolveWith(spec, options)
	require.NoError(t, err)
	a, err := agent.New(agent.Config{
		Model:  &streamOn{m: m, n: 2},
		System: []llm.Block{llm.TextBlock("Answer questions about the family with the lookup tool.")},
		Tools:  []tool.Tool{facts(answers)},
	})
	require.NoError(t, err)
	return a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("Who is the youngest of Alice, Bob and Carol?")}})
}

// record runs the family agent against a local server through a recorder
// in record mode and returns the run and the cassette path.
func record(t *testing.T, wc wireCase) (*agent.Result, string) {
	t.Helper()
	srv := llmserver.NewServer(script(), llmserver.WithAPIKey(canary))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), wc.name+".yaml")
	rec, r, err := replay.Open(path, provider.Config{Getenv: canaryEnv},
		recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(canaryEnv), recorder.WithRecordedHost(wc.host))
	require.NoError(t, err)
	res, err := runFamily(t, r, wc.spec, wc.options(srv), family)
	require.NoError(t, err)
	require.NoError(t, rec.Stop())

	served := srv.Requests()
	require.Len(t, served, 3)
	for i, s := range served {
		assert.Equal(t, wc.api, s.API, "#%d", i)
		assert.Equal(t, 200, s.Status, "#%d: %s", i, s.Error)
		assert.Equal(t, i == 1, s.Stream, "#%d: only the second call streams", i)
	}
	return res, path
}

// TestRecordRoundTrip records a three-turn run (parallel tool calls, one
// streamed answer) through each real adapter against the local server with
// a canary key, checks the key is nowhere in the cassette, and replays the
// run offline with byte-identical messages and usage.
func TestRecordRoundTrip(t *testing.T) {
	for _, wc := range wireCases {
		t.Run(wc.name, func(t *testing.T) {
			recorded, path := record(t, wc)
			assert.Equal(t, "Carol is the youngest.", recorded.Text())
			require.Len(t, recorded.State.Messages[1].ToolCalls, 2, "parallel calls")

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.NotContains(t, string(data), canary, "the API key never reaches the cassette")
			assert.NotContains(t, string(data), "127.0.0.1", "recorded under the provider's host")
			assert.Contains(t, string(data), cassette.Redacted)
			c, err := cassette.Read(path)
			require.NoError(t, err)
			require.Len(t, c.Interactions, 3)
			assert.Equal(t, "text/event-stream", strings.Split(c.Interactions[1].Response.Headers.Get("Content-Type"), ";")[0])

			// Replay offline: the server is gone and the model resolves to
			// the provider's real address, which netguard would refuse.
			rec, r := replay.OpenTest(t, path, provider.Config{Getenv: noEnv}, recorder.WithGetenv(noEnv))
			require.Equal(t, recorder.ModeReplay, rec.Mode())
			replayed, err := runFamily(t, r, wc.spec, wc.replayed, family)
			require.NoError(t, err)
			assert.Empty(t, rec.Unplayed())

			want, err := json.Marshal(recorded.State.Messages)
			require.NoError(t, err)
			got, err := json.Marshal(replayed.State.Messages)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
			assert.Equal(t, recorded.Usage, replayed.Usage)
			assert.NotZero(t, replayed.Usage.InputTokens)
		})
	}
}

// countingTransport counts the requests that reach the recorder.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// TestReplayMissFailsTheRunOnce: when a run asks something the cassette did
// not record, the agent returns the recorder's miss, naming the request and
// what changed, after one attempt, even under a policy that would retry a
// connection error.
func TestReplayMissFailsTheRunOnce(t *testing.T) {
	for _, wc := range wireCases {
		t.Run(wc.name, func(t *testing.T) {
			_, path := record(t, wc)
			rec, err := recorder.New(path, recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			defer rec.Stop()
			cfg := rec.ProviderConfig(provider.Config{Getenv: noEnv})
			cfg.Retry = provider.RetryPolicy{MaxAttempts: 5, Sleep: func(context.Context, time.Duration) error {
				t.Error("replay must not back off and retry")
				return nil
			}}
			counter := &countingTransport{next: rec}
			cfg.HTTPClient = &http.Client{Transport: counter}

			changed := map[string]string{"Alice": "Alice is 14.", "Bob": family["Bob"], "Carol": family["Carol"]}
			_, err = runFamily(t, builtin.NewResolver(cfg), wc.spec, wc.replayed, changed)
			require.Error(t, err)
			var miss *recorder.MissError
			require.True(t, errors.As(err, &miss), "%T: %v", err, err)
			assert.ErrorIs(t, err, recorder.ErrInteractionNotFound)
			assert.Equal(t, int32(2), counter.n.Load(), "the first call replays, the second misses once")
			assert.Equal(t, 1, miss.Nearest, "the changed request is compared with the second recorded one")
			assert.Contains(t, miss.Diff, "Alice is 41.")
			assert.Contains(t, miss.Diff, "Alice is 14.")
			assert.Contains(t, err.Error(), "replay miss")
			assert.Contains(t, err.Error(), "/v1")
			assert.Equal(t, llm.ErrConnection, llm.KindOf(err))
		})
	}
}
