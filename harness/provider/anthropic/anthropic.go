package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// DefaultBaseURL is the Anthropic API root.
const DefaultBaseURL = "https://api.anthropic.com"

// Model is a Claude model behind the Messages API, directly or through a
// cloud Platform. It implements llm.ChatModel, llm.StreamingModel and
// llm.Identified and is safe for concurrent use.
type Model struct {
	cfg      provider.Config
	platform Platform
	base     []option.RequestOption // the adapter's own client options

	once      sync.Once
	messages  sdk.MessageService
	clientErr error

	schemaMu sync.RWMutex
	schemas  map[string]sdk.ToolInputSchemaParam // by raw tool schema

	// The content blocks of the messages of earlier requests, their turns
	// (by first message) and their system prompts, encoded (see
	// provider.Encoded).
	blocks provider.Encoded[[]sdk.ContentBlockParamUnion]
	turns  provider.Encoded[*encodedTurn]
	system provider.Encoded[[]sdk.TextBlockParam]
	// The shell of the latest request (see provider.Shells).
	shells provider.Shells[shellKey]
}

// The tools of earlier requests, encoded, for every model: a tool encodes
// the same whatever the model, and the models of an eval's cells, or of a
// replay's runs, share their agents' tool specs (see the OpenAI adapter's
// tool caches).
var tools provider.Encoded[sdk.ToolUnionParam]

// Platform routes the adapter through a cloud's hosting of Claude (Amazon
// Bedrock, Google Vertex AI) by way of the SDK's own adaptation for it.
type Platform interface {
	// ClientOptions returns the SDK options that route and authenticate
	// every call. A model asks once, at its first call and never while it
	// is built, so building reads no credentials; an error fails that call
	// and the later ones. The options are applied after the adapter's own
	// (HTTP client, retries, headers), so that the platform's adaptation
	// runs nearest the wire, as the SDK requires, and the recorder under
	// the HTTP client sees the request as the platform sends it.
	ClientOptions(ctx context.Context) ([]option.RequestOption, error)
}

var (
	_ llm.StreamingModel = (*Model)(nil)
	_ llm.Identified     = (*Model)(nil)
)

// Register installs the Anthropic adapter for provider.KindAnthropic.
func Register(r *provider.Resolver) error {
	return r.Register(provider.KindAnthropic, func(c provider.Config) (llm.ChatModel, error) { return New(c) })
}

// New builds a model from cfg. It reads no environment and needs no API
// key; the key is looked up on each live call.
func New(cfg provider.Config) (*Model, error) {
	cfg = cfg.Clone()
	if cfg.Kind == "" {
		cfg.Kind = provider.KindAnthropic
	}
	if cfg.Provider == "" {
		cfg.Provider = "anthropic"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Kind != provider.KindAnthropic {
		return nil, fmt.Errorf("anthropic: config is for kind %s", cfg.Kind)
	}
	return newModel(cfg, nil)
}

// NewOn builds a model whose calls go through platform, for the adapters
// of Claude on other clouds (harness/provider/bedrock, .../vertex). An
// empty cfg.BaseURL leaves the endpoint to the platform; a set one (a
// local server, a proxy) replaces it. Like New, it reads no credentials.
func NewOn(cfg provider.Config, platform Platform) (*Model, error) {
	if platform == nil {
		return nil, errors.New("anthropic: NewOn needs a platform")
	}
	cfg = cfg.Clone()
	if cfg.Kind == "" || cfg.Provider == "" {
		return nil, errors.New("anthropic: a platform model needs its config's Kind and Provider")
	}
	return newModel(cfg, platform)
}

func newModel(cfg provider.Config, platform Platform) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		// Keep ANTHROPIC_* variables and profile files out: the config says
		// everything, which is what makes tests and replays hermetic.
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.Client()),
		option.WithMaxRetries(0), // provider.RetryPolicy decides
		option.WithoutOpenTelemetry(),
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
	m := &Model{cfg: cfg, platform: platform, base: opts}
	if platform == nil {
		m.messages = sdk.NewClient(opts...).Messages
		m.once.Do(func() {})
	}
	return m, nil
}

// service returns the Messages service, building a platform's client at
// the first call.
func (m *Model) service(ctx context.Context) (*sdk.MessageService, error) {
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
		if m.cfg.BaseURL != "" {
			// After the platform's options, which set its own endpoint.
			opts = append(opts, option.WithBaseURL(m.cfg.BaseURL))
		}
		m.messages = sdk.NewClient(opts...).Messages
	})
	if m.clientErr != nil {
		return nil, m.clientErr
	}
	return &m.messages, nil
}

