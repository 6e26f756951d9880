package evals

import (
	"io"
	"log/slog"
	"net/http"

	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/tool"
)

// Options tune a suite run. The zero value runs the suite as its file says
// and writes nothing.
type Options struct {
	// Mode overrides DAGEVAL_RECORD and the suite's mode, in that order of
	// precedence. CI=true still forces replay unless the mode is live (see
	// recorder.ResolveModeOver).
	Mode recorder.Mode
	// OutDir receives results.jsonl, summary.json and cells/; "" writes nothing.
	OutDir string
	// Concurrency overrides the suite's concurrency (cells in flight).
	Concurrency int
	// Filter selects cells (see Suite.Cells): "case=paris-* model=openai:*".
	Filter string
	// Epochs, when positive, overrides every case's epochs.
	Epochs int
	// Transport carries recording and live traffic (a clone of
	// http.DefaultTransport sized for the concurrency when nil). Replays
	// never reach it.
	Transport http.RoundTripper
	// Recorder adds options to every cell's recorder, such as
	// recorder.WithoutLatency for recordings against a local scripted server.
	Recorder []recorder.Option
	// Getenv reads API keys, CI and DAGEVAL_RECORD (os.Getenv when nil).
	Getenv func(string) string
	// Progress receives one line per finished cell, or with ProgressBar
	// (for a terminal) a status line redrawn in place: elapsed time, the
	// pass, fail and error counts and the cells in flight, with a line
	// kept for each cell that did not pass. nil shows nothing.
	Progress    io.Writer
	ProgressBar bool
	// ProgressWidth is the terminal's width, which the status line keeps
	// within; 0 when unknown.
	ProgressWidth int
	// Tools and Agents add Go tools and agent factories for this run; they
	// win over the ones registered with RegisterTool and RegisterAgent.
	Tools  map[string]tool.Tool
	Agents map[string]AgentFactory
	// Logger receives the harness's warnings (a grader grading its own
	// model, grading failures); nil discards them, since results carry them.
	Logger *slog.Logger
	// OnCell is called once per finished cell, one call at a time.
	OnCell func(CellResult)
	// TolerateErrors lets errored cells count as failures instead of
	// making the run errored, as the suite's errors: tolerate does.
	TolerateErrors bool
	// Resume continues the run in OutDir — interrupted, killed, or whose
	// machine was lost — instead of starting over: the cells it has
	// results for keep them and make no provider call, the cells that
	// were in flight run again from the start, and the finished files are
	// those of a run that was never stopped (apart from durations). A
	// result counts only when its cell file matches the size and SHA-256
	// its journal line records: a run fsyncs nothing until it ends, so a
	// machine that crashed may have lost or torn files, and their cells
	// run again. Filter,
	// Epochs and Shard must be those the run was started with (its
	// run.json, see ReadManifest), and the suite must ask the same.
	Resume bool
	// RetryErrors resumes the run in OutDir as Resume does, and runs its
	// errored cells again too.
	RetryErrors bool
	// Shard runs one part of the matrix (see Suite.Shard); the suite's
	// rate limits are shared out among the shards.
	Shard Shard
	// ResultsOnDisk leaves RunResult.Results and Details empty: the
	// results are only in OutDir (read them with the reports package), so
	// memory does not grow with the matrix. Without OutDir it is ignored.
	ResultsOnDisk bool
	// KeepResults, with ResultsOnDisk, fills RunResult.Results after all,
	// with each cell's result as results.jsonl holds it: decoded from the
	// very line written there (so scrubbed as on disk, and a resumed run's
	// earlier cells included) when the summary is tallied, so a caller
	// that reports the run need not read results.jsonl back and decode
	// every line a second time (see reports.LoadWithResults). Details stay
	// empty: the cells' transcripts, files and gradings are the bulk of a
	// run and what ResultsOnDisk keeps out of memory; they are in OutDir.
	KeepResults bool

	// gate makes Run(t) fail on the suite's verdict instead of per cell.
	gate bool
	// reg is the registry the suite was loaded with (set by the runner).
	reg *Registry
}

// Option changes Options; Run(t, …) takes them.
type Option func(*Options)

// WithMode sets the mode (see Options.Mode).
func WithMode(m recorder.Mode) Option { return func(o *Options) { o.Mode = m } }

// WithOutDir writes the run's files into dir.
func WithOutDir(dir string) Option { return func(o *Options) { o.OutDir = dir } }

// WithConcurrency sets how many cells run at once.
func WithConcurrency(n int) Option { return func(o *Options) { o.Concurrency = n } }

// WithFilter selects cells (see Suite.Cells).
func WithFilter(expr string) Option { return func(o *Options) { o.Filter = expr } }

// WithEpochs overrides every case's epochs.
func WithEpochs(k int) Option { return func(o *Options) { o.Epochs = k } }

// WithTransport sets the transport of recording and live traffic.
func WithTransport(rt http.RoundTripper) Option { return func(o *Options) { o.Transport = rt } }

// WithGetenv sets how environment variables are read.
func WithGetenv(fn func(string) string) Option { return func(o *Options) { o.Getenv = fn } }

// WithTool adds a Go tool for this run (see RegisterTool).
func WithTool(name string, t tool.Tool) Option {
	return func(o *Options) {
		if o.Tools == nil {
			o.Tools = map[string]tool.Tool{}
		}
		o.Tools[name] = t
	}
}

// WithAgent adds an agent factory for this run (see RegisterAgent).
func WithAgent(name string, f AgentFactory) Option {
	return func(o *Options) {
		if o.Agents == nil {
			o.Agents = map[string]AgentFactory{}
		}
		o.Agents[name] = f
	}
}

// WithLogger sets where harness warnings go.
func WithLogger(l *slog.Logger) Option { return func(o *Options) { o.Logger = l } }

// GateOnThresholds makes Run(t) judge the suite as `dageval run` does: a
// failing cell is logged, and the test fails only when the suite's
// verdict (its thresholds, or every cell passing when it has none) fails.
// Without it, every failing cell fails its subtest.
func GateOnThresholds() Option { return func(o *Options) { o.gate = true } }

// TolerateErrors lets errored cells count as failures in Run(t)'s verdict
// (see Options.TolerateErrors); without it an errored cell fails the test
// however the thresholds fare.
func TolerateErrors() Option { return func(o *Options) { o.TolerateErrors = true } }
