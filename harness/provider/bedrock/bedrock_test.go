package bedrock_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/bedrock"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

const model = "anthropic.claude-sonnet-4-5-20250929-v1:0"

const message = `{"id":"msg_1","type":"message","role":"assistant","model":"` + model + `","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3}}`

// credentialVars are the variables a replay must never read.
var credentialVars = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE"}

func build(t *testing.T, env *providertest.Env, wire *providertest.Wire, replay bool, options map[string]any) llm.ChatModel {
	t.Helper()
	r := builtin.NewResolver(provider.Config{Getenv: env.Getenv, HTTPClient: &http.Client{Transport: wire}, Replay: replay, Retry: provider.RetryPolicy{MaxAttempts: 1}})
	m, err := r.ResolveWith("bedrock:"+model, options)
	require.NoError(t, err)
	return m
}

// TestReplayReadsNoCredentials: a replayed call is signed with a fixed
// placeholder key, so that the SDK's signing runs as it does live, and
// no credential variable is read; the body is Bedrock's (no model, no
// stream, the documented anthropic_version).
func TestReplayReadsNoCredentials(t *testing.T) {
	env := providertest.NewEnv(nil)
	wire := providertest.NewWire(t, providertest.Reply(200, nil, message))
	m := build(t, env, wire, true, nil)
	assert.Empty(t, env.Asked(), "building reads nothing")

	resp, err := m.Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	assert.Equal(t, "Hello.", resp.Message.Text())
	for _, name := range env.Asked() {
		assert.NotContains(t, credentialVars, name, "a replay reads no credentials")
	}

	req := wire.Requests()[0]
	assert.Equal(t, "bedrock-runtime.us-east-1.amazonaws.com", req.URL.Host, "an unset region picks a placeholder host, which replay ignores")
	assert.Equal(t, "/model/"+model+"/invoke", req.URL.Path)
	assert.True(t, strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=REPLAYKEYID/"), req.Header.Get("Authorization"))
	assert.NotEmpty(t, req.Header.Get("X-Amz-Date"))
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(wire.Body(0)), &body))
	assert.Equal(t, bedrock.AnthropicVersion, body["anthropic_version"])
	assert.NotContains(t, body, "model")
	assert.NotContains(t, body, "stream")
}

// TestSigV4FromTheEnvironment: live, the environment's key, secret and
// session token sign the request for the configured region; the secret
// itself never travels.
func TestSigV4FromTheEnvironment(t *testing.T) {
	env := providertest.NewEnv(map[string]string{
		"AWS_ACCESS_KEY_ID": "canary-key-id", "AWS_SECRET_ACCESS_KEY": "canary-secret-value", "AWS_SESSION_TOKEN": "canary-session-token",
		"AWS_REGION": "eu-central-1",
	})
	wire := providertest.NewWire(t, providertest.Reply(200, nil, message))
	m := build(t, env, wire, false, nil)
	_, err := m.Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err)
	req := wire.Requests()[0]
	assert.Equal(t, "bedrock-runtime.eu-central-1.amazonaws.com", req.URL.Host)
	auth := req.Header.Get("Authorization")
	assert.Regexp(t, `^AWS4-HMAC-SHA256 Credential=canary-key-id/\d{8}/eu-central-1/bedrock/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$`, auth)
	assert.Equal(t, "canary-session-token", req.Header.Get("X-Amz-Security-Token"))
	for k, vs := range req.Header {
		for _, v := range vs {
			assert.NotContains(t, v, "canary-secret-value", "header %s", k)
		}
	}
}

// TestRegionPrecedence: the entry's region wins over AWS_REGION, which wins
// over AWS_DEFAULT_REGION; base_url replaces the endpoint but not the
// signing region.
func TestRegionPrecedence(t *testing.T) {
	vars := map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "canary-bedrock-api-key", "AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "ap-south-1"}
	for _, tt := range []struct {
		name    string
		unset   string
		options map[string]any
		host    string
	}{
		{"entry", "", map[string]any{"region": "eu-west-3"}, "bedrock-runtime.eu-west-3.amazonaws.com"},
		{"AWS_REGION", "", nil, "bedrock-runtime.us-west-2.amazonaws.com"},
		{"AWS_DEFAULT_REGION", "AWS_REGION", nil, "bedrock-runtime.ap-south-1.amazonaws.com"},
		{"base_url", "", map[string]any{"base_url": "https://bedrock.proxy.internal"}, "bedrock.proxy.internal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := map[string]string{}
			for k, x := range vars {
				if k != tt.unset {
					v[k] = x
				}
			}
			wire := providertest.NewWire(t, providertest.Reply(200, nil, message))
			_, err := build(t, providertest.NewEnv(v), wire, false, tt.options).Generate(context.Background(), providertest.UserRequest("hi"))
			require.NoError(t, err)
			req := wire.Requests()[0]
			assert.Equal(t, tt.host, req.URL.Host)
			assert.Equal(t, "Bearer canary-bedrock-api-key", req.Header.Get("Authorization"), "a Bedrock API key is a bearer token")
			assert.Empty(t, req.Header.Get("X-Amz-Date"), "no signature beside a bearer token")
		})
	}
}

