// Package recording re-records an example suite's cassettes against a scripted model served by a local llmserver.Server.
package recording

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/llm"
)

// Recording says what to record: the suite, loaded by Load (evals.Load
// when nil, or a Registry's Load for suites naming Go registrations), the
// scripted model that plays every provider, and the environment variables
// that hold the API keys the suite's providers read. Env gives other
// variables the suite reads (an async subagent's url_env), and Filter
// records only the cells it selects (see evals.Options.Filter).
type Recording struct {
	Suite   string
	Load    func(path string) (*evals.Suite, error)
	Model   llm.ChatModel
	KeyEnvs []string
	Env     map[string]string
	Filter  string
}

// Run records the suite through the runner's real recording path (record
// mode, the real provider adapters, one cassette per cell) against a local
// server playing Model. Cells are recorded one at a time, because the
// server derives response ids from the requests it has seen, and without
// timings, which for a scripted local server say nothing about a model:
// both would make recordings differ from run to run.
func (r Recording) Run(ctx context.Context, progress io.Writer) (*evals.RunResult, error) {
	srv := llmserver.NewServer(r.Model)
	defer srv.Close()
	load := r.Load
	if load == nil {
		load = evals.Load
	}
	s, err := load(r.Suite)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, evals.Options{
		Mode:        recorder.ModeRecord,
		Concurrency: 1,
		Transport:   Redirect(srv.URL),
		Recorder:    []recorder.Option{recorder.WithoutLatency()},
		Getenv:      r.env,
		Progress:    progress,
		Filter:      r.Filter,
	})
}

// env holds a placeholder for each key (the local server accepts any) and
// nothing else, so that neither CI nor DAGEVAL_RECORD changes an explicit
// recording and no real key is ever read.
func (r Recording) env(name string) string {
	if v, ok := r.Env[name]; ok {
		return v
	}
	for _, k := range r.KeyEnvs {
		if name == k {
			return "local-placeholder-key"
		}
	}
	return ""
}

// Redirect sends every request to the server at base whatever host it was
// addressed to. Requests keep their original URL everywhere else, so
// cassettes recorded through it name the real provider.
func Redirect(base string) http.RoundTripper {
	u, err := url.Parse(base)
	if err != nil {
		panic(fmt.Sprintf("recording: bad server URL %q: %v", base, err))
	}
	return redirect{to: u, next: http.DefaultTransport}
}

type redirect struct {
	to   *url.URL
	next http.RoundTripper
}

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.to.Scheme, r.to.Host, ""
	return r.next.RoundTrip(out)
}

// Main is an example's record command: it records the suite named by
// -suite (defaultSuite unless given) with record, stops on Ctrl-C, and
// exits 2 when recording fails and 1 when a cell errored, so a broken
// recording never passes for a finished one.
func Main(defaultSuite string, record func(ctx context.Context, suite string, progress io.Writer) (*evals.RunResult, error)) {
	suite := flag.String("suite", defaultSuite, "the suite to record")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	oc, err := record(ctx, *suite, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(2)
	}
	for _, r := range oc.Results {
		if r.Status == "error" {
			fmt.Fprintf(os.Stderr, "record: %s errored: %s\n", r.ID, r.Error)
			os.Exit(1)
		}
	}
	fmt.Fprintf(os.Stderr, "recorded %d cassettes for %s (passed: %v)\n", len(oc.Results), oc.Summary.Suite, oc.Summary.Passed)
}
