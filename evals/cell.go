package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/agentserver"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/rubrics"
)

// runClock is the clock of every run, so that timestamps in files the agent
// writes are the same on every replay.
var runClock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Errors that stop a run on one of the suite's limits.
var (
	errCostLimit = errors.New("cost limit reached")
	errTimeLimit = errors.New("time limit reached")
)

// builtAgent is a cell's assembled agent and what the runner needs to know about it.
type builtAgent struct {
	agent   *harness.Agent
	seeds   map[string]agent.FileData
	backend backend.Backend
	// subModels maps subagent names to their model specs, for pricing.
	subModels map[string]string
	// graphs is the cell's in-process deployment (the suite's graphs:),
	// nil when the suite has none.
	graphs *agentserver.Server
}

// runCell runs one cell and judges it. It never fails: what goes wrong is
// the cell's error. skipped reports a cell cut short because ctx (the whole
// run) was cancelled, which is left out of the results.
func (r *runner) runCell(ctx context.Context, cell Cell) (res CellResult, detail *CellDetail, skipped bool) {
	start := time.Now()
	detail = &CellDetail{SchemaVersion: SchemaVersion, Input: cell.CaseDef.Input, Messages: []llm.Message{}}
	if r.mode != recorder.ModeLive {
		if rel, err := filepath.Rel(r.s.Dir, cell.Cassette); err == nil {
			detail.Cassette = filepath.ToSlash(rel)
		}
	}
	waits := &provider.RateWaits{}
	run, err := r.execute(provider.WithRateWaits(ctx, waits), cell)
	if err != nil {
		res = CellResult{Status: StatusError, Error: err.Error(), Cause: CauseOf(err), Checks: []rubrics.CheckVerdict{}, ToolCalls: []string{}, CostKnown: true}
	} else {
		res = judge(context.WithoutCancel(ctx), cell.CaseDef, run)
		fillDetail(detail, cell.CaseDef, run)
		// The checks have read the backend's files: only now may a
		// sandbox stop and remove its workspace.
		if err := run.closeBackend(); err != nil {
			r.log.Warn("evals: closing the agent's backend", "cell", cell.ID, "error", err)
		}
	}
	res.CellKey, res.ID, res.Tags, res.Alias = cell.CellKey, cell.ID, cell.CaseDef.Tags, cell.Alias
	res.RateLimits = rateCounts(waits)
	res.DurationMS = time.Since(start).Milliseconds()
	detail.Result = res
	return res, detail, res.Status == StatusError && ctx.Err() != nil
}

// rateCounts lists a cell's rate-limit waits by provider; nil when none.
func rateCounts(w *provider.RateWaits) []RateLimitCount {
	st := w.Stats()
	var out []RateLimitCount
	for _, name := range slices.Sorted(maps.Keys(st)) {
		v := st[name]
		out = append(out, RateLimitCount{Provider: name, Throttled: v.Throttled, Waits: v.Waits, WaitMS: v.Wait.Milliseconds()})
	}
	return out
}

// cellRun is what executing a cell left, for judging and for its detail file.
type cellRun struct {
	// rec is what checks and the rubric judge: the transcript and tool
	// calls, the agent's files, usage, cost and the run's error.
	rec *rubrics.Record
	// final is the agent's final state; nil when the run did not return one.
	final  *agent.State
	events []agent.Event
	// seeds are the files the run started with.
	seeds map[string]agent.FileData
	steps int
	// costUSD prices the run's model calls; costKnown is false when a
	// model had no price, and then costUSD counts only what could be priced.
	costUSD   float64
	costKnown bool
	// interrupted is set when the agent paused for human input.
	interrupted bool
	// closeBackend ends the backend's lifecycle (a sandbox's workspace)
	// once the run is judged.
	closeBackend func() error
	// warnings did not decide the cell (CellResult.Warnings).
	warnings []string
	// given is what the main agent's model was given (CellDetail.Agent),
	// shared with other cells when shared is not nil.
	given  *AgentGiven
	shared *sharedGiven
}

