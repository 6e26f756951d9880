package evals

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/provider"
)

// RunResult is what a suite run produced.
type RunResult struct {
	Summary Summary
	// Results holds the cells that produced a result, in matrix order.
	Results []CellResult
	// Details maps the id of each cell in Results to its full record (what
	// cells/<id>.json holds), so that a run can be reported from memory.
	Details map[string]*CellDetail
	// Cells is the matrix that was run.
	Cells []Cell
	// Mode is the mode in effect and ModeReason why (see recorder.ResolveMode).
	Mode       recorder.Mode
	ModeReason string
}

// runner holds what every cell of one run shares.
type runner struct {
	s          *Suite
	o          Options
	mode       recorder.Mode
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
	o.reg = s.reg
	r := &runner{s: s, o: o, getenv: o.Getenv, log: o.Logger, entries: s.providerEntries()}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// An explicit mode wins over DAGEVAL_RECORD, which wins over the
	// suite's mode: the replay-miss messages tell users to set the variable,
	// and a suite file's mode is only its default.
	mode, reason, err := recorder.ResolveModeOver(o.Mode, s.Mode, r.getenv)
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
func (s *Suite) Run(ctx context.Context, o Options) (*RunResult, error) {
	ss, err := s.start(ctx, o)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range min(ss.conc, len(ss.cells)) {
		wg.Go(func() {
			for i := range jobs {
				ss.prog.begin(ss.cells[i].CellKey)
				res, detail, skipped := ss.runCell(runCtx, ss.cells[i])
				if skipped {
					continue
				}
				if err := ss.record(i, res, detail); err != nil {
					stop()
				}
			}
		})
	}
feed:
	for i := range ss.cells {
		select {
		case jobs <- i:
		case <-runCtx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	rr, err := ss.conclude()
	if err != nil {
		return rr, err
	}
	return rr, ctx.Err()
}

// session is one run of a suite's cells, from preparation to conclusion:
// what Suite.Run and Run(t) share.
type session struct {
	*runner
	cells []Cell
	out   *outDir // nil without Options.OutDir
	prog  *progress

	mu       sync.Mutex
	results  []*CellResult // by cell index; nil until the cell finished
	details  []*CellDetail
	writeErr error
}

// start prepares a run: it resolves the mode, selects the cells, validates
// the suite against them and opens the output directory.
func (s *Suite) start(ctx context.Context, o Options) (*session, error) {
	r, err := s.newRunner(o)
	if err != nil {
		return nil, err
	}
	cells, err := s.Cells(o.Filter, o.Epochs)
	if err != nil {
		return nil, err
	}
	if err := joinErrors(r.validate(ctx, cells, true)); err != nil {
		return nil, err
	}
	ss := &session{runner: r, cells: cells, results: make([]*CellResult, len(cells)), details: make([]*CellDetail, len(cells))}
	if o.OutDir != "" {
		if ss.out, err = openOutDir(o.OutDir); err != nil {
			return nil, err
		}
	}
	ss.prog = newProgress(o, s.Name, len(cells))
	return ss, nil
}

// record keeps the result of cell i, writes its files and reports it. The
// first write error is returned and ends all writing, so that the output
// directory never gets a summary over cell files that are missing.
func (ss *session) record(i int, res CellResult, d *CellDetail) error {
	var err error
	if ss.out != nil {
		err = ss.out.detail(d)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.results[i], ss.details[i] = &res, d
	if ss.out == nil || ss.writeErr != nil {
		err = nil // nothing to write, or writing ended at an earlier error
	} else if err == nil {
		err = ss.out.result(&res)
	}
	if err != nil {
		ss.writeErr = err
	}
	ss.prog.cell(res)
	if ss.o.OnCell != nil {
		ss.o.OnCell(res)
	}
	return err
}

// keepFinished leaves out the cells that produced no result, for a run in
// which they were not selected rather than lost (go test -run).
func (ss *session) keepFinished() {
	var cells []Cell
	var results []*CellResult
	var details []*CellDetail
	for i, res := range ss.results {
		if res != nil {
			cells, results, details = append(cells, ss.cells[i]), append(results, res), append(details, ss.details[i])
		}
	}
	ss.cells, ss.results, ss.details = cells, results, details
}

// conclude summarises the run (a cell without a result counts as missing)
// and finishes the output directory, or leaves it without a summary after
// a write error.
func (ss *session) conclude() (*RunResult, error) {
	ss.prog.finish()
	rr := &RunResult{Cells: ss.cells, Details: map[string]*CellDetail{}, Mode: ss.mode, ModeReason: ss.modeReason}
	rr.Summary = ss.s.summarize(ss.cells, ss.results, string(ss.mode), ss.s.TolerateErrors || ss.o.TolerateErrors)
	for i, res := range ss.results {
		if res != nil {
			rr.Results = append(rr.Results, *res)
			rr.Details[res.ID] = ss.details[i]
		}
	}
	if ss.writeErr != nil {
		ss.out.abort()
		return rr, ss.writeErr
	}
	if ss.out != nil {
		if err := ss.out.finish(ss.results, &rr.Summary); err != nil {
			return rr, err
		}
	}
	return rr, nil
}
