package middleware_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

func historyFiles(st *agent.State) []string {
	var out []string
	for p := range st.Files {
		if strings.HasPrefix(p, "/conversation_history/") && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Reference case 70: session ids are generated, persisted and per invocation.
func TestSummarizationSessionIDs(t *testing.T) {
	opts := middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Messages: 5}}, Keep: middleware.Threshold{Messages: 2}}
	run := func(a *agent.Agent, model *fakes.Scripted, thread string) string {
		model.Append(fakes.Reply("summary"), fakes.Reply("ok"))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 8)}, agent.WithThread(thread))
		require.NoError(t, err)
		st := fullState(t, a, thread)
		sid, ok := agent.Value[string](st, middleware.SummarizationSessionKey)
		require.True(t, ok)
		assert.Regexp(t, `^session_[0-9a-f]{32}$`, sid)
		assert.Equal(t, "/conversation_history/"+sid+".md", eventOf(t, st).FilePath)
		assert.NotContains(t, sid, thread)
		return sid
	}

	model := fakes.NewScripted()
	a := newAgent(t, model, "", nil, newSummarization(t, opts))
	first := run(a, model, "thread-alpha")
	second := run(a, model, "thread-beta")
	assert.NotEqual(t, first, second, "identical conversations on two threads get separate files")

	// A replay (fresh agent, same inputs) derives the same ids in the same order.
	replayModel := fakes.NewScripted()
	replay := newAgent(t, replayModel, "", nil, newSummarization(t, opts))
	assert.Equal(t, first, run(replay, replayModel, "other-thread-1"))
	assert.Equal(t, second, run(replay, replayModel, "other-thread-2"))

	// The session id is private: it is not in the caller's result.
	model.Append(fakes.Reply("summary"), fakes.Reply("ok"))
	res, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 8)}, agent.WithThread("gamma"))
	require.NoError(t, err)
	assert.NotContains(t, res.State.Values, middleware.SummarizationSessionKey)
	assert.NotContains(t, res.State.Values, middleware.SummarizationEventKey)
}

// Reference case 70: a subagent summarizes into its own history file.
func TestSummarizationSubagentHasItsOwnSession(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Reply("parent summary"),
		fakes.Calls("", fakes.Call("task", map[string]string{"description": "Look up the item.", "subagent_type": "worker"})),
		fakes.Calls("", fakes.Call("lookup", map[string]string{"q": "item"})),
		fakes.Reply("child summary"),
		fakes.Reply("child done"),
		fakes.Reply("all done"),
	)
	child, err := agent.New(agent.Config{
		Name:       "worker",
		Model:      model,
		Tools:      []tool.Tool{textTool("lookup", "the item")},
		Middleware: []agent.Middleware{newSummarization(t, middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Messages: 3}}, Keep: middleware.Threshold{Messages: 1}})},
	})
	require.NoError(t, err)
	sub, err := middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{
		SubAgents:   []middleware.SubAgent{{Name: "worker", Description: "Does lookups.", Runner: child}},
		PrivateKeys: []string{middleware.SummarizationEventKey, middleware.SummarizationSessionKey},
	})
	require.NoError(t, err)
	parentSum := newSummarization(t, middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Messages: 7}}, Keep: middleware.Threshold{Messages: 2}})
	a := newAgent(t, model, "", nil, sub, parentSum)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 8)}, agent.WithThread("p"), clockOpt())
	require.NoError(t, err)
	assert.Equal(t, "all done", res.Text())
	assert.Equal(t, 0, model.Remaining())

	st := fullState(t, a, "p")
	files := historyFiles(st)
	require.Len(t, files, 2, "parent and subagent write separate history files")
	parentFile := eventOf(t, st).FilePath
	childFile := files[0]
	if childFile == parentFile {
		childFile = files[1]
	}
	assert.Contains(t, st.Files[parentFile].Content, ">\nS0\n</message>")
	assert.NotContains(t, st.Files[parentFile].Content, "Look up the item.")
	assert.Contains(t, st.Files[childFile].Content, "Look up the item.")
	assert.NotContains(t, st.Files[childFile].Content, ">\nS0\n</message>")
}

