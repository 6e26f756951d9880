package evals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/builtin"
	"github.com/dageval/dageval/internal/scrub"
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
// requestWriteBuffer is the write buffer of each connection of the
// transport a run makes, large enough for most requests to go out in one
// write.
const requestWriteBuffer = 64 << 10

type runner struct {
	s          *Suite
	o          Options
	mode       recorder.Mode
	modeReason string
	transport  http.RoundTripper
	// ownTransport is transport when the run made it (no
	// Options.Transport): the run closes its idle connections when it
	// ends, which nobody else would before the idle timeout.
	ownTransport *http.Transport
	getenv       func(string) string
	entries      map[string]provider.Entry
	limits       map[string]chan struct{}
	log          *slog.Logger
	conc         int
	liveClient   *http.Client
	// limiters pace each provider's calls across the run, shared by every
	// cell (nil in replay, which calls no provider); limiterNote is told
	// when one pauses its provider.
	limiters    *provider.Limiters
	limiterNote func(provider.Throttle)
	// scrub replaces the run's secrets (see runSecrets) in everything the
	// run writes: results, cell files, the journal, the summary, progress
	// and logs, and, through each cell's recorder, cassettes.
	scrub   *scrub.Scrubber
	secrets []string
	// givens are the descriptions of agents that cells share (see given).
	givenMu sync.Mutex
	givens  map[givenKey]*sharedGiven
	// modelResolver is the built-in adapters with the run's provider
	// entries, checked once; each resolver of the run derives from it
	// (provider.Resolver.WithBase). liveResolve is the resolver of a live
	// run's cells, built at the first cell.
	modelResolver func() (*provider.Resolver, error)
	liveResolve   func() (func(string) (llm.ChatModel, error), error)
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
	r.secrets = r.runSecrets()
	r.scrub = scrub.New(r.secrets...)
	r.log = slog.New(scrub.Handler(r.log.Handler(), r.scrub))
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
			// A request of an agent with the default stack (its system
			// prompt and tool list) is 8–10 kB: net/http's 4 kB buffer
			// would send it in two writes.
			t.WriteBufferSize = requestWriteBuffer
			r.transport, r.ownTransport = t, t
		}
	}
	r.liveClient = &http.Client{Transport: r.transport}
	r.modelResolver = sync.OnceValues(func() (*provider.Resolver, error) {
		res := builtin.NewResolver(provider.Config{})
		if err := res.SetEntries(r.entries); err != nil {
			return nil, err
		}
		return res, nil
	})
	r.liveResolve = sync.OnceValues(func() (func(string) (llm.ChatModel, error), error) {
		cfg := r.providerConfig()
		cfg.HTTPClient = r.liveClient
		return r.newResolver(cfg)
	})
	if mode != recorder.ModeReplay {
		// A share of each limit per shard, so that the shards of a run
		// keep to the suite's limits together.
		limits := map[string]provider.RateLimit{}
		for name, l := range s.RateLimits {
			limits[name] = l.Share(o.Shard.Count)
		}
		r.limiters = provider.NewLimiters(limits, provider.LimiterOptions{OnThrottle: func(t provider.Throttle) {
			if r.limiterNote != nil {
				r.limiterNote(t)
			}
		}})
	}
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
// write, a run to resume that was started otherwise) or when ctx is
// cancelled, in which case the cells that finished are still summarised
// and written and the rest count as missing — to be run by resuming.
func (s *Suite) Run(ctx context.Context, o Options) (*RunResult, error) {
	ss, err := s.start(ctx, o)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range min(ss.conc, len(ss.todo)) {
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
	for _, i := range ss.todo {
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
	// todo lists the cells to run: all of them, or those a resumed run
	// has no result for.
	todo []int
	out  *outDir // nil without Options.OutDir
	prog *progress
	// keep holds the results in memory for the RunResult; without it the
	// results are only on disk, and memory does not grow with the matrix.
	keep    bool
	resumed resumed
	// onlyFinished leaves out the cells that produced no result, for a
	// run in which they were not selected rather than lost (go test -run).
	onlyFinished bool

	mu      sync.Mutex
	done    []bool        // by cell index, without an output directory
	results []*CellResult // by cell index when kept; nil until the cell finished
	// decoded holds, by cell index, with Options.KeepResults and an output
	// directory, each result decoded from its line by the worker that
	// wrote it, so that the end of the run need not decode every line.
	decoded  []*CellResult
	details  []*CellDetail
	writeErr error
}

// start prepares a run: it resolves the mode, selects the cells (the
// shard's), validates the suite against them and opens the output
// directory, or picks up the run in it when resuming.
func (s *Suite) start(ctx context.Context, o Options) (*session, error) {
	if err := o.Shard.validate(); err != nil {
		return nil, err
	}
	if (o.Resume || o.RetryErrors) && o.OutDir == "" {
		return nil, errors.New("resuming a run needs its output directory (Options.OutDir)")
	}
	r, err := s.newRunner(o)
	if err != nil {
		return nil, err
	}
	cells, err := s.Cells(o.Filter, o.Epochs)
	if err != nil {
		return nil, err
	}
	if cells = s.Shard(cells, o.Shard); len(cells) == 0 {
		return nil, fmt.Errorf("shard %s has no cells: the matrix has fewer cells than shards", o.Shard)
	}
	if err := joinErrors(r.validate(ctx, cells, true)); err != nil {
		return nil, err
	}
	ss := &session{runner: r, cells: cells, keep: !o.ResultsOnDisk || o.OutDir == "", done: make([]bool, len(cells))}
	if ss.keep {
		ss.results, ss.details = make([]*CellResult, len(cells)), make([]*CellDetail, len(cells))
	} else if o.KeepResults && o.OutDir != "" {
		ss.decoded = make([]*CellResult, len(cells))
	}
	if o.OutDir != "" {
		durable := r.mode != recorder.ModeReplay
		m := ss.manifest()
		if o.Resume || o.RetryErrors {
			prev, err := ReadManifest(o.OutDir)
			if err != nil {
				return nil, err
			}
			if err := prev.checkResumable(filepath.Join(o.OutDir, ManifestFile), m); err != nil {
				return nil, err
			}
			if ss.out, ss.resumed, err = resumeOutDir(o.OutDir, cells, durable, o.RetryErrors); err != nil {
				return nil, err
			}
		} else if ss.out, err = openOutDir(o.OutDir, len(cells), durable); err != nil {
			return nil, err
		}
		if err := writeManifest(o.OutDir, m); err != nil {
			ss.out.abort()
			return nil, fmt.Errorf("output directory: %w", err)
		}
	}
	for i := range cells {
		if ss.out == nil || !ss.out.j.has(i) {
			ss.todo = append(ss.todo, i)
		}
	}
	o.Progress = r.scrub.Writer(o.Progress)
	ss.prog = newProgress(o, s.Name, len(cells), len(cells)-len(ss.todo))
	if o.Resume || o.RetryErrors {
		ss.prog.resumed(ss.resumed, len(ss.todo))
	}
	if r.limiters != nil {
		r.limiterNote = ss.prog.throttled
	}
	return ss, nil
}

// record keeps the result of cell i, writes its files and reports it. The
// first write error is returned and ends all writing, so that the output
// directory never gets a summary over cell files that are missing. A cell
// counts as finished (and is reported) only once its line is in the
// journal.
func (ss *session) record(i int, res CellResult, d *CellDetail) error {
	ss.mu.Lock()
	failed := ss.writeErr != nil
	ss.mu.Unlock()
	// Scrubbed once here, the result and the cell file are clean wherever
	// they go next: the journal, results.jsonl, the summary's tally,
	// progress, OnCell, the reports.
	ss.scrub.Value(&res)
	if d != nil {
		// A shared agent description was scrubbed when it was described.
		a := d.Agent
		if d.shared.holds(a) {
			d.Agent = nil
		}
		// The file's result is the line's (scrubbed alike, it was already
		// equal): the line is taken from the file's encoding. It is not
		// scrubbed again: what it shares with res, res's scrubbing did.
		d.Result = CellResult{}
		ss.scrub.Value(d)
		d.Agent = a
		d.Result = res
	}
	var err error
	var decoded *CellResult
	if ss.out != nil && !failed {
		if ss.decoded != nil {
			decoded = new(CellResult)
		}
		err = ss.out.cellDecoded(i, d, decoded)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err != nil && ss.writeErr == nil {
		ss.writeErr = err
	}
	if err == nil && decoded != nil {
		ss.decoded[i] = decoded
	}
	ss.done[i] = true
	if ss.keep {
		ss.results[i], ss.details[i] = &res, d
	}
	ss.prog.cell(res)
	if ss.o.OnCell != nil {
		ss.o.OnCell(res)
	}
	return err
}

// keepFinished leaves out the cells that produced no result, for a run in
// which they were not selected rather than lost (go test -run).
func (ss *session) keepFinished() { ss.onlyFinished = true }

// conclude summarises the run (a cell without a result counts as missing)
// and finishes the output directory, or leaves it without a summary after
// a write error. The summary is tallied from the results in matrix order
// as results.jsonl is written, read back from the journal one line at a
// time, so a run resumed or run in shards sums up exactly as one that ran
// in one go, and no run needs its results in memory.
func (ss *session) conclude() (*RunResult, error) {
	ss.prog.finish()
	if ss.ownTransport != nil {
		ss.ownTransport.CloseIdleConnections()
	}
	rr := &RunResult{Details: map[string]*CellDetail{}, Mode: ss.mode, ModeReason: ss.modeReason}
	var kept []Cell
	t := ss.s.newTally(ss.cells, string(ss.mode), ss.s.TolerateErrors || ss.o.TolerateErrors)
	visit := func(i int, r *CellResult) {
		t.add(i, r)
		if ss.onlyFinished {
			kept = append(kept, ss.cells[i])
		}
		if r == nil || !ss.keep && !ss.o.KeepResults {
			return
		}
		rr.Results = append(rr.Results, *r)
		if !ss.keep {
			return // the details stay on disk
		}
		if d := ss.details[i]; d != nil {
			rr.Details[r.ID] = d
		} else if d, err := readDetail(ss.out.dir, r.ID); err == nil {
			rr.Details[r.ID] = d // a resumed run's earlier cell
		}
	}
	var err error
	switch {
	case ss.out == nil || ss.writeErr != nil:
		// From memory, or after a write error from whatever is at hand.
		for i := range ss.cells {
			var r *CellResult
			switch {
			case ss.keep:
				r = ss.results[i]
			case ss.out != nil:
				if line, lerr := ss.out.j.line(i, nil); lerr == nil && line != nil {
					r = new(CellResult)
					if json.Unmarshal(line, r) != nil {
						r = nil
					}
				}
			}
			if r != nil || !ss.onlyFinished {
				visit(i, r)
			}
		}
		err = ss.writeErr
		if ss.out != nil {
			ss.out.abort()
		}
	default:
		mem := ss.results
		if mem == nil {
			mem = ss.decoded
		}
		if mem == nil {
			mem = make([]*CellResult, len(ss.cells))
		}
		if err = ss.out.writeResults(ss.cells, mem, ss.onlyFinished, visit); err != nil {
			ss.out.abort()
		}
	}
	rr.Cells = ss.cells
	if ss.onlyFinished {
		rr.Cells = kept
		t.sum.ExpectedCells = len(kept)
	}
	rr.Summary = t.summary()
	ss.scrub.Value(&rr.Summary)
	if !ss.o.Shard.Whole() {
		sh := ss.o.Shard
		rr.Summary.Shard = &sh
	}
	if err != nil {
		return rr, err
	}
	if ss.out != nil {
		if err := ss.out.finish(&rr.Summary); err != nil {
			return rr, err
		}
	}
	return rr, nil
}

// readDetail reads cells/<id>.json of the run in dir.
func readDetail(dir, id string) (*CellDetail, error) {
	data, err := os.ReadFile(filepath.Join(dir, CellsDir, id+".json"))
	if err != nil {
		return nil, err
	}
	d := new(CellDetail)
	return d, json.Unmarshal(data, d)
}

// runSecrets are the credentials the run may meet, for scrubbing: the
// values of scrub.SecretEnv, and of each provider entry's api_key_env,
// credential variables (provider.CredentialEnv) and configured header
// values. Values shorter than scrub.MinSecretLen are left out by the
// scrubber (placeholder keys of local servers).
func (r *runner) runSecrets() []string {
	vals := scrub.EnvValues(r.getenv)
	for _, name := range slices.Sorted(maps.Keys(r.entries)) {
		e := r.entries[name]
		if e.APIKeyEnv != "" {
			if v := r.getenv(e.APIKeyEnv); v != "" {
				vals = append(vals, v)
			}
		}
		for _, n := range provider.CredentialEnv(e.Kind) {
			if v := r.getenv(n); v != "" {
				vals = append(vals, v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			vals = append(vals, e.Headers[k])
		}
	}
	return vals
}
