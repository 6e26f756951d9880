package checkpoint

import (
	"bytes"
	"container/list"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// SchemaVersion is the layout of the checkpoint file this build reads and writes.
const SchemaVersion = 1

// applicationID marks a SQLite file as a dageval checkpoint file ("dage").
const applicationID = 0x64616765

// DefaultCachedThreads is how many threads' latest states a SQLite
// checkpointer keeps in memory unless configured otherwise.
const DefaultCachedThreads = 64

// SQLiteConfig configures OpenSQLite. The zero value is ready to use.
type SQLiteConfig struct {
	// CachedThreads bounds how many threads' latest states are kept in
	// memory to compute deltas against (DefaultCachedThreads when 0). A
	// thread that fell out of the cache is read back from the file.
	CachedThreads int
	// SyncEveryPut makes every Put reach the disk before it returns
	// (SQLite synchronous=FULL). By default a Put survives a crash of the
	// process at once and a power loss after the next WAL checkpoint.
	SyncEveryPut bool
	// WALCheckpointPages is how many pages (of 4 KiB) the write-ahead log
	// grows to before SQLite copies it into the database
	// (wal_autocheckpoint); 0 means DefaultWALCheckpointPages. Fewer pages
	// keep the log smaller during a run, at the price of more frequent
	// checkpoints, each of which waits for the disk.
	WALCheckpointPages int
	// WALSizeLimit is how many bytes of write-ahead log may stay on disk
	// once a run has ended or paused: the Put that ends a run with a
	// larger log copies it into the database and truncates it, and after
	// SQLite's own checkpoints the log is cut back to this size
	// (journal_size_limit). 0 means DefaultWALSizeLimit; negative leaves the
	// log at the size it grew to.
	WALSizeLimit int64
	// KeepWALAfterRun leaves the write-ahead log as it is when a run ends
	// or pauses, whatever its size.
	KeepWALAfterRun bool
}

// Defaults of SQLiteConfig's write-ahead log bounds: SQLite's own
// checkpoint interval (so a Put costs what it always did), and a log of at
// most 256 KiB between runs, which a short run does not reach (so it pays
// no extra checkpoint).
const (
	DefaultWALCheckpointPages = 1000      // about 4 MiB
	DefaultWALSizeLimit       = 256 << 10 // bytes
)

// SQLite is an agent.Checkpointer over one SQLite file holding any number of
// threads. Each Put appends one row with what changed since the previous Put
// of the thread (messages appended or replaced, files written or deleted,
// values, todos, the structured response) plus where the loop stands, so
// the file grows linearly with the number of steps. Get replays the rows.
//
// A round trip returns the state that was Put, with two normalisations: empty
// and nil collections are not told apart, and raw JSON nested inside messages
// (tool-call arguments, artifacts) comes back compacted, as encoding/json
// writes it; values and the structured response come back byte for byte.
//
// It is safe for concurrent use, also by several processes on the same file;
// each thread should have one writer at a time, as any agent thread does.
// Handing a thread over between processes is fine (each sees the other's
// rows); a thread deleted and rewritten by another process while this one
// still caches it is not noticed.
// Like agent.MemoryCheckpointer it relies on the runtime never modifying a
// State in place after handing it to Put.
type SQLite struct {
	path     string
	db       *sql.DB
	mu       sync.Mutex
	cache    map[string]*list.Element
	lru      *list.List
	maxCache int
	latest   *sql.Stmt // SELECT max(seq) of a thread
	insert   *sql.Stmt // INSERT one row
	walLimit int64     // see SQLiteConfig.WALSizeLimit; negative: keep the log
}

// entry is a thread's latest state as this process last wrote or read it.
type entry struct {
	thread string
	seq    int64 // number of the last row folded into state
	state  *agent.State
	raw    []byte // head as stored, to skip writing an unchanged checkpoint
}

// OpenSQLite opens (creating when missing) the checkpoint file at path.
// Close it when done.
func OpenSQLite(path string, cfg SQLiteConfig) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("checkpoint: empty file path")
	}
	syncMode := "NORMAL"
	if cfg.SyncEveryPut {
		syncMode = "FULL"
	}
	pages := cfg.WALCheckpointPages
	if pages <= 0 {
		pages = DefaultWALCheckpointPages
	}
	limit := cfg.WALSizeLimit
	switch {
	case limit == 0:
		limit = DefaultWALSizeLimit
	case limit < 0:
		limit = -1
	}
	dsn := "file:" + escapePath(path) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + syncMode + ")" +
		"&_pragma=wal_autocheckpoint(" + strconv.Itoa(pages) + ")&_pragma=journal_size_limit(" + strconv.FormatInt(limit, 10) + ")&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	// One connection: SQLite serialises writers anyway, and the per-connection
	// pragmas then hold for every statement.
	db.SetMaxOpenConns(1)
	s := &SQLite{path: path, db: db, cache: map[string]*list.Element{}, lru: list.New(), maxCache: cfg.CachedThreads, walLimit: limit}
	if cfg.KeepWALAfterRun {
		s.walLimit = -1
	}
	if s.maxCache <= 0 {
		s.maxCache = DefaultCachedThreads
	}
	if err := s.initRetrying(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	// Prepared once: parsing the SQL would otherwise be a third of a Put.
	if s.latest, err = db.Prepare("SELECT max(seq) FROM steps WHERE thread = ?"); err == nil {
		s.insert, err = db.Prepare("INSERT INTO steps (thread, seq, delta, head) VALUES (?, ?, ?, ?)")
	}
	if err != nil {
		db.Close()
		return nil, s.errorf("prepare statements: %w", err)
	}
	return s, nil
}

