package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/backend/backendtest"
)

func fixedClock() agent.Option {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	n := 0
	return agent.WithClock(func() time.Time { n++; return t0.Add(time.Duration(n) * time.Minute) })
}

// Case 80: the State backend inside and outside an agent run.
func TestStateBackend(t *testing.T) {
	st := backend.NewState()
	ctx := t.Context()
	_, err := st.Read(ctx, "/a.txt", 0, 10)
	assert.ErrorIs(t, err, backend.ErrStateOutsideRun, "outside a tool call there is no state")
	assert.ErrorIs(t, st.Write(ctx, "/a.txt", "x"), backend.ErrStateOutsideRun)

	seed := map[string]agent.FileData{"/seed.txt": {Content: "seeded", Encoding: "utf-8", CreatedAt: "2020-01-01T00:00:00.000000Z", ModifiedAt: "2020-01-01T00:00:00.000000Z"}}
	files, err := backendtest.InToolCall(ctx, seed, func(ctx context.Context) error {
		if err := st.Write(ctx, "/notes/a.md", "alpha"); err != nil {
			return err
		}
		r, err := st.Read(ctx, "/notes/a.md", 0, 10)
		if err != nil {
			return err
		}
		if r.File.Content != "alpha" {
			return errors.New("read-your-writes failed: " + r.File.Content)
		}
		if _, err := st.Edit(ctx, backend.EditRequest{Path: "/notes/a.md", Old: "alpha", New: "beta"}); err != nil {
			return err
		}
		if err := st.Write(ctx, "/seed.txt", "overwritten"); err != nil {
			return err
		}
		entries, err := st.Ls(ctx, "/")
		if err != nil {
			return err
		}
		if len(entries) != 2 || entries[0].Path != "/notes/" || entries[1].Path != "/seed.txt" {
			return errors.New("unexpected listing")
		}
		res, err := st.Glob(ctx, "*", "/")
		if err != nil {
			return err
		}
		// Most recently modified first.
		if len(res.Matches) != 2 || res.Matches[0].Path != "/seed.txt" || res.Matches[1].Path != "/notes/a.md" {
			return errors.New("unexpected glob order")
		}
		return nil
	}, fixedClock())
	require.NoError(t, err)
	assert.Equal(t, "beta", files["/notes/a.md"].Content, "writes reach the agent state")
	assert.Equal(t, "2026-03-04T05:07:07.000000Z", files["/notes/a.md"].CreatedAt, "stamped by the run clock")
	assert.Equal(t, "2026-03-04T05:08:07.000000Z", files["/notes/a.md"].ModifiedAt)
	assert.Equal(t, "overwritten", files["/seed.txt"].Content)
	assert.Equal(t, "2020-01-01T00:00:00.000000Z", files["/seed.txt"].CreatedAt, "overwrite keeps created_at")
	assert.Equal(t, "2026-03-04T05:09:07.000000Z", files["/seed.txt"].ModifiedAt)

	// Binary uploads are stored base64 and marked so (Deep Agents marks them utf-8).
	files, err = backendtest.InToolCall(ctx, nil, func(ctx context.Context) error {
		return st.Upload(ctx, []backend.UploadFile{{Path: "/b.bin", Content: []byte{0, 0xff}}})[0].Err
	})
	require.NoError(t, err)
	assert.Equal(t, backend.FileData{Content: "AP8=", Encoding: "base64", CreatedAt: files["/b.bin"].CreatedAt, ModifiedAt: files["/b.bin"].ModifiedAt}, files["/b.bin"])
}

func TestStateStage(t *testing.T) {
	st := backend.NewState()
	base := &agent.State{Files: map[string]agent.FileData{"/a.txt": {Content: "a"}}}
	ctx, stage := backend.WithStateStage(t.Context(), base)
	assert.Nil(t, stage.Update())
	require.NoError(t, st.Write(ctx, "/b.txt", "b"))
	got, err := st.Read(ctx, "/b.txt", 0, 1)
	require.NoError(t, err)
	assert.Equal(t, "b", got.File.Content, "the stage sees its own writes")
	d := backend.Deleter(st)
	require.NoError(t, d.Delete(ctx, "/a.txt"))
	u := stage.Update()
	require.NotNil(t, u)
	assert.Nil(t, u.Files["/a.txt"], "deletion is a nil entry")
	assert.Contains(t, u.Files, "/a.txt")
	assert.Equal(t, "b", u.Files["/b.txt"].Content)
	assert.Equal(t, "a", base.Files["/a.txt"].Content, "the base state is not modified")
}

