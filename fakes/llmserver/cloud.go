package llmserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/llm"
)

// The anthropic_version values the cloud hosts of Claude document; a
// request carrying another one is refused, as the hosts refuse it.
const (
	bedrockVersion = "bedrock-2023-05-31"
	vertexVersion  = "vertex-2023-10-16"
)

// cloudBody turns a Bedrock or Vertex AI request body into the Messages
// API body it stands for: the anthropic_version (and Bedrock's
// anthropic_beta) checked and removed, the model (and on Bedrock the
// stream flag) put back from the path, where these hosts carry them.
func cloudBody(body []byte, version, model string, stream *bool) ([]byte, *apiError) {
	var m map[string]json.RawMessage
	if e := strictDecode(body, &m, "request body"); e != nil {
		return nil, e
	}
	var got string
	if raw, ok := m["anthropic_version"]; !ok || json.Unmarshal(raw, &got) != nil {
		return nil, badRequest("anthropic_version: Field required (%q)", version)
	}
	if got != version {
		return nil, badRequest("anthropic_version: must be %q, got %q", version, got)
	}
	delete(m, "anthropic_version")
	if raw, ok := m["anthropic_beta"]; ok {
		var betas []string
		if json.Unmarshal(raw, &betas) != nil {
			return nil, badRequest("anthropic_beta: expected a list of strings")
		}
		delete(m, "anthropic_beta")
	}
	if _, ok := m["model"]; ok {
		return nil, badRequest("model: extraneous key [model] is not permitted; the model is part of the URL")
	}
	m["model"] = marshal(model)
	if stream != nil {
		if _, ok := m["stream"]; ok {
			return nil, badRequest("stream: extraneous key [stream] is not permitted; invoke-with-response-stream streams")
		}
		m["stream"] = marshal(*stream)
	}
	return marshal(m), nil
}

// bedrockAPI speaks Claude's Messages API on Amazon Bedrock: POST
// /model/{model}/invoke answers with JSON, /invoke-with-response-stream
// with AWS's binary event stream, each event a "chunk" whose payload holds
// a Messages API stream event in base64. Requests must be SigV4-signed or
// carry a Bedrock API key as a bearer token; the access key id (or the
// API key) is what WithAPIKey checks.
type bedrockAPI struct {
	model  string
	stream bool
}

func (bedrockAPI) name() string { return cassette.APIBedrockInvoke }

func (bedrockAPI) checkAuth(r *http.Request, want string) *apiError {
	deny := func(msg string) *apiError {
		return &apiError{status: http.StatusForbidden, kind: "UnrecognizedClientException", msg: msg}
	}
	auth := r.Header.Get("Authorization")
	key := bearer(r)
	if sig, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 "); ok {
		cred, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(sig), "Credential="), ",")
		parts := strings.Split(cred, "/")
		if len(parts) != 5 || parts[3] != "bedrock" || parts[4] != "aws4_request" || r.Header.Get("X-Amz-Date") == "" ||
			!strings.Contains(sig, "SignedHeaders=") || !strings.Contains(sig, "Signature=") {
			return deny("The request signature we calculated does not match the signature you provided.")
		}
		key = parts[0]
	}
	if key == "" {
		return deny("Missing Authentication Token")
	}
	if want != "" && key != want {
		return deny("The security token included in the request is invalid.")
	}
	return nil
}

func (bedrockAPI) checkHeaders(*http.Request) *apiError { return nil }

func (a bedrockAPI) decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError) {
	call.Model, call.Stream = a.model, a.stream
	wire, e := cloudBody(body, bedrockVersion, a.model, &a.stream)
	if e != nil {
		return nil, nil, e
	}
	return anthropicAPI{}.decode(wire, call)
}

func (bedrockAPI) errorBody(e *apiError, _ string) []byte {
	return marshal(struct {
		Message string `json:"message"`
	}{e.msg})
}

// errorHeader names the error as Bedrock does, with an exception name.
func (bedrockAPI) errorHeader(e *apiError) http.Header {
	kind := e.kind
	switch {
	case strings.HasSuffix(kind, "Exception"):
	case e.status == http.StatusTooManyRequests:
		kind = "ThrottlingException"
	case e.status == http.StatusUnauthorized || e.status == http.StatusForbidden:
		kind = "AccessDeniedException"
	case e.status == 529 || e.status == http.StatusServiceUnavailable:
		kind = "ServiceUnavailableException"
	case e.status >= 500:
		kind = "InternalServerException"
	default:
		kind = "ValidationException"
	}
	return http.Header{"X-Amzn-Errortype": {kind + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}}
}