// limitHit reports whether the run stopped on one of the suite's limits,
// which fails the cell but still judges it.
func (run *cellRun) limitHit() bool { return run.rec.Err != nil && isLimit(run.rec.Err) }

// execute runs the cell's agent and records what it did. An error means
// there is nothing to judge: the models, the grader or the agent could not
// be built, the run was cancelled, or its cassette could not be saved.
//
// A recording replaces the cell's cassette only when the run finished
// without provider errors: a run that ended on a provider error, a stall,
// its time limit or a cancellation abandons the recording (the recorder
// itself refuses failed exchanges nobody retried), and the cell's error
// says the previous cassette was kept.
func (r *runner) execute(ctx context.Context, cell Cell) (*cellRun, error) {
	cm, err := r.models(cell)
	if err != nil {
		return nil, withCause(CauseSetup, err)
	}
	stopped := cm.rec == nil
	finish := func(abandon string) error {
		if stopped {
			return nil
		}
		stopped = true
		if abandon != "" {
			return cm.rec.Abandon(abandon)
		}
		return cm.rec.Stop()
	}
	// A cell that ends before its run (its agent did not build) has
	// recorded nothing worth a cassette.
	defer finish("the cell ended before its agent ran")

	var grader *middleware.RubricMiddleware
	if cell.CaseDef.Rubric != nil {
		gm, err := cm.resolve(r.s.Grader.Model)
		if err != nil {
			return nil, withCause(CauseSetup, fmt.Errorf("grader: %w", err))
		}
		if grader, err = r.newGrader(gm); err != nil {
			return nil, withCause(CauseSetup, err)
		}
	}
	built, err := r.buildAgent(ctx, cell, cm.resolve, grader)
	if err != nil {
		return nil, withCause(CauseSetup, err)
	}
	if built.graphs != nil {
		// Before the recorder stops, whichever way the cell ends: a task
		// left running must not call a stopped recorder.
		defer built.graphs.Close()
	}
	// Each cell gets its backend started (a sandbox: a fresh workspace)
	// and closed again, here when the run fails, else after judging.
	if err := backend.Start(ctx, built.backend); err != nil {
		return nil, withCause(CauseSetup, fmt.Errorf("starting the agent's backend: %w", err))
	}
	closeBackend := sync.OnceValue(func() error { return backend.Close(built.backend) })
	keep := false
	defer func() {
		if !keep {
			_ = closeBackend()
		}
	}()

	given, shared := r.given(ctx, cell, built)

	history := cell.CaseDef.History
	msgs := append(append(make([]llm.Message, 0, len(history)+1), history...), llm.User(cell.CaseDef.Input))
	in := agent.Input{Messages: msgs, Files: built.seeds}
	if cell.CaseDef.Rubric != nil {
		in = cell.CaseDef.Rubric.Apply(in)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if r.s.Limits.Timeout > 0 {
		var stopTimer context.CancelFunc
		runCtx, stopTimer = context.WithTimeoutCause(runCtx, r.s.Limits.Timeout, fmt.Errorf("%w: the run took longer than limits.timeout %s", errTimeLimit, r.s.Limits.Timeout))
		defer stopTimer()
	}
	pricer := r.pricer(cell, built)
	var (
		mu     sync.Mutex
		events []agent.Event
		// calling holds when each agent's model call in flight started,
		// to tell a stalled provider from an agent out of time.
		calling = map[string]time.Time{}
	)
	opts := []agent.Option{
		agent.WithClock(func() time.Time { return runClock }),
		agent.WithEvents(func(ev agent.Event) {
			if ev.Type == agent.EventModelChunk {
				return // the model_end event that follows holds the whole answer
			}
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
			switch ev.Type {
			case agent.EventModelStart:
				calling[ev.Agent] = time.Now()
			case agent.EventModelEnd:
				delete(calling, ev.Agent)
			}
			if ev.Type == agent.EventModelEnd && ev.Response != nil {
				pricer.add(ev.Agent, ev.Response.Usage)
				if lim := r.s.Limits.MaxCostUSD; lim > 0 && pricer.usd > lim {
					cancel(fmt.Errorf("%w: the run cost $%.4f, over limits.max_cost_usd $%g", errCostLimit, pricer.usd, lim))
				}
			}
		}),
	}
	if r.s.Limits.MaxSteps > 0 {
		opts = append(opts, agent.WithRecursionLimit(r.s.Limits.MaxSteps))
	}
	if cell.Stream {
		opts = append(opts, agent.WithTokenStream())
	}
	out, runErr := built.agent.Invoke(runCtx, in, opts...)
	if built.graphs != nil {
		// The cell is what the agent and the tasks it started did: wait
		// for them (within the cell's limits), then stop what is left, so
		// that their calls are all recorded, or all replayed.
		if err := built.graphs.Wait(runCtx); err != nil && runErr == nil {
			runErr = fmt.Errorf("waiting for the in-process async tasks: %w", err)
		}
		built.graphs.Close()
	}
	if runErr != nil && ctx.Err() != nil {
		_ = finish("the run was cancelled")
		return nil, withCause(CauseCancelled, ctx.Err())
	}
	if runErr != nil && runCtx.Err() != nil {
		runErr = context.Cause(runCtx)
		if errors.Is(runErr, errTimeLimit) {
			mu.Lock()
			runErr = stallOrLimit(runErr, calling, r.s.Limits.Timeout)
			mu.Unlock()
		}
	}
	runErr = r.nameStall(runErr)
	var warnings []string
	if runErr == nil && (out == nil || !out.Interrupted()) && cm.rec != nil {
		if err := cm.rec.VerifyPlayed(); err != nil {
			if cell.CaseDef.AllowUnused {
				warnings = append(warnings, "unused_interactions: "+err.Error()+" (allowed by allow_unused)")
			} else {
				runErr = err
			}
		}
	}
	saveErr := finish(abandonReason(runErr))
	var notSaved *recorder.NotSavedError
	switch {
	case errors.As(saveErr, &notSaved) && runErr != nil:
		// The run's own error leads; the cassette note follows it.
		runErr = fmt.Errorf("%w; %w", runErr, saveErr)
	case errors.As(saveErr, &notSaved):
		runErr = saveErr
	case saveErr != nil:
		return nil, withCause(CauseCassetteWrite, fmt.Errorf("saving the cassette: %w", saveErr))
	}
	mu.Lock()
	defer mu.Unlock()

	run := &cellRun{events: events, seeds: built.seeds, costUSD: pricer.usd, costKnown: pricer.known, closeBackend: closeBackend, warnings: warnings, given: given, shared: shared}
	keep = true
	if out != nil {
		run.final = out.State
	}
	rec := rubrics.NewRecordAt(events, run.final, len(history))
	rec.CaseID, rec.Input = cell.CaseDef.ID, cell.CaseDef.Input
	rec.Files = cellFiles{state: rubrics.StateFiles(stateFiles(run.final)), b: built.backend}
	rec.Err = runErr
	if pricer.known {
		usd := pricer.usd
		rec.CostUSD = &usd
	}
	run.rec, run.steps = rec, rec.Steps
	if out != nil {
		run.steps, run.interrupted = out.Steps, out.Interrupted()
	}
	return run, nil
}

// abandonReason says why a run's recording must not replace the cell's
// cassette, or "" when it may: the run ended on a provider error (an
// answer, or none within limits.provider_timeout), on its time limit
// (which cuts a call short), or on recorded calls it never made.
func abandonReason(runErr error) string {
	var unplayed *recorder.UnplayedError
	switch {
	case runErr == nil:
		return ""
	case errors.As(runErr, &unplayed):
		return "the agent made fewer calls than the cassette holds"
	case errors.Is(runErr, provider.ErrStalled):
		return "a model call stalled"
	case llm.KindOf(runErr) != "":
		return "the run ended with a provider error"
	case errors.Is(runErr, errTimeLimit):
		return "the run hit limits.timeout before it finished"
	}
	return ""
}

// nameStall says, in the error of a model call the provider left silent,
// which timeout fired: the per-attempt provider timeout, not the agent's
// limits.timeout, so nobody reads the error as the agent being slow.
func (r *runner) nameStall(err error) error {
	if !errors.Is(err, provider.ErrStalled) {
		return err
	}
	if d := r.s.Limits.ProviderTimeout; d > 0 {
		return fmt.Errorf("provider stall: %w (limits.provider_timeout %s fired, not the agent's limits.timeout)", err, d)
	}
	return fmt.Errorf("provider stall: %w (the default provider timeout %s fired, not the agent's limits.timeout; set limits.provider_timeout to change it)", err, DefaultProviderTimeout)
}

// judge scores a run against its case: the checks, the rubric's grade, the
// score and the status. A run that cannot be judged (it failed, paused for
// input, or its grader broke) makes an errored result. It runs no agent;
// ctx only reaches the checks reading the agent's files.
func judge(ctx context.Context, c *Case, run *cellRun) CellResult {
	rec := run.rec
	res := CellResult{
		Checks: []rubrics.CheckVerdict{}, Usage: rec.Usage, CostUSD: run.costUSD, CostKnown: run.costKnown,
		Latency: latencyOf(run.events), Steps: run.steps, ToolCalls: append([]string{}, rec.ToolCallNames()...),
		Warnings: append(slices.Clone(run.warnings), warningsOf(run.events)...),
	}
	errored := func(err error) CellResult {
		res.Status, res.Error, res.Score, res.Cause = StatusError, err.Error(), 0, CauseOf(err)
		res.Checks = []rubrics.CheckVerdict{}
		return res
	}
	limitHit := run.limitHit()
	switch {
	case rec.Err != nil && !limitHit:
		return errored(rec.Err)
	case run.interrupted:
		return errored(withCause(CauseInterrupt, errors.New("the agent paused for human input (interrupt_on); a suite run cannot answer it")))
	}

	// The run finished, or hit a limit: judge it.
	// Informational checks (gating: false, expect:) are reported with the
	// others but neither fail the cell nor count in its score.
	all := rubrics.EvaluateAll(ctx, c.Checks, rec)
	res.Checks = append(res.Checks, all...)
	checksPass := true
	var checkSum float64
	var checks []rubrics.CheckVerdict
	for _, v := range all {
		if !v.Gating() {
			continue
		}
		checks = append(checks, v)
		checksPass = checksPass && v.Passed
		checkSum += v.Score
	}
	rubricPass := true
	var rubricScore float64
	if rb := c.Rubric; rb != nil {
		ev, ok := rec.FinalEvaluation()
		switch {
		case ok:
			g := rb.Grade(ev.Criteria)
			res.Rubric = outcomeOf(ev, g, len(rec.RubricEvaluations))
			rubricScore = g.Score
			rubricPass = g.Passed && ev.Result != middleware.RubricFailed && ev.Result != middleware.RubricGraderError
			if ev.Result == middleware.RubricGraderError && !limitHit {
				return errored(withCause(CauseGraderError, fmt.Errorf("the rubric grader failed: %s", ev.Explanation)))
			}
		case limitHit:
			rubricPass = false
		default:
			return errored(withCause(CauseGraderError, errors.New("the run finished but the rubric grader never ran")))
		}
	}
	switch {
	case c.Rubric != nil && len(checks) > 0:
		res.Score = (rubricScore + checkSum/float64(len(checks))) / 2
	case c.Rubric != nil:
		res.Score = rubricScore
	case len(checks) > 0:
		res.Score = checkSum / float64(len(checks))
	case limitHit:
		res.Score = 0
	default:
		res.Score = 1
	}
	res.Status = StatusFail
	if checksPass && rubricPass && !limitHit {
		res.Status = StatusPass
	}
	if limitHit {
		res.Error = rec.Err.Error()
	}
	return res
}

// newGrader builds the suite's rubric grader around its model with all the
// grader settings of the suite, for the cells and for validation alike.
func (r *runner) newGrader(model llm.ChatModel) (*middleware.RubricMiddleware, error) {
	g := r.s.Grader
	return middleware.NewRubricMiddleware(middleware.RubricOptions{
		Model:         model,
		MaxIterations: g.MaxIterations,
		Temperature:   g.Temperature,
		Seed:          g.Seed,
		Logger:        r.log,
	})
}

// stallOrLimit tells what a run's time limit caught: when a model call had
// been waiting for at least half of limits.timeout, the provider stalled
// and the cell errors (it is no evidence about the agent); otherwise the
// agent ran out of time and the cell fails.
func stallOrLimit(limitErr error, calling map[string]time.Time, timeout time.Duration) error {
	now := time.Now()
	for _, path := range slices.Sorted(maps.Keys(calling)) {
		if waited := now.Sub(calling[path]); waited >= timeout/2 {
			return fmt.Errorf("%w: the model call of agent %s got no answer for %s of the run's limits.timeout %s", errProviderStall, path, waited.Round(time.Millisecond), timeout)
		}
	}
	return limitErr
}

// isLimit reports whether a run stopped on one of the suite's limits; such
// a run is judged (and fails) rather than counted as an error.
func isLimit(err error) bool {
	var rl *agent.RecursionLimitError
	return errors.As(err, &rl) || errors.Is(err, errCostLimit) || errors.Is(err, errTimeLimit)
}

func outcomeOf(ev middleware.RubricEvaluation, g rubrics.Grade, iterations int) *RubricOutcome {
	return &RubricOutcome{Result: string(ev.Result), Iterations: iterations, Explanation: ev.Explanation, Score: g.Score, Criteria: g.Criteria}
}

func stateFiles(st *agent.State) map[string]agent.FileData {
	if st == nil {
		return nil
	}
	return st.Files
}

// cellFiles reads the agent's files after a run: from its state, or from a
// backend that keeps them elsewhere (a directory, a store).
type cellFiles struct {
	state rubrics.StateFiles
	b     backend.Backend
}

func (f cellFiles) ReadFile(ctx context.Context, path string) (string, error) {
	s, err := f.state.ReadFile(ctx, path)
	if err == nil || f.b == nil {
		return s, err
	}
	if _, isState := f.b.(*backend.State); isState {
		return s, err
	}
	res := f.b.Download(ctx, []string{path})
	if len(res) != 1 {
		return "", fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	if res[0].Err != nil {
		if backend.CodeOf(res[0].Err) == backend.FileNotFound {
			return "", fmt.Errorf("%s: %w", path, fs.ErrNotExist)
		}
		return "", res[0].Err
	}
	return string(res[0].Content), nil
}

// buildAgent assembles the cell's agent: the suite's agent file (or
// factory) with the cell's model, profile, tool behaviours and grader.
func (r *runner) buildAgent(ctx context.Context, cell Cell, resolve func(string) (llm.ChatModel, error), grader *middleware.RubricMiddleware) (*builtAgent, error) {
	s := r.s
	var cfg harness.Config
	seeds := map[string]agent.FileData{}
	var prof []*profile.HarnessProfile
	if h := cell.ProfileDef.harness; h != nil {
		prof = append(prof, h)
	}
	var extra []agent.Middleware
	if grader != nil {
		extra = append(extra, grader)
	}
	if s.Agent.Factory != "" {
		f, ok := r.o.agentFactory(s.Agent.Factory)
		if !ok {
			return nil, fmt.Errorf("no agent factory is registered as %q", s.Agent.Factory)
		}
		c, err := f(ctx, AgentRequest{Cell: cell.CellKey, Model: cell.Model})
		if err != nil {
			return nil, fmt.Errorf("agent factory %s: %w", s.Agent.Factory, err)
		}
		cfg = c
		cfg.Model, cfg.ModelSpec, cfg.ResolveModel = nil, cell.Model, resolve
		if cfg.Catalog == nil {
			cfg.Catalog = catalog.Default()
		}
		// The suite's declarations win over the factory's catalog.
		if cfg.Catalog, err = cfg.Catalog.With(s.ModelInfo...); err != nil {
			return nil, err
		}
		for _, p := range prof {
			cfg.Profile = profile.MergeHarness(cfg.Profile, p)
		}
		cfg.Middleware = append(append([]agent.Middleware{}, cfg.Middleware...), extra...)
		tools := make([]tool.Tool, len(cfg.Tools))
		for i, t := range cfg.Tools {
			tools[i] = t
			if b := s.behaviour(cell.CaseDef, t.Spec().Name); b != nil {
				bt, err := r.behaviourFor(t.Spec(), b)
				if err != nil {
					return nil, err
				}
				tools[i] = bt
			}
		}
		cfg.Tools = tools
	} else {
		af := s.agentOf(cell.CaseDef)
		info := s.ModelInfo
		if slices.Contains(af.OverrideKeys(), "model_info") {
			// A case that declares model facts (a smaller context window)
			// wins over the suite's declarations.
			info = append(slices.Clone(info), af.ModelInfo...)
		}
		c, err := af.Config(agentfile.Options{
			Bind:         func(d agentfile.Tool) (tool.Tool, error) { return s.bind(cell.CaseDef, &r.o, d) },
			Model:        cell.Model,
			Profiles:     prof,
			Middleware:   extra,
			ResolveModel: resolve,
			ModelInfo:    info,
			Getenv:       r.getenv,
		})
		if err != nil {
			return nil, err
		}
		cfg = c
		for p, fd := range af.SeedFiles() {
			seeds[p] = fd
		}
	}
	for p, content := range cell.CaseDef.Files {
		seeds[p] = agent.FileData{Content: content, Encoding: backend.EncodingUTF8, CreatedAt: runClock.Format(time.RFC3339), ModifiedAt: runClock.Format(time.RFC3339)}
	}
	graphs, err := r.serveGraphs(ctx, cell, resolve)
	if err != nil {
		return nil, err
	}
	if graphs != nil {
		cfg.LocalGraphs = graphs
	}
	a, err := harness.New(cfg)
	if err != nil {
		if graphs != nil {
			graphs.Close()
		}
		return nil, err
	}
	b := &builtAgent{agent: a, seeds: seeds, backend: cfg.Backend, subModels: map[string]string{}, graphs: graphs}
	for _, sa := range cfg.SubAgents {
		if sa.ModelSpec != "" {
			b.subModels[sa.Name] = sa.ModelSpec
		}
	}
	if len(seeds) == 0 {
		b.seeds = nil
	}
	return b, nil
}

// CaseAgent returns the agent file case id runs, its own override laid over
// the suite's agent or the suite's agent itself, with the files the case
// seeds (after the agent file's own), for describing what the case's
// model is sent. The suite's agent must be an agent file.
func (s *Suite) CaseAgent(id string) (*agentfile.File, map[string]string, error) {
	if s.Agent.Spec == nil {
		return nil, nil, fmt.Errorf("the suite's agent is the factory %s, built in Go: it cannot be assembled from the suite alone", s.Agent.Factory)
	}
	var ids []string
	for _, c := range s.Cases {
		if c.ID == id {
			return s.agentOf(c), c.Files, nil
		}
		ids = append(ids, c.ID)
	}
	return nil, nil, fmt.Errorf("the suite has no case %q%s (cases: %s)", id, didYouMean(id, ids), strings.Join(ids, ", "))
}

// agentOf is the agent file a case runs: its own override of the suite's
// agent, or the suite's.
func (s *Suite) agentOf(c *Case) *agentfile.File {
	if c != nil && c.Agent != nil {
		return c.Agent
	}
	return s.Agent.Spec
}

// behaviourFor gives a factory's tool the suite's behaviour.
func (r *runner) behaviourFor(spec llm.ToolSpec, b *ToolBehavior) (tool.Tool, error) {
	if b.Go != "" {
		gt, ok := r.o.goTool(b.Go)
		if !ok {
			return nil, fmt.Errorf("tool %s: no Go tool is registered as %q", spec.Name, b.Go)
		}
		return &tool.Func{ToolSpec: spec, Fn: gt.Call}, nil
	}
	return behaviourTool(spec, b)
}

// pricer prices a run's model calls as they happen, each with the model of
// the agent that made it.
type pricer struct {
	catalog   *catalog.Catalog
	cell      Cell
	grader    string
	subModels map[string]string
	usd       float64
	known     bool
}

func (r *runner) pricer(cell Cell, b *builtAgent) *pricer {
	p := &pricer{catalog: r.s.modelCatalog(), cell: cell, subModels: b.subModels, known: true}
	if r.s.Grader != nil {
		p.grader = r.s.Grader.Model
	}
	return p
}

// specFor is the model spec behind an agent path: the grader's for grader
// runs, a subagent's own model when it has one, else the model under test.
func (p *pricer) specFor(path string) string {
	segs := strings.Split(path, "/")
	for i := len(segs) - 1; i >= 1; i-- {
		if segs[i] == middleware.RubricGraderName {
			return p.grader
		}
		if name, ok := strings.CutPrefix(segs[i], "task:"); ok {
			if spec, ok := p.subModels[name]; ok {
				return spec
			}
			return p.cell.Model
		}
	}
	return p.cell.Model
}

func (p *pricer) add(path string, u llm.Usage) {
	if u.IsZero() {
		return
	}
	c, err := p.catalog.Cost(p.specFor(path), u)
	if err != nil {
		p.known = false
		return
	}
	if !u.Known() && !c.SelfHosted {
		// A call whose usage was not reported cost something unknown (a
		// self-hosted model costs nothing either way); the tokens that
		// were reported are still priced.
		p.known = false
	}
	p.usd += c.USD
}

// modelCatalog is the suite's catalog: the built-in one with the agent
// file's and the suite's model declarations.
func (s *Suite) modelCatalog() *catalog.Catalog {
	if s.catalog == nil {
		return catalog.Default()
	}
	return s.catalog
}

// fillDetail records the transcript, subagent runs, rubric evaluations and
// written files of a cell.
func fillDetail(d *CellDetail, c *Case, run *cellRun) {
	rec := run.rec
	d.Agent, d.shared = run.given, run.shared
	if run.final != nil {
		d.Messages = run.final.Messages
	} else {
		d.Messages = append(append([]llm.Message{}, c.History...), partialTranscript(c.Input, run.events)...)
	}
	for _, tr := range rec.Runs {
		if tr == rec.Trajectory {
			continue
		}
		msgs := tr.Messages
		if msgs == nil {
			msgs = []llm.Message{}
		}
		d.Subagents = append(d.Subagents, SubagentRun{Path: tr.Agent, ToolCallID: tr.ToolCallID, Messages: msgs})
	}
	for _, ev := range rec.RubricEvaluations {
		if c.Rubric == nil {
			break
		}
		g := c.Rubric.Grade(ev.Criteria)
		d.Evaluations = append(d.Evaluations, *outcomeOf(ev, g, ev.Iteration+1))
	}
	if run.final != nil {
		for p, fd := range run.final.Files {
			if s, ok := run.seeds[p]; ok && s.Content == fd.Content {
				continue
			}
			if d.Files == nil {
				d.Files = map[string]string{}
			}
			d.Files[p] = fd.Content
		}
	}
}

// partialTranscript rebuilds the main agent's messages from the events of a
// run that did not finish.
func partialTranscript(input string, events []agent.Event) []llm.Message {
	msgs := []llm.Message{llm.User(input)}
	root := ""
	for _, ev := range events {
		if root == "" {
			root, _, _ = strings.Cut(ev.Agent, "/")
		}
		if ev.Agent != root {
			continue
		}
		switch {
		case ev.Type == agent.EventModelEnd && ev.Response != nil:
			msgs = append(msgs, ev.Response.Message)
		case ev.Type == agent.EventToolEnd && ev.ToolResult != nil:
			msgs = append(msgs, *ev.ToolResult)
		}
	}
	return msgs
}

// givenKey is what the description of a cell's agent depends on when the
// case brings nothing of its own (see runner.given): the cells of one
// model × profile are given the same.
type givenKey struct {
	model   string
	profile *Profile
	rubric  bool
	stream  bool
}

// given is describeGiven for a cell, described once for all cells whose
// agent is the suite's agent file with the same model, profile and grader
// and whose case adds no agent, files or tool behaviours: describing
// assembles the agent's request again, a tenth of what a short cell cost.
// Each cell gets a copy of its own, so that nothing a caller changes in
// one cell's detail shows in another's, and the description it shares.
func (r *runner) given(ctx context.Context, cell Cell, built *builtAgent) (*AgentGiven, *sharedGiven) {
	c := cell.CaseDef
	if r.s.Agent.Spec == nil || c.Agent != nil || len(c.Files) > 0 || len(c.Tools) > 0 || len(r.s.Graphs) > 0 || built.seeds != nil {
		return describeGiven(ctx, built), nil
	}
	key := givenKey{model: cell.Model, profile: cell.ProfileDef, rubric: c.Rubric != nil, stream: cell.Stream}
	r.givenMu.Lock()
	sg, ok := r.givens[key]
	r.givenMu.Unlock()
	if !ok {
		sg = r.share(describeGiven(ctx, built))
		r.givenMu.Lock()
		if r.givens == nil {
			r.givens = map[givenKey]*sharedGiven{}
		}
		r.givens[key] = sg
		r.givenMu.Unlock()
	}
	if sg == nil {
		return nil, nil
	}
	cp := *sg.g
	cp.Tools, cp.Middleware = slices.Clone(sg.g.Tools), slices.Clone(sg.g.Middleware)
	return &cp, sg
}

// sharedGiven is an agent description cells share: scrubbed once, and
// encoded once as the last member of a cell file ("agent", see
// outDir.cell), which is most of the bytes of a short cell's file.
type sharedGiven struct {
	g *AgentGiven
	// member is `,\n  "agent": {…}\n}\n`: what follows the other members
	// of an indented CellDetail.
	member []byte
}

// share scrubs g and encodes it for the cells that share it; nil for nil.
func (r *runner) share(g *AgentGiven) *sharedGiven {
	if g == nil {
		return nil
	}
	r.scrub.Value(g)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(g); err != nil {
		return nil
	}
	member := append([]byte(",\n  \"agent\": "), bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
	return &sharedGiven{g: g, member: append(member, "\n}\n"...)}
}

// holds reports whether a is still the description sg shares: a cell's
// copy nobody changed.
func (sg *sharedGiven) holds(a *AgentGiven) bool {
	return sg != nil && a != nil && a.SystemPrompt == sg.g.SystemPrompt && slices.Equal(a.Tools, sg.g.Tools) && slices.Equal(a.Middleware, sg.g.Middleware)
}

// describeGiven captures the system prompt and tools the main agent's
// model is given on its first call, from the agent's Assembly, for the
// reports: a reader of a failing cell wants the instructions the model
// had. Describing calls no model; an agent it cannot describe (a factory's
// compiled agent) simply has none.
func describeGiven(ctx context.Context, built *builtAgent) *AgentGiven {
	as, err := built.agent.Describe(ctx, harness.DescribeOptions{Stacks: []string{"main"}, Files: built.seeds})
	if err != nil || len(as.Stacks) != 1 || as.Stacks[0].Note != "" {
		return nil
	}
	st := as.Stacks[0]
	g := &AgentGiven{SystemPrompt: st.SystemPrompt, Tools: []AgentTool{}, Middleware: st.Middleware}
	for _, t := range st.Tools {
		g.Tools = append(g.Tools, AgentTool{Name: t.Name, Description: t.Description})
	}
	return g
}