// Identity implements llm.Identified.
func (m *Model) Identity() llm.Identity { return m.cfg.Identity() }

// Config returns the model's configuration.
func (m *Model) Config() provider.Config { return m.cfg.Clone() }

// callOptions are the per-call options: credentials, the capture of the
// exchange (stream says whether the call asks for an event stream) and a
// request timeout far beyond any call. An explicit timeout lifts the SDK's
// refusal of long non-streaming calls; a total one would cut long streams,
// so the limit is the per-attempt silence timeout of provider.Config.
//
// A platform authenticates calls itself (SigV4, OAuth); only an
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
	opts := []option.RequestOption{option.WithMiddleware(capture.Middleware), option.WithRequestTimeout(365 * 24 * time.Hour)}
	if header != "" {
		opts = append(opts, option.WithHeader(header, value))
	}
	return opts, capture, nil
}

// Generate implements llm.ChatModel. An answer that arrives as an event
// stream (a server that streams unasked, or a replay of a streamed
// recording) is decoded as Stream would and gives the assembled response.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	return provider.Do(ctx, m.cfg, func(ctx context.Context) (*llm.Response, error) {
		return m.generateOnce(ctx, params)
	})
}

// generateOnce runs one plain attempt; extra options come last, so that a
// decode of a set-aside answer can replace the HTTP client.
func (m *Model) generateOnce(ctx context.Context, params sdk.MessageNewParams, extra ...option.RequestOption) (*llm.Response, error) {
	opts, capture, err := m.callOptions(false)
	if err != nil {
		return nil, err
	}
	svc, err := m.service(ctx)
	if err != nil {
		return nil, err
	}
	send, body := m.direct(params)
	var raw []byte
	var res *http.Response
	opts = append(append(opts, body...), option.WithResponseBodyInto(&raw), option.WithResponseInto(&res))
	if _, err := svc.New(ctx, send, append(opts, extra...)...); err != nil {
		if a, ok := capture.OtherFraming(err); ok {
			resp, err := m.streamOnce(ctx, params, func(llm.Chunk) bool { return true }, option.WithHTTPClient(&http.Client{Transport: a}))
			if resp != nil {
				resp.Latency = capture.Latency(m.cfg.Replay)
			}
			return resp, err
		}
		return nil, m.classify(ctx, err, capture)
	}
	msg, err := answers.Decode(res, raw, m.cfg.Replay, decodeMessage)
	if err != nil {
		return nil, m.classify(ctx, err, capture)
	}
	resp := response(msg)
	resp.Latency = capture.Latency(m.cfg.Replay)
	return resp, nil
}

// answers are the recorded answers replays decoded (see provider.Answers).
var answers provider.Answers[*sdk.Message]

// decodeMessage decodes a Messages API answer as the SDK does into its
// Message.
func decodeMessage(raw []byte) (*sdk.Message, error) {
	if string(raw) == "null" {
		return nil, errors.New("the answer is null")
	}
	msg := &sdk.Message{}
	if err := msg.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return msg, nil
}

// Stream implements llm.StreamingModel: text, thinking and tool-argument
// deltas as they arrive, then a final chunk whose Response equals what
// Generate returns for the same answer. A failure before the first chunk is
// retried under the policy; after it, the error ends the stream.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		provider.DoStream(ctx, m.cfg, yield, func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error) {
			return m.streamOnce(ctx, params, emit)
		})
	}
}

// classify maps an SDK or transport error to an *llm.Error.
func (m *Model) classify(ctx context.Context, err error, capture *provider.Capture) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if f, ok := capture.Failure(); ok {
		f.Err = err
		return m.cfg.Classify(f)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		// An error event inside a 200 stream.
		f := provider.Failure{StatusCode: apiErr.StatusCode, Body: []byte(apiErr.RawJSON()), Err: err}
		if apiErr.Response != nil {
			f.Header = apiErr.Response.Header
		}
		e := m.cfg.Classify(f)
		if e.RequestID == "" {
			e.RequestID = apiErr.RequestID
		}
		return e
	}
	if c := m.cfg.ClassifyTransport(err); c != err {
		return c
	}
	// A 2xx answer the SDK could not decode.
	return m.cfg.BadResponse(err)
}
