package profile_test

import (
	"bytes"
	"log/slog"
	"reflect"
	"sync"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/profile"
)

// Stand-ins for the middleware the assembly builds; only names and types matter here.
type (
	FilesystemMiddleware struct{ agent.Base }
	SubAgentMiddleware   struct{ agent.Base }
	// subAgentImpl reports the scaffolding name under another type name.
	subAgentImpl struct{ agent.Base }
	// summarizationImpl is the built-in summarization implementation.
	summarizationImpl struct{ agent.Base }
	// callerSummarization embeds the implementation and keeps its name.
	callerSummarization struct{ *summarizationImpl }
	StubMW              struct{ agent.Base }
	// SubStub embeds StubMW, so it inherits StubMW's name but is another type.
	SubStub struct{ StubMW }
	OtherMW struct{ agent.Base }
	// impostor claims StubMW's name.
	impostor struct{ agent.Base }
	// labelled carries an id so tests can tell instances apart.
	labelled struct {
		agent.Base
		id string
	}
	otherLabelled struct {
		agent.Base
		id string
	}
	notMiddleware struct{}
)

func (*FilesystemMiddleware) Name() string { return "FilesystemMiddleware" }
func (*SubAgentMiddleware) Name() string   { return "SubAgentMiddleware" }
func (*subAgentImpl) Name() string         { return "SubAgentMiddleware" }
func (*summarizationImpl) Name() string    { return "SummarizationMiddleware" }

// SerializedName lets a type exclusion of the implementation be written to a
// profile file as "SummarizationMiddleware".
func (*summarizationImpl) SerializedName() string { return "SummarizationMiddleware" }
func (StubMW) Name() string                       { return "StubMW" }
func (*OtherMW) Name() string                     { return "OtherMW" }
func (*impostor) Name() string                    { return "StubMW" }
func (l *labelled) Name() string                  { return "labelled" }
func (l *otherLabelled) Name() string             { return "otherLabelled" }

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

func names(stack []agent.Middleware) []string {
	out := make([]string, len(stack))
	for i, mw := range stack {
		out[i] = mw.Name()
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// isolated returns a registry without built-ins or global plugins.
func isolated(opts ...profile.Option) *profile.Registry {
	return profile.NewRegistry(append([]profile.Option{profile.WithBuiltins(nil), profile.WithPlugins()}, opts...)...)
}

// logBuffer collects log records for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}
