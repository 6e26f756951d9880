package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/agent"
)

// KVStore is a namespaced key-value store shared across threads: the
// storage under the Store backend. Implementations must be safe for
// concurrent use.
type KVStore interface {
	// Get returns the value stored under key, or ok=false.
	Get(ctx context.Context, namespace []string, key string) (value json.RawMessage, ok bool, err error)
	// Put stores value under key, replacing any previous value.
	Put(ctx context.Context, namespace []string, key string, value json.RawMessage) error
	// Delete removes keys; missing keys are ignored.
	Delete(ctx context.Context, namespace []string, keys ...string) error
	// List returns up to limit items of the namespace whose key starts with
	// prefix, ordered by key, after skipping offset of them.
	List(ctx context.Context, namespace []string, prefix string, limit, offset int) ([]KVItem, error)
}

// KVItem is one stored entry.
type KVItem struct {
	Key   string
	Value json.RawMessage
}

// NamespaceFunc chooses the namespace a Store backend works in for the
// current run (for example per assistant or per user).
type NamespaceFunc func(ctx context.Context) ([]string, error)

var namespaceComponent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9\-_.@+:~]+$`) })

// validateNamespace checks a namespace: at least one component, each
// non-empty and made of letters, digits and - _ . @ + : ~ only, so that
// user-controlled values cannot inject wildcards or separators.
func validateNamespace(ns []string) error {
	if len(ns) == 0 {
		return errors.New("backend: store namespace must have at least one component")
	}
	for i, c := range ns {
		if !namespaceComponent().MatchString(c) {
			return fmt.Errorf("backend: store namespace component %d (%q) must be non-empty and use only letters, digits and - _ . @ + : ~", i, c)
		}
	}
	return nil
}

// StaticNamespace always uses the given namespace.
func StaticNamespace(ns ...string) NamespaceFunc {
	ns = slices.Clone(ns)
	return func(context.Context) ([]string, error) { return ns, nil }
}

// ConfigNamespace builds the namespace from per-run configuration: the
// fixed prefix components followed by the values of the given keys as set
// with agent.WithConfig (for example "assistant_id", "user_id"), so that
// each assistant or user gets its own files. A missing or non-string value
// is an error.
func ConfigNamespace(prefix []string, keys ...string) NamespaceFunc {
	prefix, keys = slices.Clone(prefix), slices.Clone(keys)
	return func(ctx context.Context) ([]string, error) {
		ns := slices.Clone(prefix)
		for _, k := range keys {
			v, ok := agent.Configurable(ctx, k)
			if !ok {
				return nil, fmt.Errorf("backend: store namespace needs the run configuration value %q (set it with agent.WithConfig)", k)
			}
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("backend: store namespace value %q must be a string, got %T", k, v)
			}
			ns = append(ns, s)
		}
		return ns, nil
	}
}

// Store keeps files in a KVStore, one item per file (key = path, value =
// {"content","encoding","created_at","modified_at"}), so they outlive
// threads. Legacy items whose content is a list of lines are read (joined
// with "\n") and converted when next written.
type Store struct {
	kv        KVStore
	namespace NamespaceFunc
	ops       kvOps
}

// NewStore returns a Store backend over kv. namespace is called for every
// operation; nil means the single namespace ["filesystem"].
func NewStore(kv KVStore, namespace NamespaceFunc) *Store {
	if namespace == nil {
		namespace = StaticNamespace("filesystem")
	}
	s := &Store{kv: kv, namespace: namespace}
	s.ops = kvOps{table: s.table}
	return s
}

func (s *Store) table(ctx context.Context) (fileTable, error) {
	if s.kv == nil {
		return nil, errors.New("backend: Store backend has no KVStore")
	}
	ns, err := s.namespace(ctx)
	if err != nil {
		return nil, err
	}
	if err := validateNamespace(ns); err != nil {
		return nil, err
	}
	return &storeTable{kv: s.kv, ns: ns}, nil
}

// Ls implements Backend.
func (s *Store) Ls(ctx context.Context, p string) ([]FileInfo, error) { return s.ops.Ls(ctx, p) }

// Read implements Backend.
func (s *Store) Read(ctx context.Context, p string, offset, limit int) (ReadResult, error) {
	return s.ops.Read(ctx, p, offset, limit)
}

// Write implements Backend.
func (s *Store) Write(ctx context.Context, p, content string) error {
	return s.ops.Write(ctx, p, content)
}

// Edit implements Backend.
func (s *Store) Edit(ctx context.Context, req EditRequest) (int, error) { return s.ops.Edit(ctx, req) }

// Delete implements Deleter.
func (s *Store) Delete(ctx context.Context, p string) error { return s.ops.Delete(ctx, p) }

// Glob implements Backend; matches are ordered most recently modified first, then by path.
func (s *Store) Glob(ctx context.Context, pattern, p string) (GlobResult, error) {
	return s.ops.Glob(ctx, pattern, p)
}

// Grep implements Backend; files are searched in path order.
func (s *Store) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	return s.ops.Grep(ctx, req)
}

// Upload implements Backend.
func (s *Store) Upload(ctx context.Context, files []UploadFile) []UploadResult {
	return s.ops.Upload(ctx, files)
}

// Download implements Backend.
func (s *Store) Download(ctx context.Context, paths []string) []DownloadResult {
	return s.ops.Download(ctx, paths)
}

// storeValue is the stored form of a file. Content is a string, or a list
// of lines in legacy items.
type storeValue struct {
	Content    json.RawMessage `json:"content"`
	Encoding   string          `json:"encoding,omitempty"`
	CreatedAt  string          `json:"created_at,omitempty"`
	ModifiedAt string          `json:"modified_at,omitempty"`
}

// decodeStoreValue turns a stored item into a file, accepting the legacy
// list-of-lines content.
func decodeStoreValue(raw json.RawMessage) (FileData, error) {
	var v storeValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return FileData{}, fmt.Errorf("backend: stored file is not a JSON object: %w", err)
	}
	fd := FileData{Encoding: v.Encoding, CreatedAt: v.CreatedAt, ModifiedAt: v.ModifiedAt}
	if fd.Encoding == "" {
		fd.Encoding = EncodingUTF8
	}
	switch c := strings.TrimSpace(string(v.Content)); {
	case c == "" || c == "null":
		return FileData{}, errors.New("backend: stored file has no content field")
	case c[0] == '"':
		if err := json.Unmarshal(v.Content, &fd.Content); err != nil {
			return FileData{}, fmt.Errorf("backend: stored file content: %w", err)
		}
	case c[0] == '[':
		var items []any
		if err := json.Unmarshal(v.Content, &items); err != nil {
			return FileData{}, fmt.Errorf("backend: stored file content: %w", err)
		}
		lines := make([]string, len(items))
		for i, it := range items {
			s, ok := it.(string)
			if !ok {
				return FileData{}, fmt.Errorf("backend: legacy file content line %d is a %s, not a string", i+1, jsonKind(it))
			}
			lines[i] = s
		}
		fd.Content = strings.Join(lines, "\n")
	default:
		return FileData{}, fmt.Errorf("backend: stored file content is a %s, want a string or a list of lines", jsonKind(json.RawMessage(c)))
	}
	return fd, nil
}

func jsonKind(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		var x any
		if json.Unmarshal(raw, &x) != nil {
			return "malformed value"
		}
		v = x
	}
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func encodeStoreValue(fd FileData) (json.RawMessage, error) {
	content, err := json.Marshal(fd.Content)
	if err != nil {
		return nil, err
	}
	return json.Marshal(storeValue{Content: content, Encoding: fd.Encoding, CreatedAt: fd.CreatedAt, ModifiedAt: fd.ModifiedAt})
}

// storePage is how many items one List call fetches.
const storePage = 100

type storeTable struct {
	kv KVStore
	ns []string
}

func (t *storeTable) get(ctx context.Context, p string) (FileData, bool, error) {
	raw, ok, err := t.kv.Get(ctx, t.ns, p)
	if err != nil || !ok {
		return FileData{}, false, err
	}
	fd, err := decodeStoreValue(raw)
	if err != nil {
		return FileData{}, false, fmt.Errorf("%s: %w", p, err)
	}
	return fd, true, nil
}

func (t *storeTable) put(ctx context.Context, p string, fd FileData) error {
	raw, err := encodeStoreValue(fd)
	if err != nil {
		return err
	}
	return t.kv.Put(ctx, t.ns, p, raw)
}

func (t *storeTable) remove(ctx context.Context, paths []string) error {
	return t.kv.Delete(ctx, t.ns, paths...)
}

func (t *storeTable) list(ctx context.Context, dir string) ([]kvFile, error) {
	prefix := dirPrefix(dir)
	var out []kvFile
	for offset := 0; ; offset += storePage {
		items, err := t.kv.List(ctx, t.ns, prefix, storePage, offset)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if it.Key == dir {
				continue
			}
			fd, err := decodeStoreValue(it.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", it.Key, err)
			}
			out = append(out, kvFile{Path: it.Key, Data: fd})
		}
		if len(items) < storePage {
			return out, nil
		}
	}
}

func (t *storeTable) hasChildren(ctx context.Context, dir string) (bool, error) {
	items, err := t.kv.List(ctx, t.ns, dirPrefix(dir), 2, 0)
	if err != nil {
		return false, err
	}
	for _, it := range items {
		if it.Key != dir {
			return true, nil
		}
	}
	return false, nil
}

// MemoryKVStore is a KVStore kept in memory.
type MemoryKVStore struct {
	mu  sync.RWMutex
	nss map[string]*memNamespace
}

type memNamespace struct {
	vals map[string]json.RawMessage
	keys []string // sorted
}

// NewMemoryKVStore returns an empty in-memory store.
func NewMemoryKVStore() *MemoryKVStore {
	return &MemoryKVStore{nss: map[string]*memNamespace{}}
}

func nsKey(ns []string) string {
	b, _ := json.Marshal(ns)
	return string(b)
}

// Get implements KVStore.
func (m *MemoryKVStore) Get(_ context.Context, ns []string, key string) (json.RawMessage, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := m.nss[nsKey(ns)]
	if n == nil {
		return nil, false, nil
	}
	v, ok := n.vals[key]
	return slices.Clone(v), ok, nil
}

// Put implements KVStore.
func (m *MemoryKVStore) Put(_ context.Context, ns []string, key string, value json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := nsKey(ns)
	n := m.nss[k]
	if n == nil {
		n = &memNamespace{vals: map[string]json.RawMessage{}}
		m.nss[k] = n
	}
	if _, ok := n.vals[key]; !ok {
		i, _ := slices.BinarySearch(n.keys, key)
		n.keys = slices.Insert(n.keys, i, key)
	}
	n.vals[key] = slices.Clone(value)
	return nil
}

// Delete implements KVStore.
func (m *MemoryKVStore) Delete(_ context.Context, ns []string, keys ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nss[nsKey(ns)]
	if n == nil {
		return nil
	}
	for _, key := range keys {
		if _, ok := n.vals[key]; !ok {
			continue
		}
		delete(n.vals, key)
		if i, found := slices.BinarySearch(n.keys, key); found {
			n.keys = slices.Delete(n.keys, i, i+1)
		}
	}
	return nil
}

// List implements KVStore.
func (m *MemoryKVStore) List(_ context.Context, ns []string, prefix string, limit, offset int) ([]KVItem, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := m.nss[nsKey(ns)]
	if n == nil {
		return nil, nil
	}
	start, _ := slices.BinarySearch(n.keys, prefix)
	var out []KVItem
	for i := start + max(offset, 0); i < len(n.keys) && strings.HasPrefix(n.keys[i], prefix); i++ {
		if limit > 0 && len(out) >= limit {
			break
		}
		out = append(out, KVItem{Key: n.keys[i], Value: slices.Clone(n.vals[n.keys[i]])})
	}
	return out, nil
}
