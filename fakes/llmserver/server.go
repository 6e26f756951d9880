package llmserver

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/harness/llm"
)

// Server is a local model provider: it speaks the Anthropic Messages API,
// the OpenAI Chat Completions and Responses APIs and Gemini's
// generateContent (JSON and SSE streaming; a Gemini stream without
// alt=sse is one JSON array, as the real API sends it), and the cloud
// routes to Claude and OpenAI models: Claude on Amazon Bedrock
// (InvokeModel, its streams in AWS's binary event stream), Claude on
// Google Vertex AI (rawPredict and streamRawPredict) and Azure OpenAI's
// deployment endpoints (over HTTPS: see StartTLS). It answers with any
// llm.ChatModel, typically a fakes.Scripted or fakes.RuleModel. Point an
// SDK at URL (Anthropic, Gemini, Bedrock, Vertex AI, Azure) or
// OpenAIBaseURL (OpenAI) with any API key, token or SigV4 signature.
// ServedCall and ServedRequest name the API of a call
// (cassette.APIAnthropicMessages, cassette.APIOpenAIChat,
// cassette.APIOpenAIResponses, cassette.APIGemini, cassette.APIBedrockInvoke
// or cassette.APIVertexAnthropic).
//
// It decodes each request strictly into an llm.Request, as the real APIs
// do: unknown fields, wrong types, empty text blocks, tool calls without
// results (and the reverse) are 400 errors in the provider's error shape, so
// a client's wire-format mistake shows up in tests. A request without an
// API key is a 401. Responses carry realistic, deterministic ids (derived
// from the request, so concurrent callers get the same ids on every run),
// usage and stop reasons; the "model" field echoes the requested model.
// Faults (FailOn) replace the answer to the n-th call.
//
// Gemini specifics: function calls go out without ids (as the Developer
// API sends them) and the first call of each answer carries a thought
// signature derived from the call; for Gemini 3 models a request whose
// current turn lost that signature, or carries another, is a 400 with
// Gemini's message. Function responses pair with the calls by id, else in
// order, and must match them in number.
//
// How llm.Response maps to the wire: the message's blocks come first, in
// order (thinking, redacted thinking, text), then its tool calls; Usage
// is reported as is (OpenAI's prompt tokens add cache reads and writes to
// InputTokens); an empty Usage is estimated with fakes.ApproxUsage; tool calls
// without an id get one; a StopSequence answer reports
// Message.Metadata["stop_sequence"] as the sequence that matched. Streams
// split text at spaces and tool arguments into three pieces.
type Server struct {
	// URL is the base URL of a started server, e.g. http://127.0.0.1:41234;
	// empty until Start.
	URL string

	model      llm.ChatModel
	models     map[string]llm.ChatModel
	apiKey     string
	streamWait time.Duration
	created    time.Time
	ts         *loopback
	closed     chan struct{}
	closeOnce  sync.Once

	mu       sync.Mutex
	calls    int
	faults   map[int]Fault
	served   []ServedRequest
	seedSeen map[uint64]int
}

// Option configures a Server.
type Option func(*Server)

// WithAPIKey makes the server accept only this key (any non-empty key otherwise).
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// WithModelFor answers requests for the wire model name (the request's
// "model" field) with m; other names go to the server's default model.
func WithModelFor(name string, m llm.ChatModel) Option {
	return func(s *Server) {
		if s.models == nil {
			s.models = map[string]llm.ChatModel{}
		}
		s.models[name] = m
	}
}

// WithStreamDelay pauses between SSE events, so a client's incremental
// handling and cancellation can be observed.
func WithStreamDelay(d time.Duration) Option { return func(s *Server) { s.streamWait = d } }

// WithCreatedTime sets the creation timestamp responses report
// (2026-01-01T00:00:00Z by default; never the wall clock).
func WithCreatedTime(t time.Time) Option { return func(s *Server) { s.created = t } }

