package middleware_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

// Case 39: large results of other tools move to large_tool_results.
func TestToolResultEviction(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	big := numberedText(4000, 30) // 124 000 characters
	s := driveWith(t, agent.Config{Middleware: []agent.Middleware{mw}, Tools: []tool.Tool{bigTool("dump", 4000, 30)}},
		agent.Input{Files: files("/big.txt", big)},
		[]llm.ToolCall{call("call.1/x", "dump", nil), call("r", "read_file", map[string]any{"file_path": "/big.txt", "limit": 4000}), call("g", "grep", map[string]any{"pattern": "line", "output_mode": "content"})},
	)
	msg := s.tool(t, "call.1/x")
	text := msg.Text()
	assert.Equal(t, "dump", msg.Name)
	assert.False(t, msg.IsError)
	assert.Contains(t, text, "was too large to show here (124000 characters), so it was saved to /large_tool_results/call_1_x.")
	assert.Contains(t, text, "1  line 000000 xxxxxxxxxxxxxxxxxx\n")
	assert.Contains(t, text, "\n... [3990 lines truncated] ...\n3996  line 003995 xxxxxxxxxxxxxxxxxx\n")
	assert.True(t, strings.HasSuffix(text, "\n4000  line 003999 xxxxxxxxxxxxxxxxxx"), text[len(text)-60:])
	saved := s.res.State.Files["/large_tool_results/call_1_x"]
	assert.Equal(t, big, saved.Content, "the full result is saved in state")

	// The file tools cap themselves and are never evicted.
	for _, id := range []string{"r", "g"} {
		assert.NotContains(t, s.tool(t, id).Text(), "was too large to show here", id)
	}
	assert.Len(t, s.res.State.Files, 2)
	// The model saw the preview, not the full text.
	last := s.model.Requests()[1]
	for _, m := range last.Messages {
		if m.ToolCallID == "call.1/x" {
			assert.Less(t, len(m.Text()), 5000)
		}
	}

	// execute output is evicted like any other result; its exit-code
	// artifact survives.
	sh := newMW(t, middleware.FilesystemOptions{Backend: &fakeShell{Backend: backend.NewState()}})
	s = drive(t, sh, nil, []llm.ToolCall{call("ex", "execute", map[string]any{"command": "huge"})})
	ex := s.tool(t, "ex")
	assert.Contains(t, ex.Text(), "saved to /large_tool_results/ex.")
	assert.JSONEq(t, `{"exit_code":0}`, string(ex.Artifact))
	assert.True(t, strings.HasSuffix(s.res.State.Files["/large_tool_results/ex"].Content, "[Command succeeded with exit code 0]"))

	// Disabled eviction keeps results whole.
	off := newMW(t, middleware.FilesystemOptions{ToolTokenLimit: middleware.NoLimit})
	s = driveWith(t, agent.Config{Middleware: []agent.Middleware{off}, Tools: []tool.Tool{bigTool("dump", 4000, 30)}}, agent.Input{},
		[]llm.ToolCall{call("c", "dump", nil)})
	assert.Equal(t, big, s.tool(t, "c").Text())
}

// richTool returns a large result with an artifact, an image block and a
// state update that replaces the history and adds a second tool message.
type richTool struct{}

