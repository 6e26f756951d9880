package middleware_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/tool"
)

func numberedLines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %d with enough words to make it a realistic line of output\n", prefix, i)
	}
	return b.String()
}

// Reference case 69: a context overflow summarizes and retries once; the
// trailing large results are clipped (read_file) or offloaded (others).
func TestSummarizationOverflowRetry(t *testing.T) {
	readText := numberedLines("file", 300)
	fetchText := numberedLines("page", 400)
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("read_file", map[string]string{"file_path": "/data/big.txt"}), fakes.Call("fetch", map[string]string{"q": "docs"})),
		fakes.Reply("summary after overflow"),
		fakes.Reply("done"),
	).FailOn(2, overflowError{})
	sm := newSummarization(t, middleware.SummarizationOptions{Keep: middleware.Threshold{Messages: 2}})
	a := newAgent(t, model, "", []tool.Tool{textTool("read_file", readText), textTool("fetch", fetchText)}, sm)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("Analyse the data file and the docs.")}}, agent.WithThread("o"), clockOpt())
	require.NoError(t, err)
	assert.Equal(t, "done", res.Text())

	reqs := model.Requests()
	require.Len(t, reqs, 4, "call, overflow, summary, retry")
	require.Len(t, reqs[1].Messages, 4)
	assert.Equal(t, fetchText, reqs[1].Messages[3].Text(), "the failed call saw everything")
	assert.Contains(t, reqs[2].Messages[0].Text(), "Analyse the data file", "the summariser saw the older messages")

	retry := reqs[3].Messages
	require.Len(t, retry, 4, "summary + assistant call + two results")
	assert.Equal(t, middleware.SummarySource, retry[0].Metadata[llm.MetaSource])
	assert.Equal(t, llm.RoleAssistant, retry[1].Role)
	read, fetch := retry[2].Text(), retry[3].Text()
	assert.True(t, strings.HasPrefix(read, readText[:4000]), "read_file keeps its first 4000 characters")
	assert.NotContains(t, read, readText[4000:4100])
	assert.Contains(t, read, "/data/big.txt", "and points back to the file")
	assert.Less(t, len(read), 4400)
	assert.Contains(t, fetch, "/large_tool_results/call_1_2")
	assert.Contains(t, fetch, "1  page line 1 with")
	assert.Contains(t, fetch, "... [390 lines truncated] ...")
	assert.Contains(t, fetch, "400  page line 400 with")

	st := fullState(t, a, "o")
	assert.Equal(t, fetchText, st.Files["/large_tool_results/call_1_2"].Content, "the full result is saved")
	ev := eventOf(t, st)
	assert.Equal(t, 1, ev.CutoffIndex)
	assert.Contains(t, st.Files[ev.FilePath].Content, "Analyse the data file")
	// The clipped results replace the state's copies (same ids).
	require.Len(t, st.Messages, 5)
	assert.Equal(t, retry[2], st.Messages[2])
	assert.Equal(t, retry[3], st.Messages[3])
}

func TestSummarizationOverflowFailures(t *testing.T) {
	t.Run("nothing older to summarize", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("never")).FailOn(1, overflowError{})
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nothing older to summarize")
		assert.True(t, errors.As(err, new(overflowError)))
		assert.Equal(t, 1, model.CallCount())
	})
	t.Run("retried only once", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("summary"), fakes.Reply("never")).FailOn(1, overflowError{}).FailOn(3, overflowError{})
		sm := newSummarization(t, middleware.SummarizationOptions{Keep: middleware.Threshold{Messages: 1}})
		a := newAgent(t, model, "", nil, sm)
		_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 4)})
		require.Error(t, err)
		assert.True(t, errors.As(err, new(overflowError)))
		assert.Equal(t, 3, model.CallCount(), "call, summary, one retry")
	})
	t.Run("other errors are not retried", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("never")).FailOn(1, errors.New("rate limited"))
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{Keep: middleware.Threshold{Messages: 1}}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 4)})
		require.ErrorContains(t, err, "rate limited")
		assert.Equal(t, 1, model.CallCount())
	})
	t.Run("summary failure fails the call", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("   ")).FailOn(1, overflowError{})
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{Keep: middleware.Threshold{Messages: 1}}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 4)})
		require.ErrorContains(t, err, "generating the summary: the summary model returned an empty summary")
	})
}