// NewUnstartedServer returns a Server that is not listening, like
// httptest.NewUnstartedServer: call Start, or mount it as an http.Handler.
func NewUnstartedServer(model llm.ChatModel, opts ...Option) *Server {
	s := &Server{
		model:    model,
		created:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		closed:   make(chan struct{}),
		faults:   map[int]Fault{},
		seedSeen: map[uint64]int{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// NewServer starts a Server on a loopback port, like httptest.NewServer.
// Close it when done.
func NewServer(model llm.ChatModel, opts ...Option) *Server {
	s := NewUnstartedServer(model, opts...)
	s.Start()
	return s
}

// Start starts a server from NewUnstartedServer on a loopback port and sets
// URL. It panics if the server was already started.
func (s *Server) Start() {
	if s.ts != nil {
		panic("llmserver: Server already started")
	}
	s.ts = listenLoopback(s, false)
	s.URL = s.ts.url
}

// StartTLS is Start over HTTPS with a fresh self-signed certificate,
// for clients that send credentials over TLS only (Azure OpenAI's SDK);
// Client and Certificate let a test trust it.
func (s *Server) StartTLS() {
	if s.ts != nil {
		panic("llmserver: Server already started")
	}
	s.ts = listenLoopback(s, true)
	s.URL = s.ts.url
}

// NewTLSServer starts a Server over HTTPS on a loopback port, like
// httptest.NewTLSServer. Close it when done.
func NewTLSServer(model llm.ChatModel, opts ...Option) *Server {
	s := NewUnstartedServer(model, opts...)
	s.StartTLS()
	return s
}

// Client returns an HTTP client for a started server that trusts its
// certificate when it serves HTTPS.
func (s *Server) Client() *http.Client { return s.ts.client }

// Certificate returns the certificate of a server started with StartTLS,
// nil otherwise.
func (s *Server) Certificate() *x509.Certificate {
	if s.ts == nil {
		return nil
	}
	return s.ts.cert
}

// OpenAIBaseURL is the base URL for OpenAI clients, which append paths such
// as "chat/completions" to a base that ends in /v1.
func (s *Server) OpenAIBaseURL() string { return s.URL + "/v1" }

// Close stops a started server, releasing stalled requests first.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	if s.ts != nil {
		s.ts.close()
	}
}

// Fault replaces the answer to one call.
type Fault struct {
	// Status, when set, answers with this HTTP status without calling the
	// model. Body is sent as is; when empty, the provider's error JSON for
	// the status is sent (rate_limit_error for 429, overloaded_error for 529, …).
	Status int
	Header http.Header
	Body   string
	// Truncate calls the model and cuts the connection partway through the
	// answer: after TruncateAfter SSE events (half of them when 0) when
	// streaming, after half the body otherwise. The client sees an
	// unexpected EOF.
	Truncate      bool
	TruncateAfter int
	// Stall holds the request without answering until the client gives up
	// or the server closes, for timeout tests.
	Stall bool
}

// FailOn makes the n-th call (1-based, counting every request to a model
// endpoint) answer with f instead.
func (s *Server) FailOn(n int, f Fault) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[n] = f
	return s
}

// ServedRequest is one request the server received.
type ServedRequest struct {
	Call   int
	API    string
	Path   string
	Model  string
	Stream bool
	// Header is the request's headers with credentials redacted.
	Header http.Header
	Body   []byte
	// Request is the decoded request; nil when it was rejected before decoding finished.
	Request *llm.Request
	Status  int
	// Error is the message of an error answer.
	Error string
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []ServedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ServedRequest(nil), s.served...)
}

// ServedCall describes the call a Server is answering; a model reads it
// with ServedCallFrom to tell APIs or requested models apart.
type ServedCall struct {
	API    string
	Model  string
	Stream bool
	Call   int
}

type servedKey struct{}

// ServedCallFrom returns the call a Server passed to the model, if any.
func ServedCallFrom(ctx context.Context) (ServedCall, bool) {
	c, ok := ctx.Value(servedKey{}).(ServedCall)
	return c, ok
}

// wireAPI is what each provider format implements.
type wireAPI interface {
	name() string
	// checkAuth returns a non-nil error when the request is not authenticated.
	checkAuth(r *http.Request, want string) *apiError
	checkHeaders(r *http.Request) *apiError
	// decode parses the body into a request; model and stream are filled as
	// soon as known so that errors can be reported with them.
	decode(body []byte, call *ServedCall) (*llm.Request, any, *apiError)
	// write encodes the model's answer.
	write(w *responseWriter, call ServedCall, wireReq any, resp *llm.Response, ids *idSource) error
	errorBody(e *apiError, requestID string) []byte
}

// apiError is an error answer before it is put into the provider's shape.
type apiError struct {
	status int
	kind   string // provider error type, e.g. invalid_request_error
	code   string // OpenAI error code, may be empty
	param  string // OpenAI param, may be empty
	msg    string
}

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: "invalid_request_error", msg: fmt.Sprintf(format, args...)}
}

