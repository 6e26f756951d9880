package evals_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/internal/benchkit"
)

// benchModel answers like a small competent agent (one lookup, then an
// answer) and, when offered GraderResponse, like a grader that passes
// every criterion of the rubric it was given.
type benchModel struct{}

func (benchModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	for _, s := range req.Tools {
		if s.Name == "GraderResponse" {
			payload := req.Messages[0].Text()
			rb := rubricBlock.FindStringSubmatch(payload)
			if rb == nil {
				return nil, fmt.Errorf("no rubric")
			}
			var cs []string
			for _, c := range criterionLine.FindAllStringSubmatch(rb[1], -1) {
				cs = append(cs, fmt.Sprintf(`{"name":%q,"passed":true}`, c[1]))
			}
			args := `{"result":"satisfied","explanation":"All criteria hold.","criteria":[` + strings.Join(cs, ",") + `]}`
			return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "GraderResponse", Args: json.RawMessage(args)})}, nil
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		return &llm.Response{Message: llm.Assistant("The answer is " + last.Text() + ".")}, nil
	}
	q, _ := json.Marshal(map[string]string{"q": req.Messages[0].Text()})
	return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "lookup", Args: q})}, nil
}

// TestBenchProvider is not a test: BenchmarkSuite runs the test binary with
// DAGEVAL_BENCH_PROVIDER=1 to get the mock provider in a process of its
// own, so that the benchmark measures the runner's memory, not the
// server's record of every request it answered.
func TestBenchProvider(t *testing.T) {
	benchkit.ServeChild(t, "DAGEVAL_BENCH_PROVIDER", func() (string, func()) {
		srv := llmserver.NewServer(benchModel{})
		return srv.OpenAIBaseURL(), srv.Close
	})
}

// benchSuite is 2 models × n cases, each with an inline rubric graded by a
// grader model and two checks.
func benchSuite(url string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: 1
name: bench
providers: {local: {kind: openai-compatible, base_url: %q, api_key_env: TEST_KEY}}
agent:
  name: bench
  system_prompt: You answer questions, looking facts up first.
  tools: [{name: lookup, description: Looks a fact up., parameters: {type: object, properties: {q: {type: string}}, required: [q]}}]
tools: {lookup: {mock: {result: "42"}}}
models: [local:model-a, local:model-b]
grader: {model: local:grader, temperature: 0}
mode: live
concurrency: 16
cases:
`, url)
	for i := range n {
		fmt.Fprintf(&b, `  - id: case-%03d
    input: "Question %d: what is the answer?"
    rubric: [{name: answers, description: Gives the answer.}, {name: grounded, description: Uses the lookup result.}]
    checks: [{tool_called: lookup}, {final_answer: {contains: "42"}}]
`, i, i)
	}
	return b.String()
}

// BenchmarkSuite runs a 2 models × 200 cases suite, rubric-graded, end to
// end (load, run, write results) in live mode against a local mock
// provider. Goal: ≤ 0.5 s and ≤ 40 MiB peak heap per run.
func BenchmarkSuite(b *testing.B) {
	url := benchkit.StartChild(b, "TestBenchProvider", "DAGEVAL_BENCH_PROVIDER")
	path := writeSuite(b, map[string]string{"suite.yaml": benchSuite(url, 200)})
	out := b.TempDir()
	var peak uint64
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		stop := benchkit.PeakHeap(2 * time.Millisecond)
		s, err := evals.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		oc, err := s.Run(context.Background(), evals.Options{OutDir: benchOut(out), Getenv: testEnv})
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, stop())
		if oc.Summary.Totals.Passed != 400 {
			b.Fatalf("%d of %d cells passed: %v", oc.Summary.Totals.Passed, oc.Summary.ExpectedCells, oc.Results[0].Error)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// benchOut is the benchmark's output directory; DAGEVAL_BENCH_NOWRITE=1
// leaves files out, to see what writing them costs.
func benchOut(dir string) string {
	if os.Getenv("DAGEVAL_BENCH_NOWRITE") == "1" {
		return ""
	}
	return dir
}

// replaySuite is a tiny agent (one model call, no tools of its own) over
// cases × epochs cells, replayed from its cassettes.
func replaySuite(cases, epochs int, mode string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: 1
name: big-replay
providers: {local: {kind: openai-compatible, base_url: "${DAGEVAL_TEST_URL}/v1", api_key_env: TEST_KEY}}
agent: {system_prompt: You answer in one word.}
models: [local:tiny]
mode: %s
epochs: %d
concurrency: 8
cases:
`, mode, epochs)
	for i := range cases {
		fmt.Fprintf(&b, "  - {id: q%04d, input: \"Say ok.\", checks: [{final_answer: {contains: ok}}]}\n", i)
	}
	return b.String()
}

