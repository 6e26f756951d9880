package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
	"github.com/dageval/dageval/harness/backend/sqlitestore"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{New: func(t *testing.T) backend.Backend {
		kv, err := sqlitestore.Open(filepath.Join(t.TempDir(), "files.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		return backend.NewStore(kv, backend.StaticNamespace("tests", "files"))
	}})
}

// A SQLite-backed Store keeps files across close and reopen.
func TestStoreSurvivesReopen(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "agent-files.db")
	ctx := t.Context()
	ns := backend.StaticNamespace("assistant-7", "user@example.com")

	kv, err := sqlitestore.Open(dbPath)
	require.NoError(t, err)
	s := backend.NewStore(kv, ns)
	for p, content := range map[string]string{"/memories/prefs.md": "likes tea\n", "/memories/deep/facts.md": "fact one\nfact two\n", "/scratch/tmp.txt": "temp"} {
		require.NoError(t, s.Write(ctx, p, content), p)
	}
	up := s.Upload(ctx, []backend.UploadFile{{Path: "/img/logo.png", Content: []byte{0x89, 'P', 'N', 'G', 0, 0xff}}})
	require.NoError(t, up[0].Err)
	_, err = s.Edit(ctx, backend.EditRequest{Path: "/memories/prefs.md", Old: "tea", New: "green tea"})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "/scratch"))
	other := backend.NewStore(kv, backend.StaticNamespace("assistant-7", "someone-else"))
	require.NoError(t, other.Write(ctx, "/memories/prefs.md", "not yours"))
	require.NoError(t, kv.Close())

	kv2, err := sqlitestore.Open(dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { kv2.Close() })
	s2 := backend.NewStore(kv2, ns)
	r, err := s2.Read(ctx, "/memories/prefs.md", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, "likes green tea\n", r.File.Content)
	r, err = s2.Read(ctx, "/memories/deep/facts.md", 1, 1)
	require.NoError(t, err)
	assert.Equal(t, "fact two\n", r.File.Content)
	entries, err := s2.Ls(ctx, "/")
	require.NoError(t, err)
	var top []string
	for _, e := range entries {
		top = append(top, e.Path)
	}
	assert.Equal(t, []string{"/img/", "/memories/"}, top)
	down := s2.Download(ctx, []string{"/img/logo.png", "/scratch/tmp.txt"})
	assert.Equal(t, []byte{0x89, 'P', 'N', 'G', 0, 0xff}, down[0].Content)
	assert.ErrorIs(t, down[1].Err, backend.ErrFileNotFound, "the delete survived too")
	g, err := s2.Grep(ctx, backend.GrepRequest{Pattern: "fact"})
	require.NoError(t, err)
	assert.Len(t, g.Matches, 2)
	assert.Equal(t, dbPath, kv2.Path())
}

func TestPaging(t *testing.T) {
	kv, err := sqlitestore.Open(filepath.Join(t.TempDir(), "kv.db"))
	require.NoError(t, err)
	defer kv.Close()
	mem := backend.NewMemoryKVStore()
	ctx := context.Background()
	ns := []string{"n"}
	for _, k := range []string{"/a", "/a/b", "/a/c", "/ab", "/b", "/a/\u00e9", "/a/z"} {
		for _, s := range []backend.KVStore{kv, mem} {
			require.NoError(t, s.Put(ctx, ns, k, []byte(`{"content":"x"}`)))
		}
	}
	for _, tc := range []struct {
		prefix        string
		limit, offset int
		want          []string
	}{
		{"/a/", 0, 0, []string{"/a/b", "/a/c", "/a/z", "/a/\u00e9"}},
		{"/a/", 2, 1, []string{"/a/c", "/a/z"}},
		{"/a", 0, 0, []string{"/a", "/a/b", "/a/c", "/a/z", "/a/\u00e9", "/ab"}},
		{"/", 3, 4, []string{"/a/\u00e9", "/ab", "/b"}},
		{"/zz", 0, 0, nil},
	} {
		for name, s := range map[string]backend.KVStore{"sqlite": kv, "memory": mem} {
			items, err := s.List(ctx, ns, tc.prefix, tc.limit, tc.offset)
			require.NoError(t, err)
			var keys []string
			for _, it := range items {
				keys = append(keys, it.Key)
			}
			assert.Equal(t, tc.want, keys, "%s List(%q, %d, %d)", name, tc.prefix, tc.limit, tc.offset)
		}
	}
	_, err = sqlitestore.Open("")
	assert.Error(t, err)
}
