package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// DefaultBaseURL is the OpenAI API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Model is a model behind OpenAI's Responses API or any Chat Completions
// server. It implements llm.ChatModel, llm.StreamingModel and
// llm.Identified and is safe for concurrent use.
type Model struct {
	cfg      provider.Config
	platform Platform
	base     []option.RequestOption // the adapter's own client options

	once      sync.Once
	svc       services
	clientErr error

	schemaMu sync.RWMutex
	schemas  map[string]map[string]any // tool parameters by raw schema

	// The messages of earlier requests, encoded (see provider.Encoded). A
	// chat entry holds nil for a message that sends nothing.
	chatMessages  provider.Encoded[*sdk.ChatCompletionMessageParamUnion]
	responseItems provider.Encoded[[]responses.ResponseInputItemUnionParam]
}

// The tools of earlier requests, encoded, for every model: a tool encodes
// the same whatever the model, and an eval run builds a model for each
// cell while the cells' agents share their tools' specs (a Go tool's
// schema is inferred once per type), so one cache lets every cell send the
// encoding the first one made; per model, each cell encoded every tool
// again, which was a tenth of a live eval run's CPU time.
var (
	chatTools     provider.Encoded[sdk.ChatCompletionToolUnionParam]
	responseTools provider.Encoded[responses.ToolUnionParam]
)

// The shells of requests (see provider.SharedShells), for every model for
// the same reason: each cell's model encoded its first request's shell.
var chatShells, responseShells provider.SharedShells[shellKey]

type services struct {
	chat      sdk.ChatCompletionService
	responses responses.ResponseService
}

// Platform routes the adapter through a cloud's hosting of OpenAI models
// (Azure OpenAI) by way of the SDK's own adaptation for it.
type Platform interface {
	// ClientOptions returns the SDK options that route and authenticate
	// every call. A model asks once, at its first call and never while it
	// is built, so building reads no credentials; an error fails that call
	// and the later ones. The options are applied after the adapter's own
	// (HTTP client, retries, headers), so that the platform's adaptation
	// runs nearest the wire and the recorder under the HTTP client sees the
	// request as the platform sends it.
	ClientOptions(ctx context.Context) ([]option.RequestOption, error)
}

var (
	_ llm.StreamingModel = (*Model)(nil)
	_ llm.Identified     = (*Model)(nil)
)

// Register installs the adapter for provider.KindOpenAI and
// provider.KindOpenAICompatible.
func Register(r *provider.Resolver) error {
	f := func(c provider.Config) (llm.ChatModel, error) { return New(c) }
	return errors.Join(r.Register(provider.KindOpenAI, f), r.Register(provider.KindOpenAICompatible, f))
}

// New builds a model from cfg. It needs no API key; the key is looked up on
// each live call. The SDK's own environment variables (OPENAI_BASE_URL,
// OPENAI_ORG_ID, ...) are never read: the services are built from cfg alone.
func New(cfg provider.Config) (*Model, error) {
	cfg = cfg.Clone()
	if cfg.Kind == "" {
		cfg.Kind = provider.KindOpenAI
	}
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.BaseURL == "" && cfg.Kind == provider.KindOpenAI {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Kind != provider.KindOpenAI && cfg.Kind != provider.KindOpenAICompatible {
		return nil, fmt.Errorf("openai: config is for kind %s", cfg.Kind)
	}
	if cfg.ResponsesAPI() && cfg.Kind != provider.KindOpenAI {
		return nil, fmt.Errorf("openai: provider %s speaks Chat Completions; the Responses API needs kind %s", cfg.Provider, provider.KindOpenAI)
	}
	return newModel(cfg, nil)
}

// NewOn builds a model whose calls go through platform, for the adapters
// of OpenAI models on other clouds (harness/provider/azure). The platform
// sets the endpoint from cfg. Like New, it reads no credentials.
func NewOn(cfg provider.Config, platform Platform) (*Model, error) {
	if platform == nil {
		return nil, errors.New("openai: NewOn needs a platform")
	}
	cfg = cfg.Clone()
	if cfg.Kind == "" || cfg.Provider == "" {
		return nil, errors.New("openai: a platform model needs its config's Kind and Provider")
	}
	return newModel(cfg, platform)
}

func newModel(cfg provider.Config, platform Platform) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if platform == nil && len(cfg.ExtraBody) == 0 {
		// The client is made of the HTTP client, the URL and the headers
		// alone, and the SDK never changes it: the models of one resolver
		// with the same three share it.
		key := sharedClientKey{http: cfg.HTTPClient, baseURL: cfg.BaseURL, headers: headerKey(cfg.Headers)}
		c := cfg.Shared(key, func() any { return newClient(cfg, nil) }).(*client)
		m := &Model{cfg: cfg, base: c.opts, svc: c.svc}
		m.once.Do(func() {})
		return m, nil
	}
	c := newClient(cfg, platform)
	m := &Model{cfg: cfg, platform: platform, base: c.opts, svc: c.svc}
	if platform == nil {
		m.once.Do(func() {})
	}
	return m, nil
}

