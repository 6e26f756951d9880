package middleware_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

// clock is a deterministic run clock: every reading is one second later.
func clock() agent.Option {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	return agent.WithClock(func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) })
}

// session is one agent run driven by a scripted model.
type session struct {
	res   *agent.Result
	model *fakes.Scripted
}

// drive runs a real agent whose model issues each turn of tool calls in
// order and then answers "done". Calls without an id get call_<turn>_<i>.
func drive(t *testing.T, mw *middleware.Filesystem, files map[string]agent.FileData, turns ...[]llm.ToolCall) session {
	t.Helper()
	return driveWith(t, agent.Config{Middleware: []agent.Middleware{mw}}, agent.Input{Files: files, Messages: []llm.Message{llm.User("go")}}, turns...)
}

func driveWith(t *testing.T, cfg agent.Config, in agent.Input, turns ...[]llm.ToolCall) session {
	t.Helper()
	var steps []fakes.Step
	for _, calls := range turns {
		steps = append(steps, fakes.Calls("", calls...))
	}
	steps = append(steps, fakes.Reply("done"))
	model := fakes.NewScripted(steps...)
	cfg.Model = model
	if cfg.RecursionLimit == 0 {
		cfg.RecursionLimit = 100
	}
	a, err := agent.New(cfg)
	require.NoError(t, err)
	if len(in.Messages) == 0 {
		in.Messages = []llm.Message{llm.User("go")}
	}
	res, err := a.Invoke(t.Context(), in, clock())
	require.NoError(t, err)
	require.Equal(t, 0, model.Remaining(), "the script was not played to the end")
	return session{res: res, model: model}
}

// tool returns the tool message answering the call with the given id.
func (s session) tool(t *testing.T, id string) llm.Message {
	t.Helper()
	for _, m := range s.res.State.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			return m
		}
	}
	t.Fatalf("no tool message for call %s", id)
	return llm.Message{}
}

// text returns the text of the answer to call id and whether it is an error.
func (s session) text(t *testing.T, id string) (string, bool) {
	t.Helper()
	m := s.tool(t, id)
	return m.Text(), m.IsError
}

func call(id, name string, args any) llm.ToolCall { return fakes.CallID(id, name, args) }

func newMW(t *testing.T, opts middleware.FilesystemOptions) *middleware.Filesystem {
	t.Helper()
	mw, err := middleware.NewFilesystem(opts)
	require.NoError(t, err)
	return mw
}

func files(kv ...string) map[string]agent.FileData {
	out := map[string]agent.FileData{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = agent.FileData{Content: kv[i+1], Encoding: "utf-8", CreatedAt: "2026-01-01T00:00:00.000000Z", ModifiedAt: "2026-01-01T00:00:00.000000Z"}
	}
	return out
}

// oneShot runs a single tool call through a middleware over files and
// returns its answer.
func oneShot(t *testing.T, mw *middleware.Filesystem, fs map[string]agent.FileData, name string, args any) (string, bool) {
	t.Helper()
	s := drive(t, mw, fs, []llm.ToolCall{call("c1", name, args)})
	return s.text(t, "c1")
}

// bigTool is a caller tool returning n characters of numbered lines.
func bigTool(name string, lines int, width int) tool.Tool {
	return tool.Must(tool.New(name, "Returns a lot of text.", func(ctx context.Context, _ struct{}) (string, error) {
		return numberedText(lines, width), nil
	}))
}

func numberedText(lines, width int) string {
	b := make([]byte, 0, lines*(width+1))
	for i := range lines {
		line := []byte(fmt.Sprintf("line %06d ", i))
		for len(line) < width {
			line = append(line, 'x')
		}
		b = append(b, line[:width]...)
		b = append(b, '\n')
	}
	return string(b)
}

// only exposes nothing but the Backend methods of b, hiding Delete and Execute.
type only struct{ backend.Backend }