func (richTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "rich", Description: "rich", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (richTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	return tool.Result{
		Content:  []llm.Block{llm.TextBlock(strings.Repeat("r", 90_000)), {Type: llm.BlockImage, Data: "aGk=", MediaType: "image/png"}},
		Artifact: json.RawMessage(`{"k":1}`),
	}, nil
}

// replacer is a middleware that turns a tool response into one that
// replaces the history and carries an extra large tool message, as a
// Command(update={messages: [RemoveMessage(REMOVE_ALL), ...]}) would.
type replacer struct{ agent.Base }

func (replacer) Name() string { return "replacer" }

func (replacer) WrapToolCall(ctx context.Context, req *agent.ToolRequest, next agent.ToolHandler) (*agent.ToolResponse, error) {
	resp, err := next(ctx, req)
	if err != nil || req.Call.Name != "rich" {
		return resp, err
	}
	extra := llm.ToolResult("other", "rich", strings.Repeat("o", 85_000), false)
	extra.ID = "extra"
	return &agent.ToolResponse{Message: resp.Message, Update: resp.Update.Merge(&agent.Update{ReplaceMessages: true, Messages: []llm.Message{llm.User("kept"), extra}, Todos: []agent.Todo{{Content: "t", Status: "pending"}}})}, nil
}

func TestToolResultEvictionKeepsShape(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	// The filesystem middleware is outermost, so it sees the replacer's update.
	s := driveWith(t, agent.Config{Middleware: []agent.Middleware{mw, replacer{}}, Tools: []tool.Tool{richTool{}}}, agent.Input{},
		[]llm.ToolCall{call("rc", "rich", nil)})
	msgs := s.res.State.Messages
	require.GreaterOrEqual(t, len(msgs), 3)
	assert.Equal(t, "kept", msgs[0].Text(), "REMOVE_ALL semantics kept: history replaced")
	var main, extra llm.Message
	for _, m := range msgs {
		switch {
		case m.ToolCallID == "rc":
			main = m
		case m.ID == "extra":
			extra = m
		}
	}
	assert.Contains(t, main.Text(), "/large_tool_results/rc")
	assert.JSONEq(t, `{"k":1}`, string(main.Artifact))
	require.Len(t, main.Content, 2)
	assert.Equal(t, llm.BlockImage, main.Content[1].Type, "non-text blocks are kept after the notice")
	assert.Contains(t, extra.Text(), "/large_tool_results/other")
	assert.Equal(t, []agent.Todo{{Content: "t", Status: "pending"}}, s.res.State.Todos, "other update keys survive")
	assert.Len(t, s.res.State.Files["/large_tool_results/rc"].Content, 90_000)
	assert.Len(t, s.res.State.Files["/large_tool_results/other"].Content, 85_000)
}

func TestEvictionUsesArtifactsRoot(t *testing.T) {
	root := t.TempDir()
	fsb, err := backend.NewFilesystem(root, backend.FilesystemOptions{})
	require.NoError(t, err)
	comp, err := backend.NewComposite(backend.NewState(), []backend.Route{{Prefix: "/disk/", Backend: fsb}}, backend.CompositeOptions{ArtifactsRoot: "/disk/"})
	require.NoError(t, err)
	mw := newMW(t, middleware.FilesystemOptions{Backend: comp})
	s := driveWith(t, agent.Config{Middleware: []agent.Middleware{mw}, Tools: []tool.Tool{bigTool("dump", 4000, 30)}}, agent.Input{},
		[]llm.ToolCall{call("c9", "dump", nil)})
	assert.Contains(t, s.tool(t, "c9").Text(), "saved to /disk/large_tool_results/c9")
	got, err := fsb.Read(t.Context(), "/large_tool_results/c9", 0, 1)
	require.NoError(t, err)
	assert.Equal(t, 4000, got.TotalLines)
}

// Case 40: an oversized user message is saved to conversation_history.
func TestHumanMessageEviction(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{})
	huge := strings.Repeat("h", 4*50_000+1)
	s := driveWith(t, agent.Config{Middleware: []agent.Middleware{mw}, Checkpointer: agent.NewMemoryCheckpointer()},
		agent.Input{Messages: []llm.Message{llm.User(huge)}},
		[]llm.ToolCall{call("l", "ls", map[string]any{"path": "/conversation_history"})})
	var user llm.Message
	for _, m := range s.res.State.Messages {
		if m.Role == llm.RoleUser {
			user = m
		}
	}
	p := user.Metadata[llm.MetaEvictedTo]
	assert.True(t, strings.HasPrefix(p, "/conversation_history/"), p)
	assert.Equal(t, huge, user.Text(), "state keeps the full message")
	assert.Equal(t, huge, s.res.State.Files[p].Content, "the file holds the full text")
	reqs := s.model.Requests()
	require.Len(t, reqs, 2)
	for i, req := range reqs {
		seen := req.Messages[0].Text()
		assert.Less(t, len(seen), 2000, "call %d saw the preview", i)
		assert.Contains(t, seen, p)
		assert.Equal(t, user.ID, req.Messages[0].ID)
	}
	out, _ := s.text(t, "l")
	assert.Contains(t, out, p, "the file is visible to the agent")
	ids := map[string]bool{}
	for _, m := range s.res.State.Messages {
		assert.False(t, ids[m.ID], "duplicate id %s", m.ID)
		ids[m.ID] = true
	}
	assert.Equal(t, "done", s.res.Text(), "the AI reply survives")

	// Deterministic: the same run stores the same file name.
	s2 := driveWith(t, agent.Config{Middleware: []agent.Middleware{mw}}, agent.Input{Messages: []llm.Message{llm.User(huge)}})
	var names []string
	for name := range s2.res.State.Files {
		names = append(names, name)
	}
	assert.Equal(t, []string{p}, names)

	// A multi-turn thread: the second invocation still shows the preview.
	cp := agent.NewMemoryCheckpointer()
	a, err := agent.New(agent.Config{Model: replyModel("first", "second"), Middleware: []agent.Middleware{mw}, Checkpointer: cp})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User(huge)}}, agent.WithThread("t1"), clock())
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("short follow-up")}}, agent.WithThread("t1"), clock())
	require.NoError(t, err)
	assert.Equal(t, "second", res.Text())
	m := a.Config().Model.(*recordingReplies)
	last := m.requests[len(m.requests)-1]
	assert.Less(t, len(last.Messages[0].Text()), 2000, "the tagged message stays truncated in later turns")
	assert.Equal(t, "short follow-up", last.Messages[len(last.Messages)-1].Text())

	// Under the limit, or disabled: untouched.
	s3 := driveWith(t, agent.Config{Middleware: []agent.Middleware{newMW(t, middleware.FilesystemOptions{HumanMessageTokenLimit: middleware.NoLimit})}}, agent.Input{Messages: []llm.Message{llm.User(huge)}})
	assert.Empty(t, s3.res.State.Files)
	assert.Equal(t, huge, s3.model.Requests()[0].Messages[0].Text())
}

