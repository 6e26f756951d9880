package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/fakes/replay"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
)

// benchTurns is the number of model calls in the benchmarked run.
const benchTurns = 10

// benchTools are shaped like a deep agent's: a few file tools with
// described arguments.
func benchTools() []tool.Tool {
	var out []tool.Tool
	for i := range 6 {
		out = append(out, &tool.Func{
			ToolSpec: llm.ToolSpec{
				Name:        fmt.Sprintf("tool_%d", i),
				Description: strings.Repeat("Does one precise thing with its arguments. ", 4),
				Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"absolute path"},"limit":{"type":"integer"}},"required":["path"],"additionalProperties":false}`),
			},
			Fn: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
				var in struct{ Path string }
				if err := json.Unmarshal(args, &in); err != nil {
					return tool.Result{}, err
				}
				return tool.Text(strings.Repeat("line of "+in.Path+". ", 10)), nil
			},
		})
	}
	return out
}

var benchSystem = []llm.Block{llm.TextBlock(strings.Repeat("You are a careful research agent. Keep notes in files and cite them. ", 15))}

// benchScript: nine turns of tool calls (two in parallel on odd turns),
// then the answer.
func benchScript() *fakes.Scripted {
	var steps []fakes.Step
	for turn := 1; turn < benchTurns; turn++ {
		calls := []llm.ToolCall{fakes.Call("tool_1", map[string]string{"path": fmt.Sprintf("/notes/%d.md", turn)})}
		if turn%2 == 1 {
			calls = append(calls, fakes.Call("tool_2", map[string]string{"path": fmt.Sprintf("/data/%d.csv", turn)}))
		}
		steps = append(steps, fakes.Calls(fmt.Sprintf("Step %d: reading the next file.", turn), calls...))
	}
	return fakes.NewScripted(append(steps, fakes.Reply("The report is done."))...)
}

type benchCase struct {
	name    string
	spec    string
	options map[string]any
	base    func(*llmserver.Server) string
	host    string
}

var benchCases = []benchCase{
	{"anthropic", "anthropic:claude-sonnet-4-5", nil, func(s *llmserver.Server) string { return s.URL }, "api.anthropic.com"},
	{"openai-chat", "openai:gpt-4o", map[string]any{"use_responses_api": false}, (*llmserver.Server).OpenAIBaseURL, "api.openai.com"},
	{"openai-responses", "openai:gpt-4o", nil, (*llmserver.Server).OpenAIBaseURL, "api.openai.com"},
}

func benchAgent(tb testing.TB, r *provider.Resolver, bc benchCase, options map[string]any) *agent.Agent {
	m, err := r.ResolveWith(bc.spec, options)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, System: benchSystem, Tools: benchTools()})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

var benchInput = agent.Input{Messages: []llm.Message{llm.User("Research the topic and write a report to /report.md.")}}

// recordBenchRun records the 10-turn run against the local server.
func recordBenchRun(tb testing.TB, dir string, bc benchCase) string {
	srv := llmserver.NewServer(benchScript())
	defer srv.Close()
	path := filepath.Join(dir, bc.name+".yaml")
	rec, r, err := replay.Open(path, provider.Config{Getenv: func(string) string { return "bench-key" }},
		recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv), recorder.WithRecordedHost(bc.host))
	if err != nil {
		tb.Fatal(err)
	}
	opts := map[string]any{"base_url": bc.base(srv)}
	for k, v := range bc.options {
		opts[k] = v
	}
	res, err := benchAgent(tb, r, bc, opts).Invoke(context.Background(), benchInput)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Steps == 0 || res.Text() != "The report is done." {
		tb.Fatalf("recorded run ended with %q", res.Text())
	}
	if err := rec.Stop(); err != nil {
		tb.Fatal(err)
	}
	// Replays read committed cassettes, written long before; a file written
	// a moment ago is re-read on every open.
	age(tb, path)
	return path
}

func age(tb testing.TB, path string) {
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		tb.Fatal(err)
	}
}

// replayBenchRun is one replayed run as the eval runner does it: open the
// cassette, build a resolver and the agent, run it to the end.
func replayBenchRun(tb testing.TB, path string, bc benchCase) {
	rec, r, err := replay.Open(path, provider.Config{Getenv: noEnv}, recorder.WithGetenv(noEnv))
	if err != nil {
		tb.Fatal(err)
	}
	res, err := benchAgent(tb, r, bc, bc.options).Invoke(context.Background(), benchInput)
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.State.Messages) < 2*benchTurns {
		tb.Fatalf("replayed run has %d messages", len(res.State.Messages))
	}
	if err := rec.Stop(); err != nil {
		tb.Fatal(err)
	}
}

// TestBenchRunReplays keeps the benchmark's run honest: it replays fully.
func TestBenchRunReplays(t *testing.T) {
	for _, bc := range benchCases {
		path := recordBenchRun(t, t.TempDir(), bc)
		c, err := cassette.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Interactions) != benchTurns {
			t.Fatalf("%s: %d interactions, want %d", bc.name, len(c.Interactions), benchTurns)
		}
		replayBenchRun(t, path, bc)
	}
	// The re-encoded cassette of the canonicalised benchmark replays too.
	replayBenchRun(t, reencodeRequests(t, recordBenchRun(t, t.TempDir(), benchCases[0])), benchCases[0])
}

// BenchmarkReplayAgentRun replays a recorded 10-turn agent run (15 tool
// calls, a deep-agent-sized prompt) through the agent runtime, the real
// adapter and the recorder, per provider API. runs/s is whole runs per
// second of wall time; the parallel variants run one replay per core.
// cpu-µs/run is the process CPU time per run (GC included), which other
// load on the machine does not inflate: 2e6/cpu-µs is the runs/s two idle
// cores can reach when runs scale.
func BenchmarkReplayAgentRun(b *testing.B) {
	dir := b.TempDir()
	for _, bc := range benchCases {
		path := recordBenchRun(b, dir, bc)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				replayBenchRun(b, path, bc)
			}
			reportRuns(b, cpu)
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					replayBenchRun(b, path, bc)
				}
			})
			reportRuns(b, cpu)
		})
		// A replayed run's garbage is short-lived and its live heap small,
		// so at GOGC=100 the collector runs every few runs and takes a
		// quarter of the CPU; the dageval command raises the target (see
		// cli/gc.go). GOGC set in the environment wins here too.
		b.Run(bc.name+"-parallel-gogc400", func(b *testing.B) {
			if os.Getenv("GOGC") != "" {
				b.Skip("GOGC is set in the environment")
			}
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			b.ReportAllocs()
			cpu := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					replayBenchRun(b, path, bc)
				}
			})
			reportRuns(b, cpu)
		})
	}
}

// BenchmarkCanonicalisedReplayAgentRun is the Anthropic run replayed from a
// cassette whose request bodies were re-encoded (keys reordered, indented),
// as after an SDK upgrade: no request equals its recording byte for byte, so
// every call is matched on its canonical JSON.
func BenchmarkCanonicalisedReplayAgentRun(b *testing.B) {
	bc := benchCases[0]
	path := reencodeRequests(b, recordBenchRun(b, b.TempDir(), bc))
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		replayBenchRun(b, path, bc)
	}
	reportRuns(b, cpu)
}

// reencodeRequests rewrites a cassette with every request body indented.
func reencodeRequests(tb testing.TB, path string) string {
	c, err := cassette.Read(path)
	if err != nil {
		tb.Fatal(err)
	}
	for _, it := range c.Interactions {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(it.Request.Body), "", "  "); err != nil {
			tb.Fatal(err)
		}
		it.Request.Body = buf.String()
	}
	out := strings.TrimSuffix(path, ".yaml") + "-reencoded.yaml"
	if err := cassette.Write(out, c, nil); err != nil {
		tb.Fatal(err)
	}
	age(tb, out)
	return out
}

func reportRuns(b *testing.B, cpuBefore time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	if used := processCPU() - cpuBefore; cpuBefore > 0 && used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/run")
	}
}
