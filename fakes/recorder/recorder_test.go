package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/internal/posttest"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/internal/scrub"
)

// canary is an API key that must never reach a cassette.
const canary = "sk-ant-api03-CANARY-7f3a9c1e5b2d4f6a8c0e1d3b"

// roundTrip is one request of each wire format, streamed and not.
var roundTrip = []struct {
	name, path, body string
	headers          []string
}{
	{"anthropic json", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":256,"system":"Be brief.","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"name":"get_weather","description":"Current weather.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`, posttest.AnthropicHeaders(canary)},
	{"anthropic sse", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"tool_use","id":"call_1_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1_1","content":"sunny, 21C"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`, posttest.AnthropicHeaders(canary)},
	{"chat json", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Tokyo?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`, posttest.OpenAIHeaders(canary)},
	{"chat sse", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Weather in Tokyo?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_3_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]},{"role":"tool","tool_call_id":"call_3_1","content":"rain, 17C"}]}`, posttest.OpenAIHeaders(canary)},
	{"responses json", "/v1/responses", `{"model":"gpt-5","instructions":"Be brief.","input":"Weather in Rome?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":false}]}`, posttest.OpenAIHeaders(canary)},
	{"responses sse", "/v1/responses", `{"model":"gpt-5","stream":true,"input":[{"role":"user","content":"Weather in Rome?"},{"type":"function_call","call_id":"call_5_1","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},{"type":"function_call_output","call_id":"call_5_1","output":"windy, 15C"}]}`, posttest.OpenAIHeaders(canary)},
}

func roundTripModel() *fakes.Scripted {
	return fakes.NewScripted(
		fakes.Calls("Let me look.", fakes.Call("get_weather", map[string]string{"city": "Paris"})),
		fakes.Reply("Paris is sunny at 21C."),
		fakes.Calls("", fakes.Call("get_weather", map[string]string{"city": "Tokyo"})),
		fakes.Reply("Tokyo has rain at 17C."),
		fakes.Calls("", fakes.Call("get_weather", map[string]string{"city": "Rome"})),
		fakes.Reply("Rome is windy at 15C."),
	)
}

// recordRoundTrip records roundTrip against a fresh local server into path,
// without timings, which would make two recordings differ.
func recordRoundTrip(t *testing.T, path string) []posttest.Result {
	t.Helper()
	srv := llmserver.NewServer(roundTripModel(), llmserver.WithAPIKey(canary))
	defer srv.Close()
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv), recorder.WithRecordedHost("api.provider.test"), recorder.WithoutLatency())
	require.NoError(t, err)
	var out []posttest.Result
	for _, rt := range roundTrip {
		r := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+rt.path, rt.body, rt.headers...)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", rt.name, r.Body)
		out = append(out, r)
	}
	require.NoError(t, rec.Stop())
	return out
}

func TestRecordReplayRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "roundtrip.yaml")
	recorded := recordRoundTrip(t, path)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), canary, "the API key reached the cassette")
	assert.NotContains(t, string(data), "CANARY")
	assert.Contains(t, string(data), "X-Api-Key:\n          - REDACTED")
	assert.Contains(t, string(data), "Authorization:\n          - REDACTED")
	assert.Contains(t, string(data), "json_bodies: indented")
	assert.Contains(t, string(data), "body: |-\n        {\n          \"model\": \"claude-sonnet-4-5\",\n", "JSON bodies are stored a field a line")
	assert.Contains(t, string(data), "url: http://api.provider.test/v1/messages")
	assert.NotContains(t, string(data), "127.0.0.1")
	assert.NotContains(t, string(data), "Date:", "volatile headers are dropped")
	assert.Contains(t, string(data), "event: message_start", "SSE bodies are stored verbatim")

	// go-vcr itself can load what we wrote.
	gc, err := vcr.Load(strings.TrimSuffix(path, ".yaml"))
	require.NoError(t, err)
	require.Len(t, gc.Interactions, len(roundTrip))

	// A second recording of the same exchanges, against another server on
	// another port, writes the same bytes.
	again := filepath.Join(dir, "again.yaml")
	recordRoundTrip(t, again)
	data2, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(data2), "re-recording is not deterministic")

	// Replay offline: the server is gone, the transport refuses everything,
	// and the client uses another key; the bodies come back byte for byte.
	network := &countingTransport{}
	rep, err := recorder.New(path, recorder.WithGetenv(noEnv), recorder.WithRealTransport(network))
	require.NoError(t, err)
	assert.Equal(t, recorder.ModeReplay, rep.Mode())
	assert.Equal(t, "default", rep.ModeReason())
	for i, rt := range roundTrip {
		hdr := slicesReplace(rt.headers, canary, "sk-another-key-entirely-000000000000")
		r := posttest.MustPost(t, context.Background(), rep.Client(), "http://127.0.0.1:9"+rt.path, rt.body, hdr...)
		assert.Equal(t, recorded[i].Status, r.Status, rt.name)
		assert.Equal(t, recorded[i].Body, r.Body, "%s: replayed body differs", rt.name)
		assert.Equal(t, recorded[i].Header.Get("Content-Type"), r.Header.Get("Content-Type"), rt.name)
	}
	assert.Empty(t, rep.Unplayed())
	assert.Zero(t, network.n.Load(), "replay went to the network")
	require.NoError(t, rep.Stop())
	after, _ := os.ReadFile(path)
	assert.Equal(t, string(data), string(after), "replay must not rewrite the cassette")
}

