package vertex_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
	"github.com/dageval/dageval/harness/provider/vertex"
)

const model = "claude-sonnet-4-5@20250929"

const message = `{"id":"msg_1","type":"message","role":"assistant","model":"` + model + `","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3}}`

func build(t *testing.T, env *providertest.Env, wire *providertest.Wire, replay bool, options map[string]any) llm.ChatModel {
	t.Helper()
	r := builtin.NewResolver(provider.Config{Getenv: env.Getenv, HTTPClient: &http.Client{Transport: wire}, Replay: replay, Retry: provider.RetryPolicy{MaxAttempts: 1}})
	m, err := r.ResolveWith("vertex:"+model, options)
	require.NoError(t, err)
	return m
}

// TestReplayReadsNoCredentials: a replayed call carries a placeholder
// token and, with nothing configured, a placeholder project on the global
// endpoint; no credential is looked up. The body is Vertex AI's.
func TestReplayReadsNoCredentials(t *testing.T) {
	env := providertest.NewEnv(nil)
	wire := providertest.NewWire(t, providertest.Reply(200, nil, message))
	m := build(t, env, wire, true, nil)
	assert.Empty(t, env.Asked(), "building reads nothing")
	resp, err := m.Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Hello.", resp.Message.Text())
	assert.NotContains(t, env.Asked(), vertex.TokenEnv)

	req := wire.Requests()[0]
	assert.Equal(t, "aiplatform.googleapis.com", req.URL.Host)
	assert.Equal(t, "/v1/projects/replay-project/locations/global/publishers/anthropic/models/"+model+":rawPredict", req.URL.Path)
	assert.Equal(t, "Bearer replay", req.Header.Get("Authorization"))
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(wire.Body(0)), &body))
	assert.Equal(t, vertex.AnthropicVersion, body["anthropic_version"])
	assert.NotContains(t, body, "model")
}

// TestLiveWithAStaticToken: the project and region come from the
// environment, the token from GOOGLE_OAUTH_ACCESS_TOKEN; streaming calls
// go to :streamRawPredict.
func TestLiveWithAStaticToken(t *testing.T) {
	env := providertest.NewEnv(map[string]string{vertex.TokenEnv: "canary-oauth-token", "ANTHROPIC_VERTEX_PROJECT_ID": "my-project", "CLOUD_ML_REGION": "us-east5"})
	sse := providertest.SSE(
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\""+model+"\",\"content\":[],\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi.\"}}\n\n",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	wire := providertest.NewWire(t, sse)
	got := providertest.Collect(t, build(t, env, wire, false, nil).(llm.StreamingModel), providertest.UserRequest("hi"))
	require.NoError(t, got.Err)
	assert.Equal(t, "Hi.", got.Final.Message.Text())
	req := wire.Requests()[0]
	assert.Equal(t, "us-east5-aiplatform.googleapis.com", req.URL.Host)
	assert.Equal(t, "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/"+model+":streamRawPredict", req.URL.Path)
	assert.Equal(t, "Bearer canary-oauth-token", req.Header.Get("Authorization"))
}

// TestEntryWinsOverTheEnvironment: the entry's project and region win.
func TestEntryWinsOverTheEnvironment(t *testing.T) {
	env := providertest.NewEnv(map[string]string{vertex.TokenEnv: "tok", "GOOGLE_CLOUD_PROJECT": "env-project", "GOOGLE_CLOUD_LOCATION": "europe-west1"})
	wire := providertest.NewWire(t, providertest.Reply(200, nil, message))
	_, err := build(t, env, wire, false, map[string]any{"project": "entry-project", "region": "us"}).Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	req := wire.Requests()[0]
	assert.Equal(t, "aiplatform.us.rep.googleapis.com", req.URL.Host)
	assert.Contains(t, req.URL.Path, "/projects/entry-project/locations/us/")
}

// TestNoProject: with a token but no project, the first live call says
// which variables to set.
func TestNoProject(t *testing.T) {
	env := providertest.NewEnv(map[string]string{vertex.TokenEnv: "tok"})
	wire := providertest.NewWire(t)
	_, err := build(t, env, wire, false, nil).Generate(context.Background(), providertest.UserRequest("hi"))
	require.Error(t, err)
	assert.True(t, llm.IsAuthentication(err), "%v", err)
	assert.ErrorContains(t, err, "set ANTHROPIC_VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT")
	assert.Empty(t, wire.Requests())
}

// TestRouteRefusesNamesThatChangeThePath: a region or project that would
// add or climb path segments is refused before anything is sent.
func TestRouteRefusesNamesThatChangeThePath(t *testing.T) {
	for _, options := range []map[string]any{
		{"project": "p", "region": ".."},
		{"project": "..", "region": "us"},
		{"project": "p;x", "region": "us"},
		{"project": "p", "region": "US-EAST5"},
	} {
		env := providertest.NewEnv(map[string]string{vertex.TokenEnv: "tok"})
		wire := providertest.NewWire(t)
		_, err := build(t, env, wire, false, options).Generate(context.Background(), providertest.UserRequest("hi"))
		require.Error(t, err, "%v", options)
		assert.ErrorContains(t, err, "is not a Google Cloud")
		assert.Empty(t, wire.Requests(), "%v", options)
	}
}

// TestRouteEscapesTheModel: a model name is one path segment, whatever
// characters it has.
func TestRouteEscapesTheModel(t *testing.T) {
	env := providertest.NewEnv(map[string]string{vertex.TokenEnv: "tok", "ANTHROPIC_VERTEX_PROJECT_ID": "example.com:my-project"})
	wire := providertest.NewWire(t, providertest.Reply(200, nil, message))
	r := builtin.NewResolver(provider.Config{Getenv: env.Getenv, HTTPClient: &http.Client{Transport: wire}, Retry: provider.RetryPolicy{MaxAttempts: 1}})
	m, err := r.ResolveWith("vertex:../a/b;c", nil)
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	req := wire.Requests()[0]
	assert.Equal(t, "/v1/projects/example.com:my-project/locations/global/publishers/anthropic/models/..%2Fa%2Fb%3Bc:rawPredict", req.URL.EscapedPath())
}
