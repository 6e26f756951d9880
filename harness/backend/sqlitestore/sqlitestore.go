// Package sqlitestore is a backend.KVStore in a SQLite file, kept out of package backend so that only programs that use it link the SQLite driver.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite"

	"github.com/dageval/dageval/harness/backend"
)

// KVStore is a backend.KVStore in a SQLite database file (pure Go, no cgo).
// The file survives restarts: reopen it with Open.
type KVStore struct {
	db   *sql.DB
	path string
}

var _ backend.KVStore = (*KVStore)(nil)

const sqliteSchema = `CREATE TABLE IF NOT EXISTS kv_items (
	namespace TEXT NOT NULL,
	key       TEXT NOT NULL,
	value     TEXT NOT NULL,
	PRIMARY KEY (namespace, key)
) WITHOUT ROWID`

// Open opens (creating if needed) the database at path.
// Close it when done.
func Open(path string) (*KVStore, error) {
	if path == "" {
		return nil, errors.New("backend: SQLite store needs a database file path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("backend: SQLite store path %q must not contain '?' or '#'", path)
	}
	dsn := path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("backend: open SQLite store %s: %w", path, err)
	}
	// One connection serialises writers, which SQLite requires anyway, and
	// keeps WAL checkpoints simple.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("backend: open SQLite store %s: create schema: %w", path, err)
	}
	return &KVStore{db: db, path: path}, nil
}

// Path returns the database file.
func (s *KVStore) Path() string { return s.path }

// Close closes the database.
func (s *KVStore) Close() error { return s.db.Close() }

// Get implements backend.KVStore.
func (s *KVStore) Get(ctx context.Context, ns []string, key string) (json.RawMessage, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM kv_items WHERE namespace = ? AND key = ?`, namespaceKey(ns), key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("backend: SQLite store get %q: %w", key, err)
	}
	return json.RawMessage(v), true, nil
}

// Put implements backend.KVStore.
func (s *KVStore) Put(ctx context.Context, ns []string, key string, value json.RawMessage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO kv_items (namespace, key, value) VALUES (?, ?, ?)
		ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value`, namespaceKey(ns), key, string(value))
	if err != nil {
		return fmt.Errorf("backend: SQLite store put %q: %w", key, err)
	}
	return nil
}

// Delete implements backend.KVStore; all keys go in one transaction.
func (s *KVStore) Delete(ctx context.Context, ns []string, keys ...string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("backend: SQLite store delete: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	n := namespaceKey(ns)
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `DELETE FROM kv_items WHERE namespace = ? AND key = ?`, n, k); err != nil {
			return fmt.Errorf("backend: SQLite store delete %q: %w", k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("backend: SQLite store delete: %w", err)
	}
	return nil
}

// List implements backend.KVStore.
func (s *KVStore) List(ctx context.Context, ns []string, prefix string, limit, offset int) ([]backend.KVItem, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	q := `SELECT key, value FROM kv_items WHERE namespace = ? AND key >= ?`
	args := []any{namespaceKey(ns), prefix}
	if upper, ok := prefixUpperBound(prefix); ok {
		q += ` AND key < ?`
		args = append(args, upper)
	}
	q += ` ORDER BY key LIMIT ? OFFSET ?`
	args = append(args, limit, max(offset, 0))
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("backend: SQLite store list %q: %w", prefix, err)
	}
	defer rows.Close()
	var out []backend.KVItem
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("backend: SQLite store list %q: %w", prefix, err)
		}
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		out = append(out, backend.KVItem{Key: k, Value: json.RawMessage(v)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("backend: SQLite store list %q: %w", prefix, err)
	}
	return out, nil
}

// prefixUpperBound returns the smallest string greater than every string
// with the prefix, for a range scan; ok is false when there is none.
func prefixUpperBound(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// namespaceKey is how a namespace is stored in the namespace column: its
// parts as a JSON array, which no two different namespaces share.
func namespaceKey(ns []string) string {
	b, _ := json.Marshal(ns)
	return string(b)
}