func slicesReplace(s []string, old, new string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.ReplaceAll(v, old, new)
	}
	return out
}

func TestRecorderRedactsEverySensitiveHeader(t *testing.T) {
	const setCookie = "session=very-secret-session-cookie"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Set-Cookie", setCookie)
		w.Header().Set("Openai-Organization", "org-abcdefgh12345678")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "redact.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv), recorder.WithRedactHeaders("X-Custom-Token"))
	require.NoError(t, err)
	secrets := map[string]string{
		"Authorization":       "Bearer tok-authorization-0001",
		"X-Api-Key":           "tok-x-api-key-0002",
		"Api-Key":             "tok-api-key-0003",
		"Openai-Organization": "org-request-0004",
		"Openai-Project":      "proj_request_0005",
		"Cookie":              "sid=tok-cookie-0006",
		"X-Custom-Token":      "tok-custom-0007",
		"X-Goog-Api-Key":      "tok-goog-api-key-0009",
		"X-Stainless-Os":      "Linux",
		"X-Server-Timeout":    "599",
	}
	hdr := []string{"X-Goog-Api-Client", "google-genai-sdk/1.77.0 gl-go"} // kept: not a secret, not volatile
	for k, v := range secrets {
		hdr = append(hdr, k, v)
	}
	posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/chat/completions?key=tok-query-0008&api-version=2024", `{"model":"m"}`, hdr...)
	require.NoError(t, rec.Stop())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for k, v := range secrets {
		assert.NotContains(t, string(data), v, "value of %s", k)
	}
	for _, v := range []string{"tok-query-0008", setCookie, "org-abcdefgh12345678"} {
		assert.NotContains(t, string(data), v)
	}
	c, err := cassette.Read(path)
	require.NoError(t, err)
	it := c.Interactions[0]
	for _, h := range []string{"Authorization", "X-Api-Key", "Api-Key", "Openai-Organization", "Openai-Project", "Cookie", "X-Custom-Token", "X-Goog-Api-Key"} {
		assert.Equal(t, []string{cassette.Redacted}, it.Request.Headers.Values(h), h)
	}
	assert.Empty(t, it.Request.Headers.Values("X-Stainless-Os"), "machine-specific headers are dropped")
	assert.Empty(t, it.Request.Headers.Values("X-Server-Timeout"), "so is the time left before a deadline")
	assert.Equal(t, []string{"google-genai-sdk/1.77.0 gl-go"}, it.Request.Headers.Values("X-Goog-Api-Client"), "the Gemini adapter already strips the Go version")
	assert.Equal(t, []string{cassette.Redacted}, it.Response.Headers.Values("Set-Cookie"))
	assert.Equal(t, []string{cassette.Redacted}, it.Response.Headers.Values("Openai-Organization"))
	assert.Contains(t, it.Request.URL, "key=REDACTED")
	assert.Contains(t, it.Request.URL, "api-version=2024")
	assert.Positive(t, it.Response.Duration, "the exchange's duration is kept")
	assert.Empty(t, it.Response.Headers.Values(provider.FirstEventHeader), "a JSON answer has no first event")

	// A replay with the real key in the query still matches: credentials are not part of the key.
	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	r := posttest.MustPost(t, context.Background(), rep.Client(), srv.URL+"/v1/chat/completions?api-version=2024&key=other", `{"model":"m"}`)
	assert.Equal(t, `{"ok":true}`, r.Body)
}

