package azure_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/azure"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`

const response = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello.","annotations":[]}]}],"usage":{"input_tokens":9,"output_tokens":2,"total_tokens":11,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`

// credentialVars are the variables a replay must never read.
var credentialVars = []string{"AZURE_OPENAI_API_KEY", azure.TokenEnv, "AZURE_CLIENT_SECRET"}

func build(t *testing.T, env *providertest.Env, wire *providertest.Wire, replay bool, options map[string]any) llm.ChatModel {
	t.Helper()
	r := builtin.NewResolver(provider.Config{Getenv: env.Getenv, HTTPClient: &http.Client{Transport: wire}, Replay: replay, Retry: provider.RetryPolicy{MaxAttempts: 1}})
	m, err := r.ResolveWith("azure_openai:my-gpt", options)
	require.NoError(t, err)
	return m
}

// TestReplayNeedsNothing: a replay needs no endpoint, key or token; the
// deployment is in the path and the default api-version in the query.
func TestReplayNeedsNothing(t *testing.T) {
	env := providertest.NewEnv(nil)
	wire := providertest.NewWire(t, providertest.Reply(200, nil, completion))
	resp, err := build(t, env, wire, true, nil).Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Hello.", resp.Message.Text())
	for _, name := range env.Asked() {
		assert.NotContains(t, credentialVars, name, "a replay reads no credentials")
	}
	req := wire.Requests()[0]
	assert.Equal(t, provider.ReplayHost+"/openai/deployments/my-gpt/chat/completions?api-version="+azure.DefaultAPIVersion, req.URL.String())
}

// TestAPIKeyAndVersionFromTheEnvironment: live, the api-key header carries
// the key and OPENAI_API_VERSION picks the version, as LangChain reads it.
func TestAPIKeyAndVersionFromTheEnvironment(t *testing.T) {
	env := providertest.NewEnv(map[string]string{"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com", "AZURE_OPENAI_API_KEY": "canary-azure-key", "OPENAI_API_VERSION": "2024-10-21"})
	wire := providertest.NewWire(t, providertest.Reply(200, nil, completion))
	_, err := build(t, env, wire, false, nil).Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	req := wire.Requests()[0]
	assert.Equal(t, "https://res.openai.azure.com/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21", req.URL.String())
	assert.Equal(t, "canary-azure-key", req.Header.Get("Api-Key"))
	assert.Empty(t, req.Header.Get("Authorization"))
}

// TestEntraIDTokenAndResponses: without a key, a Microsoft Entra ID token
// authorises the call; use_responses_api sends it to the Responses API,
// and the entry's api_version wins over the environment's.
func TestEntraIDTokenAndResponses(t *testing.T) {
	env := providertest.NewEnv(map[string]string{"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com", azure.TokenEnv: "canary-entra-token", "OPENAI_API_VERSION": "2024-10-21"})
	wire := providertest.NewWire(t, providertest.Reply(200, nil, response))
	resp, err := build(t, env, wire, false, map[string]any{"use_responses_api": true, "api_version": "2025-04-01-preview"}).Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Hello.", resp.Message.Text())
	req := wire.Requests()[0]
	assert.Equal(t, "https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview", req.URL.String())
	assert.Equal(t, "Bearer canary-entra-token", req.Header.Get("Authorization"))
	assert.Empty(t, req.Header.Get("Api-Key"))
	assert.Contains(t, wire.Body(0), `"model":"my-gpt"`, "the Responses API names the deployment in the body")
}

// TestPlainHTTPIsRefused: the SDK sends Azure credentials over TLS only,
// and its loopback exception would bypass the recorder, so an http
// endpoint is refused when the model is built, naming it.
func TestPlainHTTPIsRefused(t *testing.T) {
	r := builtin.NewResolver(provider.Config{Getenv: providertest.NewEnv(nil).Getenv})
	_, err := r.ResolveWith("azure_openai:my-gpt", map[string]any{"base_url": "http://127.0.0.1:8080"})
	require.Error(t, err)
	assert.ErrorContains(t, err, `base_url "http://127.0.0.1:8080" must be an https URL`)
}

// TestUnsetEndpointLive: live, an unset AZURE_OPENAI_ENDPOINT is reported
// at the first call, naming the variable.
func TestUnsetEndpointLive(t *testing.T) {
	env := providertest.NewEnv(map[string]string{"AZURE_OPENAI_API_KEY": "k"})
	wire := providertest.NewWire(t)
	_, err := build(t, env, wire, false, nil).Generate(context.Background(), providertest.UserRequest("hi"))
	assert.ErrorContains(t, err, "set AZURE_OPENAI_ENDPOINT")
	assert.Empty(t, wire.Requests())
}
