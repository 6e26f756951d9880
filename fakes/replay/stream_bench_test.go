package replay_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/fakes/replay"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/provider"
)

// recordStreamedBenchRun records the 10-turn benchmark run with every model
// call streamed, as an agent run with stream: true makes it.
func recordStreamedBenchRun(tb testing.TB, dir string, bc benchCase) string {
	srv := llmserver.NewServer(benchScript())
	defer srv.Close()
	path := filepath.Join(dir, bc.name+"-streamed.yaml")
	rec, r, err := replay.Open(path, provider.Config{Getenv: func(string) string { return "bench-key" }},
		recorder.WithMode(recorder.ModeRecord), recorder.WithGetenv(noEnv), recorder.WithRecordedHost(bc.host))
	if err != nil {
		tb.Fatal(err)
	}
	opts := map[string]any{"base_url": bc.base(srv)}
	for k, v := range bc.options {
		opts[k] = v
	}
	res, err := benchAgent(tb, r, bc, opts).Invoke(context.Background(), benchInput, agent.WithTokenStream())
	if err != nil {
		tb.Fatal(err)
	}
	if res.Text() != "The report is done." {
		tb.Fatalf("recorded run ended with %q", res.Text())
	}
	if err := rec.Stop(); err != nil {
		tb.Fatal(err)
	}
	age(tb, path)
	return path
}

// replayStreamedBenchRun replays the streamed recording with a streaming
// agent, model_chunk events delivered to a consumer as a runner would.
func replayStreamedBenchRun(tb testing.TB, path string, bc benchCase) {
	rec, r, err := replay.Open(path, provider.Config{Getenv: noEnv}, recorder.WithGetenv(noEnv))
	if err != nil {
		tb.Fatal(err)
	}
	chunks := 0
	res, err := benchAgent(tb, r, bc, bc.options).Invoke(context.Background(), benchInput, agent.WithTokenStream(),
		agent.WithEvents(func(ev agent.Event) {
			if ev.Type == agent.EventModelChunk {
				chunks++
			}
		}))
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.State.Messages) < 2*benchTurns || chunks == 0 {
		tb.Fatalf("replayed run has %d messages and %d chunks", len(res.State.Messages), chunks)
	}
	if err := rec.Stop(); err != nil {
		tb.Fatal(err)
	}
}

// TestStreamedBenchRunReplays keeps the streamed benchmark honest: every
// interaction is an event stream, and the run replays fully.
func TestStreamedBenchRunReplays(t *testing.T) {
	for _, bc := range benchCases {
		path := recordStreamedBenchRun(t, t.TempDir(), bc)
		c, err := cassette.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Interactions) != benchTurns {
			t.Fatalf("%s: %d interactions, want %d", bc.name, len(c.Interactions), benchTurns)
		}
		for i, it := range c.Interactions {
			if !provider.IsEventStream(it.Response.Headers.Get("Content-Type")) {
				t.Fatalf("%s #%d is not an event stream", bc.name, i)
			}
		}
		replayStreamedBenchRun(t, path, bc)
	}
}

// BenchmarkReplayStreamedAgentRun replays the 10-turn run recorded with
// streamed answers next to the same run recorded whole, per provider API;
// the goal is streamed within 1.5× of whole (compare ns/op of the two
// sub-benchmarks of one API).
func BenchmarkReplayStreamedAgentRun(b *testing.B) {
	dir := b.TempDir()
	for _, bc := range benchCases {
		whole := recordBenchRun(b, dir, bc)
		streamed := recordStreamedBenchRun(b, dir, bc)
		b.Run(bc.name+"/whole", func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				replayBenchRun(b, whole, bc)
			}
			reportRuns(b, cpu)
		})
		b.Run(bc.name+"/streamed", func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				replayStreamedBenchRun(b, streamed, bc)
			}
			reportRuns(b, cpu)
		})
	}
}