// Reference case 71: compact_conversation on demand.
func TestCompactConversation(t *testing.T) {
	setup := func(t *testing.T, model *fakes.Scripted) *agent.Agent {
		sm := newSummarization(t, middleware.SummarizationOptions{
			Trigger: []middleware.Threshold{{Messages: 10}},
			Keep:    middleware.Threshold{Messages: 2},
		})
		compact, err := middleware.NewCompactConversation(sm, middleware.CompactConversationOptions{SystemPrompt: "Compact when the conversation gets long."})
		require.NoError(t, err)
		return newAgent(t, model, "", nil, sm, compact)
	}
	compactCall := fakes.CallID("c1", middleware.CompactConversationTool, nil)

	t.Run("below half the trigger there is nothing to compact", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Calls("", compactCall), fakes.Reply("ok"))
		a := setup(t, model)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 3)}, agent.WithThread("c"))
		require.NoError(t, err)
		assert.Equal(t, middleware.CompactNothingText, res.State.Messages[4].Text())
		_, has := fullState(t, a, "c").Values[middleware.SummarizationEventKey]
		assert.False(t, has)
		req := model.Requests()[0]
		assert.Equal(t, "Compact when the conversation gets long.", req.SystemText())
		assert.True(t, slices.ContainsFunc(req.Tools, func(s llm.ToolSpec) bool { return s.Name == "compact_conversation" }))
	})

	t.Run("eligible: compacts and the next call sees the summary", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Calls("", compactCall), fakes.Reply("compact summary"), fakes.Reply("ok"))
		a := setup(t, model)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 6)}, agent.WithThread("c"), clockOpt())
		require.NoError(t, err)
		// Six input messages + the assistant's call = 7 ≥ 5 (half of 10); keep 2 → 5 summarized.
		assert.Equal(t, "Conversation compacted. Summarized 5 messages into a concise summary.", res.State.Messages[7].Text())
		assert.False(t, res.State.Messages[7].IsError)
		st := fullState(t, a, "c")
		ev := eventOf(t, st)
		assert.Equal(t, 5, ev.CutoffIndex)
		assert.Equal(t, []string{"msg-1", "msg-2", "msg-3", "msg-4", "msg-5"}, messageIDs(st.Files[ev.FilePath].Content))
		reqs := model.Requests()
		require.Len(t, reqs, 3)
		last := reqs[2].Messages
		require.Len(t, last, 4, "summary, S5, the compact call and its result")
		assert.Contains(t, last[0].Text(), "compact summary")
		assert.Equal(t, "S5", last[1].Text())
		assert.Equal(t, "c1", last[3].ToolCallID)
	})

	t.Run("summariser failure is reported as text", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Calls("", compactCall), fakes.Reply("ok")).FailOn(2, errors.New("model unavailable"))
		a := setup(t, model)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 6)}, agent.WithThread("c"))
		require.NoError(t, err)
		out := res.State.Messages[7]
		assert.True(t, out.IsError)
		assert.Equal(t, "Compaction failed: an error occurred while generating the summary (model unavailable). "+
			"The conversation has not been compacted — no messages were summarized or removed.", out.Text())
		_, has := fullState(t, a, "c").Values[middleware.SummarizationEventKey]
		assert.False(t, has)
	})

	_, err := middleware.NewCompactConversation(nil, middleware.CompactConversationOptions{})
	require.Error(t, err)
}

// History goes under the backend's artifacts root, here a directory on disk
// routed through a Composite.
func TestSummarizationHistoryUnderArtifactsRoot(t *testing.T) {
	dir := t.TempDir()
	disk, err := backend.NewFilesystem(dir, backend.FilesystemOptions{})
	require.NoError(t, err)
	comp, err := backend.NewComposite(backend.NewState(), []backend.Route{{Prefix: "/disk/", Backend: disk}}, backend.CompositeOptions{ArtifactsRoot: "/disk/artifacts"})
	require.NoError(t, err)
	model := fakes.NewScripted(fakes.Reply("summary"), fakes.Reply("ok"))
	a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{
		Backend: comp,
		Trigger: []middleware.Threshold{{Messages: 5}},
		Keep:    middleware.Threshold{Messages: 2},
	}))
	_, err = a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 8)}, agent.WithThread("d"), clockOpt())
	require.NoError(t, err)
	st := fullState(t, a, "d")
	ev := eventOf(t, st)
	require.Regexp(t, `^/disk/artifacts/conversation_history/session_[0-9a-f]{32}\.md$`, ev.FilePath)
	onDisk, err := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(ev.FilePath, "/disk/")))
	require.NoError(t, err)
	assert.Equal(t, []string{"msg-1", "msg-2", "msg-3", "msg-4", "msg-5", "msg-6"}, messageIDs(string(onDisk)))
	assert.Empty(t, st.Files, "nothing was written to agent state")
}
