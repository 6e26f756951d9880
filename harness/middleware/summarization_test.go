package middleware_test

import (
	"errors"
	"fmt"
	"regexp"
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

func newSummarization(t testing.TB, opts middleware.SummarizationOptions) *middleware.SummarizationMiddleware {
	t.Helper()
	m, err := middleware.NewSummarization(opts)
	require.NoError(t, err)
	return m
}

func eventOf(t testing.TB, st *agent.State) middleware.SummarizationEvent {
	t.Helper()
	ev, ok := agent.Value[middleware.SummarizationEvent](st, middleware.SummarizationEventKey)
	require.True(t, ok, "no summarization event in state")
	return ev
}

// renderedMessage is how the history file and the summariser show a text message.
func renderedMessage(role, id, text string) string {
	return fmt.Sprintf("<message role=%q id=%q>\n%s\n</message>", role, id, text)
}

var sessionFile = regexp.MustCompile(`^/conversation_history/session_[0-9a-f]{32}\.md$`)

// Reference case 65: trigger at 5 messages, keep 2; chained rounds cut at 6, 12, 18.
func TestSummarizationChainedCutoffs(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Reply("summary one"), fakes.Reply("answer one"),
		fakes.Reply("summary two"), fakes.Reply("answer two"),
		fakes.Reply("summary three"), fakes.Reply("answer three"),
	)
	sm := newSummarization(t, middleware.SummarizationOptions{
		Trigger: []middleware.Threshold{{Messages: 5}},
		Keep:    middleware.Threshold{Messages: 2},
	})
	a := newAgent(t, model, "", nil, sm)
	ctx := t.Context()

	// Round 1: eight messages S0..S7.
	_, err := a.Invoke(ctx, agent.Input{Messages: conversation("S", 8)}, agent.WithThread("t"), clockOpt())
	require.NoError(t, err)
	st := fullState(t, a, "t")
	ev := eventOf(t, st)
	assert.Equal(t, 6, ev.CutoffIndex)
	assert.Regexp(t, sessionFile, ev.FilePath)
	assert.Len(t, st.Messages, 9, "history in state is never rewritten")

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	summarizer := reqs[0]
	require.Len(t, summarizer.Messages, 1)
	assert.Contains(t, summarizer.Messages[0].Text(), renderedMessage("assistant", "msg-1", "S0"))
	assert.Contains(t, summarizer.Messages[0].Text(), renderedMessage("user", "msg-6", "S5"))
	assert.NotContains(t, summarizer.Messages[0].Text(), "S6")

	seen := reqs[1].Messages
	require.Equal(t, []string{"user:" + seen[0].Text(), "assistant:S6", "user:S7"}, roleNames(seen))
	assert.Equal(t, middleware.SummarySource, seen[0].Metadata[llm.MetaSource])
	assert.Contains(t, seen[0].Text(), "<summary>\nsummary one\n</summary>")
	assert.Contains(t, seen[0].Text(), ev.FilePath)

	var want strings.Builder
	want.WriteString("## Summarized at 2026-01-02T03:04:05.000000Z\n\n")
	for i := range 6 {
		if i > 0 {
			want.WriteByte('\n')
		}
		role := "assistant"
		if i%2 == 1 {
			role = "user"
		}
		want.WriteString(renderedMessage(role, fmt.Sprintf("msg-%d", i+1), fmt.Sprintf("S%d", i)))
	}
	want.WriteString("\n\n")
	assert.Equal(t, want.String(), st.Files[ev.FilePath].Content, "the history file holds exactly S0..S5")

	// Round 2: 9 + 5 = 14 messages → cutoff 12.
	_, err = a.Invoke(ctx, agent.Input{Messages: conversation("T", 5)}, agent.WithThread("t"), clockOpt())
	require.NoError(t, err)
	st = fullState(t, a, "t")
	ev2 := eventOf(t, st)
	assert.Equal(t, 12, ev2.CutoffIndex)
	assert.Equal(t, ev.FilePath, ev2.FilePath, "the session id persists")
	reqs = model.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "summary one", strings.TrimSpace(between(reqs[2].Messages[0].Text(), "<summary>", "</summary>")),
		"the previous summary is summarized again with the newer messages")
	assert.Equal(t, []string{"assistant:T3", "user:T4"}, roleNames(reqs[3].Messages)[1:])
	assert.Equal(t, st.Messages[12:14], reqs[3].Messages[1:3])
	history := st.Files[ev.FilePath].Content
	assert.Equal(t, 2, strings.Count(history, "## Summarized at "))
	second := history[strings.LastIndex(history, "## Summarized at "):]
	assert.Equal(t, []string{"msg-7", "msg-8", "msg-9", "msg-10", "msg-11", "msg-12"}, messageIDs(second))
	assert.NotContains(t, second, "summary one", "previous summaries are not offloaded")

	// Round 3: 15 + 5 = 20 messages → cutoff 18.
	_, err = a.Invoke(ctx, agent.Input{Messages: conversation("U", 5)}, agent.WithThread("t"), clockOpt())
	require.NoError(t, err)
	st = fullState(t, a, "t")
	assert.Equal(t, 18, eventOf(t, st).CutoffIndex)
	assert.Len(t, st.Messages, 21)
	assert.Equal(t, 0, model.Remaining())
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	mid, _, _ := strings.Cut(rest, to)
	return mid
}