// paramError is a bad request that names the offending parameter, as
// OpenAI's errors do.
func paramError(param, format string, args ...any) *apiError {
	e := badRequest(format, args...)
	e.param = param
	return e
}

// missingParam is OpenAI's error for a required parameter left out.
func missingParam(param string) *apiError {
	return paramError(param, "Missing required parameter: '%s'.", param)
}

func (s *Server) route(u *url.URL) wireAPI {
	path := u.Path
	switch cassette.APIOf(path) {
	case cassette.APIAnthropicMessages:
		return anthropicAPI{}
	case cassette.APIBedrockInvoke:
		rest := strings.TrimPrefix(path, "/model/")
		return bedrockAPI{model: rest[:strings.LastIndexByte(rest, '/')], stream: cassette.IsStreamPath(path)}
	case cassette.APIVertexAnthropic:
		_, rest, _ := strings.Cut(path, "/publishers/anthropic/models/")
		return vertexAPI{model: rest[:strings.LastIndexByte(rest, ':')], stream: cassette.IsStreamPath(path)}
	case cassette.APIOpenAIChat:
		if d, ok := azureDeployment(path); ok {
			return azureAPI{wireAPI: chatAPI{}, deployment: d}
		}
		return chatAPI{}
	case cassette.APIOpenAIResponses:
		if path == "/openai/responses" {
			return azureAPI{wireAPI: responsesAPI{}}
		}
		return responsesAPI{}
	case cassette.APIGemini:
		model, stream, _ := cassette.GeminiCall(u.Path)
		return geminiAPI{model: model, stream: stream, sse: u.Query().Get("alt") == "sse"}
	}
	return nil
}

// errorHeaderer is a wire API whose errors carry headers besides the body
// (Bedrock names the error in x-amzn-ErrorType).
type errorHeaderer interface {
	errorHeader(e *apiError) http.Header
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := s.route(r.URL)
	if api == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":%q}}`, "no model endpoint at "+r.URL.Path+": the local server serves POST /v1/messages, /v1/chat/completions, /v1/responses and /v1beta/models/{model}:generateContent (and :streamGenerateContent), Bedrock's /model/{id}/invoke[-with-response-stream], Vertex AI's /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:[stream]rawPredict and Azure OpenAI's /openai/deployments/{d}/chat/completions and /openai/responses")
		return
	}
	if r.Method != http.MethodPost {
		s.fail(w, api, nil, &apiError{status: http.StatusMethodNotAllowed, kind: "invalid_request_error", msg: r.Method + " is not allowed; use POST"}, "")
		return
	}
	body, err := readBody(r)
	if err != nil {
		return // the client went away
	}
	seed := seenBodies.hash(api.name(), body)
	s.mu.Lock()
	s.calls++
	call := ServedCall{API: api.name(), Call: s.calls}
	fault, faulted := s.faults[call.Call]
	rec := ServedRequest{Call: call.Call, API: call.API, Path: r.URL.Path, Header: cassette.RedactHeaders(r.Header), Body: body}
	s.served = append(s.served, rec)
	idx := len(s.served) - 1
	ids := s.idsFor(seed)
	s.mu.Unlock()
	requestID := ids.id("req_", 24)
	update := func(f func(*ServedRequest)) {
		s.mu.Lock()
		f(&s.served[idx])
		s.mu.Unlock()
	}

	if faulted && fault.Stall {
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		update(func(sr *ServedRequest) { sr.Error = "stalled" })
		return
	}
	if faulted && fault.Status != 0 {
		for k, vs := range fault.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		out := []byte(fault.Body)
		if fault.Body == "" {
			out = api.errorBody(faultError(fault.Status), requestID)
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(fault.Status)
		_, _ = w.Write(out)
		update(func(sr *ServedRequest) { sr.Status, sr.Error = fault.Status, "injected fault" })
		return
	}
	if e := api.checkAuth(r, s.apiKey); e != nil {
		s.fail(w, api, update, e, requestID)
		return
	}
	if e := checkJSONContentType(r); e != nil {
		s.fail(w, api, update, e, requestID)
		return
	}
	if e := api.checkHeaders(r); e != nil {
		s.fail(w, api, update, e, requestID)
		return
	}
	req, wireReq, e := api.decode(body, &call)
	update(func(sr *ServedRequest) { sr.Model, sr.Stream = call.Model, call.Stream })
	if e != nil {
		s.fail(w, api, update, e, requestID)
		return
	}
	update(func(sr *ServedRequest) { sr.Request = req })

	model := s.model
	if m, ok := s.models[call.Model]; ok {
		model = m
	}
	if model == nil {
		s.fail(w, api, update, &apiError{status: http.StatusNotFound, kind: "not_found_error", code: "model_not_found", msg: fmt.Sprintf("model %q is not served here", call.Model)}, requestID)
		return
	}
	ctx := context.WithValue(r.Context(), servedKey{}, call)
	resp, err := model.Generate(ctx, req)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		s.fail(w, api, update, &apiError{status: http.StatusInternalServerError, kind: "api_error", code: "server_error", msg: "the model failed: " + err.Error()}, requestID)
		return
	}
	resp = completeResponse(req, resp, ids)

	rw := &responseWriter{w: w, ctx: r.Context(), wait: s.streamWait, closed: s.closed, created: s.created}
	if faulted && fault.Truncate {
		rw.truncate = true
		rw.truncateAfter = fault.TruncateAfter
	}
	w.Header().Set("X-Request-Id", requestID)
	w.Header().Set("Request-Id", requestID)
	err = api.write(rw, call, wireReq, resp, ids)
	update(func(sr *ServedRequest) { sr.Status = http.StatusOK })
	if errors.Is(err, errTruncated) {
		update(func(sr *ServedRequest) { sr.Error = "truncated" })
		panic(http.ErrAbortHandler) // drop the connection mid-answer, as a failing upstream does
	}
}