// recordingReplies answers with fixed texts and records requests.
type recordingReplies struct {
	replies  []string
	requests []llm.Request
}

func replyModel(replies ...string) *recordingReplies { return &recordingReplies{replies: replies} }

func (r *recordingReplies) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	c := *req
	c.Messages = append([]llm.Message(nil), req.Messages...)
	r.requests = append(r.requests, c)
	text := r.replies[0]
	r.replies = r.replies[1:]
	return &llm.Response{Message: llm.Assistant(text), StopReason: llm.StopEndTurn}, nil
}

func TestMediaScrub(t *testing.T) {
	mw := newMW(t, middleware.FilesystemOptions{MediaSupport: func(_ llm.ChatModel, kind llm.BlockType, mime string, inTool bool) bool {
		return !(kind == llm.BlockImage && inTool)
	}})
	png := "iVBORw0KGgo="
	fs := map[string]agent.FileData{"/pic.png": {Content: png, Encoding: "base64"}}
	s := drive(t, mw, fs, []llm.ToolCall{call("p", "read_file", map[string]any{"file_path": "/pic.png"})})
	img := s.tool(t, "p")
	assert.Equal(t, llm.BlockImage, img.Content[0].Type, "state keeps the image")
	seen := s.model.Requests()[1]
	var sent llm.Message
	for _, m := range seen.Messages {
		if m.ToolCallID == "p" {
			sent = m
		}
	}
	assert.Equal(t, "[read_file: /pic.png was not attached because this model does not support image content (image/png).]", sent.Text())
}