func (a bedrockAPI) write(w *responseWriter, call ServedCall, _ any, resp *llm.Response, ids *idSource) error {
	h := w.w.Header()
	h.Set("X-Amzn-Bedrock-Input-Token-Count", fmt.Sprint(resp.Usage.InputTokens))
	h.Set("X-Amzn-Bedrock-Output-Token-Count", fmt.Sprint(resp.Usage.OutputTokens))
	whole, s := antAnswer(call, resp, ids)
	if whole != nil {
		return w.json(whole)
	}
	// Bedrock adds its own measurements to the last event.
	last := &s.events[len(s.events)-1]
	last.data = marshal(struct {
		Type    string `json:"type"`
		Metrics struct {
			InputTokenCount   int `json:"inputTokenCount"`
			OutputTokenCount  int `json:"outputTokenCount"`
			InvocationLatency int `json:"invocationLatency"`
			FirstByteLatency  int `json:"firstByteLatency"`
		} `json:"amazon-bedrock-invocationMetrics"`
	}{Type: "message_stop", Metrics: struct {
		InputTokenCount   int `json:"inputTokenCount"`
		OutputTokenCount  int `json:"outputTokenCount"`
		InvocationLatency int `json:"invocationLatency"`
		FirstByteLatency  int `json:"firstByteLatency"`
	}{resp.Usage.InputTokens, resp.Usage.OutputTokens, 0, 0}})
	w.aws = true
	return w.stream(s)
}

// padding is what Bedrock's "p" field carries: filler that hides the
// length of a chunk. Here its length follows the event's position, so that
// answers are deterministic.
const padding = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// bedrockFrame frames one Messages API stream event as Bedrock sends it.
func bedrockFrame(data []byte, n int) []byte {
	payload := marshal(struct {
		Bytes string `json:"bytes"`
		P     string `json:"p"`
	}{base64.StdEncoding.EncodeToString(data), padding[:1+n%len(padding)]})
	return cassette.AppendEventStreamMessage(nil, [][2]string{
		{":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"},
	}, payload)
}

// vertexAPI speaks Claude's Messages API on Google Vertex AI: POST
// .../publishers/anthropic/models/{model}:rawPredict answers with JSON,
// :streamRawPredict with server-sent events, both as Anthropic's API does.
// Requests carry a Google OAuth bearer token, which WithAPIKey checks.
type vertexAPI struct {
	model  string
	stream bool
}

func (vertexAPI) name() string { return cassette.APIVertexAnthropic }

func (vertexAPI) checkAuth(r *http.Request, want string) *apiError {
	tok := bearer(r)
	if tok == "" {
		return &apiError{status: http.StatusUnauthorized, kind: "authentication_error", msg: "Request is missing required authentication credential. Expected OAuth 2 access token."}
	}
	if want != "" && tok != want {
		return &apiError{status: http.StatusUnauthorized, kind: "authentication_error", msg: "Request had invalid authentication credentials."}
	}
	return nil
}

func (vertexAPI) checkHeaders(*http.Request) *apiError { return nil }

func (a vertexAPI) decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError) {
	call.Model = a.model
	wire, e := cloudBody(body, vertexVersion, a.model, nil)
	if e != nil {
		return nil, nil, e
	}
	req, wireReq, e := anthropicAPI{}.decode(wire, call)
	if e == nil && call.Stream != a.stream {
		return nil, nil, badRequest("stream: %v does not fit the :%s method", call.Stream, map[bool]string{true: "streamRawPredict", false: "rawPredict"}[a.stream])
	}
	return req, wireReq, e
}

func (vertexAPI) errorBody(e *apiError, requestID string) []byte {
	return anthropicAPI{}.errorBody(e, requestID)
}

func (vertexAPI) write(w *responseWriter, call ServedCall, wireReq any, resp *llm.Response, ids *idSource) error {
	return anthropicAPI{}.write(w, call, wireReq, resp, ids)
}

// azureDeployment returns the deployment of an Azure OpenAI deployment
// path, /openai/deployments/{deployment}/chat/completions.
func azureDeployment(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/openai/deployments/")
	if !ok {
		return "", false
	}
	d, tail, ok := strings.Cut(rest, "/")
	return d, ok && d != "" && tail == "chat/completions"
}

// azureAPI is OpenAI's wire format as Azure OpenAI serves it on deployment
// endpoints: an api-version query parameter is required, the key travels in
// api-key (or an Entra ID token as a bearer), a Chat Completions call
// answers for the deployment in its path whatever the body's model says,
// and a stream opens with a chunk of content-filter results and no choices.
type azureAPI struct {
	wireAPI
	deployment string // "" on /openai/responses, which takes the body's model
}

func (a azureAPI) checkHeaders(r *http.Request) *apiError {
	if r.URL.Query().Get("api-version") == "" {
		return &apiError{status: http.StatusNotFound, kind: "invalid_request_error", code: "404", msg: "Resource not found: the api-version query parameter is required"}
	}
	return a.wireAPI.checkHeaders(r)
}

func (a azureAPI) decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError) {
	if a.deployment != "" {
		// Azure routes by the path; a body without a model is fine.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil && m != nil {
			m["model"] = marshal(a.deployment)
			body = marshal(m)
		}
	}
	req, wireReq, e := a.wireAPI.decode(body, call)
	if a.deployment != "" {
		call.Model = a.deployment
	}
	return req, wireReq, e
}

func (a azureAPI) write(w *responseWriter, call ServedCall, wireReq any, resp *llm.Response, ids *idSource) error {
	if call.Stream && a.deployment != "" {
		w.prelude = append(w.prelude, sseEvent{data: azureFilterChunk})
	}
	return a.wireAPI.write(w, call, wireReq, resp, ids)
}

// azureFilterChunk is the first chunk of an Azure Chat Completions stream.
var azureFilterChunk = bytes.TrimSpace([]byte(`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}]}`))
