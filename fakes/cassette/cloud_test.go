package cassette_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/dageval/dageval/fakes/cassette"
)

func TestAPIOfCloudPaths(t *testing.T) {
	for path, want := range map[string]string{
		"/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke":                         cassette.APIBedrockInvoke,
		"/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream": cassette.APIBedrockInvoke,
		"/model/a/b/invoke": "",
		"/v1/projects/p/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict": cassette.APIVertexAnthropic,
		"/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-opus-4-6:streamRawPredict":    cassette.APIVertexAnthropic,
		"/v1/projects/p/locations/us-east5/publishers/anthropic/models/count-tokens:countTokens":            "",
		"/openai/deployments/my-gpt/chat/completions":                                                       cassette.APIOpenAIChat,
		"/openai/responses":    cassette.APIOpenAIResponses,
		"/openai/v1/responses": cassette.APIOpenAIResponses,
		"/v1/messages":         cassette.APIAnthropicMessages,
	} {
		assert.Equal(t, want, cassette.APIOf(path), path)
	}
}

// TestMatchPath: Vertex AI paths match across projects and locations; by
// body a path's stream form is its own, in order (RoutePath) it is the
// same route as the plain one.
func TestMatchPath(t *testing.T) {
	streamed := "/v1/projects/rec-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
	plain := "/v1/projects/replay-project/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
	assert.Equal(t, cassette.MatchPath(streamed), cassette.MatchPath(strings.Replace(streamed, "rec-project", "other", 1)))
	assert.NotEqual(t, cassette.MatchPath(streamed), cassette.MatchPath(plain), "by body, streaming is part of the path")
	assert.Equal(t, cassette.RoutePath(streamed), cassette.RoutePath(plain), "in order, one route")
	assert.NotEqual(t, cassette.RoutePath(plain), cassette.RoutePath("/v1/projects/p/locations/l/publishers/anthropic/models/claude-opus-4-6:rawPredict"), "the model still counts")
	assert.Equal(t, cassette.RoutePath("/model/m/invoke"), cassette.RoutePath("/model/m/invoke-with-response-stream"))
	assert.NotEqual(t, cassette.MatchPath("/model/m/invoke"), cassette.MatchPath("/model/m/invoke-with-response-stream"))
	assert.True(t, cassette.IsStreamPath("/model/m/invoke-with-response-stream"))
	assert.False(t, cassette.IsStreamPath("/model/m/invoke"))
	assert.True(t, cassette.IsStreamPath("/v1beta/models/gemini-2.5-flash:streamGenerateContent"))
	assert.Equal(t, "/v1/messages", cassette.MatchPath("/v1/messages"))
}

func bedrockChunk(event string) []byte {
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(event)), "p": "ab"})
	return cassette.AppendEventStreamMessage(nil, [][2]string{{":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"}}, payload)
}

func TestEventStreamFraming(t *testing.T) {
	body := append(bedrockChunk(`{"type":"message_start"}`), bedrockChunk(`{"type":"message_stop"}`)...)
	msgs, err := cassette.ParseEventStream(body)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "chunk", msgs[0].Headers[":event-type"])
	chunks, err := cassette.BedrockChunks(body)
	require.NoError(t, err)
	require.Len(t, chunks, 2)
	assert.Equal(t, "message_stop", chunks[1].Event)
	assert.JSONEq(t, `{"type":"message_stop"}`, string(chunks[1].Data))

	bad := append([]byte(nil), body...)
	bad[len(bad)-20] ^= 0xff
	_, err = cassette.ParseEventStream(bad)
	assert.ErrorContains(t, err, "message checksum mismatch")
	_, err = cassette.ParseEventStream(body[:len(body)-3])
	assert.ErrorContains(t, err, "does not fit")
}