// TestNoRegion: building needs no region; the first live call says which
// variable to set.
func TestNoRegion(t *testing.T) {
	env := providertest.NewEnv(map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"})
	wire := providertest.NewWire(t)
	_, err := build(t, env, wire, false, nil).Generate(context.Background(), providertest.UserRequest("hi"))
	require.Error(t, err)
	assert.True(t, llm.IsAuthentication(err), "%v", err)
	assert.ErrorContains(t, err, "set AWS_REGION")
	assert.Empty(t, wire.Requests())
}

// chunk frames one Messages API stream event as Bedrock does.
func chunk(event string) []byte {
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(event)), "p": "abc"})
	return cassette.AppendEventStreamMessage(nil, [][2]string{{":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"}}, payload)
}

func eventStream(events ...string) []byte {
	var out []byte
	for _, e := range events {
		out = append(out, chunk(e)...)
	}
	return out
}

var streamEvents = []string{
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"` + model + `","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"name\":"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Carol\"}"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}`,
	`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":10,"outputTokenCount":7,"invocationLatency":1,"firstByteLatency":1}}`,
}

// TestStreamsDecodeFromTheEventStream: Bedrock's binary event stream gives
// the deltas and final response Anthropic's SSE would, both when streamed
// and when a plain call gets it (a replay of a streamed recording), and
// DecodeAnswer reads a recording of it.
func TestStreamsDecodeFromTheEventStream(t *testing.T) {
	stream := eventStream(streamEvents...)
	answer := providertest.Reply(200, map[string]string{"Content-Type": cassette.EventStreamContentType}, string(stream))
	check := func(t *testing.T, resp *llm.Response) {
		t.Helper()
		require.Len(t, resp.Message.ToolCalls, 1)
		assert.Equal(t, "lookup", resp.Message.ToolCalls[0].Name)
		assert.JSONEq(t, `{"name":"Carol"}`, string(resp.Message.ToolCalls[0].Args))
		assert.Equal(t, llm.StopToolUse, resp.StopReason)
		assert.Equal(t, 10, resp.Usage.InputTokens)
		assert.Equal(t, 7, resp.Usage.OutputTokens)
	}

	wire := providertest.NewWire(t, answer, answer)
	m := build(t, providertest.NewEnv(nil), wire, true, nil)
	got := providertest.Collect(t, m.(llm.StreamingModel), providertest.UserRequest("hi"))
	require.NoError(t, got.Err)
	check(t, got.Final)
	var args string
	for _, c := range got.Chunks {
		if c.ToolCallDelta != nil {
			args += c.ToolCallDelta.ArgsDelta
		}
	}
	assert.Equal(t, `{"name":"Carol"}`, args, "the tool arguments arrive as deltas")
	assert.Equal(t, "/model/"+model+"/invoke-with-response-stream", wire.Requests()[0].URL.Path)

	plain, err := m.Generate(context.Background(), providertest.UserRequest("hi"))
	require.NoError(t, err, "a plain call decodes an event-stream answer as the stream it is")
	check(t, plain)

	decoded, err := bedrock.DecodeAnswer(context.Background(), provider.RecordedAnswer{StatusCode: 200,
		Header: http.Header{"Content-Type": {cassette.EventStreamContentType}}, Body: stream})
	require.NoError(t, err)
	check(t, decoded)
}

// TestStreamExceptionIsTheProvidersError: an exception message inside the
// stream is the provider's error, classified by its name.
func TestStreamExceptionIsTheProvidersError(t *testing.T) {
	stream := slices.Concat(chunk(streamEvents[0]), cassette.AppendEventStreamMessage(nil,
		[][2]string{{":exception-type", "throttlingException"}, {":content-type", "application/json"}, {":message-type", "exception"}},
		[]byte(`{"message":"Too many tokens, please wait before trying again."}`)))
	_, err := bedrock.DecodeAnswer(context.Background(), provider.RecordedAnswer{StatusCode: 200,
		Header: http.Header{"Content-Type": {cassette.EventStreamContentType}}, Body: stream})
	require.Error(t, err)
	assert.Equal(t, llm.ErrRateLimit, llm.KindOf(err), "%v", err)
	assert.ErrorContains(t, err, "Too many tokens")
}

// TestErrorAnswers: Bedrock names its errors in a header.
func TestErrorAnswers(t *testing.T) {
	wire := providertest.NewWire(t, providertest.Reply(400, map[string]string{"X-Amzn-ErrorType": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
		`{"message":"Input is too long for requested model."}`))
	_, err := build(t, providertest.NewEnv(nil), wire, true, nil).Generate(context.Background(), providertest.UserRequest("hi"))
	require.Error(t, err)
	assert.Equal(t, llm.ErrContextOverflow, llm.KindOf(err), "%v", err)
}