var messageID = regexp.MustCompile(`<message role="[a-z]+" id="([^"]+)"`)

func messageIDs(s string) []string {
	var ids []string
	for _, m := range messageID.FindAllStringSubmatch(s, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// A long conversation driven by the model itself: tool calls and results
// pile up until the token trigger fires.
func TestSummarizationLongScriptedConversation(t *testing.T) {
	const rounds = 12
	var steps []fakes.Step
	for i := range rounds {
		steps = append(steps, fakes.Calls(fmt.Sprintf("Looking up item %d.", i), fakes.Call("lookup", map[string]string{"q": fmt.Sprintf("item %d", i)})))
	}
	model := fakes.NewScripted(steps...)
	model.Append(fakes.Reply("summary of the lookups"), fakes.Reply("All items looked up."))
	sm := newSummarization(t, middleware.SummarizationOptions{
		// Both must hold (AND): at least 25 messages and 1500 tokens.
		Trigger: []middleware.Threshold{{Messages: 25, Tokens: 1500}},
		Keep:    middleware.Threshold{Messages: 5},
	})
	lookup := textTool("lookup", strings.Repeat("Result line with some detail about the item.\n", 20))
	a := newAgent(t, model, "You look things up.", []tool.Tool{lookup}, sm)
	_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("Look up items 0 to 11.")}}, agent.WithThread("long"), clockOpt())
	require.NoError(t, err)

	st := fullState(t, a, "long")
	ev := eventOf(t, st)
	reqs := model.Requests()
	require.Len(t, reqs, rounds+2)
	// The summariser ran once, right before the last agent call.
	summarizerAt := -1
	for i, r := range reqs {
		if len(r.Tools) == 0 {
			require.Equal(t, -1, summarizerAt, "summarized twice")
			summarizerAt = i
		}
	}
	require.Equal(t, rounds, summarizerAt)
	// Keep 5 lands on a tool result and moves back to the assistant message that called it.
	assert.Equal(t, llm.RoleAssistant, st.Messages[ev.CutoffIndex].Role)
	next := reqs[summarizerAt+1]
	assert.Equal(t, st.Messages[ev.CutoffIndex:len(st.Messages)-1], next.Messages[1:], "the model sees the summary plus the kept tail")
	assert.Equal(t, middleware.SummarySource, next.Messages[0].Metadata[llm.MetaSource])

	var wantIDs []string
	for _, m := range st.Messages[:ev.CutoffIndex] {
		wantIDs = append(wantIDs, m.ID)
	}
	history := st.Files[ev.FilePath].Content
	assert.Equal(t, wantIDs, messageIDs(history), "the history file holds exactly the summarized messages")
	assert.Contains(t, history, `<tool_call id="call_1_1" name="lookup">{"q":"item 0"}</tool_call>`)
	assert.Contains(t, history, `<message role="tool" id="msg-3" name="lookup" tool_call_id="call_1_1">`)
	// The agent's answer was produced from the summarized view.
	assert.Equal(t, "All items looked up.", st.LastText())
}

