package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// fixedClock stamps every file and history section the same way.
var fixedClock = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func clockOpt() agent.Option { return agent.WithClock(func() time.Time { return fixedClock }) }

// overflowError is a model error that says the prompt did not fit.
type overflowError struct{}

func (overflowError) Error() string         { return "prompt is too long: 250000 tokens > 200000 maximum" }
func (overflowError) ContextOverflow() bool { return true }

// conversation returns n alternating messages "S0".."S<n-1>" ending with a user message.
func conversation(prefix string, n int) []llm.Message {
	out := make([]llm.Message, n)
	for i := range out {
		text := fmt.Sprintf("%s%d", prefix, i)
		if (n-1-i)%2 == 0 {
			out[i] = llm.User(text)
		} else {
			out[i] = llm.Assistant(text)
		}
	}
	return out
}

// faultyBackend wraps a backend and fails chosen operations.
type faultyBackend struct {
	backend.Backend
	writeErr    error
	downloadErr map[string]error
	downloads   atomic.Int32
}

func (f *faultyBackend) Write(ctx context.Context, p, content string) error {
	if f.writeErr != nil {
		return f.writeErr
	}
	return f.Backend.Write(ctx, p, content)
}

func (f *faultyBackend) Download(ctx context.Context, paths []string) []backend.DownloadResult {
	f.downloads.Add(1)
	res := f.Backend.Download(ctx, paths)
	for i, p := range paths {
		if err, ok := f.downloadErr[p]; ok {
			res[i] = backend.DownloadResult{Path: p, Err: err}
		}
	}
	return res
}

// logRecorder is a slog handler that keeps records.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	r.records = append(r.records, b.String())
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) joined() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.records, "\n")
}

// newAgent builds an agent with a checkpointer so private state can be inspected.
func newAgent(t testing.TB, model llm.ChatModel, system string, tools []tool.Tool, mws ...agent.Middleware) *agent.Agent {
	t.Helper()
	cfg := agent.Config{Model: model, Middleware: mws, Tools: tools, Checkpointer: agent.NewMemoryCheckpointer(), RecursionLimit: 100}
	if system != "" {
		cfg.System = []llm.Block{llm.TextBlock(system)}
	}
	a, err := agent.New(cfg)
	require.NoError(t, err)
	return a
}

// textTool returns a tool that answers every call with the given text.
func textTool(name, text string) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: name, Description: "Test tool " + name + ".", Parameters: []byte(`{"type":"object","properties":{"file_path":{"type":"string"},"q":{"type":"string"}}}`)},
		Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
			return tool.Text(text), nil
		},
	}
}

func fullState(t testing.TB, a *agent.Agent, thread string) *agent.State {
	t.Helper()
	st, err := a.GetState(t.Context(), thread)
	require.NoError(t, err)
	require.NotNil(t, st)
	return st
}

func roleNames(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + m.Text()
	}
	return out
}

func slogLogger(r *logRecorder) *slog.Logger { return slog.New(r) }
