package llmserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/internal/posttest"
	"github.com/dageval/dageval/fakes/llmserver"
)

const sigv4 = "AWS4-HMAC-SHA256 Credential=canary-key/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123"

// TestBedrockEndpoint: the model and stream flag come from the path, the
// body carries Bedrock's anthropic_version, requests are signed, and a
// stream is AWS's binary event stream of base64 Messages API events.
func TestBedrockEndpoint(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("Hello there."), fakes.Reply("Again.")), llmserver.WithAPIKey("canary-key"))
	defer srv.Close()
	ctx := context.Background()
	signed := []string{"Authorization", sigv4, "X-Amz-Date", "20260101T000000Z"}
	body := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`

	r := posttest.MustPost(t, ctx, srv.Client(), srv.URL+"/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke", body, signed...)
	require.Equal(t, 200, r.Status, r.Body)
	assert.Equal(t, "anthropic.claude-sonnet-4-5-20250929-v1:0", decodeJSON(t, r.Body)["model"])

	r = posttest.MustPost(t, ctx, srv.Client(), srv.URL+"/model/m/invoke-with-response-stream", body, signed...)
	require.Equal(t, 200, r.Status, r.Body)
	assert.Equal(t, cassette.EventStreamContentType, r.Header.Get("Content-Type"))
	chunks, err := cassette.BedrockChunks([]byte(r.Body))
	require.NoError(t, err)
	require.NotEmpty(t, chunks)
	assert.Equal(t, "message_start", chunks[0].Event)
	last := chunks[len(chunks)-1]
	assert.Equal(t, "message_stop", last.Event)
	assert.Contains(t, string(last.Data), "amazon-bedrock-invocationMetrics")
	served := srv.Requests()
	assert.Equal(t, cassette.APIBedrockInvoke, served[1].API)
	assert.True(t, served[1].Stream)
	assert.Equal(t, "m", served[1].Model)

	for _, tt := range []struct {
		name, body string
		header     []string
		status     int
		errType    string
	}{
		{"unsigned", body, nil, 403, "UnrecognizedClientException"},
		{"other key", body, []string{"Authorization", "Bearer other"}, 403, "UnrecognizedClientException"},
		{"no version", `{"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, signed, 400, "ValidationException"},
		{"first-party version", `{"anthropic_version":"2023-06-01","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, signed, 400, "ValidationException"},
		{"model in body", `{"anthropic_version":"bedrock-2023-05-31","model":"x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, signed, 400, "ValidationException"},
	} {
		r := posttest.MustPost(t, ctx, srv.Client(), srv.URL+"/model/m/invoke", tt.body, tt.header...)
		assert.Equal(t, tt.status, r.Status, tt.name)
		assert.Contains(t, r.Header.Get("X-Amzn-ErrorType"), tt.errType, tt.name)
		assert.Contains(t, decodeJSON(t, r.Body), "message", tt.name)
	}
}

// TestVertexEndpoint: the model comes from the path and must agree with
// the method on streaming; a bearer token is required.
func TestVertexEndpoint(t *testing.T) {
	srv := llmserver.NewServer(fakes.NewScripted(fakes.Reply("Hi."), fakes.Reply("Hi again.")), llmserver.WithAPIKey("canary-token"))
	defer srv.Close()
	ctx := context.Background()
	path := srv.URL + "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:"
	auth := []string{"Authorization", "Bearer canary-token"}
	body := `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`

	r := posttest.MustPost(t, ctx, srv.Client(), path+"rawPredict", body, auth...)
	require.Equal(t, 200, r.Status, r.Body)
	assert.Equal(t, "claude-sonnet-4-5@20250929", decodeJSON(t, r.Body)["model"])
	streamBody := `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	r = posttest.MustPost(t, ctx, srv.Client(), path+"streamRawPredict", streamBody, auth...)
	require.Equal(t, 200, r.Status, r.Body)
	assert.Equal(t, "message_start", parseSSE(t, r.Body)[0].event)

	assert.Equal(t, 400, posttest.MustPost(t, ctx, srv.Client(), path+"rawPredict", streamBody, auth...).Status, "stream must fit the method")
	assert.Equal(t, 401, posttest.MustPost(t, ctx, srv.Client(), path+"rawPredict", body).Status)
	assert.Equal(t, cassette.APIVertexAnthropic, srv.Requests()[0].API)
}

// TestAzureEndpoints: over HTTPS, a deployment answers for the model in
// its path, api-version is required, the key travels in api-key, and a
// stream opens with Azure's content-filter chunk.
func TestAzureEndpoints(t *testing.T) {
	srv := llmserver.NewTLSServer(fakes.NewScripted(fakes.Reply("One."), fakes.Reply("Two."), fakes.Reply("Three.")), llmserver.WithAPIKey("canary-azure"))
	defer srv.Close()
	require.NotNil(t, srv.Certificate())
	ctx := context.Background()
	key := []string{"Api-Key", "canary-azure"}
	chat := srv.URL + "/openai/deployments/my-gpt/chat/completions"

	r := posttest.MustPost(t, ctx, srv.Client(), chat+"?api-version=2024-10-21", `{"messages":[{"role":"user","content":"hi"}]}`, key...)
	require.Equal(t, 200, r.Status, r.Body)
	assert.Equal(t, "my-gpt", decodeJSON(t, r.Body)["model"], "the deployment answers, with or without a model in the body")

	r = posttest.MustPost(t, ctx, srv.Client(), chat+"?api-version=2024-10-21", `{"model":"other","stream":true,"messages":[{"role":"user","content":"hi"}]}`, key...)
	require.Equal(t, 200, r.Status, r.Body)
	events := parseSSE(t, r.Body)
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(events[0].data), &first))
	assert.Contains(t, first, "prompt_filter_results")
	assert.Empty(t, first["choices"])

	r = posttest.MustPost(t, ctx, srv.Client(), srv.URL+"/openai/responses?api-version=2025-04-01-preview", `{"model":"my-gpt","input":"hi"}`, key...)
	require.Equal(t, 200, r.Status, r.Body)

	assert.Equal(t, http.StatusNotFound, posttest.MustPost(t, ctx, srv.Client(), chat, `{"messages":[{"role":"user","content":"hi"}]}`, key...).Status, "api-version is required")
	assert.Equal(t, http.StatusUnauthorized, posttest.MustPost(t, ctx, srv.Client(), chat+"?api-version=2024-10-21", `{"messages":[{"role":"user","content":"hi"}]}`).Status)
	served := srv.Requests()
	assert.Equal(t, "my-gpt", served[1].Model)
	assert.Equal(t, cassette.APIOpenAIChat, served[0].API)
}

// TestDecodeCloudRequests: recorded cloud requests read as the model saw
// them, as cassette diff reads them, the model and stream flag taken from
// the path where these hosts put them.
func TestDecodeCloudRequests(t *testing.T) {
	req, model, stream, err := llmserver.DecodeRequest("https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-haiku-4-5-20251001-v1:0/invoke-with-response-stream",
		[]byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	assert.Equal(t, "us.anthropic.claude-haiku-4-5-20251001-v1:0", model)
	assert.True(t, stream)
	assert.Equal(t, "hi", req.Messages[0].Text())

	_, model, stream, err = llmserver.DecodeRequest("https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict",
		[]byte(`{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	assert.Equal(t, "claude-sonnet-4-5@20250929", model)
	assert.False(t, stream)

	_, model, _, err = llmserver.DecodeRequest("https://res.openai.azure.com/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21",
		[]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	assert.Equal(t, "my-gpt", model)
}
