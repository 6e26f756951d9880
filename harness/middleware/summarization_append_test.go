package middleware_test

import (
	"context"
	"fmt"
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

// countingBackend counts the history bytes that go to and from a backend
// without Append, so that AppendFile reads and rewrites the file.
type countingBackend struct {
	backend.Backend
	downloaded, written, appended int
}

func (c *countingBackend) Write(ctx context.Context, p, content string) error {
	c.written += len(content)
	return c.Backend.Write(ctx, p, content)
}

func (c *countingBackend) Download(ctx context.Context, paths []string) []backend.DownloadResult {
	res := c.Backend.Download(ctx, paths)
	for _, r := range res {
		c.downloaded += len(r.Content)
	}
	return res
}

// countingAppender is countingBackend with the State backend's Append.
type countingAppender struct{ countingBackend }

func (c *countingAppender) Append(ctx context.Context, p, content string) error {
	c.appended += len(content)
	return backend.AppendFile(ctx, c.Backend, p, content)
}

// Each summarization appends its section to the history file: through a
// backend's Append when it has one, so that the bytes moved per
// summarization are the new section's and not the whole file's; otherwise
// by reading and rewriting the file, which leaves the same file.
func TestSummarizationHistoryIsAppended(t *testing.T) {
	const rounds = 6
	run := func(b backend.Backend) (history string, summaries int) {
		model := fakes.NewScripted()
		a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{
			Backend: b,
			Trigger: []middleware.Threshold{{Messages: 5}},
			Keep:    middleware.Threshold{Messages: 2},
		}))
		for i := range rounds {
			model.Append(fakes.Reply(fmt.Sprintf("summary %d", i)), fakes.Reply("ok"))
			_, err := a.Invoke(t.Context(), agent.Input{Messages: conversation(fmt.Sprintf("R%d-", i), 8)}, agent.WithThread("t"), clockOpt())
			require.NoError(t, err)
		}
		st := fullState(t, a, "t")
		files := historyFiles(st)
		require.Len(t, files, 1, "one session, one history file")
		return st.Files[files[0]].Content, strings.Count(st.Files[files[0]].Content, "## Summarized at ")
	}

	appender := &countingAppender{countingBackend{Backend: backend.NewState()}}
	appended, summaries := run(appender)
	require.Equal(t, rounds, summaries)
	assert.Zero(t, appender.downloaded, "the history file is not read back")
	assert.Zero(t, appender.written, "the history file is not rewritten")
	assert.Equal(t, len(appended), appender.appended, "each summarization sends only its own section")

	rewriter := &countingBackend{Backend: backend.NewState()}
	rewritten, _ := run(rewriter)
	assert.Equal(t, appended, rewritten, "both paths leave the same history file")
	assert.Greater(t, rewriter.downloaded, 0, "without Append the file is read back")
	assert.Equal(t, rewriter.written, len(rewritten)+rewriter.downloaded, "and written back whole")
}

// A summary among the messages being summarized (one the conversation
// arrived with) is left out of the history file, and the rest are saved as
// when there is none.
func TestSummarizationHistoryLeavesOutSummaries(t *testing.T) {
	msgs := conversation("S", 8)
	msgs[2].Metadata = map[string]string{llm.MetaSource: middleware.SummarySource}
	model := fakes.NewScripted(fakes.Reply("summary"), fakes.Reply("ok"))
	a := newAgent(t, model, "", nil, newSummarization(t, middleware.SummarizationOptions{
		Trigger: []middleware.Threshold{{Messages: 5}},
		Keep:    middleware.Threshold{Messages: 2},
	}))
	_, err := a.Invoke(t.Context(), agent.Input{Messages: msgs}, agent.WithThread("t"), clockOpt())
	require.NoError(t, err)
	st := fullState(t, a, "t")
	history := st.Files[eventOf(t, st).FilePath].Content
	assert.Equal(t, []string{"msg-1", "msg-2", "msg-4", "msg-5", "msg-6"}, messageIDs(history))
	assert.True(t, strings.HasSuffix(history, "</message>\n\n"), "the section ends as the others do")
}