func (s *Server) fail(w http.ResponseWriter, api wireAPI, update func(func(*ServedRequest)), e *apiError, requestID string) {
	if update != nil {
		update(func(sr *ServedRequest) { sr.Status, sr.Error = e.status, e.msg })
	}
	w.Header().Set("Content-Type", "application/json")
	if requestID != "" {
		w.Header().Set("X-Request-Id", requestID)
		w.Header().Set("Request-Id", requestID)
	}
	if eh, ok := api.(errorHeaderer); ok {
		for k, vs := range eh.errorHeader(e) {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(api.errorBody(e, requestID))
}

// faultError is the error an injected status stands for.
func faultError(status int) *apiError {
	e := &apiError{status: status, msg: http.StatusText(status)}
	switch status {
	case http.StatusBadRequest:
		e.kind = "invalid_request_error"
	case http.StatusUnauthorized:
		e.kind, e.code = "authentication_error", "invalid_api_key"
	case http.StatusForbidden:
		e.kind = "permission_error"
	case http.StatusNotFound:
		e.kind = "not_found_error"
	case http.StatusRequestEntityTooLarge:
		e.kind = "request_too_large"
	case http.StatusTooManyRequests:
		e.kind, e.code, e.msg = "rate_limit_error", "rate_limit_exceeded", "Rate limit reached; retry later."
	case 529:
		e.kind, e.msg = "overloaded_error", "Overloaded"
	default:
		e.kind, e.code = "api_error", "server_error"
		if e.msg == "" {
			e.msg = fmt.Sprintf("status %d", status)
		}
	}
	return e
}

func checkJSONContentType(r *http.Request) *apiError {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return badRequest("content-type must be application/json, got %q", r.Header.Get("Content-Type"))
	}
	return nil
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// completeResponse fills what a model may leave out: tool call ids, the stop
// reason and usage.
func completeResponse(req *llm.Request, resp *llm.Response, ids *idSource) *llm.Response {
	out := *resp
	out.Message = resp.Message.Clone()
	for i := range out.Message.ToolCalls {
		if out.Message.ToolCalls[i].ID == "" {
			out.Message.ToolCalls[i].ID = ids.id("call_", 24)
		}
		if len(out.Message.ToolCalls[i].Args) == 0 {
			out.Message.ToolCalls[i].Args = json.RawMessage("{}")
		}
	}
	if out.StopReason == "" {
		out.StopReason = llm.StopEndTurn
		if len(out.Message.ToolCalls) > 0 {
			out.StopReason = llm.StopToolUse
		}
	}
	if out.Usage.IsZero() {
		out.Usage = fakes.ApproxUsage(req, &out)
	}
	return &out
}

// maxPresized bounds the body a declared Content-Length allocates up
// front.
const maxPresized = 64 << 20

// readBody reads r's body into a slice of the size it declares, when it
// does: a long run's bodies are hundreds of KiB, which io.ReadAll reached
// by growing (and clearing) a slice many times over on every call. The
// HTTP server ends a body at its Content-Length.
func readBody(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > maxPresized {
		return io.ReadAll(r.Body)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return nil, err
	}
	return b, nil
}

// idSource derives ids from a request's content and how often the same
// request was seen, so ids do not depend on the order concurrent calls arrive in.
type idSource struct {
	state uint64
}

// idsFor returns the ids of a request whose seed is the FNV-1a hash of its
// API's name, a zero byte and its body (seenBodies.hash).
func (s *Server) idsFor(seed uint64) *idSource {
	n := s.seedSeen[seed]
	s.seedSeen[seed] = n + 1
	return &idSource{state: seed ^ uint64(n+1)*0x9E3779B97F4A7C15}
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// id returns prefix plus n pseudo-random base62 characters.
func (s *idSource) id(prefix string, n int) string {
	b := make([]byte, 0, len(prefix)+n)
	b = append(b, prefix...)
	for range n {
		// splitmix64
		s.state += 0x9E3779B97F4A7C15
		z := s.state
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		b = append(b, base62[z%62])
	}
	return string(b)
}

// strictDecode decodes raw into v, refusing unknown fields; at names the
// place in the request for error messages.
func strictDecode(raw []byte, v any, at string) *apiError {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("%s", describeJSONError(at, err))
	}
	if dec.More() {
		return badRequest("%s: unexpected data after the JSON value", at)
	}
	return nil
}

func describeJSONError(at string, err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := at
		if te.Field != "" {
			field = join(at, te.Field)
		}
		return fmt.Sprintf("%s: expected %s, got a JSON %s", field, jsonTypeName(te.Type.String()), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("%s: invalid JSON at byte %d: %v", at, se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Sprintf("%s: unknown field %s (extra inputs are not permitted)", at, strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return at + ": invalid JSON: unexpected end of input"
	case errors.Is(err, io.EOF):
		return at + ": empty body"
	}
	return fmt.Sprintf("%s: %v", at, err)
}

func join(at, field string) string {
	if at == "" {
		return field
	}
	return at + "." + field
}

func jsonTypeName(goType string) string {
	switch {
	case goType == "string" || goType == "*string":
		return "a string"
	case strings.Contains(goType, "int") || strings.Contains(goType, "float"):
		return "a number"
	case goType == "bool" || goType == "*bool":
		return "a boolean"
	case strings.HasPrefix(goType, "[]") || strings.HasPrefix(goType, "*[]"):
		return "an array"
	}
	return "an object"
}

// jsonString decodes raw, which jsonKind has found to be a JSON string.
func jsonString(raw json.RawMessage) string {
	s, _ := jsonStrings.decode(raw, func() (string, *apiError) {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s, nil
	})
	return s
}

// jsonStrings keeps decoded JSON strings (message texts, tool outputs)
// across requests (see memo).
var jsonStrings memo[string]

// stringBlocks is string content (raw is a JSON string) as blocks: one
// text block, none when the string is empty.
func stringBlocks(raw json.RawMessage) []llm.Block {
	if s := jsonString(raw); s != "" {
		return []llm.Block{llm.TextBlock(s)}
	}
	return nil
}

// toolSpec is a declared tool; desc is nil when the declaration has none.
func toolSpec(name string, desc *string, params json.RawMessage) llm.ToolSpec {
	spec := llm.ToolSpec{Name: name, Parameters: compactJSON(params)}
	if desc != nil {
		spec.Description = *desc
	}
	return spec
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// jsonKind names the JSON type of raw: "string", "array", "object", … or "" when absent.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return ""
	}
	switch t[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	}
	return "number"
}

// compactJSON returns raw without insignificant whitespace.
func compactJSON(raw []byte) json.RawMessage {
	c, _ := compacted.decode(raw, func() (json.RawMessage, *apiError) {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return json.RawMessage(raw), nil
		}
		return json.RawMessage(b.Bytes()), nil
	})
	return c
}

// compacted keeps compacted tool arguments and schemas (see memo).
var compacted memo[json.RawMessage]

// marshal encodes v as compact JSON without HTML escaping.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakes: encoding a wire value: %v", err)) // wire types are always encodable
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// splitPieces cuts s into about n pieces on rune boundaries, for streaming
// tool arguments the way providers do.
func splitPieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := (len(s) + n - 1) / n
	if size < 1 {
		size = 1
	}
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// toolNames maps tool call ids to tool names while decoding a conversation.
type toolNames map[string]string

// responseWriter writes a JSON body or an SSE stream, with the configured
// pacing and truncation.
type responseWriter struct {
	w             http.ResponseWriter
	ctx           context.Context
	wait          time.Duration
	closed        chan struct{}
	created       time.Time
	truncate      bool
	truncateAfter int
	events        int
	total         int // events the stream will have, for truncation at half
	started       bool
	// aws frames the stream's events in AWS's binary event stream, as
	// Bedrock does, instead of as server-sent events.
	aws bool
	// prelude events go before the answer's own (Azure's content-filter
	// chunk).
	prelude []sseEvent
}

var errTruncated = errors.New("fakes: answer truncated by fault")

// json writes a whole JSON answer.
func (rw *responseWriter) json(body []byte) error {
	rw.w.Header().Set("Content-Type", "application/json")
	if rw.truncate {
		rw.w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		rw.w.WriteHeader(http.StatusOK)
		_, _ = rw.w.Write(body[:len(body)/2])
		if f, ok := rw.w.(http.Flusher); ok {
			f.Flush()
		}
		return errTruncated
	}
	rw.w.WriteHeader(http.StatusOK)
	_, err := rw.w.Write(body)
	return err
}

// event writes one SSE event; name may be empty (OpenAI chat sends data only).
func (rw *responseWriter) event(name string, data []byte) error {
	if !rw.started {
		rw.started = true
		h := rw.w.Header()
		if rw.aws {
			h.Set("Content-Type", cassette.EventStreamContentType)
		} else {
			h.Set("Content-Type", "text/event-stream; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
		}
		rw.w.WriteHeader(http.StatusOK)
	}
	if rw.truncate {
		limit := rw.truncateAfter
		if limit <= 0 {
			limit = max(rw.total/2, 1)
		}
		if rw.events >= limit {
			return errTruncated
		}
	}
	if rw.events > 0 && rw.wait > 0 {
		t := time.NewTimer(rw.wait)
		select {
		case <-t.C:
		case <-rw.ctx.Done():
			t.Stop()
			return rw.ctx.Err()
		case <-rw.closed:
			t.Stop()
			return errors.New("fakes: server closed")
		}
	}
	rw.events++
	var b bytes.Buffer
	switch {
	case rw.aws:
		b.Write(bedrockFrame(data, rw.events))
	default:
		if name != "" {
			b.WriteString("event: ")
			b.WriteString(name)
			b.WriteByte('\n')
		}
		b.WriteString("data: ")
		b.Write(data)
		b.WriteString("\n\n")
	}
	if _, err := rw.w.Write(b.Bytes()); err != nil {
		return err
	}
	if f, ok := rw.w.(http.Flusher); ok {
		f.Flush()
	}
	return rw.ctx.Err()
}

// sse collects a stream's events first, so the total is known for truncation.
type sse struct {
	events []sseEvent
}

type sseEvent struct {
	name string
	data []byte
}

func (s *sse) add(name string, v any) {
	data, ok := v.([]byte)
	if !ok {
		data = marshal(v)
	}
	s.events = append(s.events, sseEvent{name, data})
}

func (rw *responseWriter) stream(s *sse) error {
	events := append(slices.Clone(rw.prelude), s.events...)
	rw.total = len(events)
	for _, e := range events {
		if err := rw.event(e.name, e.data); err != nil {
			return err
		}
	}
	return nil
}

// DecodeRequest reads a request body sent to rawURL (…/v1/messages,
// …/chat/completions, …/responses, …/models/{model}:generateContent) as
// the server would: the provider-neutral request, the model asked for and
// whether the answer was to be streamed. Tools that show recorded requests
// in model terms use it, such as `dageval cassette diff`. A body the
// server would refuse is an error with the server's message.
func DecodeRequest(rawURL string, body []byte) (req *llm.Request, model string, stream bool, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", false, err
	}
	api := (*Server)(nil).route(u)
	if api == nil {
		return nil, "", false, fmt.Errorf("%s is not a model endpoint the local server knows", u.Path)
	}
	var call ServedCall
	req, _, e := api.decode(body, &call)
	if e != nil {
		return nil, call.Model, call.Stream, errors.New(e.msg)
	}
	return req, call.Model, call.Stream, nil
}
