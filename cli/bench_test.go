package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/internal/benchkit"
)

// benchProviderEnv makes TestBenchEvalProvider serve BenchmarkRunSuiteCLI's
// provider instead of skipping.
const benchProviderEnv = "DAGEVAL_BENCH_EVAL_PROVIDER"

// benchCases is the workload of issue 18's "eval
// throughput" goal: 2 models × 200 cases.
const benchCases = 200

// benchEvalModel answers every case at once ("The answer is 42.") and
// passes every grading request, as a competent model and grader would.
func benchEvalModel() llm.ChatModel {
	return fakes.NewRuleModel(fakes.Grader(), fakes.Rule{
		Name: "answer",
		When: func(*llm.Request) bool { return true },
		Reply: func(*llm.Request) (*llm.Response, error) {
			return &llm.Response{Message: llm.Assistant("The answer is 42.")}, nil
		},
	})
}

// TestBenchEvalProvider is not a test: BenchmarkRunSuiteCLI runs the test
// binary with DAGEVAL_BENCH_EVAL_PROVIDER=1 to get the local
// OpenAI-compatible server in a process of its own, so that the benchmark
// measures the run's CPU and memory, not the server's.
func TestBenchEvalProvider(t *testing.T) {
	benchkit.ServeChild(t, benchProviderEnv, func() (string, func()) {
		srv := llmserver.NewServer(benchEvalModel())
		return srv.URL, srv.Close
	})
}

// writeBenchSuite writes benchkit.EvalSuite(benchCases) into dir and returns
// its path and the environment that points it at the server at url.
func writeBenchSuite(b *testing.B, dir, url string) (string, func(string) string) {
	b.Helper()
	suite := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(suite, []byte(benchkit.EvalSuite(benchCases)), 0o644); err != nil {
		b.Fatal(err)
	}
	return suite, func(k string) string {
		switch k {
		case "TEST_KEY":
			return "test-key"
		case "DAGEVAL_TEST_URL":
			return url
		}
		return ""
	}
}

// benchArgs is the command line the benchmark runs, less the suite and --out.
var benchArgs = []string{"--concurrency", "4"}

// checkBenchRun fails the benchmark unless the run in out judged all its
// cells and every one passed.
func checkBenchRun(b *testing.B, out string) {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(out, evals.SummaryFile))
	if err != nil {
		b.Fatal(err)
	}
	var sum evals.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		b.Fatal(err)
	}
	if sum.Totals.Passed != 2*benchCases {
		b.Fatalf("%d of %d cells passed: %v", sum.Totals.Passed, sum.ExpectedCells, sum.Reasons)
	}
}

