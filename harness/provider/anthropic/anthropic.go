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

// Model is a Claude model behind the Messages API. It implements
// llm.ChatModel, llm.StreamingModel and llm.Identified and is safe for
// concurrent use.
type Model struct {
	cfg      provider.Config
	messages sdk.MessageService

	schemaMu sync.RWMutex
	schemas  map[string]sdk.ToolInputSchemaParam // by raw tool schema

	// The content blocks of the messages of earlier requests, their turns
	// (by first message) and the tools, encoded (see provider.Encoded).
	blocks provider.Encoded[[]sdk.ContentBlockParamUnion]
	turns  provider.Encoded[*encodedTurn]
	tools  provider.Encoded[sdk.ToolUnionParam]
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
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		// Keep ANTHROPIC_* variables and profile files out: the config says
		// everything, which is what makes tests and replays hermetic.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.Client()),
		option.WithMaxRetries(0), // provider.RetryPolicy decides
		option.WithoutOpenTelemetry(),
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.ExtraBody)) {
		opts = append(opts, option.WithJSONSet(k, cfg.ExtraBody[k]))
	}
	client := sdk.NewClient(opts...)
	return &Model{cfg: cfg, messages: client.Messages}, nil
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
func (m *Model) callOptions(stream bool) ([]option.RequestOption, *provider.Capture, error) {
	header, value, err := m.cfg.Credentials()
	if err != nil {
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
	msg, err := m.messages.New(ctx, params, append(opts, extra...)...)
	if err != nil {
		if a, ok := capture.OtherFraming(err); ok {
			resp, err := m.streamOnce(ctx, params, func(llm.Chunk) bool { return true }, option.WithHTTPClient(&http.Client{Transport: a}))
			if resp != nil {
				resp.Latency = capture.Latency(m.cfg.Replay)
			}
			return resp, err
		}
		return nil, m.classify(ctx, err, capture)
	}
	resp := response(msg)
	resp.Latency = capture.Latency(m.cfg.Replay)
	return resp, nil
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
