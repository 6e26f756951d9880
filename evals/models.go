package evals

import (
	"context"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
)

// providerEntries merges the agent file's providers and the suite's over
// the built-in ones (later wins).
func (s *Suite) providerEntries() map[string]provider.Entry {
	out := map[string]provider.Entry{}
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

// providerConfig is what every resolver of the run shares; the HTTP client,
// replay flag and retries come from where the calls go (see models).
func (r *runner) providerConfig() provider.Config { return provider.Config{Getenv: r.getenv} }

// newResolver builds the model resolver a cell (or validation) uses: the
// built-in adapters with cfg, the suite's providers and the run's
// per-provider limits.
func (r *runner) newResolver(cfg provider.Config) (func(string) (llm.ChatModel, error), error) {
	res := builtin.NewResolver(cfg)
	if err := res.SetEntries(r.entries); err != nil {
		return nil, err
	}
	resolve := harness.ModelResolver(profile.Default(), res)
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
		// Live calls keep nothing, so they need no recorder in the way.
		cfg := r.providerConfig()
		cfg.HTTPClient = r.liveClient
		resolve, err := r.newResolver(cfg)
		if err != nil {
			return nil, err
		}
		return &cellModels{resolve: resolve}, nil
	}
	opts := []recorder.Option{recorder.WithMode(r.mode), recorder.WithRealTransport(r.transport), recorder.WithGetenv(r.getenv)}
	if r.s.Match != "" {
		opts = append(opts, recorder.WithMatch(r.s.Match))
	}
	rec, err := recorder.New(cell.Cassette, opts...)
	if err != nil {
		return nil, err
	}
	// The recorder's config turns the SDK's retries off while recording, so
	// that a retried failure never lands in the cassette ahead of its answer.
	resolve, err := r.newResolver(rec.ProviderConfig(r.providerConfig()))
	if err != nil {
		return nil, err
	}
	return &cellModels{rec: rec, resolve: resolve}, nil
}

// limit wraps a model so that at most cap(sem) of its provider's calls are
// in flight across the run.
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

type identifiedLimited struct{ limited }

func (l identifiedLimited) Identity() llm.Identity {
	id, _ := llm.IdentityOf(l.inner)
	return id
}