// escapePath makes path safe inside a SQLite URI filename.
func escapePath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

func (s *SQLite) errorf(format string, args ...any) error {
	return fmt.Errorf("checkpoint %s: "+format, append([]any{s.path}, args...)...)
}

// initRetrying runs init, waiting out a file that another process is
// switching to WAL mode or creating right now: SQLite reports that as busy
// without consulting the busy timeout.
func (s *SQLite) initRetrying(ctx context.Context) error {
	wait := 2 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.init(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// sqliteBusy is SQLITE_BUSY, the primary code of "database is locked".
const sqliteBusy = 5

func (s *SQLite) init(ctx context.Context) error {
	// Check under the write lock, so that the checks see one snapshot and
	// two processes opening a new file at once do not both create the schema.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("not a readable SQLite database: %w", err)
	}
	defer tx.Rollback()
	if fresh, err := s.checkSchema(ctx, tx); err != nil || !fresh {
		return err
	}
	for _, stmt := range []string{
		`CREATE TABLE steps (
			thread TEXT NOT NULL,
			seq    INTEGER NOT NULL,
			delta  BLOB NOT NULL,
			head   BLOB NOT NULL,
			PRIMARY KEY (thread, seq)
		) WITHOUT ROWID`,
		fmt.Sprintf("PRAGMA application_id = %d", applicationID),
		fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion),
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return s.errorf("create schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("create schema: %w", err)
	}
	return nil
}

// checkSchema reports whether the file is empty (fresh) and fails unless it
// is empty or a checkpoint file of a schema version this build reads.
func (s *SQLite) checkSchema(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (fresh bool, err error) {
	var app, version, objects int64
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return false, s.errorf("not a readable SQLite database: %w", err)
	}
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, s.errorf("read schema version: %w", err)
	}
	switch {
	case app == applicationID && version == SchemaVersion:
		return false, nil
	case app == applicationID && version > SchemaVersion:
		return false, s.errorf("schema version %d was written by a newer dageval; this build reads version %d", version, SchemaVersion)
	case app == applicationID:
		return false, s.errorf("unknown schema version %d (this build reads version %d)", version, SchemaVersion)
	case app != 0:
		return false, s.errorf("not a dageval checkpoint file (SQLite application_id %#x)", app)
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&objects); err != nil {
		return false, s.errorf("not a readable SQLite database: %w", err)
	}
	if objects > 0 {
		return false, s.errorf("not a dageval checkpoint file: it is a SQLite database with %d other schema objects", objects)
	}
	return true, nil
}

