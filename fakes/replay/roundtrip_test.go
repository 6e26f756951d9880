package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

// canary is the API key of the recording runs (and the AWS access key id,
// the Google OAuth token and the Azure api-key of the cloud routes). It is
// not shaped like a provider key, so only the recorder's configured-secret
// checks can find it. canarySecret and canarySession are the AWS secret
// key and session token, which a signed request must never carry either.
const (
	canary        = "canary-7f3a9c1e5b20d4"
	canarySecret  = "canary-secret-2b8e61d0c4a7"
	canarySession = "canary-session-95d3f7a1e6c0"
)

func canaryEnv(name string) string {
	switch name {
	case "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY", "GOOGLE_OAUTH_ACCESS_TOKEN", "AWS_ACCESS_KEY_ID":
		return canary
	case "AWS_SECRET_ACCESS_KEY":
		return canarySecret
	case "AWS_SESSION_TOKEN":
		return canarySession
	}
	return ""
}

// canaries are every credential a recording run holds.
var canaries = []string{canary, canarySecret, canarySession}

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
	// tls serves the recording over HTTPS (Azure's SDK sends credentials
	// over TLS only).
	tls bool
	// streamType is the Content-Type of a streamed answer.
	streamType string
	// pathPart is a piece of every request path, for messages that name it.
	pathPart string
}

var wireCases = []wireCase{
	{"anthropic", "anthropic:claude-sonnet-4-5", func(s *llmserver.Server) map[string]any { return map[string]any{"base_url": s.URL} }, nil, cassette.APIAnthropicMessages, "api.anthropic.com", false, "text/event-stream", "/v1/"},
	{"openai-chat", "openai:gpt-4o", func(s *llmserver.Server) map[string]any {
		return map[string]any{"base_url": s.OpenAIBaseURL(), "use_responses_api": false}
	}, map[string]any{"use_responses_api": false}, cassette.APIOpenAIChat, "api.openai.com", false, "text/event-stream", "/v1/"},
	{"openai-responses", "openai:gpt-4o", func(s *llmserver.Server) map[string]any { return map[string]any{"base_url": s.OpenAIBaseURL()} }, nil, cassette.APIOpenAIResponses, "api.openai.com", false, "text/event-stream", "/v1/"},
	// Gemini 3: the local server refuses a history whose calls lost their
	// thought signatures, so the round trip shows they go back.
	{"gemini", "gemini:gemini-3-flash-preview", func(s *llmserver.Server) map[string]any { return map[string]any{"base_url": s.URL} }, nil, cassette.APIGemini, "generativelanguage.googleapis.com", false, "text/event-stream", "/v1"},
	// The cloud routes replay with nothing configured: no region, project
	// or endpoint, and no credentials.
	{"bedrock", "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", func(s *llmserver.Server) map[string]any {
		return map[string]any{"base_url": s.URL, "region": "us-west-2"}
	}, nil, cassette.APIBedrockInvoke, "bedrock-runtime.us-west-2.amazonaws.com", false, cassette.EventStreamContentType, "/model/"},
	{"vertex", "vertex:claude-sonnet-4-5@20250929", func(s *llmserver.Server) map[string]any {
		return map[string]any{"base_url": s.URL, "project": "canary-project", "region": "us-east5"}
	}, nil, cassette.APIVertexAnthropic, "us-east5-aiplatform.googleapis.com", false, "text/event-stream", "/publishers/anthropic/"},
	{"azure-chat", "azure_openai:gpt-4o-deployment", func(s *llmserver.Server) map[string]any { return map[string]any{"base_url": s.URL} },
		nil, cassette.APIOpenAIChat, "example-resource.openai.azure.com", true, "text/event-stream", "/openai/deployments/gpt-4o-deployment/"},
	{"azure-responses", "azure_openai:gpt-4o-deployment", func(s *llmserver.Server) map[string]any {
		return map[string]any{"base_url": s.URL, "use_responses_api": true}
	}, map[string]any{"use_responses_api": true}, cassette.APIOpenAIResponses, "example-resource.openai.azure.com", true, "text/event-stream", "/openai/responses"},
}