// A server that echoes a secret back gets it recorded, and served, as
// scrub.Marker: the cassette is written without it, and a replayed request
// that carries the secret again matches the scrubbed recording.
func TestRecorderScrubsEchoedSecrets(t *testing.T) {
	const key = "sk-proj-SECRETVALUE0123456789abcdefXYZ"
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A misbehaving server that echoes what it was sent.
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"auth":%q,"note":%q,"body":%q}`, r.Header.Get("Authorization"), r.URL.Query().Get("say"), body)
	})
	srv := httptest.NewServer(echo)
	defer srv.Close()
	tests := []struct {
		name   string
		opts   []recorder.Option
		header []string
		secret string
		say    bool
	}{
		{"credential seen in a header is echoed", nil, []string{"Authorization", "Bearer plain-token-seen-in-header-42"}, "plain-token-seen-in-header-42", false},
		{"configured secret in a body", []recorder.Option{recorder.WithSecrets("configured-secret-value-77")}, nil, "configured-secret-value-77", true},
		{"secret from the environment", []recorder.Option{recorder.WithGetenv(env("OPENAI_API_KEY", "env-secret-value-123456"))}, nil, "env-secret-value-123456", true},
		{"key-shaped string in a body", nil, nil, key, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "secret.yaml")
			opts := append([]recorder.Option{recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv)}, tt.opts...)
			rec, err := recorder.New(path, opts...)
			require.NoError(t, err)
			say, reqBody := "", `{}`
			if tt.say {
				say, reqBody = tt.secret, `{"tool_result":"`+tt.secret+`"}`
			}
			r := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/x?say="+say, reqBody, tt.header...)
			require.Equal(t, 200, r.Status)
			assert.NotContains(t, r.Body, tt.secret, "the agent is served the answer as it is kept")
			assert.Contains(t, r.Body, scrub.Marker)
			require.NoError(t, rec.Stop())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.NotContains(t, string(data), tt.secret)
			assert.Contains(t, string(data), scrub.Marker)
			probs, err := cassette.LintFile(path, cassette.LintOptions{Secrets: []string{tt.secret}})
			require.NoError(t, err)
			assert.Empty(t, probs)

			// The replayed request holds the secret again (a tool printed
			// it); scrubbed as the recording was, it matches.
			rep, err := recorder.New(path, append([]recorder.Option{recorder.WithGetenv(noEnv)}, tt.opts...)...)
			require.NoError(t, err)
			r = posttest.MustPost(t, context.Background(), rep.Client(), srv.URL+"/v1/x?say="+say, reqBody, tt.header...)
			assert.Equal(t, 200, r.Status, r.Body)
			assert.NotContains(t, r.Body, tt.secret)
			assert.Empty(t, rep.Unplayed())
		})
	}
}

func TestResolveMode(t *testing.T) {
	tests := []struct {
		requested recorder.Mode
		env       []string
		want      recorder.Mode
		reason    string
		err       string
	}{
		{"", nil, recorder.ModeReplay, "default", ""},
		{"", []string{"DAGEVAL_RECORD", "1"}, recorder.ModeRecord, "DAGEVAL_RECORD=1", ""},
		{"", []string{"DAGEVAL_RECORD", "missing"}, recorder.ModeRecordMissing, "DAGEVAL_RECORD=missing", ""},
		{"", []string{"DAGEVAL_RECORD", "0"}, recorder.ModeReplay, "default", ""},
		{"", []string{"DAGEVAL_RECORD", "sometimes"}, "", "", "DAGEVAL_RECORD"},
		{recorder.ModeLive, []string{"DAGEVAL_RECORD", "1"}, recorder.ModeLive, "requested", ""},
		{recorder.ModeRecord, []string{"CI", "true"}, recorder.ModeReplay, "CI=true forces replay (record was requested)", ""},
		{recorder.ModeLive, []string{"CI", "1"}, recorder.ModeLive, "requested", ""},
		{recorder.ModeRecordMissing, []string{"CI", "1"}, recorder.ModeReplay, "CI=true forces replay (record-missing was requested)", ""},
		{"", []string{"CI", "true", "DAGEVAL_RECORD", "1"}, recorder.ModeReplay, "CI=true forces replay", ""},
		{"", []string{"CI", "false", "DAGEVAL_RECORD", "1"}, recorder.ModeRecord, "DAGEVAL_RECORD=1", ""},
		{"bogus", nil, "", "", "unknown mode"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.requested, tt.env), func(t *testing.T) {
			got, reason, err := recorder.ResolveMode(tt.requested, env(tt.env...))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.reason, reason)
		})
	}
}

func TestCIForcesReplay(t *testing.T) {
	ci := env("CI", "true", "DAGEVAL_RECORD", "1")
	network := &countingTransport{}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, m := range []recorder.Mode{"", recorder.ModeReplay, recorder.ModeRecord, recorder.ModeRecordMissing} {
		_, err := recorder.New(missing, recorder.WithMode(m), recorder.WithGetenv(ci), recorder.WithRealTransport(network))
		require.ErrorIs(t, err, recorder.ErrCassetteNotFound, "mode %q", m)
		assert.ErrorContains(t, err, "CI=true")
		assert.ErrorContains(t, err, missing)
	}
	_, err := os.Stat(missing)
	assert.True(t, os.IsNotExist(err), "nothing may be created in CI")

	// Live, asked for by name, stays live: a CI job may run against a local server.
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("live in CI")))
	defer srv.Close()
	live, err := recorder.New(missing, recorder.WithMode(recorder.ModeLive), recorder.WithGetenv(ci))
	require.NoError(t, err)
	assert.Equal(t, recorder.ModeLive, live.Mode())
	assert.Contains(t, posttest.MustPost(t, context.Background(), live.Client(), srv.URL+"/v1/messages", turnBody("Oslo"), posttest.AnthropicHeaders("k")...).Body, "live in CI")
	require.NoError(t, live.Stop())
	_, err = os.Stat(missing)
	assert.True(t, os.IsNotExist(err))

	// With a cassette, a request it lacks is an error, never a network call.
	path := filepath.Join(t.TempDir(), "ci.yaml")
	recordRoundTrip(t, path)
	before, _ := os.ReadFile(path)
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecordMissing), recorder.WithGetenv(ci), recorder.WithRealTransport(network))
	require.NoError(t, err)
	assert.Equal(t, recorder.ModeReplay, rec.Mode())
	assert.Contains(t, rec.ModeReason(), "CI=true")
	_, err = posttest.Post(t, context.Background(), rec.Client(), "http://api.provider.test/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[{"role":"user","content":"never recorded"}]}`)
	var miss *recorder.MissError
	require.ErrorAs(t, err, &miss)
	require.ErrorIs(t, err, recorder.ErrInteractionNotFound)
	require.NoError(t, rec.Stop())
	assert.Zero(t, network.n.Load(), "CI replay went to the network")
	after, _ := os.ReadFile(path)
	assert.Equal(t, string(before), string(after))
}

