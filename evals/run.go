package evals

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/provider"
)

// Outcome is what a suite run produced.
type Outcome struct {
	Summary Summary
	// Results holds the cells that produced a result, in matrix order.
	Results []CellResult
	// Cells is the matrix that was run.
	Cells []Cell
	// Mode is the mode in effect and ModeReason why (see fakes.ResolveMode).
	Mode       fakes.Mode
	ModeReason string
}

// runner holds what every cell of one run shares.
type runner struct {
	s          *Suite
	o          Options
	mode       fakes.Mode
	modeReason string
	transport  http.RoundTripper
	getenv     func(string) string
	entries    map[string]provider.Entry
	limits     map[string]chan struct{}
	log        *slog.Logger
	conc       int
	liveClient *http.Client
}

func (s *Suite) newRunner(o Options) (*runner, error) {
	r := &runner{s: s, o: o, getenv: o.Getenv, log: o.Logger, entries: s.providerEntries()}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	requested := s.Mode
	if o.Mode != "" {
		requested = o.Mode
	}
	mode, reason, err := fakes.ResolveMode(requested, r.getenv)
	if err != nil {
		return nil, err
	}
	r.mode, r.modeReason = mode, reason
	r.conc = s.Concurrency
	if o.Concurrency > 0 {
		r.conc = o.Concurrency
	}
	r.transport = o.Transport
	if r.transport == nil {
		r.transport = http.DefaultTransport
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			// Keep a connection per cell in flight instead of reconnecting.
			t = t.Clone()
			t.MaxIdleConnsPerHost = max(r.conc, 2)
			r.transport = t
		}
	}
	r.liveClient = &http.Client{Transport: r.transport}
	if len(s.ProviderConcurrency) > 0 {
		r.limits = map[string]chan struct{}{}
		for name, n := range s.ProviderConcurrency {
			r.limits[name] = make(chan struct{}, n)
		}
	}
	return r, nil
}

// Run runs the suite's cells (bounded by the concurrency), judges them and
// summarises the run; with Options.OutDir it writes results.jsonl,
// summary.json and cells/<id>.json there. Cells that fail or error are
// results, not errors: Run returns an error only when the suite cannot be
// run as given (a filter selecting nothing, a missing cassette in replay
// mode, an agent that does not assemble, an output directory it cannot
// write) or when ctx is cancelled, in which case the cells that finished
// are still summarised and written and the rest count as missing.
func (s *Suite) Run(ctx context.Context, o Options) (*Outcome, error) {
	r, err := s.newRunner(o)
	if err != nil {
		return nil, err
	}
	cells, err := s.Cells(o.Filter, o.Epochs)
	if err != nil {
		return nil, err
	}
	if err := r.validate(ctx, cells); err != nil {
		return nil, err
	}
	var out *outDir
	if o.OutDir != "" {
		if out, err = openOutDir(o.OutDir); err != nil {
			return nil, err
		}
	}
	results := make([]*CellResult, len(cells))
	prog := newProgress(o, s.Name, len(cells))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		writeErr error
	)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	jobs := make(chan int)
	for range min(r.conc, len(cells)) {
		wg.Go(func() {
			for i := range jobs {
				res, detail, skipped := r.runCell(runCtx, cells[i])
				if skipped {
					continue
				}
				var err error
				if out != nil {
					err = out.detail(detail)
				}
				mu.Lock()
				results[i] = &res
				if out != nil && writeErr == nil {
					if err == nil {
						err = out.result(&res)
					}
					if writeErr = err; writeErr != nil {
						stop()
					}
				}
				prog.cell(res)
				if o.OnCell != nil {
					o.OnCell(res)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range cells {
		select {
		case jobs <- i:
		case <-runCtx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	prog.finish()

	oc := &Outcome{Cells: cells, Mode: r.mode, ModeReason: r.modeReason}
	oc.Summary = s.Summarize(cells, results, string(r.mode))
	for _, res := range results {
		if res != nil {
			oc.Results = append(oc.Results, *res)
		}
	}
	if writeErr != nil {
		out.abort()
		return oc, writeErr
	}
	if out != nil {
		if err := out.finish(results, &oc.Summary); err != nil {
			return oc, err
		}
	}
	return oc, ctx.Err()
}