func TestRoutingPrompt(t *testing.T) {
	shell := newShellBackend(t)
	common, err := backend.NewFilesystem(t.TempDir(), backend.FilesystemOptions{})
	require.NoError(t, err)
	legacy, err := backend.NewFilesystem(t.TempDir(), backend.FilesystemOptions{HostPaths: true})
	require.NoError(t, err)
	comp, err := backend.NewComposite(shell, []backend.Route{
		{Prefix: "/common/", Backend: common},
		{Prefix: "/legacy", Backend: legacy},
		{Prefix: "/notes/", Backend: backend.NewState()},
	}, backend.CompositeOptions{})
	require.NoError(t, err)
	s := drive(t, newMW(t, middleware.FilesystemOptions{Backend: comp, SystemPrompt: "Be careful."}), nil)
	sys := s.model.Requests()[0].SystemText()
	want := "Be careful.\n\n## Shell paths vs. virtual paths\n\n"
	assert.True(t, strings.HasPrefix(sys, want), sys)
	assert.Contains(t, sys, "Host path mappings:\n- `/common/` -> `"+common.Root()+"/` (e.g. `/common/dir/x.py` -> `"+common.Root()+"/dir/x.py`)\n- `/legacy/` -> `/` (e.g. `/legacy/dir/x.py` -> `/dir/x.py`)")
	assert.True(t, strings.HasSuffix(sys, "Virtual mounts without a host path mapping (not accessible from the shell):\n- `/notes/`"), sys)

	// A mount inside the shell's working directory is given relative to it,
	// so the prompt does not depend on where the workspace lives.
	inner := filepath.Join(shell.Root(), "app")
	require.NoError(t, os.Mkdir(inner, 0o755))
	app, err := backend.NewFilesystem(inner, backend.FilesystemOptions{})
	require.NoError(t, err)
	whole, err := backend.NewFilesystem(shell.Root(), backend.FilesystemOptions{})
	require.NoError(t, err)
	nested, err := backend.NewComposite(shell, []backend.Route{{Prefix: "/app/", Backend: app}, {Prefix: "/ws/", Backend: whole}, {Prefix: "/common/", Backend: common}}, backend.CompositeOptions{})
	require.NoError(t, err)
	s = drive(t, newMW(t, middleware.FilesystemOptions{Backend: nested}), nil)
	sys = s.model.Requests()[0].SystemText()
	assert.Contains(t, sys, "Host path mappings (a host path starting with ./ is relative to the directory every command starts in):\n"+
		"- `/common/` -> `"+common.Root()+"/` (e.g. `/common/dir/x.py` -> `"+common.Root()+"/dir/x.py`)\n"+
		"- `/app/` -> `./app/` (e.g. `/app/dir/x.py` -> `./app/dir/x.py`)\n"+
		"- `/ws/` -> `./` (e.g. `/ws/dir/x.py` -> `./dir/x.py`)")
	assert.NotContains(t, sys, shell.Root())

	// Without execute (tool not built) there is no routing section.
	s = drive(t, newMW(t, middleware.FilesystemOptions{Backend: comp, Tools: []string{"read_file"}}), nil)
	assert.Empty(t, s.model.Requests()[0].SystemText())

	// A default that cannot execute: no execute tool, no section.
	plain, err := backend.NewComposite(backend.NewState(), []backend.Route{{Prefix: "/common/", Backend: common}}, backend.CompositeOptions{})
	require.NoError(t, err)
	s = drive(t, newMW(t, middleware.FilesystemOptions{Backend: plain}), nil)
	assert.Empty(t, s.model.Requests()[0].SystemText())
	assert.NotContains(t, s.model.Requests()[0].Tools, "execute")
}
