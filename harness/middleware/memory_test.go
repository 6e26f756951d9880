package middleware_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

func newMemory(t *testing.T, opts middleware.MemoryOptions) *middleware.MemoryMiddleware {
	t.Helper()
	m, err := middleware.NewMemory(opts)
	require.NoError(t, err)
	return m
}

func plainFiles(kv ...string) map[string]agent.FileData {
	out := map[string]agent.FileData{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = agent.FileData{Content: kv[i+1]}
	}
	return out
}

var memorySources = []string{"/memory/AGENTS.md", "/memory/user/AGENTS.md"}

// firstPrompt runs one model call and returns the system prompt the model saw.
func firstPrompt(t *testing.T, in agent.Input, mws ...agent.Middleware) string {
	t.Helper()
	model := fakes.NewScripted(fakes.Reply("hello!"))
	a := newAgent(t, model, "", nil, mws...)
	if len(in.Messages) == 0 {
		in.Messages = []llm.Message{llm.User("hi")}
	}
	_, err := a.Invoke(t.Context(), in)
	require.NoError(t, err)
	return model.Requests()[0].SystemText()
}

func memoryBlock(body string) string {
	return strings.Replace(middleware.DefaultMemoryPrompt, "{agent_memory}", body, 1)
}

// Reference case 64.
func TestMemoryRendering(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]agent.FileData
		want  string
	}{
		{
			name:  "declared order with path headers",
			files: plainFiles("/memory/user/AGENTS.md", "Prefers tabs.\n", "/memory/AGENTS.md", "# Project\nRun make test.\n\n"),
			want:  "/memory/AGENTS.md\n\n# Project\nRun make test.\n\n/memory/user/AGENTS.md\n\nPrefers tabs.",
		},
		{
			name:  "missing file skipped",
			files: plainFiles("/memory/user/AGENTS.md", "Prefers tabs."),
			want:  "/memory/user/AGENTS.md\n\nPrefers tabs.",
		},
		{
			name:  "HTML comments stripped, across lines",
			files: plainFiles("/memory/AGENTS.md", "Keep<!-- inline --> this.\n  <!--\nnote for humans\n-->\nAnd this.<!-- trailing -->", "/memory/user/AGENTS.md", "<!-- only a comment -->\n\n"),
			want:  "/memory/AGENTS.md\n\nKeep this.\nAnd this.",
		},
		{
			name:  "nothing loaded",
			files: plainFiles("/memory/AGENTS.md", "  \n<!-- x -->"),
			want:  middleware.NoMemoryText,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstPrompt(t, agent.Input{Files: tt.files}, newMemory(t, middleware.MemoryOptions{Sources: memorySources}))
			assert.Equal(t, memoryBlock(tt.want), got)
		})
	}
}

func TestMemoryLoading(t *testing.T) {
	t.Run("download errors other than not-found fail the run", func(t *testing.T) {
		b := &faultyBackend{Backend: backend.NewState(), downloadErr: map[string]error{
			"/memory/user/AGENTS.md": &backend.Error{Code: backend.PermissionDenied, Msg: "permission denied"},
		}}
		model := fakes.NewScripted(fakes.Reply("never"))
		a := newAgent(t, model, "", nil, newMemory(t, middleware.MemoryOptions{Backend: b, Sources: memorySources}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}, Files: plainFiles("/memory/AGENTS.md", "x")})
		require.ErrorContains(t, err, "MemoryMiddleware: failed to download /memory/user/AGENTS.md: permission denied")
		assert.Equal(t, 0, model.CallCount())
	})
	t.Run("not UTF-8", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("never"))
		a := newAgent(t, model, "", nil, newMemory(t, middleware.MemoryOptions{Sources: memorySources}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")},
			Files: map[string]agent.FileData{"/memory/AGENTS.md": {Content: b64([]byte{0xff, 0xfe, 0x00}), Encoding: "base64"}}})
		require.ErrorContains(t, err, "memory file /memory/AGENTS.md is not UTF-8 text")
	})
	t.Run("loaded once per thread", func(t *testing.T) {
		b := &faultyBackend{Backend: backend.NewState()}
		model := fakes.NewScripted(fakes.Reply("one"), fakes.Reply("two"))
		a := newAgent(t, model, "", nil, newMemory(t, middleware.MemoryOptions{Backend: b, Sources: memorySources}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}, Files: plainFiles("/memory/AGENTS.md", "v1")}, agent.WithThread("m"))
		require.NoError(t, err)
		// The file changes, but the thread keeps what it loaded.
		_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("again")}, Files: plainFiles("/memory/AGENTS.md", "v2")}, agent.WithThread("m"))
		require.NoError(t, err)
		assert.Equal(t, int32(1), b.downloads.Load())
		assert.Contains(t, model.Requests()[1].SystemText(), "/memory/AGENTS.md\n\nv1")
		st := fullState(t, a, "m")
		contents, ok := agent.Value[map[string]string](st, middleware.MemoryContentsKey)
		require.True(t, ok)
		assert.Equal(t, map[string]string{"/memory/AGENTS.md": "v1"}, contents)
	})
	t.Run("state already holding memory is not reloaded", func(t *testing.T) {
		b := &faultyBackend{Backend: backend.NewState()}
		pre, _ := json.Marshal(map[string]string{"/memory/AGENTS.md": "preloaded"})
		got := firstPrompt(t, agent.Input{Values: map[string]json.RawMessage{middleware.MemoryContentsKey: pre}, Files: plainFiles("/memory/AGENTS.md", "on disk")},
			newMemory(t, middleware.MemoryOptions{Backend: b, Sources: memorySources}))
		assert.Equal(t, memoryBlock("/memory/AGENTS.md\n\npreloaded"), got)
		assert.Equal(t, int32(0), b.downloads.Load())
	})
	t.Run("private state", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("ok"))
		a := newAgent(t, model, "", nil, newMemory(t, middleware.MemoryOptions{Sources: memorySources}))
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}, Files: plainFiles("/memory/AGENTS.md", "x")})
		require.NoError(t, err)
		assert.NotContains(t, res.State.Values, middleware.MemoryContentsKey)
		assert.Equal(t, []string{middleware.MemoryContentsKey}, a.PrivateKeys())
	})
}