// Reference case 68: old write_file/edit_file arguments are truncated in the request only.
func TestSummarizationTruncatesOldFileArguments(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, 3000) }
	history := func() []llm.Message {
		return []llm.Message{
			llm.User("write the files"),
			llm.Assistant("", fakes.CallID("w1", "write_file", `{"file_path":"/a.txt","content":"`+long("x")+`"}`),
				fakes.CallID("o1", "other_tool", map[string]string{"payload": long("y")})),
			llm.ToolResult("w1", "write_file", "Updated file /a.txt", false),
			llm.ToolResult("o1", "other_tool", "ok", false),
			llm.Assistant("", fakes.CallID("e1", "edit_file", `{"file_path":"/a.txt","old_string":"`+long("a")+`","new_string":"short","replace_all":true}`)),
			llm.ToolResult("e1", "edit_file", "Successfully replaced 1 instance(s)", false),
			llm.Assistant("", fakes.CallID("w2", "write_file", map[string]string{"file_path": "/b.txt", "content": long("z")})),
			llm.ToolResult("w2", "write_file", "Updated file /b.txt", false),
			llm.User("done?"),
		}
	}
	tests := []struct {
		name string
		text string
		want string
	}{
		{"default truncation text", "", "...(argument truncated)"},
		{"custom truncation text", " [cut]", " [cut]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := fakes.NewScripted(fakes.Reply("yes"))
			sm := newSummarization(t, middleware.SummarizationOptions{
				Trigger: []middleware.Threshold{{Tokens: 1_000_000}},
				TruncateArgs: middleware.TruncateArgsOptions{
					Trigger: []middleware.Threshold{{Messages: 5}},
					Keep:    middleware.Threshold{Messages: 3},
					Text:    tt.text,
				},
			})
			a := newAgent(t, model, "", nil, sm)
			res, err := a.Invoke(t.Context(), agent.Input{Messages: history()})
			require.NoError(t, err)
			seen := model.Requests()[0].Messages
			orig := history()
			assert.JSONEq(t, `{"file_path":"/a.txt","content":"xxxxxxxxxxxxxxxxxxxx`+tt.want+`"}`, string(seen[1].ToolCalls[0].Args))
			assert.Equal(t, `{"file_path":"/a.txt","content":"xxxxxxxxxxxxxxxxxxxx`+tt.want+`"}`, string(seen[1].ToolCalls[0].Args), "key order is kept")
			assert.Equal(t, orig[1].ToolCalls[1].Args, seen[1].ToolCalls[1].Args, "other tools are untouched")
			assert.JSONEq(t, `{"file_path":"/a.txt","old_string":"aaaaaaaaaaaaaaaaaaaa`+tt.want+`","new_string":"short","replace_all":true}`, string(seen[4].ToolCalls[0].Args))
			assert.Equal(t, orig[6].ToolCalls[0].Args, seen[6].ToolCalls[0].Args, "recent messages are untouched")
			assert.Equal(t, orig[1].ToolCalls[0].Args, res.State.Messages[1].ToolCalls[0].Args, "state keeps the full arguments")
		})
	}
}

func TestSummarizationContextWindowDefaults(t *testing.T) {
	window := func(id llm.Identity) (int, bool) {
		if id.Provider == "fake" && id.Model == "scripted" {
			return 4000, true
		}
		return 0, false
	}
	big := conversation(strings.Repeat("word ", 300)+"#", 12) // ≈ 12 × 380 tokens
	t.Run("85% of a known window triggers and 10% is kept", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("summary"), fakes.Reply("ok"))
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{ContextWindow: window}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: big})
		require.NoError(t, err)
		reqs := model.Requests()
		require.Len(t, reqs, 2)
		// 10% of 4000 tokens holds one of these messages.
		assert.Len(t, reqs[1].Messages, 2)
		assert.Equal(t, big[11].Text(), reqs[1].Messages[1].Text())
	})
	t.Run("unknown window uses the token default", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("ok")).WithIdentity("other", "model")
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{ContextWindow: window}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: big})
		require.NoError(t, err)
		assert.Len(t, model.Requests()[0].Messages, 12)
	})
	t.Run("fraction trigger without a window never fires", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("ok"))
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Fraction: 0.01}}}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: big})
		require.NoError(t, err)
		assert.Len(t, model.Requests()[0].Messages, 12)
	})
	t.Run("OR of clauses", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply("summary"), fakes.Reply("ok"))
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{
			Trigger: []middleware.Threshold{{Fraction: 0.01}, {Messages: 12}},
			Keep:    middleware.Threshold{Messages: 3},
		}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: big})
		require.NoError(t, err)
		assert.Len(t, model.Requests()[1].Messages, 4)
	})
}

// The provider's reported usage calibrates the estimate.
func TestSummarizationCalibratesWithReportedUsage(t *testing.T) {
	withUsage := func(total int) []llm.Message {
		msgs := conversation("S", 6)
		msgs[4].Usage = &llm.Usage{InputTokens: total - 100, OutputTokens: 100}
		return msgs
	}
	tests := []struct {
		name        string
		msgs        []llm.Message
		wantSummary bool
	}{
		{"no usage: the short texts stay under the trigger", conversation("S", 6), false},
		{"reported usage over the trigger", withUsage(6000), true},
		{"reported usage under the trigger", withUsage(4000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := []fakes.Step{fakes.Reply("ok")}
			if tt.wantSummary {
				steps = append([]fakes.Step{fakes.Reply("summary")}, steps...)
			}
			model := fakes.NewScripted(steps...)
			a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{
				Trigger: []middleware.Threshold{{Tokens: 5000}},
				Keep:    middleware.Threshold{Messages: 2},
			}))
			_, err := a.Invoke(t.Context(), agent.Input{Messages: tt.msgs})
			require.NoError(t, err)
			assert.Equal(t, 0, model.Remaining())
		})
	}
}

func TestSummarizationOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts middleware.SummarizationOptions
		want string
	}{
		{"fraction above one", middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Fraction: 1.5}}}, "trigger[0]: fraction must be in (0, 1]"},
		{"negative tokens", middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Messages: 3}, {Tokens: -1}}}, "trigger[1]: tokens must be positive"},
		{"empty clause", middleware.SummarizationOptions{Trigger: []middleware.Threshold{{}}}, "trigger[0]: a clause must set"},
		{"keep with two fields", middleware.SummarizationOptions{Keep: middleware.Threshold{Messages: 2, Tokens: 10}}, "keep: a keep policy sets exactly one"},
		{"truncate keep negative", middleware.SummarizationOptions{TruncateArgs: middleware.TruncateArgsOptions{Keep: middleware.Threshold{Messages: -2}}}, "truncate_args.keep: messages must be positive"},
		{"prompt without placeholder", middleware.SummarizationOptions{SummaryPrompt: "Summarize."}, "{messages}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := middleware.NewSummarization(tt.opts)
			require.ErrorContains(t, err, tt.want)
		})
	}
	m, err := middleware.NewSummarization(middleware.SummarizationOptions{})
	require.NoError(t, err)
	assert.Equal(t, "SummarizationMiddleware", m.Name())
	keys := m.StateKeys()
	require.Len(t, keys, 2)
	assert.Equal(t, "_summarization_event", keys[0].Name)
	assert.Equal(t, "_summarization_session_id", keys[1].Name)
	assert.True(t, keys[0].Private && keys[1].Private)
}

func TestSummarizationOffloadsInlineMedia(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nnot really an image")
	img := llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.TextBlock("Here is the chart."),
		{Type: llm.BlockImage, MediaType: "image/png", Data: b64(png)},
	}}
	msgs := append([]llm.Message{img}, conversation("S", 5)...)
	model := fakes.NewScripted(fakes.Reply("summary"), fakes.Reply("ok"))
	a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{
		Trigger: []middleware.Threshold{{Messages: 6}},
		Keep:    middleware.Threshold{Messages: 2},
	}))
	_, err := a.Invoke(t.Context(), agent.Input{Messages: msgs}, agent.WithThread("m"))
	require.NoError(t, err)
	st := fullState(t, a, "m")
	var media string
	for p := range st.Files {
		if strings.HasPrefix(p, "/conversation_history/media/") {
			media = p
		}
	}
	require.Regexp(t, `^/conversation_history/media/[0-9a-f]{16}\.png$`, media)
	assert.Equal(t, "base64", st.Files[media].Encoding)
	assert.Equal(t, b64(png), st.Files[media].Content)
	history := st.Files[eventOf(t, st).FilePath].Content
	assert.Contains(t, history, `<image url="`+media+`" />`)
	assert.NotContains(t, history, b64(png))
	assert.NotContains(t, model.Requests()[0].Messages[0].Text(), b64(png), "the summariser does not receive the bytes")
	assert.Equal(t, img.Content, st.Messages[0].Content, "state keeps the inline image")
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestSummarizationEventEdgeCases(t *testing.T) {
	run := func(t *testing.T, ev json.RawMessage, logs *logRecorder) llm.Request {
		model := fakes.NewScripted(fakes.Reply("ok"))
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{Logger: slogLogger(logs)}))
		_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation("S", 4), Values: map[string]json.RawMessage{middleware.SummarizationEventKey: ev}})
		require.NoError(t, err)
		return model.Requests()[0]
	}
	t.Run("malformed event: the model sees the full history", func(t *testing.T) {
		logs := &logRecorder{}
		req := run(t, json.RawMessage(`{"cutoff_index":"three"}`), logs)
		assert.Len(t, req.Messages, 4)
		assert.Contains(t, logs.joined(), "ignoring a malformed summarization event")
	})
	t.Run("cutoff beyond the history: only the summary", func(t *testing.T) {
		ev, err := json.Marshal(middleware.SummarizationEvent{CutoffIndex: 10, SummaryMessage: llm.User("old summary")})
		require.NoError(t, err)
		req := run(t, ev, &logRecorder{})
		require.Len(t, req.Messages, 1)
		assert.Equal(t, "old summary", req.Messages[0].Text())
	})
}
