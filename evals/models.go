package evals

import (
	"context"
	"iter"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
)

// providerEntries merges the registered providers, the agent file's and
// the suite's over the built-in ones (later wins).
func (s *Suite) providerEntries() map[string]provider.Entry {
	out := map[string]provider.Entry{}
	reg := s.reg
	if reg == nil {
		reg = global
	}
	for _, name := range reg.Providers() {
		out[name], _ = reg.files.Provider(name)
	}
	if af := s.Agent.Spec; af != nil {
		for name, d := range af.Providers {
			out[name] = d.Entry()
		}
	}
	for name, e := range s.Providers {
		out[name] = e
	}
	return out
}

// cellModels resolves a cell's model specs so that every call goes through
// the cell's recorder, replaying or recording its cassette.
type cellModels struct {
	rec     *recorder.Recorder
	resolve func(spec string) (llm.ChatModel, error)
}

// providerConfig is what every resolver of the run shares: the suite's
// provider limits and the environment. The HTTP client and the replay flag
// come from where the calls go (see models).
func (r *runner) providerConfig() provider.Config {
	c := provider.Config{Getenv: r.getenv, Timeout: r.s.Limits.ProviderTimeout, Limiters: r.limiters}
	if n := r.s.Limits.ProviderRetries; n != nil {
		c.Retry.MaxAttempts = *n + 1
	}
	return c
}

// newResolver builds the model resolver a cell (or validation) uses: the
// built-in adapters with cfg, the suite's providers and the run's
// per-provider limits.
func (r *runner) newResolver(cfg provider.Config) (func(string) (llm.ChatModel, error), error) {
	models, err := r.modelResolver()
	if err != nil {
		return nil, err
	}
	resolve := harness.ModelResolver(profile.Default(), models.WithBase(cfg))
	if len(r.limits) == 0 {
		return resolve, nil
	}
	return func(spec string) (llm.ChatModel, error) {
		m, err := resolve(spec)
		if err != nil {
			return nil, err
		}
		sp, _ := llm.ParseSpec(spec)
		if sem, ok := r.limits[sp.Provider]; ok {
			return limit(m, sem), nil
		}
		return m, nil
	}, nil
}

func (r *runner) models(cell Cell) (*cellModels, error) {
	if r.mode == recorder.ModeLive {
		// Live calls keep nothing, so they need no recorder in the way,
		// and every cell resolves its models alike (the resolver holds no
		// state a resolution changes): one resolver serves the run.
		resolve, err := r.liveResolve()
		if err != nil {
			return nil, err
		}
		return &cellModels{resolve: resolve}, nil
	}
	opts := []recorder.Option{recorder.WithMode(r.mode), recorder.WithRealTransport(r.transport), recorder.WithGetenv(r.getenv), recorder.WithSecrets(r.secrets...)}
	if r.s.Match != "" {
		opts = append(opts, recorder.WithMatch(r.s.Match))
	}
	opts = append(opts, r.o.Recorder...)
	rec, err := recorder.New(cell.Cassette, opts...)
	if err != nil {
		return nil, err
	}
	// Replay never retries (a recorded failure is the answer); recording
	// does, and the recorder keeps only the attempt that counted.
	resolve, err := r.newResolver(rec.ProviderConfig(r.providerConfig()))
	if err != nil {
		return nil, err
	}
	return &cellModels{rec: rec, resolve: resolve}, nil
}

// limit wraps a model so that at most cap(sem) of its provider's calls are
// in flight across the run. A streaming model stays one: the slot is held
// until its stream ends.
func limit(m llm.ChatModel, sem chan struct{}) llm.ChatModel {
	l := limited{inner: m, sem: sem}
	if _, ok := m.(llm.Identified); ok {
		return identifiedLimited{l}
	}
	return l
}

type limited struct {
	inner llm.ChatModel
	sem   chan struct{}
}

func (l limited) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.sem }()
	return l.inner.Generate(ctx, req)
}

// Unwrap returns the limited model, for code that looks for its provider
// configuration.
func (l limited) Unwrap() llm.ChatModel { return l.inner }

// Stream implements llm.StreamingModel; a model that cannot stream answers
// with its whole response as the one final chunk.
func (l limited) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			yield(llm.Chunk{}, ctx.Err())
			return
		}
		defer func() { <-l.sem }()
		sm, ok := l.inner.(llm.StreamingModel)
		if !ok {
			resp, err := l.inner.Generate(ctx, req)
			if err != nil {
				yield(llm.Chunk{}, err)
				return
			}
			yield(llm.Chunk{Response: resp}, nil)
			return
		}
		for c, err := range sm.Stream(ctx, req) {
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

type identifiedLimited struct{ limited }

func (l identifiedLimited) Identity() llm.Identity {
	id, _ := llm.IdentityOf(l.inner)
	return id
}