// TestBinaryBodiesRoundTrip: an event-stream body is written as base64
// under YAML's !!binary tag and reads back byte for byte, by dageval and by
// go-vcr itself; cassettes without one are written as before.
func TestBinaryBodiesRoundTrip(t *testing.T) {
	stream := append(bedrockChunk(`{"type":"message_start"}`), bedrockChunk(`{"type":"content_block_delta","delta":{"text":"h\u00e9"}}`)...)
	c := &cassette.Cassette{Version: 2, Interactions: []*vcr.Interaction{
		{Request: vcr.Request{Method: "POST", URL: "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke-with-response-stream", Body: `{"max_tokens":1}`},
			Response: vcr.Response{Code: 200, Body: string(stream), Headers: http.Header{"Content-Type": {cassette.EventStreamContentType}}}},
		{Request: vcr.Request{Method: "POST", URL: "https://api.anthropic.com/v1/messages", Body: `{}`},
			Response: vcr.Response{Code: 200, Body: "event: ping\ndata: {}\n\n", Headers: http.Header{"Content-Type": {"text/event-stream"}}}},
	}}
	data, err := c.Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(data), "body: !!binary |")
	assert.Contains(t, string(data), "event: ping", "text bodies stay text")

	back, err := cassette.Parse("c.yaml", data)
	require.NoError(t, err)
	assert.Equal(t, string(stream), back.Interactions[0].Response.Body)
	again, err := back.Marshal()
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again), "rewriting is stable")

	path := filepath.Join(t.TempDir(), "c")
	require.NoError(t, os.WriteFile(path+".yaml", data, 0o644))
	loaded, err := vcr.Load(path)
	require.NoError(t, err, "go-vcr reads the file")
	assert.Equal(t, string(stream), loaded.Interactions[0].Response.Body)

	plain := &cassette.Cassette{Version: 2, Interactions: c.Interactions[1:]}
	data, err = plain.Marshal()
	require.NoError(t, err)
	assert.NotContains(t, string(data), "!!binary")
}

// TestCloudRedaction: SigV4's Authorization and session token are
// redacted, its signed date and body hash dropped, and Google and Azure
// credentials redacted, before anything is kept.
func TestCloudRedaction(t *testing.T) {
	it := &vcr.Interaction{Request: vcr.Request{Method: "POST", URL: "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke", Headers: http.Header{
		"Authorization":        {"AWS4-HMAC-SHA256 Credential=ASIACANARYKEYID00000/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc123"},
		"X-Amz-Security-Token": {"canary-session-token"},
		"X-Amz-Date":           {"20260101T000000Z"},
		"X-Amz-Content-Sha256": {"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		"Api-Key":              {"canary-azure-key"},
	}}, Response: vcr.Response{Code: 200, Headers: http.Header{}}}
	removed := cassette.Redact(it, nil)
	assert.Equal(t, cassette.Redacted, it.Request.Headers.Get("Authorization"))
	assert.Equal(t, cassette.Redacted, it.Request.Headers.Get("X-Amz-Security-Token"))
	assert.Equal(t, cassette.Redacted, it.Request.Headers.Get("Api-Key"))
	for _, h := range cassette.SigningHeaders {
		assert.Empty(t, it.Request.Headers.Values(h), h)
	}
	assert.Contains(t, removed, "canary-session-token", "the scan then looks for what was removed")
}

// TestSecretScanOfCloudCassettes: the scan refuses signature material
// left in a cassette, temporary AWS key ids, Google OAuth tokens, and a
// configured secret hidden in the base64 of a Bedrock stream.
func TestSecretScanOfCloudCassettes(t *testing.T) {
	stream := string(bedrockChunk(`{"type":"content_block_delta","delta":{"text":"the key is canary-secret-value"}}`))
	got := lint(cassette.LintOptions{Secrets: []string{"canary-secret-value"}}, "",
		ix{url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke-with-response-stream", reqHeader: http.Header{"X-Amz-Date": {"20260101T000000Z"}},
			respType: cassette.EventStreamContentType, respBody: stream},
		ix{reqBody: `{"note":"ASIAABCDEFGHIJKLMNOP and ya29.a0AfH6SMBcanarytokenvalue123"}`},
	)
	joined := strings.Join(got, "\n")
	assert.Contains(t, joined, "request header X-Amz-Date is AWS signature material")
	assert.Contains(t, joined, "response body (decoded event stream) contains the value of configured secret #1")
	assert.Contains(t, joined, "an AWS access key id")
	assert.Contains(t, joined, "a Google OAuth access token")
	assert.NotContains(t, joined, "canary-secret-value", "findings never quote the secret")
}

// TestLintEventStream: a broken Bedrock stream is a parse problem.
func TestLintEventStream(t *testing.T) {
	good := string(bedrockChunk(`{"type":"message_stop"}`))
	assert.Empty(t, lint(cassette.LintOptions{}, "", ix{respType: cassette.EventStreamContentType, respBody: good}))
	got := lint(cassette.LintOptions{}, "", ix{respType: cassette.EventStreamContentType, respBody: good[:len(good)-1]})
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "response event stream: event stream byte 0")
}