// Path returns the file the checkpointer writes.
func (s *SQLite) Path() string { return s.path }

// Close releases the file; a clean close also folds the WAL into it.
func (s *SQLite) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.latest.Close(), s.insert.Close(), s.db.Close())
	if err != nil {
		return s.errorf("close: %w", err)
	}
	return nil
}

// queryer is what both *sql.DB and *sql.Tx offer.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	StmtContext(ctx context.Context, stmt *sql.Stmt) *sql.Stmt
}

// dbq lets the database stand in for a transaction.
type dbq struct{ *sql.DB }

func (dbq) StmtContext(_ context.Context, stmt *sql.Stmt) *sql.Stmt { return stmt }

// Get implements agent.Checkpointer.
func (s *SQLite) Get(ctx context.Context, thread string) (*agent.Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.current(ctx, dbq{s.db}, thread)
	if err != nil {
		return nil, s.errorf("thread %s: %w", thread, err)
	}
	if e == nil {
		return nil, nil
	}
	// Decode the head afresh so callers never share its maps with the cache.
	var h head
	if err := json.Unmarshal(e.raw, &h); err != nil {
		return nil, s.errorf("thread %s: row %d: head: %w", thread, e.seq, err)
	}
	cp := &agent.Checkpoint{State: e.state.Clone()}
	h.restore(cp)
	return cp, nil
}

// Put implements agent.Checkpointer.
func (s *SQLite) Put(ctx context.Context, thread string, cp *agent.Checkpoint) error {
	if cp == nil {
		return s.errorf("thread %s: nil checkpoint", thread)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.put(ctx, thread, cp); err != nil {
		return s.errorf("thread %s: %w", thread, err)
	}
	if s.walLimit >= 0 && (cp.Next.Phase == agent.PhaseDone || len(cp.Interrupts) > 0) {
		s.boundWAL(ctx)
	}
	return nil
}

// boundWAL copies a write-ahead log larger than the limit into the
// database and empties it, at the end of a run: the log otherwise keeps
// the size it grew to, about 4 MiB. The rows are committed already, so a
// checkpoint that cannot finish (another process is reading) is left to
// SQLite's automatic ones.
func (s *SQLite) boundWAL(ctx context.Context) {
	if fi, err := os.Stat(s.path + "-wal"); err != nil || fi.Size() <= s.walLimit {
		return
	}
	var busy, frames, copied int64
	_ = s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &copied)
}