// conversation is a two-turn exchange in the Anthropic format.
func turnBody(city string, history ...string) string {
	msgs := []string{fmt.Sprintf(`{"role":"user","content":"Weather in %s?"}`, city)}
	msgs = append(msgs, history...)
	return fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[%s]}`, strings.Join(msgs, ","))
}

func TestReplayMissShowsTheDiff(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("It is sunny."), fakes.Reply("Still sunny."), fakes.Reply("Rainy.")))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "miss.yaml")
	ctx := recorder.WithLane(context.Background(), "main")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	turn1 := turnBody("Paris")
	turn2 := turnBody("Paris", `{"role":"assistant","content":"It is sunny."}`, `{"role":"user","content":"And tomorrow in Paris?"}`)
	posttest.MustPost(t, ctx, rec.Client(), srv.URL+"/v1/messages", turn1, posttest.AnthropicHeaders("k")...)
	posttest.MustPost(t, ctx, rec.Client(), srv.URL+"/v1/messages", turn2, posttest.AnthropicHeaders("k")...)
	posttest.MustPost(t, recorder.WithLane(context.Background(), "grader"), rec.Client(), srv.URL+"/v1/messages", turnBody("Oslo"), posttest.AnthropicHeaders("k")...)
	require.NoError(t, rec.Stop())

	replay := func() *recorder.Recorder {
		r, err := recorder.New(path, recorder.WithGetenv(noEnv))
		require.NoError(t, err)
		return r
	}

	t.Run("changed request", func(t *testing.T) {
		rep := replay()
		posttest.MustPost(t, ctx, rep.Client(), srv.URL+"/v1/messages", turn1)
		changed := strings.Replace(turn2, "And tomorrow in Paris?", "And tomorrow in Rome?", 1)
		_, err := posttest.Post(t, ctx, rep.Client(), srv.URL+"/v1/messages", changed)
		var miss *recorder.MissError
		require.ErrorAs(t, err, &miss)
		assert.Equal(t, 2, miss.Nearest, "the lane's unused interaction is the nearest") // lane "" sorts first, so main's second turn is index 2
		assert.Equal(t, "main", miss.Lane)
		msg := err.Error()
		for _, want := range []string{
			"replay miss in " + path,
			`POST ` + srv.URL + `/v1/messages (lane "main", match body)`,
			"--- recorded interaction 2",
			"+++ request",
			`-      "content": "And tomorrow in Paris?",`,
			`+      "content": "And tomorrow in Rome?",`,
			"not yet replayed",
			path + ":",
			"DAGEVAL_RECORD=1",
		} {
			assert.Contains(t, msg, want)
		}
		assert.NotContains(t, msg, `-      "content": "Weather in Paris?"`, "unchanged lines are context, not changes")
	})

	t.Run("more calls than recorded", func(t *testing.T) {
		rep := replay()
		posttest.MustPost(t, ctx, rep.Client(), srv.URL+"/v1/messages", turn1)
		posttest.MustPost(t, ctx, rep.Client(), srv.URL+"/v1/messages", turn2)
		_, err := posttest.Post(t, ctx, rep.Client(), srv.URL+"/v1/messages", turn2)
		require.ErrorContains(t, err, "was already replayed: the run made more calls than were recorded")
		require.ErrorContains(t, err, "already replayed")
	})

	t.Run("wrong lane", func(t *testing.T) {
		rep := replay()
		_, err := posttest.Post(t, recorder.WithLane(context.Background(), "main/task:other"), rep.Client(), srv.URL+"/v1/messages", turn1)
		require.ErrorContains(t, err, "in other lanes")
		// the default lane cannot take interactions recorded in a lane either
		_, err = posttest.Post(t, context.Background(), rep.Client(), srv.URL+"/v1/messages", turn1)
		require.ErrorContains(t, err, "in other lanes")
	})

	t.Run("only stream differs", func(t *testing.T) {
		rep := replay()
		streamed := strings.Replace(turn1, `"max_tokens":256,`, `"max_tokens":256,"stream":true,`, 1)
		_, err := posttest.Post(t, ctx, rep.Client(), srv.URL+"/v1/messages", streamed)
		var miss *recorder.MissError
		require.ErrorAs(t, err, &miss)
		for _, want := range []string{
			"only in `stream`: the recording was not streamed (stream: false) and this run's call is streamed (stream: true)",
			"set `stream: false` on the model in the suite's models list",
		} {
			assert.Contains(t, miss.Summary, want)
		}
		_, err = posttest.Post(t, ctx, rep.Client(), srv.URL+"/v1/messages", strings.Replace(streamed, "Paris", "Rome", 1))
		require.ErrorAs(t, err, &miss)
		assert.NotContains(t, miss.Summary, "only in `stream`", "another difference is not a stream mismatch")
	})

	t.Run("unknown route", func(t *testing.T) {
		rep := replay()
		_, err := posttest.Post(t, ctx, rep.Client(), srv.URL+"/v1/chat/completions", `{"model":"x"}`)
		require.ErrorContains(t, err, "no interaction for POST /v1/chat/completions; its 3 interactions are for POST /v1/messages")
		require.ErrorContains(t, err, `"model": "x"`, "the unmatched request body is shown")
	})
}

func TestIgnoreFields(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewRuleModel(fakes.Rule{Reply: func(*llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Assistant("ok")}, nil
	}}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "ignore.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	recorded := `{"model":"claude-sonnet-4-5","max_tokens":64,"temperature":0.5,"metadata":{"user_id":"run-1"},"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", recorded, posttest.AnthropicHeaders("k")...)
	require.NoError(t, rec.Stop())

	tests := []struct {
		name   string
		ignore []string
		body   string
		match  bool
	}{
		{"same request with keys reordered and spaced", nil, `{ "temperature": 0.5, "model":"claude-sonnet-4-5","max_tokens":64,"metadata":{"user_id":"run-1"},"system":[{"cache_control":{"type":"ephemeral"},"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"type":"text","text":"hi"}]}]}`, true},
		{"metadata is volatile by default", nil, strings.Replace(recorded, "run-1", "run-2", 1), true},
		{"temperature differs", nil, strings.Replace(recorded, "0.5", "0.7", 1), false},
		{"temperature ignored", []string{"temperature"}, strings.Replace(recorded, "0.5", "0.7", 1), true},
		{"cache markers differ", nil, strings.ReplaceAll(recorded, `,"cache_control":{"type":"ephemeral"}`, ""), false},
		{"cache markers ignored at any depth", []string{"**.cache_control"}, strings.ReplaceAll(recorded, `,"cache_control":{"type":"ephemeral"}`, ""), true},
		{"cache markers ignored by wildcard path", []string{"messages.*.content.*.cache_control", "system.*.cache_control"}, strings.ReplaceAll(recorded, `,"cache_control":{"type":"ephemeral"}`, ""), true},
		{"the text still counts", []string{"**.cache_control"}, strings.Replace(recorded, `"hi"`, `"hello"`, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := recorder.New(path, recorder.WithGetenv(noEnv), recorder.WithIgnoreFields(tt.ignore...))
			require.NoError(t, err)
			_, err = posttest.Post(t, context.Background(), rep.Client(), srv.URL+"/v1/messages", tt.body)
			if tt.match {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, recorder.ErrInteractionNotFound)
			}
		})
	}
	_, err = recorder.New(path, recorder.WithGetenv(noEnv), recorder.WithIgnoreFields("a..b"))
	assert.ErrorContains(t, err, "empty segment")
}

