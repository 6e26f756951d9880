package checkpoint_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/checkpoint"
	"github.com/dageval/dageval/harness/llm"
)

func fixedClock() func() time.Time {
	return func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
}

// A long agent run through the SQLite checkpointer: the file holds exactly
// the final state, for the writer and for a fresh reader.
func TestAgentRunRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	cp := openSQLite(t, path, checkpoint.SQLiteConfig{})
	a, err := writerAgent(cp, 30)
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("take notes")}}, agent.WithThread("t1"), agent.WithClock(fixedClock()))
	require.NoError(t, err)
	require.Len(t, res.State.Files, 30)
	require.Len(t, res.State.Messages, 62)

	for name, c := range map[string]*checkpoint.SQLite{"writer": cp, "fresh reader": openSQLite(t, path, checkpoint.SQLiteConfig{})} {
		got, err := c.Get(t.Context(), "t1")
		require.NoError(t, err, name)
		if d := cmp.Diff(res.State, got.State, equateEmpty); d != "" {
			t.Errorf("%s: state differs (-result +stored):\n%s", name, d)
		}
		assert.Equal(t, agent.PhaseDone, got.Next.Phase, name)
		assert.Equal(t, 61, got.Steps, name)
	}

	// The thread continues from the file in a new checkpointer.
	again := openSQLite(t, path, checkpoint.SQLiteConfig{})
	a2, err := writerAgent(again, 31)
	require.NoError(t, err)
	res2, err := a2.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("one more")}}, agent.WithThread("t1"), agent.WithClock(fixedClock()))
	require.NoError(t, err)
	assert.Len(t, res2.State.Files, 31)
	assert.Len(t, res2.State.Messages, 66)
	assert.Equal(t, res.State.Messages, res2.State.Messages[:62])
}

func TestMessageJSONNormalisation(t *testing.T) {
	cp := openSQLite(t, filepath.Join(t.TempDir(), "cp.db"), checkpoint.SQLiteConfig{})
	st := &agent.State{Messages: []llm.Message{
		{ID: "m1", Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "spaced", Args: json.RawMessage(`{ "path" : "/a<b>" }`)},
			{ID: "b", Name: "none"},
		}},
	}, Values: map[string]json.RawMessage{"v": json.RawMessage(`{ "kept" : "as is" }`)}}
	require.NoError(t, cp.Put(t.Context(), "t", &agent.Checkpoint{State: st}))
	fresh := openSQLite(t, cp.Path(), checkpoint.SQLiteConfig{})
	got, err := fresh.Get(t.Context(), "t")
	require.NoError(t, err)
	calls := got.State.Messages[0].ToolCalls
	assert.JSONEq(t, `{"path":"/a<b>"}`, string(calls[0].Args), "nested raw JSON comes back equal, compacted")
	assert.Nil(t, calls[1].Args, "missing arguments stay missing, not null")
	assert.Equal(t, `{ "kept" : "as is" }`, string(got.State.Values["v"]), "values come back byte for byte")
}

func TestPutErrorsNameFileThreadAndMessage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	cp := openSQLite(t, path, checkpoint.SQLiteConfig{})
	st := &agent.State{Messages: []llm.Message{{ID: "msg-7", Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "x", Args: json.RawMessage(`{"cut`)}}}}}
	err := cp.Put(t.Context(), "t9", &agent.Checkpoint{State: st})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checkpoint "+path+": thread t9: encode message msg-7 (assistant)")
	got, err := cp.Get(t.Context(), "t9")
	require.NoError(t, err)
	assert.Nil(t, got, "nothing half-written")

	require.ErrorContains(t, cp.Put(t.Context(), "t9", nil), "checkpoint "+path+": thread t9: nil checkpoint")
}

func TestOpenErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(text, []byte("this is not a database, just a long enough text file to have a header of sorts\n"), 0o644))

	foreign := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", foreign)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE people (name TEXT)")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	newer := filepath.Join(dir, "newer.db")
	c, err := checkpoint.OpenSQLite(newer, checkpoint.SQLiteConfig{})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	db, err = sql.Open("sqlite", newer)
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 7")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	tests := []struct {
		path string
		err  string
	}{
		{text, "checkpoint " + text + ": not a readable SQLite database"},
		{foreign, "checkpoint " + foreign + ": not a dageval checkpoint file: it is a SQLite database with 1 other schema objects"},
		{newer, "checkpoint " + newer + ": schema version 7 was written by a newer dageval; this build reads version 1"},
		{filepath.Join(dir, "missing", "cp.db"), "checkpoint " + filepath.Join(dir, "missing", "cp.db") + ": "},
		{"", "checkpoint: empty file path"},
	}
	for _, tt := range tests {
		_, err := checkpoint.OpenSQLite(tt.path, checkpoint.SQLiteConfig{})
		require.Error(t, err, tt.path)
		assert.Contains(t, err.Error(), tt.err)
	}
}

func TestPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd?name#1%.db")
	cp := openSQLite(t, path, checkpoint.SQLiteConfig{})
	require.NoError(t, cp.Put(t.Context(), "t", &agent.Checkpoint{State: &agent.State{Messages: []llm.Message{llm.User("hi")}}}))
	require.NoError(t, cp.Close())
	_, err := os.Stat(path)
	require.NoError(t, err, "the file is created under its literal name")
}

func TestThreadsDeleteAndCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	// A cache of one thread forces reads from the file when threads alternate.
	cp := openSQLite(t, path, checkpoint.SQLiteConfig{CachedThreads: 1})
	states := map[string]*agent.State{}
	for i := range 6 {
		for _, th := range []string{"b", "a", "c"} {
			prev := states[th]
			if prev == nil {
				prev = &agent.State{}
			}
			n := *prev
			n.Messages = append(append([]llm.Message(nil), prev.Messages...), llm.Message{ID: fmt.Sprintf("%s-%d", th, i), Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(th)}})
			states[th] = &n
			require.NoError(t, cp.Put(t.Context(), th, &agent.Checkpoint{State: &n, Steps: i}))
		}
	}
	threads, err := cp.Threads(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, threads)
	for th, want := range states {
		got, err := cp.Get(t.Context(), th)
		require.NoError(t, err)
		assert.Empty(t, cmp.Diff(want, got.State, equateEmpty), th)
	}

	require.NoError(t, cp.Delete(t.Context(), "b"))
	got, err := cp.Get(t.Context(), "b")
	require.NoError(t, err)
	assert.Nil(t, got)
	threads, err = cp.Threads(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, threads)

	missing, err := cp.Get(t.Context(), "never")
	require.NoError(t, err)
	assert.Nil(t, missing)
}

// Two checkpointers on one file hand a thread back and forth, as a resumed
// run in another process does: each sees the other's rows before writing.
func TestTwoWritersHandOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	x := openSQLite(t, path, checkpoint.SQLiteConfig{})
	y := openSQLite(t, path, checkpoint.SQLiteConfig{})
	var msgs []llm.Message
	for i := range 8 {
		w := x
		if i%2 == 1 {
			w = y
		}
		msgs = append(msgs[:len(msgs):len(msgs)], llm.Message{ID: fmt.Sprint("m", i), Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(fmt.Sprint(i))}})
		require.NoError(t, w.Put(t.Context(), "t", &agent.Checkpoint{State: &agent.State{Messages: msgs}}))
	}
	for _, r := range []*checkpoint.SQLite{x, y} {
		got, err := r.Get(t.Context(), "t")
		require.NoError(t, err)
		assert.Equal(t, msgs, got.State.Messages)
	}
}

// Concurrent runs on separate threads share one checkpointer and a second one
// on the same file.
func TestConcurrentRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	shared := openSQLite(t, path, checkpoint.SQLiteConfig{})
	other := openSQLite(t, path, checkpoint.SQLiteConfig{})
	results := make([]*agent.State, 8)
	var wg sync.WaitGroup
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() {
			cp := shared
			if i%3 == 0 {
				cp = other
			}
			a, err := writerAgent(cp, 5+i)
			if err != nil {
				errs[i] = err
				return
			}
			res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User(fmt.Sprint("run ", i))}}, agent.WithThread(fmt.Sprint("thread-", i)), agent.WithClock(fixedClock()))
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = res.State
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	fresh := openSQLite(t, path, checkpoint.SQLiteConfig{})
	for i, want := range results {
		got, err := fresh.Get(t.Context(), fmt.Sprint("thread-", i))
		require.NoError(t, err)
		assert.Empty(t, cmp.Diff(want, got.State, equateEmpty), "thread %d", i)
		assert.Len(t, got.State.Files, 5+i)
	}
}