// BenchmarkRunSuiteCLI is issue 18's eval throughput goal, end to end
// through the CLI's code path: `dageval run suite.yaml --concurrency 4
// --out DIR` (load, run 400 cells with 800 model calls over HTTP, write
// results.jsonl, cells/*.json and summary.md, print the table) against a
// local OpenAI-compatible server in another process. Goal: ≤ 150 ms and
// ≤ 40 MiB peak RSS per run.
//
// inproc runs cli.Main in the benchmark's process and reports the peak
// live heap; process runs the command as a process of its own (the test
// binary, as dageval) and reports its peak RSS and CPU time, which on a
// shared machine say more than the wall time, and the peaks of its RSS's
// two parts: anonymous memory, which is the run's, and the executable's
// pages the kernel maps in, which the command has before it does any work
// (see benchkit.PeakProcessMemory). The output goes to the
// system's temporary directory: a live run makes its files durable when it
// ends (one pass over the cell files, see fileutil.SyncFiles), which on a
// disk costs tens of milliseconds; TMPDIR=/dev/shm leaves that cost out.
//
// floor is what the same traffic costs without dageval: the requests of
// one cell, captured, sent again 400 times each by a bare net/http client
// from 4 goroutines, the answers read and dropped. The server does the
// same work for them as for the run, so the difference between inproc and
// floor is what dageval adds to the HTTP round trips (agent, SDK, checks,
// files, reports), and no eval of this workload runs faster than floor.
func BenchmarkRunSuiteCLI(b *testing.B) {
	url := benchkit.StartChild(b, "TestBenchEvalProvider", benchProviderEnv)
	dir := b.TempDir()
	suite, getenv := writeBenchSuite(b, dir, url)
	args := func(out string) []string { return append([]string{"run", suite, "--out", out}, benchArgs...) }

	b.Run("inproc", func(b *testing.B) {
		var peak uint64
		n := 0
		runtime.GC()
		for b.Loop() {
			out := filepath.Join(dir, fmt.Sprintf("out-%d", n))
			n++
			stop := benchkit.PeakHeap(time.Millisecond)
			code := Main(args(out), WithContext(context.Background()), WithStdio(strings.NewReader(""), io.Discard, io.Discard), WithGetenv(getenv))
			peak = max(peak, stop())
			b.StopTimer()
			if code != 0 {
				b.Fatalf("dageval run exited %d", code)
			}
			checkBenchRun(b, out)
			os.RemoveAll(out)
			b.StartTimer()
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	})

	b.Run("process", func(b *testing.B) {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		var rss int64
		var anon, file uint64
		var cpu time.Duration
		n := 0
		for b.Loop() {
			out := filepath.Join(dir, fmt.Sprintf("proc-%d", n))
			n++
			cmd := exec.Command(exe, args(out)...)
			cmd.Env = append(os.Environ(), childEnv+"=1", "TEST_KEY=test-key", "DAGEVAL_TEST_URL="+url, "CI=")
			var msg bytes.Buffer
			cmd.Stdout, cmd.Stderr = &msg, &msg
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			stop := benchkit.PeakProcessMemory(cmd.Process.Pid, time.Millisecond)
			err := cmd.Wait()
			seen := stop()
			anon, file, rss = max(anon, seen.Anon), max(file, seen.File), max(rss, int64(seen.RSS))
			if err != nil {
				b.Fatalf("dageval run: %v\n%s", err, msg.Bytes())
			}
			st := cmd.ProcessState
			cpu += st.UserTime() + st.SystemTime()
			if ru, ok := st.SysUsage().(*syscall.Rusage); ok && seen.RSS == 0 {
				// Without /proc; it counts what the child shared with
				// this process before exec too (see ProcessMemory.RSS).
				rss = max(rss, ru.Maxrss*1024) // KiB on Linux
			}
			b.StopTimer()
			checkBenchRun(b, out)
			os.RemoveAll(out)
			b.StartTimer()
		}
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
		if anon > 0 {
			b.ReportMetric(float64(anon)/(1<<20), "peak-anon-MiB")
			b.ReportMetric(float64(file)/(1<<20), "peak-file-MiB")
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(n), "cpu-ms/op")
	})

	b.Run("floor", func(b *testing.B) {
		exchanges := captureCase(b, suite, getenv)
		tr := &http.Transport{MaxIdleConnsPerHost: 4, WriteBufferSize: 64 << 10}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		for b.Loop() {
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 2 * benchCases / 4 {
						for _, x := range exchanges {
							post(b, client, x)
						}
					}
				})
			}
			wg.Wait()
		}
	})
}

// exchange is one request a cell of the benchmark's suite makes.
type exchange struct {
	url, auth string
	body      []byte
}

// captureCase runs the suite's first cell and returns its requests: the
// agent's model call and the grader's.
func captureCase(b *testing.B, suitePath string, getenv func(string) string) []exchange {
	b.Helper()
	s, err := evals.NewRegistry().Load(suitePath)
	if err != nil {
		b.Fatal(err)
	}
	c := &capturing{next: http.DefaultTransport}
	rr, err := s.Run(context.Background(), evals.Options{Filter: "case=case-000 model=local:model-a", Getenv: getenv, Transport: c})
	if err != nil || rr.Summary.Totals.Passed != 1 {
		b.Fatalf("capturing a cell's requests: %v", err)
	}
	if len(c.seen) != 2 {
		b.Fatalf("a cell made %d requests, want 2", len(c.seen))
	}
	return c.seen
}

// capturing keeps the requests it carries.
type capturing struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []exchange
}

func (c *capturing) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.seen = append(c.seen, exchange{url: req.URL.String(), auth: req.Header.Get("Authorization"), body: body})
	c.mu.Unlock()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	return c.next.RoundTrip(out)
}

// post sends x as a bare net/http client would and reads the answer.
func post(b *testing.B, client *http.Client, x exchange) {
	req, err := http.NewRequest(http.MethodPost, x.url, bytes.NewReader(x.body))
	if err != nil {
		b.Error(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", x.auth)
	resp, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Errorf("POST %s: %s %v", x.url, resp.Status, err)
	}
}

// BenchmarkColdStart is issue 18's cold-start goal: `dageval version` and
// `dageval assemble --agent evals/examples/agents/researcher.yaml` as whole
// processes of the binary `make build` makes (goal: assemble ≤ 10 ms),
// what a CI step or a shell prompt waits for. It builds the binary first.
func BenchmarkColdStart(b *testing.B) {
	exe := filepath.Join(b.TempDir(), "dageval")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", exe, "../cmd/dageval")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"version", []string{"version"}},
		{"assemble", []string{"assemble", "--agent", "../evals/examples/agents/researcher.yaml"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var cpu time.Duration
			n := 0
			for b.Loop() {
				cmd := exec.Command(exe, c.args...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					b.Fatalf("dageval %s: %v\n%s", strings.Join(c.args, " "), err, out.Bytes())
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				n++
			}
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(n), "cpu-ms/op")
		})
	}
}