// newServer starts the local server a case records against.
func newServer(wc wireCase, opts ...llmserver.Option) *llmserver.Server {
	if wc.tls {
		return llmserver.NewTLSServer(script(), opts...)
	}
	return llmserver.NewServer(script(), opts...)
}

// liveTransport is what reaches srv while recording.
func liveTransport(wc wireCase, srv *llmserver.Server) http.RoundTripper {
	if wc.tls {
		return srv.Client().Transport
	}
	return http.DefaultTransport
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
	srv := newServer(wc, llmserver.WithAPIKey(canary))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), wc.name+".yaml")
	rec, r, err := replay.Open(path, provider.Config{Getenv: canaryEnv},
		recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(canaryEnv), recorder.WithRecordedHost(wc.host),
		recorder.WithRealTransport(liveTransport(wc, srv)))
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
			for _, secret := range canaries {
				assert.NotContains(t, string(data), secret, "no credential reaches the cassette")
			}
			for _, h := range append(cassette.SigningHeaders, "X-Amz-Security-Token: [") {
				assert.NotContains(t, string(data), h, "no signature material reaches the cassette")
			}
			assert.NotContains(t, string(data), "127.0.0.1", "recorded under the provider's host")
			assert.Contains(t, string(data), cassette.Redacted)
			c, err := cassette.Read(path)
			require.NoError(t, err)
			require.Len(t, c.Interactions, 3)
			assert.Equal(t, wc.streamType, strings.Split(c.Interactions[1].Response.Headers.Get("Content-Type"), ";")[0])

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
			assert.Contains(t, err.Error(), wc.pathPart)
			assert.Equal(t, llm.ErrConnection, llm.KindOf(err))
		})
	}
}

// headers keeps the headers of every request that passes through it.
type headers struct {
	next http.RoundTripper
	got  []http.Header
}

func (h *headers) RoundTrip(req *http.Request) (*http.Response, error) {
	h.got = append(h.got, req.Header.Clone())
	return h.next.RoundTrip(req)
}

// TestCloudReplayMatchesIgnoringSignatures: the recorder sees Bedrock's
// requests signed (Authorization, X-Amz-Date, the session token) and keeps
// none of it; a replay signed with another key at another time matches.
func TestCloudReplayMatchesIgnoringSignatures(t *testing.T) {
	wc := wireCases[slices.IndexFunc(wireCases, func(w wireCase) bool { return w.name == "bedrock" })]
	srv := newServer(wc, llmserver.WithAPIKey(canary))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "bedrock.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(canaryEnv), recorder.WithRealTransport(liveTransport(wc, srv)))
	require.NoError(t, err)
	seen := &headers{next: rec}
	cfg := rec.ProviderConfig(provider.Config{Getenv: canaryEnv})
	cfg.HTTPClient = &http.Client{Transport: seen}
	_, err = runFamily(t, builtin.NewResolver(cfg), wc.spec, wc.options(srv), family)
	require.NoError(t, err)
	require.NoError(t, rec.Stop())
	require.NotEmpty(t, seen.got)
	for _, h := range seen.got {
		assert.True(t, strings.HasPrefix(h.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+canary+"/"), "the recorder sees the signed request")
		assert.Equal(t, canarySession, h.Get("X-Amz-Security-Token"))
		assert.NotEmpty(t, h.Get("X-Amz-Date"))
	}

	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	replayed := &headers{next: rep}
	cfg = rep.ProviderConfig(provider.Config{Getenv: noEnv})
	cfg.HTTPClient = &http.Client{Transport: replayed}
	_, err = runFamily(t, builtin.NewResolver(cfg), wc.spec, wc.replayed, family)
	require.NoError(t, err, "signed with the placeholder key at another time, the replay matches")
	assert.Empty(t, rep.Unplayed())
	require.Len(t, replayed.got, 3)
	for _, h := range replayed.got {
		assert.True(t, strings.HasPrefix(h.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=REPLAYKEYID/"))
	}
}