func TestRecordMissing(t *testing.T) {
	model := fakes.NewScripted(fakes.Reply("first"), fakes.Reply("second"))
	srv := llmserver.NewServer(model)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "missing.yaml")

	// record-missing with no cassette starts one
	rec, err := recorder.New(path, recorder.WithGetenv(env("DAGEVAL_RECORD", "missing")))
	require.NoError(t, err)
	assert.Equal(t, recorder.ModeRecordMissing, rec.Mode())
	first := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
	require.NoError(t, rec.Stop())
	assert.Len(t, srv.Requests(), 1)

	rec, err = recorder.New(path, recorder.WithMode(recorder.ModeRecordMissing), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	again := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
	assert.Equal(t, first.Body, again.Body, "what the cassette has is replayed")
	assert.Len(t, srv.Requests(), 1, "a replayed call does not reach the server")
	second := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Oslo"), posttest.AnthropicHeaders("k")...)
	assert.Contains(t, second.Body, "second")
	assert.Len(t, srv.Requests(), 2)
	require.NoError(t, rec.Stop())

	c, err := cassette.Read(path)
	require.NoError(t, err)
	require.Len(t, c.Interactions, 2)
	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	assert.Equal(t, second.Body, posttest.MustPost(t, context.Background(), rep.Client(), srv.URL+"/v1/messages", turnBody("Oslo")).Body)
}

func TestLiveModeKeepsNothing(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("live answer")))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "live.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeLive), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	r := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/messages", turnBody("Paris"), posttest.AnthropicHeaders("k")...)
	assert.Contains(t, r.Body, "live answer")
	require.NoError(t, rec.Stop())
	_, err = os.Stat(path)
	assert.True(t, os.IsNotExist(err))
}

func TestRequestsAfterStopFail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stop.yaml")
	recordRoundTrip(t, path)
	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	require.NoError(t, rep.Stop())
	require.NoError(t, rep.Stop(), "Stop is idempotent")
	_, err = posttest.Post(t, context.Background(), rep.Client(), "http://api.provider.test"+roundTrip[0].path, roundTrip[0].body)
	assert.ErrorIs(t, err, recorder.ErrStopped)
}