// Storage per step stays flat from 10 to 200 steps (linear growth) and a
// 200-step run fits the 2 MiB budget. Sizes are deterministic: the run is
// scripted and clocked.
func TestStorageGrowsLinearly(t *testing.T) {
	perStep := map[int]float64{}
	for _, steps := range []int{10, 50, 200} {
		path := filepath.Join(t.TempDir(), "cp.db")
		cp, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
		require.NoError(t, err)
		runWriter(t, cp, steps, "t")
		require.NoError(t, cp.Close())
		file, rows := sqliteSizes(t, path)
		perStep[steps] = float64(rows) / float64(steps)
		if steps == 200 {
			assert.Less(t, file, int64(2<<20), "file size after 200 steps")
		}
	}
	assert.InDelta(t, perStep[10], perStep[200], perStep[10]*0.1, "bytes per step: %v", perStep)
	assert.InDelta(t, perStep[10], perStep[50], perStep[10]*0.1, "bytes per step: %v", perStep)
}

// Several checkpointers opening a new file at the same moment agree on one schema.
func TestConcurrentOpenOfNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			c, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
			if err == nil {
				err = c.Put(t.Context(), fmt.Sprint("t", i), &agent.Checkpoint{State: &agent.State{Messages: []llm.Message{llm.User("hi")}}})
				err = errors.Join(err, c.Close())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	threads, err := openSQLite(t, path, checkpoint.SQLiteConfig{}).Threads(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"t0", "t1", "t2", "t3"}, threads)
}

// diskBytes is what the checkpoint file takes on disk: the database and its
// write-ahead log.
func diskBytes(t *testing.T, path string) (db, wal int64) {
	t.Helper()
	for _, p := range []*struct {
		name string
		n    *int64
	}{{path, &db}, {path + "-wal", &wal}} {
		if fi, err := os.Stat(p.name); err == nil {
			*p.n = fi.Size()
		}
	}
	return db, wal
}

// walWatcher records the largest write-ahead log seen after any Put, which
// is what a crash at that moment would leave on disk.
type walWatcher struct {
	*checkpoint.SQLite
	t   *testing.T
	max int64
}

func (w *walWatcher) Put(ctx context.Context, thread string, cp *agent.Checkpoint) error {
	err := w.SQLite.Put(ctx, thread, cp)
	if _, wal := diskBytes(w.t, w.Path()); wal > w.max {
		w.max = wal
	}
	return err
}

// Right after a run, with the checkpointer still open, the file is the
// database alone (the run's last Put folds the write-ahead log, larger than
// its limit, into it) and grows linearly with the run; during the run the
// log stays within its bound. (The log used to stay at about 4 MiB.)
func TestFileBoundedWhileOpen(t *testing.T) {
	perStep := map[int]float64{}
	for _, steps := range []int{50, 200} {
		path := filepath.Join(t.TempDir(), "cp.db")
		cp, err := checkpoint.OpenSQLite(path, checkpoint.SQLiteConfig{})
		require.NoError(t, err)
		w := &walWatcher{SQLite: cp, t: t}
		runWriter(t, w, steps, "t")
		db, wal := diskBytes(t, path)
		assert.Zero(t, wal, "write-ahead log after a %d-step run", steps)
		assert.LessOrEqual(t, w.max, int64(checkpoint.DefaultWALCheckpointPages*4096+checkpoint.DefaultWALSizeLimit), "largest write-ahead log during a %d-step run", steps)
		perStep[steps] = float64(db+wal) / float64(steps)
		t.Logf("%d steps: database %d bytes, log %d bytes, largest log during the run %d bytes", steps, db, wal, w.max)
		if steps == 200 {
			assert.LessOrEqual(t, db+wal, int64(512<<10), "database and log after 200 steps")
		}
		require.NoError(t, cp.Close())
	}
	assert.InDelta(t, perStep[50], perStep[200], perStep[50]*0.25, "bytes per step: %v", perStep)
}

// A run whose log stays within the limit leaves it (sparing a checkpoint
// that waits for the disk), and KeepWALAfterRun leaves any log to SQLite's
// own checkpoints.
func TestSmallLogsStay(t *testing.T) {
	for name, cfg := range map[string]checkpoint.SQLiteConfig{
		"within the limit": {},
		"kept":             {KeepWALAfterRun: true, WALSizeLimit: 1},
	} {
		path := filepath.Join(t.TempDir(), "cp.db")
		cp, err := checkpoint.OpenSQLite(path, cfg)
		require.NoError(t, err)
		runWriter(t, cp, 10, "t")
		_, wal := diskBytes(t, path)
		assert.NotZero(t, wal, name)
		assert.LessOrEqual(t, wal, int64(checkpoint.DefaultWALSizeLimit), name)
		require.NoError(t, cp.Close())
	}
}