// Case 80 (Store): legacy list content and binary uploads.
func TestStoreLegacyAndBinary(t *testing.T) {
	kv := backend.NewMemoryKVStore()
	s := backend.NewStore(kv, backend.StaticNamespace("assistant-1", "files"))
	ctx := t.Context()
	ns := []string{"assistant-1", "files"}
	require.NoError(t, kv.Put(ctx, ns, "/legacy.txt", json.RawMessage(`{"content":["hello","world",""],"created_at":"2020-01-01T00:00:00Z"}`)))
	require.NoError(t, kv.Put(ctx, ns, "/broken.txt", json.RawMessage(`{"content":["ok",3]}`)))
	r, err := s.Read(ctx, "/legacy.txt", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, "hello\nworld\n", r.File.Content)
	assert.Equal(t, "utf-8", r.File.Encoding, "a missing encoding reads as utf-8")
	raw, _, _ := kv.Get(ctx, ns, "/legacy.txt")
	assert.JSONEq(t, `{"content":["hello","world",""],"created_at":"2020-01-01T00:00:00Z"}`, string(raw), "reads never rewrite storage")
	_, err = s.Read(ctx, "/broken.txt", 0, 10)
	assert.ErrorContains(t, err, "line 2 is a number, not a string")
	_, err = s.Edit(ctx, backend.EditRequest{Path: "/legacy.txt", Old: "world", New: "there"})
	require.NoError(t, err)
	raw, _, _ = kv.Get(ctx, ns, "/legacy.txt")
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v))
	assert.Equal(t, "hello\nthere\n", v["content"], "converted to the current format when edited")
	assert.Equal(t, "2020-01-01T00:00:00Z", v["created_at"])

	up := s.Upload(ctx, []backend.UploadFile{{Path: "/img.png", Content: []byte{0x89, 'P', 'N', 'G', 0xff}}})
	require.NoError(t, up[0].Err)
	raw, _, _ = kv.Get(ctx, ns, "/img.png")
	require.NoError(t, json.Unmarshal(raw, &v))
	assert.Equal(t, "base64", v["encoding"])
	down := s.Download(ctx, []string{"/img.png"})
	assert.Equal(t, []byte{0x89, 'P', 'N', 'G', 0xff}, down[0].Content)
}

func TestStoreNamespaces(t *testing.T) {
	kv := backend.NewMemoryKVStore()
	perUser := backend.NewStore(kv, backend.ConfigNamespace([]string{"filesystem"}, "assistant_id", "user_id"))
	ctx := t.Context()
	_, err := perUser.Ls(ctx, "/")
	assert.ErrorContains(t, err, `needs the run configuration value "assistant_id"`)

	writeAs := func(assistant, user, p, content string) {
		_, err := backendtest.InToolCall(ctx, nil, func(ctx context.Context) error {
			return perUser.Write(ctx, p, content)
		}, agent.WithConfig("assistant_id", assistant), agent.WithConfig("user_id", user))
		require.NoError(t, err)
	}
	writeAs("bot", "alice", "/prefs.md", "alice likes tea")
	writeAs("bot", "bob", "/prefs.md", "bob likes coffee")
	a, _, _ := kv.Get(ctx, []string{"filesystem", "bot", "alice"}, "/prefs.md")
	b, _, _ := kv.Get(ctx, []string{"filesystem", "bot", "bob"}, "/prefs.md")
	assert.Contains(t, string(a), "alice likes tea")
	assert.Contains(t, string(b), "bob likes coffee")

	_, err = backendtest.InToolCall(ctx, nil, func(ctx context.Context) error {
		return perUser.Write(ctx, "/x", "y")
	}, agent.WithConfig("assistant_id", "bot"), agent.WithConfig("user_id", "*"))
	assert.ErrorContains(t, err, "must be non-empty and use only letters", "wildcards cannot be injected")

	for _, bad := range [][]string{nil, {}, {""}, {"a", "b/c"}, {"a*"}, {"a b"}, {"ok", "bad|char"}} {
		_, err = backend.NewStore(kv, backend.StaticNamespace(bad...)).Ls(ctx, "/")
		assert.ErrorContains(t, err, "backend: store namespace", "%q", bad)
	}
	assert.NoError(t, backend.NewStore(kv, backend.StaticNamespace("user@example.com", "v1.2", "a-b_c+d:e~f")).Write(ctx, "/ok", "x"))
}