// client is the SDK's side of a model: its request options and, without a
// platform, its services.
type client struct {
	opts []option.RequestOption
	svc  services
}

func newClient(cfg provider.Config, platform Platform) *client {
	opts := []option.RequestOption{
		option.WithHTTPClient(cfg.Client()),
		option.WithMaxRetries(0), // provider.RetryPolicy decides
	}
	if platform == nil {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.ExtraBody)) {
		opts = append(opts, option.WithJSONSet(k, cfg.ExtraBody[k]))
	}
	c := &client{opts: opts}
	if platform == nil {
		c.svc = services{chat: sdk.NewChatCompletionService(opts...), responses: responses.NewResponseService(opts...)}
	}
	return c
}

// sharedClientKey is what a shared client is made of besides the
// resolver's base (see provider.Config.Shared).
type sharedClientKey struct {
	http             *http.Client
	baseURL, headers string
}

// headerKey is headers in one comparable string: sorted, each name and
// value ended by a NUL, which neither may contain.
func headerKey(headers map[string]string) string {
	if len(headers) == 0 {
		return ""
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(headers[k])
		b.WriteByte(0)
	}
	return b.String()
}

// services returns the SDK services, building a platform's at the first call.
func (m *Model) services(ctx context.Context) (*services, error) {
	m.once.Do(func() {
		extra, err := m.platform.ClientOptions(context.WithoutCancel(ctx))
		if err != nil {
			if _, ok := llm.AsError(err); !ok {
				err = &llm.Error{Kind: llm.ErrAuthentication, Provider: m.cfg.Provider, Message: m.cfg.Scrub(err.Error()), Err: err}
			}
			m.clientErr = err
			return
		}
		opts := append(slices.Clone(m.base), extra...)
		m.svc = services{chat: sdk.NewChatCompletionService(opts...), responses: responses.NewResponseService(opts...)}
	})
	if m.clientErr != nil {
		return nil, m.clientErr
	}
	return &m.svc, nil
}

// Identity implements llm.Identified.
func (m *Model) Identity() llm.Identity { return m.cfg.Identity() }

// Config returns the model's configuration.
func (m *Model) Config() provider.Config { return m.cfg.Clone() }

// callOptions are the per-call options: credentials and the capture of the
// exchange (stream says whether the call asks for an event stream).
//
// A platform authenticates calls itself (api-key, Entra ID); only an
// unresolved config is reported here for it.
func (m *Model) callOptions(stream bool) ([]option.RequestOption, *provider.Capture, error) {
	var header, value string
	if m.platform == nil {
		var err error
		if header, value, err = m.cfg.Credentials(); err != nil {
			return nil, nil, err
		}
	} else if err := m.cfg.Unresolved(); err != nil {
		return nil, nil, err
	}
	capture := &provider.Capture{Stream: stream}
	opts := []option.RequestOption{option.WithMiddleware(capture.Middleware)}
	switch {
	case header == "":
	case strings.EqualFold(header, "Authorization") && strings.HasPrefix(value, "Bearer "):
		opts = append(opts, option.WithAPIKey(strings.TrimPrefix(value, "Bearer ")))
	default:
		opts = append(opts, option.WithHeader(header, value))
	}
	return opts, capture, nil
}

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if m.cfg.ResponsesAPI() {
		params, err := m.responsesParams(req)
		if err != nil {
			return nil, err
		}
		return provider.Do(ctx, m.cfg, func(ctx context.Context) (*llm.Response, error) {
			return m.responsesOnce(ctx, params)
		})
	}
	params, err := m.chatParams(req, false)
	if err != nil {
		return nil, err
	}
	return provider.Do(ctx, m.cfg, func(ctx context.Context) (*llm.Response, error) {
		return m.chatOnce(ctx, params, len(req.Messages))
	})
}

// answerClient serves a set-aside answer, so that it can be decoded the
// way it was framed.
func answerClient(a provider.RecordedAnswer) option.RequestOption {
	return option.WithHTTPClient(&http.Client{Transport: a})
}

// keepAll is an emit function that consumes every stream delta.
func keepAll(llm.Chunk) bool { return true }

