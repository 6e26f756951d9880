package harness_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/checkpoint"
	"github.com/dageval/dageval/harness/llm"
)

// benchIdentity is the benchmarked model: one whose context window the
// catalog does not know, so that Deep Agents' message-count defaults apply
// and old write_file arguments are truncated from the twentieth message on,
// and that is not an Anthropic model, so prompt caching passes its requests
// through. anthropicIdentity is the same with prompt caching at work.
var (
	benchIdentity     = llm.Identity{Provider: "fake", Model: "scripted"}
	anthropicIdentity = llm.Identity{Provider: "anthropic", Model: "claude-scripted"}
)

// BenchmarkDeepAgentLoop runs long runs (see longRunModel) through the
// default deep agent: with no checkpointer, with the SQLite one, and on an
// Anthropic model, whose requests prompt caching marks (extending one
// marked message list over the run's calls). The per-step metrics divide by
// the steps of one run; a flat ns/step from N=10 to N=800 is a run whose
// cost is linear in its length.
func BenchmarkDeepAgentLoop(b *testing.B) {
	steps := []int{10, 50, 200, 800}
	for _, n := range steps {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			a := newLongRunAgent(b, benchModel(benchIdentity, n), nil)
			benchSteps(b, n, func(int) { runLongRun(b, a, n) })
		})
	}
	for _, n := range steps {
		b.Run(fmt.Sprintf("sqlite/steps=%d", n), func(b *testing.B) {
			cp, err := checkpoint.OpenSQLite(filepath.Join(b.TempDir(), "threads.db"), checkpoint.SQLiteConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer cp.Close()
			a := newLongRunAgent(b, benchModel(benchIdentity, n), cp)
			benchSteps(b, n, func(i int) { runLongRun(b, a, n, agent.WithThread(fmt.Sprintf("run-%d", i))) })
		})
	}
	for _, n := range steps {
		b.Run(fmt.Sprintf("anthropic/steps=%d", n), func(b *testing.B) {
			a := newLongRunAgent(b, benchModel(anthropicIdentity, n), nil)
			benchSteps(b, n, func(int) { runLongRun(b, a, n) })
		})
	}
	// truncating: old write_file arguments are truncated on every call
	// (see truncatingModel); summarizing: a small context window, so the
	// run is also summarized every few dozen steps (see summarizingModel).
	for _, n := range steps {
		b.Run(fmt.Sprintf("truncating/steps=%d", n), func(b *testing.B) {
			a := newLongRunAgent(b, truncatingModel(n), nil)
			benchSteps(b, n, func(int) { runLongRun(b, a, n) })
		})
	}
	for _, n := range steps {
		b.Run(fmt.Sprintf("summarizing/steps=%d", n), func(b *testing.B) {
			a := newWindowAgent(b, summarizingModel(n), windowCatalog(b, smallWindow))
			benchSteps(b, n, func(int) { runLongRun(b, a, n) })
		})
	}
}

// BenchmarkDeepAgentLoopHTTP is BenchmarkDeepAgentLoop with the model behind
// the local provider server, per wire format: each step encodes the whole
// history, so per-step cost grows with N by the cost of that encoding.
func BenchmarkDeepAgentLoopHTTP(b *testing.B) {
	for _, api := range wireAPIs {
		for _, n := range []int{10, 50, 200} {
			b.Run(fmt.Sprintf("%s/steps=%d", api.name, n), func(b *testing.B) {
				srv := localProvider(b, benchModel(anthropicIdentity, n))
				a := newLongRunAgent(b, api.model(b, srv, "scripted"), nil)
				benchSteps(b, n, func(int) { runLongRun(b, a, n) })
			})
		}
	}
}

func benchModel(id llm.Identity, steps int) *longRunModel {
	m := newLongRunModel(id, steps, shortNote)
	m.usage = linearUsage
	return m
}

// benchSteps times run (one whole run of steps steps per call) and reports
// per-step time, bytes and allocations. cpu-ns/step is the process's CPU
// time per step (GC included), which other load on a shared machine does
// not inflate the way it inflates ns/step.
func benchSteps(b *testing.B, steps int, run func(i int)) {
	run(-1) // warm caches and pools outside the timing
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	cpu := processCPU()
	i := 0
	for b.Loop() {
		run(i)
		i++
	}
	b.StopTimer()
	used := processCPU() - cpu
	runtime.ReadMemStats(&after)
	per := float64(b.N * steps)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/step")
	if cpu > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/per, "cpu-ns/step")
	}
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/step")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/step")
}