// TestConcurrentLanesReplayDeterministically records two subagents that
// send identical requests and get different answers (the server answers in
// arrival order), with one interleaving, and replays them with others: each
// lane gets its own answers.
func TestConcurrentLanesReplayDeterministically(t *testing.T) {
	const turns = 3
	lanes := []string{"main/task:a", "main/task:b"}
	bodyFor := func(turn int) string {
		return fmt.Sprintf(`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"step %d"}]}`, turn)
	}
	// run drives both lanes concurrently, but lets them take turns in the given order.
	run := func(t *testing.T, c *http.Client, url string, order []int) map[string][]string {
		t.Helper()
		var mu sync.Mutex
		cond := sync.NewCond(&mu)
		pos := 0
		got := map[string][]string{}
		var wg sync.WaitGroup
		for li, lane := range lanes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := recorder.WithLane(context.Background(), lane)
				for turn := 1; turn <= turns; turn++ {
					mu.Lock()
					for order[pos] != li {
						cond.Wait()
					}
					r, err := posttest.Post(t, ctx, c, url, bodyFor(turn), posttest.AnthropicHeaders("k")...)
					text := ""
					if err != nil {
						text = "error: " + err.Error()
					} else {
						var msg struct {
							Content []struct{ Text string } `json:"content"`
						}
						_ = json.Unmarshal([]byte(r.Body), &msg)
						if len(msg.Content) > 0 {
							text = msg.Content[0].Text
						}
					}
					got[lane] = append(got[lane], text)
					pos++
					cond.Broadcast()
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return got
	}

	for _, match := range []cassette.Match{cassette.MatchBody, cassette.MatchOrder} {
		t.Run(string(match), func(t *testing.T) {
			model := fakes.NewScripted(fakes.Reply("r1"), fakes.Reply("r2"), fakes.Reply("r3"), fakes.Reply("r4"), fakes.Reply("r5"), fakes.Reply("r6"))
			srv := llmserver.NewServer(model)
			defer srv.Close()
			path := filepath.Join(t.TempDir(), "lanes.yaml")
			rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithMatch(match), recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			recorded := run(t, rec.Client(), srv.URL+"/v1/messages", []int{0, 1, 1, 0, 0, 1})
			require.NoError(t, rec.Stop())
			require.Equal(t, map[string][]string{"main/task:a": {"r1", "r4", "r5"}, "main/task:b": {"r2", "r3", "r6"}}, recorded)

			for _, order := range [][]int{{1, 1, 1, 0, 0, 0}, {0, 0, 0, 1, 1, 1}, {1, 0, 1, 0, 1, 0}} {
				rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
				require.NoError(t, err)
				assert.Equal(t, match, rep.Match(), "the cassette declares its match mode")
				assert.Equal(t, recorded, run(t, rep.Client(), "http://api.provider.test/v1/messages", order), "order %v", order)
			}
		})
	}
}

// TestConcurrentRecordingIsDeterministic records the same two-lane work with
// different interleavings and gets the same file.
func TestConcurrentRecordingIsDeterministic(t *testing.T) {
	model := func() llm.ChatModel {
		return fakes.NewRuleModel(fakes.Rule{Reply: func(req *llm.Request) (*llm.Response, error) {
			return &llm.Response{Message: llm.Assistant("answer to " + req.Messages[len(req.Messages)-1].Text())}, nil
		}})
	}
	record := func(path string, laneFirst int) {
		srv := llmserver.NewServer(model())
		defer srv.Close()
		rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv), recorder.WithRecordedHost("api.provider.test"), recorder.WithoutLatency())
		require.NoError(t, err)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i, lane := range []string{"main/task:a", "main/task:b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i != laneFirst {
					<-gate // the other lane finishes first
				}
				ctx := recorder.WithLane(context.Background(), lane)
				for turn := 1; turn <= 3; turn++ {
					posttest.MustPost(t, ctx, rec.Client(), srv.URL+"/v1/messages", fmt.Sprintf(`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"%s step %d"}]}`, lane, turn), posttest.AnthropicHeaders("k")...)
				}
				if i == laneFirst {
					close(gate)
				}
			}()
		}
		wg.Wait()
		require.NoError(t, rec.Stop())
	}
	dir := t.TempDir()
	record(filepath.Join(dir, "a-first.yaml"), 0)
	record(filepath.Join(dir, "b-first.yaml"), 1)
	a, _ := os.ReadFile(filepath.Join(dir, "a-first.yaml"))
	b, _ := os.ReadFile(filepath.Join(dir, "b-first.yaml"))
	assert.Equal(t, string(a), string(b))
	c, err := cassette.Read(filepath.Join(dir, "a-first.yaml"))
	require.NoError(t, err)
	var got []string
	for i := range c.Interactions {
		got = append(got, c.Lane(i))
	}
	assert.Equal(t, []string{"main/task:a", "main/task:a", "main/task:a", "main/task:b", "main/task:b", "main/task:b"}, got, "interactions are grouped by lane")
}

// httpModel is a chat model that calls a provider over HTTP with the call's
// context, as the SDK-based adapters do.
type httpModel struct {
	client *http.Client
	url    string
	t      *testing.T
}

func (m httpModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	body := fmt.Sprintf(`{"model":"m","max_tokens":32,"messages":[{"role":"user","content":%q}]}`, req.Messages[len(req.Messages)-1].Text())
	r, err := posttest.Post(m.t, ctx, m.client, m.url, body, posttest.AnthropicHeaders("k")...)
	if err != nil {
		return nil, err
	}
	var msg struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.Body), &msg); err != nil || len(msg.Content) == 0 {
		return nil, fmt.Errorf("bad answer %q", r.Body)
	}
	return &llm.Response{Message: llm.Assistant(msg.Content[0].Text)}, nil
}