// BenchmarkReplay100k replays 100 000 cells of a tiny agent (1000 cases ×
// 100 epochs) in a process of its own, with the results on disk only, and
// reports its wall time and peak RSS. Goal: peak RSS ≤ 300 MiB, however
// large the matrix.
func BenchmarkReplay100k(b *testing.B) {
	const cases, epochs = 1000, 100
	benchReplay(b, cases, epochs)
}

func benchReplay(b *testing.B, cases, epochs int) {
	dir := b.TempDir()
	// Record one cell's cassette against a local server.
	srv := llmserver.NewServer(okModel{})
	rec := filepath.Join(dir, "rec", "suite.yaml")
	if err := os.MkdirAll(filepath.Dir(rec), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(rec, []byte(replaySuite(1, 1, "record")), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := evals.Load(rec)
	if err != nil {
		b.Fatal(err)
	}
	rr, err := s.Run(context.Background(), evals.Options{Getenv: urlEnv(srv.URL)})
	srv.Close()
	if err != nil || !rr.Summary.Passed {
		b.Fatalf("recording: %v %v", err, rr.Summary.Reasons)
	}
	one := filepath.Join(dir, "rec", "cassettes", "q0000--local-tiny--default--e1.yaml")

	path := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(path, []byte(replaySuite(cases, epochs, "replay")), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cassettes"), 0o755); err != nil {
		b.Fatal(err)
	}
	// Every cell has a cassette of its own, as recorded ones do: the
	// recording with the cell's name in a comment, gzipped (which replay
	// reads) to keep the setup's disk use down.
	data := readFileB(b, one)
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestSpeed)
	for c := range cases {
		for e := 1; e <= epochs; e++ {
			name := fmt.Sprintf("q%04d--local-tiny--default--e%d.yaml", c, e)
			zb.Reset()
			zw.Reset(&zb)
			zw.Write(data)
			fmt.Fprintf(zw, "# %s\n", name)
			if err := zw.Close(); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "cassettes", name), zb.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var rss int64
	b.ResetTimer()
	for b.Loop() {
		out := b.TempDir()
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+path, "DAGEVAL_EVALS_OUT="+out, "DAGEVAL_TEST_URL=http://127.0.0.1:1")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("the run: %v\n%s", err, msg)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = max(rss, ru.Maxrss*1024) // KiB on Linux
		}
		b.StopTimer()
		var sum evals.Summary
		if err := json.Unmarshal(readFileB(b, filepath.Join(out, evals.SummaryFile)), &sum); err != nil {
			b.Fatal(err)
		}
		if sum.Totals.Passed != cases*epochs {
			b.Fatalf("%d of %d cells passed: %v", sum.Totals.Passed, sum.ExpectedCells, sum.Reasons)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(cases*epochs), "cells")
	if rss > 300<<20 {
		b.Errorf("peak RSS %d MiB is over the 300 MiB bound", rss>>20)
	}
}

// okModel answers every call with "ok".
type okModel struct{}

func (okModel) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return &llm.Response{Message: llm.Assistant("ok")}, nil
}

func readFileB(b *testing.B, path string) []byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkReplay2k is BenchmarkReplay100k's small sibling, to see the
// cost per cell quickly.
func BenchmarkReplay2k(b *testing.B) { benchReplay(b, 100, 20) }

// BenchmarkLoadSuite loads BenchmarkRunSuiteCLI's 200-case suite alone:
// the run cannot start a cell before the suite has loaded, so what loading
// costs adds to the run's wall time whatever the concurrency.
func BenchmarkLoadSuite(b *testing.B) {
	path := writeSuite(b, map[string]string{"suite.yaml": benchkit.EvalSuite(200)})
	b.ReportAllocs()
	for b.Loop() {
		s, err := evals.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Cases) != 200 {
			b.Fatalf("%d cases", len(s.Cases))
		}
	}
}