// responsesOnce is one Responses API attempt; an event-stream answer is
// decoded as streamResponses would. Extra options come last.
func (m *Model) responsesOnce(ctx context.Context, params responses.ResponseNewParams, extra ...option.RequestOption) (*llm.Response, error) {
	opts, capture, err := m.callOptions(false)
	if err != nil {
		return nil, err
	}
	svc, err := m.services(ctx)
	if err != nil {
		return nil, err
	}
	var raw []byte
	var res *http.Response
	send, sendOpts := direct(m, params)
	if _, err := svc.responses.New(ctx, send, append(append(append(opts, sendOpts...), option.WithResponseBodyInto(&raw), option.WithResponseInto(&res)), extra...)...); err != nil {
		if a, ok := capture.OtherFraming(err); ok {
			return m.timed(capture)(m.streamResponses(ctx, params, keepAll, answerClient(a)))
		}
		return nil, m.classify(ctx, err, capture)
	}
	r, err := responseAnswers.Decode(res, raw, m.cfg.Replay, decodeResponse)
	if err != nil {
		return nil, m.classify(ctx, err, capture)
	}
	return m.timed(capture)(m.fromResponse(r))
}

// chatOnce is one Chat Completions attempt; nMessages is the request's
// message count (see chatResult.response). An event-stream answer is
// decoded as streamChat would. Extra options come last.
func (m *Model) chatOnce(ctx context.Context, params sdk.ChatCompletionNewParams, nMessages int, extra ...option.RequestOption) (*llm.Response, error) {
	opts, capture, err := m.callOptions(false)
	if err != nil {
		return nil, err
	}
	svc, err := m.services(ctx)
	if err != nil {
		return nil, err
	}
	var raw []byte
	var res *http.Response
	send, sendOpts := direct(m, params)
	if _, err := svc.chat.New(ctx, send, append(append(append(opts, sendOpts...), option.WithResponseBodyInto(&raw), option.WithResponseInto(&res)), extra...)...); err != nil {
		if a, ok := capture.OtherFraming(err); ok {
			return m.timed(capture)(m.streamChat(ctx, params, nMessages, keepAll, answerClient(a)))
		}
		return nil, m.classify(ctx, err, capture)
	}
	c, err := chatAnswers.Decode(res, raw, m.cfg.Replay, decodeChat)
	if err != nil {
		return nil, m.classify(ctx, err, capture)
	}
	result, err := chatResultOf(c)
	if err != nil {
		return nil, m.cfg.BadResponse(err)
	}
	return m.timed(capture)(result.response(nMessages), nil)
}

// timed stamps a successful response with the latency capture measured or
// was told by a recorder.
func (m *Model) timed(capture *provider.Capture) func(*llm.Response, error) (*llm.Response, error) {
	return func(resp *llm.Response, err error) (*llm.Response, error) {
		if resp != nil {
			resp.Latency = capture.Latency(m.cfg.Replay)
		}
		return resp, err
	}
}

// Stream implements llm.StreamingModel: deltas as they arrive, then a final
// chunk whose Response equals what Generate returns for the same answer. A
// failure before the first chunk is retried under the policy.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		var once func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error)
		if m.cfg.ResponsesAPI() {
			params, err := m.responsesParams(req)
			if err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			once = func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error) {
				return m.streamResponses(ctx, params, emit)
			}
		} else {
			params, err := m.chatParams(req, true)
			if err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			once = func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error) {
				return m.streamChat(ctx, params, len(req.Messages), emit)
			}
		}
		provider.DoStream(ctx, m.cfg, yield, once)
	}
}

// classify maps an SDK or transport error to an *llm.Error.
func (m *Model) classify(ctx context.Context, err error, capture *provider.Capture) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, ok := llm.AsError(err); ok {
		return err
	}
	if f, ok := capture.Failure(); ok {
		f.Err = err
		return m.cfg.Classify(f)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		f := provider.Failure{StatusCode: apiErr.StatusCode, Err: err}
		if raw := apiErr.RawJSON(); raw != "" {
			f.Body = []byte(`{"error":` + raw + `}`)
		}
		if apiErr.Response != nil {
			f.Header = apiErr.Response.Header
		}
		return m.cfg.Classify(f)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		// An error document inside a 200 stream.
		return m.cfg.Classify(provider.Failure{StatusCode: 200, Body: streamErr.Event.Data, Err: err})
	}
	if c := m.cfg.ClassifyTransport(err); c != err {
		return c
	}
	// A 2xx answer the SDK could not decode.
	return m.cfg.BadResponse(err)
}

// warn logs an oddity of an answer that was accepted anyway; the response
// carries it too (llm.Response.Warnings).
func (m *Model) warn(ctx context.Context, msg string) {
	if l := m.cfg.Logger; l != nil {
		l.WarnContext(ctx, "model answer: "+msg, "provider", m.cfg.Provider, "model", m.cfg.Model)
	}
}