func TestLaneComesFromTheAgentPath(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("from the researcher")))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "agent.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	a, err := agent.New(agent.Config{Model: httpModel{rec.Client(), srv.URL + "/v1/messages", t}})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("find it")}}, agent.WithAgentPath("main/task:researcher"))
	require.NoError(t, err)
	require.NoError(t, rec.Stop())
	assert.Equal(t, "from the researcher", res.State.Messages[len(res.State.Messages)-1].Text())
	c, err := cassette.Read(path)
	require.NoError(t, err)
	require.Len(t, c.Interactions, 1)
	assert.Equal(t, "main/task:researcher", c.Lane(0))

	// An explicit lane wins over the agent path.
	ctx := recorder.WithLane(context.Background(), "grader")
	assert.Equal(t, "grader", recorder.LaneOf(ctx))
	assert.Equal(t, "", recorder.LaneOf(context.Background()))

	// Replayed inside the same agent path, the run gets its answer without a server.
	srv.Close()
	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	a, err = agent.New(agent.Config{Model: httpModel{rep.Client(), srv.URL + "/v1/messages", t}})
	require.NoError(t, err)
	res, err = a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("find it")}}, agent.WithAgentPath("main/task:researcher"))
	require.NoError(t, err)
	assert.Equal(t, "from the researcher", res.State.Messages[len(res.State.Messages)-1].Text())
}

func TestTestCassettePath(t *testing.T) {
	t.Run("sub test/with spaces", func(t *testing.T) {
		assert.Equal(t, filepath.Join("testdata", "cassettes", "TestTestCassettePath", "sub_test", "with_spaces.yaml"), recorder.TestCassettePath(t))
	})
}

func TestReplayingACorruptCassetteFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte("---\nversion: 2\ninteractions:\n    - id: 0\n      request:\n        method: POST\n      response:\n        code: 200\n"), 0o644))
	_, err := recorder.New(path, recorder.WithGetenv(noEnv))
	var pe *cassette.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 4, pe.Line)
	assert.Contains(t, err.Error(), "bad.yaml:4: interaction 0: request.url is missing")

	require.NoError(t, os.WriteFile(path, []byte("---\nversion: 2\ninteractions:\n    - id: 0\n      reqest: {}\n"), 0o644))
	_, err = recorder.New(path, recorder.WithGetenv(noEnv))
	require.ErrorContains(t, err, "reqest")
	require.ErrorContains(t, err, "bad.yaml:5")

	// A vcrpy file is recognised and the error says how to import it.
	_, err = recorder.New("../../cassettes/thirdparty/pydantic-ai/test_openai/test_text_response.yaml", recorder.WithGetenv(noEnv))
	require.ErrorContains(t, err, "dageval cassette import --from vcrpy")

	_, err = recorder.New(path, recorder.WithGetenv(noEnv), recorder.WithMatch("fuzzy"))
	require.ErrorContains(t, err, `unknown match mode "fuzzy"`)
}

// TestReplayReadsBodiesWhateverTheirAnnouncedLength: the recorder reads a
// request body in one piece when its length is announced, and still sees all
// of it when the announcement is missing or too small; a body shorter than
// announced is an error, as it would be on the wire.
func TestReplayReadsBodiesWhateverTheirAnnouncedLength(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	recordRoundTrip(t, path)
	body := roundTrip[0].body
	tests := []struct {
		name   string
		length int64
		ok     bool
	}{
		{"exact", int64(len(body)), true},
		{"unknown", -1, true},
		{"too small", int64(len(body) - 10), true},
		{"too large", int64(len(body) + 10), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := recorder.New(path, recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			defer rec.Stop()
			req, err := http.NewRequest(http.MethodPost, "https://api.provider.test"+roundTrip[0].path, strings.NewReader(body))
			require.NoError(t, err)
			req.ContentLength = tt.length
			resp, err := rec.RoundTrip(req)
			if !tt.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "reading request body")
				return
			}
			require.NoError(t, err, "the whole body matches the recording")
			resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode)
		})
	}
}

func TestReplayImportedRecordingInOrder(t *testing.T) {
	path := filepath.Join(thirdParty, "imported/test_anthropic/test_anthropic_tool_output.yaml")
	rec, err := recorder.New(path, recorder.WithGetenv(noEnv), recorder.WithRealTransport(&countingTransport{}))
	require.NoError(t, err)
	assert.Equal(t, cassette.MatchOrder, rec.Match(), "imported cassettes declare order matching")
	c := rec.Client() // a plain http.Client; the bodies dageval sends differ from pydantic-ai's
	ctx := recorder.WithLane(context.Background(), "main")
	first := posttest.MustPost(t, ctx, c, "https://api.anthropic.com/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"What is the largest city in the user country?"}]}`)
	assert.Contains(t, first.Body, `"name":"get_user_country"`)
	second := posttest.MustPost(t, ctx, c, "https://api.anthropic.com/v1/messages", `{"something":"else entirely"}`)
	assert.Contains(t, second.Body, `"input":{"city":"Mexico City","country":"Mexico"}`)
	assert.Equal(t, "application/json", second.Header.Get("Content-Type"))
	_, err = posttest.Post(t, ctx, c, "https://api.anthropic.com/v1/messages", `{}`)
	require.ErrorContains(t, err, "already replayed")
	require.ErrorContains(t, err, "match order")

	// Streamed recordings replay their SSE body unchanged.
	path = filepath.Join(thirdParty, "imported/test_anthropic/test_anthropic_model_thinking_part_stream.yaml")
	rec, err = recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	r := posttest.MustPost(t, ctx, rec.Client(), "https://api.anthropic.com/v1/messages", `{"stream":true}`)
	assert.True(t, strings.HasPrefix(r.Body, "event: message_start\n"))
	assert.Contains(t, r.Body, `"type":"signature_delta"`)
	assert.Contains(t, r.Body, "event: message_stop\n")
}

// TestRecorderKeepsLatency: a recorded stream keeps its duration and the
// time to its first byte, every answer served tells the adapters its
// recorded duration, and WithoutLatency keeps none.
func TestRecorderKeepsLatency(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"a\":1}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		opts []recorder.Option
		kept bool
	}{{"kept", nil, true}, {"without latency", []recorder.Option{recorder.WithoutLatency()}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stream.yaml")
			rec, err := recorder.New(path, append(tc.opts, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))...)
			require.NoError(t, err)
			live := posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1/chat/completions", `{"stream":true}`)
			require.NoError(t, rec.Stop())
			c, err := cassette.Read(path)
			require.NoError(t, err)
			it := c.Interactions[0]
			first := it.Response.Headers.Get(provider.FirstEventHeader)
			if !tc.kept {
				assert.Zero(t, it.Response.Duration)
				assert.Empty(t, first)
				assert.Equal(t, "unknown", live.Header.Get(provider.DurationHeader))
				return
			}
			assert.Positive(t, it.Response.Duration)
			f, err := time.ParseDuration(first)
			require.NoError(t, err, "first event %q", first)
			assert.Positive(t, f)
			assert.LessOrEqual(t, f, it.Response.Duration)
			assert.Equal(t, it.Response.Duration.String(), live.Header.Get(provider.DurationHeader), "the recording's own answer says it too")

			rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
			require.NoError(t, err)
			r := posttest.MustPost(t, context.Background(), rep.Client(), srv.URL+"/v1/chat/completions", `{"stream":true}`)
			assert.Equal(t, it.Response.Duration.String(), r.Header.Get(provider.DurationHeader))
			assert.Equal(t, first, r.Header.Get(provider.FirstEventHeader))
			assert.Equal(t, live.Body, r.Body, "the stream replays byte for byte")
		})
	}
}