// Reference case 66: a failed history write still summarizes and says so.
func TestSummarizationBackendWriteFailure(t *testing.T) {
	logs := &logRecorder{}
	b := &faultyBackend{Backend: backend.NewState(), writeErr: errors.New("disk full")}
	model := fakes.NewScripted(fakes.Reply("the summary"), fakes.Reply("ok"))
	sm := newSummarization(t, middleware.SummarizationOptions{
		Backend: b,
		Trigger: []middleware.Threshold{{Messages: 5}},
		Keep:    middleware.Threshold{Messages: 2},
		Logger:  slogLogger(logs),
	})
	a := newAgent(t, model, "", nil, sm)
	_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 8)}, agent.WithThread("t"))
	require.NoError(t, err)
	st := fullState(t, a, "t")
	ev := eventOf(t, st)
	assert.Equal(t, 6, ev.CutoffIndex)
	assert.Empty(t, ev.FilePath)
	assert.Empty(t, st.Files)
	summary := model.Requests()[1].Messages[0].Text()
	assert.Contains(t, summary, "could not be saved")
	assert.Contains(t, summary, "<summary>\nthe summary\n</summary>")
	assert.NotContains(t, summary, "/conversation_history/")
	assert.Contains(t, logs.joined(), "WARN SummarizationMiddleware: offloading conversation history to backend failed")
	assert.Contains(t, logs.joined(), "disk full")
}

// Reference case 67: the system prompt counts toward the trigger but is never
// a message; the counter runs once per model call unless truncation changed
// the messages.
func TestSummarizationCountsSystemPromptOnce(t *testing.T) {
	tests := []struct {
		name        string
		system      string
		wantSummary bool
	}{
		{name: "small system prompt", system: "Be brief."},
		{name: "large system prompt triggers", system: strings.Repeat("Follow the house style. ", 200), wantSummary: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var sawSystem []int
			counter := func(system []llm.Block, msgs []llm.Message, tools []llm.ToolSpec) int {
				calls++
				sawSystem = append(sawSystem, len(system))
				return middleware.ApproxTokens(system, msgs, tools)
			}
			steps := []fakes.Step{fakes.Reply("answer")}
			if tt.wantSummary {
				steps = append([]fakes.Step{fakes.Reply("summary")}, steps...)
			}
			model := fakes.NewScripted(steps...)
			sm := newSummarization(t, middleware.SummarizationOptions{
				Trigger:      []middleware.Threshold{{Tokens: 1000}},
				Keep:         middleware.Threshold{Messages: 2},
				CountTokens:  counter,
				TruncateArgs: middleware.TruncateArgsOptions{Disabled: true},
			})
			a := newAgent(t, model, tt.system, nil, sm)
			_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 6)})
			require.NoError(t, err)
			reqs := model.Requests()
			last := reqs[len(reqs)-1]
			for _, m := range last.Messages {
				assert.NotEqual(t, llm.RoleSystem, m.Role)
			}
			assert.Equal(t, tt.system, last.SystemText())
			if tt.wantSummary {
				assert.Len(t, last.Messages, 3, "summary plus the two kept messages")
			} else {
				assert.Len(t, last.Messages, 6)
			}
			assert.Equal(t, 1, calls, "one count per model call")
			assert.Equal(t, []int{1}, sawSystem, "the system prompt is counted")
		})
	}

	// Truncation that changes the messages recounts once.
	calls := 0
	counter := func(system []llm.Block, msgs []llm.Message, tools []llm.ToolSpec) int {
		calls++
		return middleware.ApproxTokens(system, msgs, tools)
	}
	model := fakes.NewScripted(fakes.Reply("ok"))
	sm := newSummarization(t, middleware.SummarizationOptions{
		Trigger:      []middleware.Threshold{{Tokens: 1_000_000}},
		CountTokens:  counter,
		TruncateArgs: middleware.TruncateArgsOptions{Trigger: []middleware.Threshold{{Messages: 3}}, Keep: middleware.Threshold{Messages: 1}, MaxLength: 30},
	})
	a := newAgent(t, model, "", nil, sm)
	msgs := []llm.Message{
		llm.User("write it"),
		llm.Assistant("", fakes.CallID("w1", "write_file", map[string]string{"file_path": "/a.txt", "content": strings.Repeat("x", 100)})),
		llm.ToolResult("w1", "write_file", "Updated file /a.txt", false),
		llm.User("thanks"),
	}
	_, err := a.Invoke(t.Context(), agent.Input{Messages: msgs})
	require.NoError(t, err)
	assert.Equal(t, 2, calls, "a truncation that changed the messages is recounted once")
}