func (s *SQLite) put(ctx context.Context, thread string, cp *agent.Checkpoint) error {
	state := cp.State
	if state == nil {
		state = &agent.State{}
	}
	h := headOf(cp)
	rawHead, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode position and interrupts: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: see _txlock in the DSN
	if err != nil {
		return err
	}
	defer tx.Rollback()
	e, err := s.current(ctx, tx, thread)
	if err != nil {
		return err
	}
	var prev *agent.State
	var seq int64
	if e != nil {
		prev, seq = e.state, e.seq
	}
	d, err := diff(prev, state)
	if err != nil {
		return fmt.Errorf("compare with the saved state: %w", err)
	}
	if e != nil && d.empty() && bytes.Equal(e.raw, rawHead) {
		return nil
	}
	rawDelta, err := json.Marshal(d)
	if err != nil {
		return encodeError(d, err)
	}
	seq++
	if _, err := tx.StmtContext(ctx, s.insert).ExecContext(ctx, thread, seq, rawDelta, rawHead); err != nil {
		return fmt.Errorf("write row %d: %w", seq, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit row %d: %w", seq, err)
	}
	s.remember(&entry{thread: thread, seq: seq, state: state, raw: rawHead})
	return nil
}

// current returns the thread's latest state, from the cache when no other
// writer has added rows since, otherwise by replaying the rows the cache
// lacks. It returns nil for a thread without rows.
func (s *SQLite) current(ctx context.Context, q queryer, thread string) (*entry, error) {
	var latest sql.NullInt64
	if err := q.StmtContext(ctx, s.latest).QueryRowContext(ctx, thread).Scan(&latest); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	el := s.cache[thread]
	if !latest.Valid {
		if el != nil {
			s.forget(el)
		}
		return nil, nil
	}
	var cached *entry
	if el != nil {
		cached = el.Value.(*entry)
		if cached.seq == latest.Int64 {
			s.lru.MoveToFront(el)
			return cached, nil
		}
		if cached.seq > latest.Int64 { // rows vanished: start over
			cached = nil
		}
	}
	e, err := s.replay(ctx, q, thread, cached)
	if err != nil {
		return nil, err
	}
	s.remember(e)
	return e, nil
}

// replay folds the thread's rows after base (all rows when base is nil) into a new entry.
func (s *SQLite) replay(ctx context.Context, q queryer, thread string, base *entry) (*entry, error) {
	e := &entry{thread: thread, state: &agent.State{}}
	if base != nil {
		e.seq, e.state, e.raw = base.seq, base.state.Clone(), base.raw
	}
	rows, err := q.QueryContext(ctx, "SELECT seq, delta, head FROM steps WHERE thread = ? AND seq > ? ORDER BY seq", thread, e.seq)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var rawDelta, rawHead []byte
		if err := rows.Scan(&seq, &rawDelta, &rawHead); err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		if seq != e.seq+1 {
			return nil, fmt.Errorf("row %d follows row %d: the thread's history has a gap", seq, e.seq)
		}
		var d delta
		if err := json.Unmarshal(rawDelta, &d); err != nil {
			return nil, fmt.Errorf("row %d: decode state delta: %w", seq, err)
		}
		if err := d.applyTo(e.state); err != nil {
			return nil, fmt.Errorf("row %d: %w", seq, err)
		}
		e.seq, e.raw = seq, rawHead
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return e, nil
}

func (s *SQLite) remember(e *entry) {
	if el := s.cache[e.thread]; el != nil {
		el.Value = e
		s.lru.MoveToFront(el)
		return
	}
	s.cache[e.thread] = s.lru.PushFront(e)
	for s.lru.Len() > s.maxCache {
		s.forget(s.lru.Back())
	}
}

func (s *SQLite) forget(el *list.Element) {
	delete(s.cache, el.Value.(*entry).thread)
	s.lru.Remove(el)
}

// Delete removes a thread and its whole history.
func (s *SQLite) Delete(ctx context.Context, thread string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.cache[thread]; el != nil {
		s.forget(el)
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM steps WHERE thread = ?", thread); err != nil {
		return s.errorf("thread %s: delete: %w", thread, err)
	}
	return nil
}

// Threads lists the thread ids in the file, sorted.
func (s *SQLite) Threads(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT thread FROM steps ORDER BY thread")
	if err != nil {
		return nil, s.errorf("list threads: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, s.errorf("list threads: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list threads: %w", err)
	}
	return out, nil
}

// encodeError names the message that could not be encoded, which is almost
// always raw JSON that is not JSON (such as tool-call arguments).
func encodeError(d *delta, err error) error {
	check := func(m *llm.Message) error {
		if _, merr := json.Marshal(m); merr != nil {
			return fmt.Errorf("encode message %s (%s): %w", m.ID, m.Role, merr)
		}
		return nil
	}
	for i := range d.Replace {
		if e := check(&d.Replace[i].Message); e != nil {
			return e
		}
	}
	for i := range d.Append {
		if e := check(&d.Append[i]); e != nil {
			return e
		}
	}
	return fmt.Errorf("encode state delta: %w", err)
}

var _ agent.Checkpointer = (*SQLite)(nil)