// TestRecorderKeepsGeminiKeysOut: Gemini takes its key in x-goog-api-key
// or a key= query parameter; neither reaches the cassette, a key echoed
// back is refused, and the redacted recording still replays: by body to a
// streamed call (with alt=sse or without: the shape is not the request),
// and in order to a whole call too; by body a whole call misses, saying
// that only the stream differs, as it does where the stream is in the body.
func TestRecorderKeepsGeminiKeysOut(t *testing.T) {
	const key = "AIzaSyD-geminiKeyForTheRecorderTest0123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\r\n\r\n")
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "gemini.yaml")
	rec, err := recorder.New(path, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key="+key, body, "Content-Type", "application/json")
	posttest.MustPost(t, context.Background(), rec.Client(), srv.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body, "X-Goog-Api-Key", key)
	require.NoError(t, rec.Stop())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), key)
	assert.NotContains(t, string(data), "AIza")

	const (
		whole    = "/v1beta/models/gemini-2.5-flash:generateContent"
		streamed = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	)
	rep, err := recorder.New(path, recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	_, err = posttest.Post(t, context.Background(), rep.Client(), srv.URL+whole, body)
	var miss *recorder.MissError
	require.ErrorAs(t, err, &miss)
	for _, want := range []string{
		"only in `stream`: the recording was streamed (stream: true) and this run's call is not streamed (stream: false)",
		"Gemini asks for a stream in the path: the recording called :streamGenerateContent, this run calls :generateContent.",
		"set `stream: true` on the model",
	} {
		assert.Contains(t, miss.Summary, want)
	}
	r := posttest.MustPost(t, context.Background(), rep.Client(), srv.URL+streamed, body)
	assert.Contains(t, r.Body, `"text":"ok"`)
	r = posttest.MustPost(t, context.Background(), rep.Client(), srv.URL+streamed+"?alt=sse", body)
	assert.Contains(t, r.Body, `"text":"ok"`)
	assert.Empty(t, rep.Unplayed())

	// In order, a whole call is answered with the streamed recording.
	ordered, err := recorder.New(path, recorder.WithGetenv(noEnv), recorder.WithMatch(cassette.MatchOrder))
	require.NoError(t, err)
	r = posttest.MustPost(t, context.Background(), ordered.Client(), srv.URL+whole, body)
	assert.Contains(t, r.Body, `"text":"ok"`)
	r = posttest.MustPost(t, context.Background(), ordered.Client(), srv.URL+streamed+"?alt=sse", body)
	assert.Contains(t, r.Body, `"text":"ok"`)
	assert.Empty(t, ordered.Unplayed())

	// A server that echoes the key: the answer the client gets, and the
	// one kept, have it replaced.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":{"code":400,"message":"API key %s not valid.","status":"INVALID_ARGUMENT"}}`, r.Header.Get("X-Goog-Api-Key"))
	}))
	defer echo.Close()
	leak := filepath.Join(t.TempDir(), "leak.yaml")
	rec, err = recorder.New(leak, recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv))
	require.NoError(t, err)
	r = posttest.MustPost(t, context.Background(), rec.Client(), echo.URL+"/v1beta/models/gemini-2.5-flash:generateContent", body, "X-Goog-Api-Key", key)
	assert.NotContains(t, r.Body, key)
	assert.Contains(t, r.Body, "API key "+scrub.Marker+" not valid.")
	require.NoError(t, rec.Stop())
	data, err = os.ReadFile(leak)
	require.NoError(t, err)
	assert.NotContains(t, string(data), key)
	assert.Contains(t, string(data), "API key "+scrub.Marker+" not valid.")
}
