package gemini

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"

	"google.golang.org/genai"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// DefaultBaseURL is the Gemini API root; the adapter adds APIVersion.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// APIVersion is the Gemini API version the adapter speaks. v1beta is the
// one with function-call ids, thought signatures and JSON-schema tools.
const APIVersion = "v1beta"

// Model is a Gemini model behind the Gemini API. It implements
// llm.ChatModel, llm.StreamingModel and llm.Identified and is safe for
// concurrent use.
type Model struct {
	cfg    provider.Config
	models *genai.Models

	schemaMu sync.RWMutex
	schemas  map[string]map[string]any // tool parameters by raw schema
}

var (
	_ llm.StreamingModel = (*Model)(nil)
	_ llm.Identified     = (*Model)(nil)
)

// Register installs the Gemini adapter for provider.KindGemini.
func Register(r *provider.Resolver) error {
	return r.Register(provider.KindGemini, func(c provider.Config) (llm.ChatModel, error) { return New(c) })
}

// New builds a model from cfg. It reads no environment and needs no API
// key; the key is looked up on each live call. cfg.HTTPClient carries the
// requests (the recorder sits in its Transport), under the adapter's own
// wire layer.
func New(cfg provider.Config) (*Model, error) {
	cfg = cfg.Clone()
	if cfg.Kind == "" {
		cfg.Kind = provider.KindGemini
	}
	if cfg.Provider == "" {
		cfg.Provider = "gemini"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.AuthHeader == "" {
		cfg.AuthHeader = "x-goog-api-key"
	}
	if cfg.Kind != provider.KindGemini {
		return nil, fmt.Errorf("gemini: config is for kind %s", cfg.Kind)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := *cfg.Client()
	hc.Transport = &wire{next: hc.Transport}
	headers := http.Header{}
	for k, v := range cfg.Headers {
		headers.Set(k, v)
	}
	// The SDK insists on a key when the client is built and would read
	// GEMINI_API_KEY and GOOGLE_API_KEY otherwise; the wire layer swaps this
	// placeholder for the configured credential on every call (or drops it
	// in replay), so the config alone decides, as for the other adapters.
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      placeholderKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: cfg.BaseURL, APIVersion: APIVersion, Headers: headers},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return &Model{cfg: cfg, models: client.Models}, nil
}

// Identity implements llm.Identified.
func (m *Model) Identity() llm.Identity { return m.cfg.Identity() }

// Config returns the model's configuration.
func (m *Model) Config() provider.Config { return m.cfg.Clone() }

// begin starts one attempt: it resolves the credential (failing before any
// request when a live call has no key) and hands it to the wire layer
// through the attempt's context, with a fresh capture of the exchange
// (stream says whether the call asks for an event stream).
func (m *Model) begin(ctx context.Context, stream bool) (context.Context, *call, error) {
	header, value, err := m.cfg.Credentials()
	if err != nil {
		return nil, nil, err
	}
	c := &call{header: header, value: value, capture: &provider.Capture{Stream: stream}}
	return context.WithValue(ctx, callKey{}, c), c, nil
}

// Generate implements llm.ChatModel.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	contents, config, err := m.request(req)
	if err != nil {
		return nil, err
	}
	return provider.Do(ctx, m.cfg, func(ctx context.Context) (*llm.Response, error) {
		ctx, c, err := m.begin(ctx, false)
		if err != nil {
			return nil, err
		}
		resp, err := m.models.GenerateContent(ctx, m.cfg.Model, contents, config)
		if err != nil {
			return nil, m.classify(ctx, err, c.capture)
		}
		var r result
		r.add(resp)
		out, err := r.response(len(req.Messages))
		if err != nil {
			return nil, m.cfg.BadResponse(err)
		}
		out.Latency = c.capture.Latency(m.cfg.Replay)
		return out, nil
	})
}

// Stream implements llm.StreamingModel: text and thinking deltas as they
// arrive and each function call whole (Gemini sends calls complete), then a
// final chunk whose Response equals what Generate returns for the same
// answer. A failure before the first chunk is retried under the policy;
// after it, the error ends the stream.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		contents, config, err := m.request(req)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		provider.DoStream(ctx, m.cfg, yield, func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error) {
			return m.streamOnce(ctx, contents, config, len(req.Messages), emit)
		})
	}
}

// streamOnce runs one streaming attempt. emit returns false when the
// consumer stopped; streamOnce then returns at once.
func (m *Model) streamOnce(ctx context.Context, contents []*genai.Content, config *genai.GenerateContentConfig, nMessages int, emit func(llm.Chunk) bool) (*llm.Response, error) {
	ctx, c, err := m.begin(ctx, true)
	if err != nil {
		return nil, err
	}
	var r result
	for chunk, err := range m.models.GenerateContentStream(ctx, m.cfg.Model, contents, config) {
		if err != nil {
			return nil, m.classify(ctx, err, c.capture)
		}
		for _, d := range r.addChunk(chunk, nMessages) {
			if !emit(d) {
				return nil, nil
			}
		}
	}
	if !r.finished() {
		// Gemini's stream has no end event; the last chunk carries the
		// finish reason, so a stream without one was cut off.
		return nil, m.cfg.Truncated("a finishReason")
	}
	out, err := r.response(nMessages)
	if err != nil {
		return nil, m.cfg.BadResponse(err)
	}
	out.Latency = c.capture.Latency(m.cfg.Replay)
	return out, nil
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
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		// An error document inside a 200 stream.
		return m.cfg.Classify(provider.Failure{StatusCode: http.StatusOK, Body: errorDocument(apiErr), Err: err})
	}
	if c := m.cfg.ClassifyTransport(err); c != err {
		return c
	}
	// A 2xx answer the SDK could not decode.
	return m.cfg.BadResponse(err)
}
