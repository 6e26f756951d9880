// Package benchkit holds what the end-to-end benchmarks share: a provider in a process of its own, and the peak live heap and process memory.
package benchkit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ServeChild is the body of the pseudo-test a benchmark re-runs its own
// binary with (see StartChild): unless env is "1" it skips; otherwise it
// starts the server, prints the URL serve returns on its first line of
// output, and serves until the benchmark closes its standard input.
func ServeChild(t *testing.T, env string, serve func() (url string, stop func())) {
	if os.Getenv(env) != "1" {
		t.Skip("a benchmark's provider process")
	}
	url, stop := serve()
	defer stop()
	os.Stdout.WriteString(url + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// StartChild runs the test binary's pseudo-test testName with env=1 in a
// child process, so that a benchmark measures its own CPU and memory and
// not the server's, and returns the URL the child prints. The child stops
// when the benchmark ends; its CPU time is logged.
func StartChild(b *testing.B, testName, env string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
		if st := cmd.ProcessState; st != nil {
			b.Logf("the provider process used %s of CPU", st.UserTime()+st.SystemTime())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("provider process: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return strings.TrimSpace(line)
}

// PeakHeap samples the live heap every interval until stop is called and
// returns the highest value seen, in bytes.
func PeakHeap(every time.Duration) (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := sampleEvery(every, func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	})
	return func() uint64 {
		done()
		return peak.Load()
	}
}

// sampleEvery calls sample at once and then every interval, on a
// goroutine of its own, until the function it returns is called.
func sampleEvery(every time.Duration, sample func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// ProcessMemory is what PeakProcessMemory saw of a process: the highest
// anonymous and file-backed resident sizes, in bytes, each at its own
// peak. Both are zero where /proc is not there to read.
type ProcessMemory struct {
	Anon, File uint64
	// RSS is the process's own peak resident size (VmHWM), which, unlike
	// the rusage of a child, does not count the parent's pages the child
	// had between fork and exec: a big benchmark process made every child
	// look as big as itself.
	RSS uint64
}

// PeakProcessMemory samples /proc/PID/status every interval until stop is
// called. Peak RSS alone mixes the process's own memory with the pages of
// its executable the kernel maps in: with a page cache of large folios, a
// binary of tens of megabytes of code has most of them resident whatever
// the process does, so the anonymous peak is what the program's work
// costs.
func PeakProcessMemory(pid int, every time.Duration) (stop func() ProcessMemory) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var peak ProcessMemory // written by the sampler only until done returns
	done := sampleEvery(every, func() {
		if data, err := os.ReadFile(path); err == nil {
			peak.Anon = max(peak.Anon, statusKiB(data, "RssAnon:")<<10)
			peak.File = max(peak.File, statusKiB(data, "RssFile:")<<10)
			peak.RSS = max(peak.RSS, statusKiB(data, "VmHWM:")<<10)
		}
	})
	return func() ProcessMemory {
		done()
		return peak
	}
}

// statusKiB reads the value in KiB of the /proc/PID/status line that
// starts with key, or 0.
func statusKiB(status []byte, key string) uint64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// EvalSuite is issue 18's eval workload (BenchmarkRunSuiteCLI, and
// BenchmarkLoadSuite for its loading alone): 2 models × n cases, live
// against a local OpenAI-compatible server at concurrency 4, each case
// with a contains check and a model-graded rubric. The agent is the
// default Deep Agents stack with a system prompt and no tools of its own.
func EvalSuite(n int) string {
	var b strings.Builder
	b.WriteString(`version: 1
name: throughput
providers: {local: {kind: openai-compatible, base_url: "${DAGEVAL_TEST_URL}/v1", api_key_env: TEST_KEY}}
agent:
  name: answerer
  system_prompt: You answer questions in one sentence.
models: [local:model-a, local:model-b]
grader: {model: local:grader, temperature: 0}
mode: live
concurrency: 4
cases:
`)
	for i := range n {
		fmt.Fprintf(&b, `  - id: case-%03d
    input: "Question %d: what is the answer?"
    rubric: [{name: answers, description: Gives the answer.}]
    checks: [{final_answer: {contains: "42"}}]
`, i, i)
	}
	return b.String()
}
