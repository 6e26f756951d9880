package checkpoint_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/checkpoint"
	"github.com/dageval/dageval/harness/llm"
)

// fullHistory stores the whole checkpoint as JSON at every Put, as a
// checkpointer without deltas that keeps every step (LangGraph's MemorySaver)
// does. It is the baseline the delta storage is measured against.
type fullHistory struct {
	mu    sync.Mutex
	bytes int
	last  map[string]*agent.Checkpoint
}

func (f *fullHistory) Get(_ context.Context, thread string) (*agent.Checkpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[thread], nil
}

func (f *fullHistory) Put(_ context.Context, thread string, cp *agent.Checkpoint) error {
	raw, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[string]*agent.Checkpoint{}
	}
	f.bytes += len(raw)
	f.last[thread] = cp
	return nil
}

// runWriter runs a cycles-long model → write_file run on cp.
func runWriter(tb testing.TB, cp agent.Checkpointer, cycles int, thread string) *agent.Result {
	a, err := writerAgent(cp, cycles)
	require.NoError(tb, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("Keep notes as you go.")}}, agent.WithThread(thread), agent.WithClock(fixedClock()))
	require.NoError(tb, err)
	require.Len(tb, res.State.Files, cycles)
	return res
}

// sqliteSizes returns the file's size on disk after a clean close and the
// bytes of the rows written.
func sqliteSizes(tb testing.TB, path string) (file, rows int64) {
	db, err := sql.Open("sqlite", path)
	require.NoError(tb, err)
	require.NoError(tb, db.QueryRow("SELECT coalesce(sum(length(delta) + length(head)), 0) FROM steps").Scan(&rows))
	require.NoError(tb, db.Close())
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			file += fi.Size()
		}
	}
	return file, rows
}

// BenchmarkCheckpointBytes reports what a checkpointer holds after a run of
// N steps, one step being a model call that asks write_file to write a small
// file plus that tool call (two messages and one file per step). bytes/step
// staying flat from 10 to 200 steps is the linear growth.
func BenchmarkCheckpointBytes(b *testing.B) {
	for _, steps := range []int{10, 50, 200} {
		b.Run(fmt.Sprintf("memory/steps=%d", steps), func(b *testing.B) {
			var size int
			for b.Loop() {
				cp := agent.NewMemoryCheckpointer()
				runWriter(b, cp, steps, "t")
				got, err := cp.Get(context.Background(), "t")
				require.NoError(b, err)
				raw, err := json.Marshal(got)
				require.NoError(b, err)
				size = len(raw)
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(size)/float64(steps), "bytes/step")
		})
		b.Run(fmt.Sprintf("sqlite/steps=%d", steps), func(b *testing.B) {
			dir := b.TempDir()
			var file, rows int64
			i := 0
			for b.Loop() {
				i++
				path := filepath.Join(dir, fmt.Sprintf("run%d.db", i))
				cp, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
				require.NoError(b, err)
				runWriter(b, cp, steps, "t")
				require.NoError(b, cp.Close())
				b.StopTimer()
				file, rows = sqliteSizes(b, path)
				b.StartTimer()
			}
			b.ReportMetric(float64(file), "bytes")
			b.ReportMetric(float64(file)/float64(steps), "bytes/step")
			b.ReportMetric(float64(rows), "row_bytes")
		})
		b.Run(fmt.Sprintf("full_history_baseline/steps=%d", steps), func(b *testing.B) {
			var size int
			for b.Loop() {
				cp := &fullHistory{}
				runWriter(b, cp, steps, "t")
				size = cp.bytes
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(size)/float64(steps), "bytes/step")
		})
	}
}

// recordPuts captures the checkpoints a real run of the given length Puts, in order.
type recorder struct {
	agent.MemoryCheckpointer
	puts []*agent.Checkpoint
}

func (r *recorder) Put(ctx context.Context, thread string, cp *agent.Checkpoint) error {
	c := *cp
	r.puts = append(r.puts, &c)
	return r.MemoryCheckpointer.Put(ctx, thread, cp)
}

func recordedPuts(tb testing.TB, steps int) []*agent.Checkpoint {
	r := &recorder{MemoryCheckpointer: *agent.NewMemoryCheckpointer()}
	runWriter(tb, r, steps, "t")
	return r.puts
}

// BenchmarkPut measures the latency of one Put along a 200-step run: one op
// replays every checkpoint such a run saves onto a fresh thread, and
// ns/put divides by the Puts.
func BenchmarkPut(b *testing.B) {
	puts := recordedPuts(b, 200)
	for _, tc := range []struct {
		name string
		open func(path string) (agent.Checkpointer, func() error, error)
	}{
		{"memory", func(string) (agent.Checkpointer, func() error, error) {
			return agent.NewMemoryCheckpointer(), func() error { return nil }, nil
		}},
		{"sqlite", func(path string) (agent.Checkpointer, func() error, error) {
			s, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
			if err != nil {
				return nil, nil, err
			}
			return s, s.Close, nil
		}},
		{"sqlite_sync_every_put", func(path string) (agent.Checkpointer, func() error, error) {
			s, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{SyncEveryPut: true})
			if err != nil {
				return nil, nil, err
			}
			return s, s.Close, nil
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cp, closeFn, err := tc.open(filepath.Join(b.TempDir(), "put.db"))
			require.NoError(b, err)
			defer closeFn()
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				thread := fmt.Sprint("t", i)
				for _, p := range puts {
					if err := cp.Put(ctx, thread, p); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(puts)), "ns/put")
		})
	}
}

// BenchmarkGetCold measures resuming a 200-step thread in a new process: open
// the file and replay the thread's rows.
func BenchmarkGetCold(b *testing.B) {
	path := filepath.Join(b.TempDir(), "get.db")
	cp, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
	require.NoError(b, err)
	runWriter(b, cp, 200, "t")
	require.NoError(b, cp.Close())
	for b.Loop() {
		fresh, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
		if err != nil {
			b.Fatal(err)
		}
		got, err := fresh.Get(context.Background(), "t")
		if err != nil || len(got.State.Files) != 200 {
			b.Fatal(err)
		}
		fresh.Close()
	}
}