func TestMemoryCacheControl(t *testing.T) {
	tests := []struct {
		provider string
		add      bool
		want     bool
	}{
		{"anthropic", true, true},
		{"anthropic", false, false},
		{"openai", true, false},
		{"fake", true, false},
	}
	for _, tt := range tests {
		model := fakes.NewScripted(fakes.Reply("ok")).WithIdentity(tt.provider, "m")
		a := newAgent(t, model, "Base.", nil, newMemory(t, middleware.MemoryOptions{Sources: memorySources, AddCacheControl: tt.add}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}})
		require.NoError(t, err)
		sys := model.Requests()[0].System
		require.Len(t, sys, 2)
		assert.Nil(t, sys[0].CacheControl)
		assert.Equal(t, tt.want, sys[1].CacheControl != nil, "%s add=%v", tt.provider, tt.add)
		assert.Nil(t, a.Config().System[0].CacheControl)
	}

	// With caching in front (the Deep Agents order), memory adds the fourth breakpoint.
	model := fakes.NewScripted(fakes.Reply("ok")).WithIdentity("anthropic", "claude-sonnet-4-6")
	a := newAgent(t, model, "Base.", nil, newCaching(t, ""), newMemory(t, middleware.MemoryOptions{Sources: memorySources, AddCacheControl: true}))
	_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"system:0", "system:1", "message:0:0"}, breakpoints(model.Requests()[0]))
}

func TestMemoryTemplates(t *testing.T) {
	custom := "Remember:\n{agent_memory}"
	got := firstPrompt(t, agent.Input{Files: plainFiles("/memory/AGENTS.md", "tabs")}, newMemory(t, middleware.MemoryOptions{Sources: memorySources, SystemPrompt: &custom}))
	assert.Equal(t, "Remember:\n/memory/AGENTS.md\n\ntabs", got)

	empty := ""
	got = firstPrompt(t, agent.Input{Files: plainFiles("/memory/AGENTS.md", "tabs")}, newMemory(t, middleware.MemoryOptions{Sources: memorySources, SystemPrompt: &empty}))
	assert.Empty(t, got)

	bad := "No placeholder."
	_, err := middleware.NewMemory(middleware.MemoryOptions{SystemPrompt: &bad})
	require.ErrorContains(t, err, "must contain the {agent_memory} placeholder")
	_, err = middleware.NewMemory(middleware.MemoryOptions{Sources: []string{"/memory/../etc/passwd"}})
	require.ErrorContains(t, err, `sources[0] "/memory/../etc/passwd"`)

	m := newMemory(t, middleware.MemoryOptions{Sources: []string{"memory//AGENTS.md"}})
	assert.Equal(t, "MemoryMiddleware", m.Name())
	assert.Equal(t, []string{"/memory/AGENTS.md"}, middleware.MemorySources(m))
}
