package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// noteModel writes note k at step k (a long note every third step), then
// answers; it writes the summaries it is asked for and keeps a copy of
// every request.
type noteModel struct {
	steps int
	usage bool
	// swing, with usage, reports a tenth of the usage every other step, so
	// that a token trigger is met on one call and missed on the next.
	swing bool
	mu    sync.Mutex
	reqs  [][]byte // every request, encoded
	tools []bool   // whether it offered tools (summaries do not)
}

func (m *noteModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.reqs, m.tools = append(m.reqs, raw), append(m.tools, len(req.Tools) > 0)
	m.mu.Unlock()
	if len(req.Tools) == 0 {
		return &llm.Response{Message: llm.Assistant(fmt.Sprintf("Summary of %d characters.", len(req.Messages[0].Text())))}, nil
	}
	step := 1
	if n := len(req.Messages); n > 0 {
		if k, err := strconv.Atoi(strings.TrimPrefix(req.Messages[n-1].ToolCallID, "w")); err == nil {
			step = k + 1
		}
	}
	resp := &llm.Response{}
	if step > m.steps {
		resp.Message = llm.Assistant("done")
	} else {
		content := fmt.Sprintf("note %d\n", step)
		if step%3 == 0 {
			content += strings.Repeat(fmt.Sprintf("long line of note %d\n", step), 150)
		}
		resp.Message = llm.Assistant("", fakes.CallID("w"+strconv.Itoa(step), "write_file", map[string]string{"file_path": fmt.Sprintf("/n/%d.md", step), "content": content}))
	}
	if m.usage {
		raw, _ := json.Marshal(req)
		resp.Usage = llm.Usage{InputTokens: len(raw) / 4, OutputTokens: 20}
		if m.swing && step%2 == 0 {
			resp.Usage.InputTokens /= 10
		}
	}
	return resp, nil
}

// copier hands on a copy of the history: nothing then vouches that its
// messages never change, so SummarizationMiddleware computes every call
// from scratch.
type copier struct{ agent.Base }

func (copier) Name() string { return "copier" }

func (copier) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	c := req.Clone()
	c.Messages = slices.Clone(req.Messages)
	return next(ctx, c)
}

// rewriter replaces the write_file call of three steps ago, by id, with a
// longer one before the at-th model call.
type rewriter struct {
	agent.Base
	at, calls int
}

func (*rewriter) Name() string { return "rewriter" }

func (r *rewriter) BeforeModel(_ context.Context, s *agent.State) (*agent.Update, error) {
	r.calls++
	if r.calls != r.at {
		return nil, nil
	}
	m := s.Messages[len(s.Messages)-6]
	if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
		return nil, fmt.Errorf("message %s is not a tool call", m.ID)
	}
	long := m
	long.ToolCalls = []llm.ToolCall{fakes.CallID(m.ToolCalls[0].ID, "write_file", map[string]string{"file_path": "/n/x.md", "content": strings.Repeat("rewritten ", 400)})}
	return &agent.Update{Messages: []llm.Message{long}}, nil
}

// What SummarizationMiddleware carries over between the calls of a run
// changes nothing the model sees: a run gives the same requests whether the
// middleware may use its memo or has to recompute everything, through
// argument truncation, summaries and a message replaced in the history.
func TestSummarizationMemoChangesNoRequest(t *testing.T) {
	run := func(t *testing.T, usage, fresh bool) [][]byte {
		model := &noteModel{steps: 70, usage: usage}
		fs := newMW(t, middleware.FilesystemOptions{})
		summ, err := middleware.NewSummarization(middleware.SummarizationOptions{
			Trigger:      []middleware.Threshold{{Tokens: 2500}, {Messages: 40}},
			Keep:         middleware.Threshold{Messages: 8},
			TruncateArgs: middleware.TruncateArgsOptions{Trigger: []middleware.Threshold{{Messages: 10}}, Keep: middleware.Threshold{Tokens: 1500}},
		})
		require.NoError(t, err)
		mws := []agent.Middleware{fs, summ, &rewriter{at: 40}}
		if fresh {
			mws = []agent.Middleware{fs, copier{}, summ, &rewriter{at: 40}}
		}
		a, err := agent.New(agent.Config{Model: model, Middleware: mws, RecursionLimit: 500})
		require.NoError(t, err)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("take notes")}}, clockOpt())
		require.NoError(t, err)
		require.Equal(t, "done", res.Text())
		summaries := 0
		for _, tools := range model.tools {
			if !tools {
				summaries++
			}
		}
		require.GreaterOrEqual(t, summaries, 2, "the run should summarize more than once")
		return model.reqs
	}
	for _, usage := range []bool{false, true} {
		t.Run(fmt.Sprintf("usage=%v", usage), func(t *testing.T) {
			memo, fresh := run(t, usage, false), run(t, usage, true)
			require.Equal(t, len(fresh), len(memo), "model calls")
			for i := range fresh {
				require.JSONEq(t, string(fresh[i]), string(memo[i]), "request %d", i+1)
			}
			rewritten := 0
			for _, raw := range memo {
				if strings.Contains(string(raw), "rewritten rewritten ...(argument truncated)") {
					rewritten++
				}
			}
			assert.Positive(t, rewritten, "the rewritten call never reached the model truncated")
		})
	}
}

// anthropicNotes is noteModel as an Anthropic model, whose requests prompt
// caching and memory mark.
type anthropicNotes struct{ *noteModel }

func (anthropicNotes) Identity() llm.Identity {
	return llm.Identity{Provider: "anthropic", Model: "claude-notes"}
}

// The lists SummarizationMiddleware lends down the stack and rewrites from
// call to call (see lentList) change nothing the model sees: prompt caching
// and memory, extending their previous call's work from what the list says
// changed, send what they send when everything is recomputed, through
// truncation that comes and goes (usage swinging around a token trigger),
// summaries and a message replaced in the history.
func TestSummarizationLentListsChangeNoRequest(t *testing.T) {
	run := func(t *testing.T, fresh bool) (*noteModel, [][]byte) {
		model := &noteModel{steps: 90, usage: true, swing: true}
		fs := newMW(t, middleware.FilesystemOptions{})
		summ, err := middleware.NewSummarization(middleware.SummarizationOptions{
			Trigger:      []middleware.Threshold{{Tokens: 9000}},
			Keep:         middleware.Threshold{Messages: 8},
			TruncateArgs: middleware.TruncateArgsOptions{Trigger: []middleware.Threshold{{Tokens: 3000}}, Keep: middleware.Threshold{Messages: 6}},
		})
		require.NoError(t, err)
		mem, err := middleware.NewMemory(middleware.MemoryOptions{Sources: []string{"/AGENTS.md"}, AddCacheControl: true})
		require.NoError(t, err)
		mws := []agent.Middleware{fs, summ, &rewriter{at: 40}, newCaching(t, ""), mem}
		if fresh {
			mws = append([]agent.Middleware{fs, copier{}}, mws[1:]...)
		}
		a, err := agent.New(agent.Config{Model: anthropicNotes{model}, Middleware: mws, RecursionLimit: 500})
		require.NoError(t, err)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("take notes")}}, clockOpt())
		require.NoError(t, err)
		require.Equal(t, "done", res.Text())
		return model, model.reqs
	}
	model, lent := run(t, false)
	_, fresh := run(t, true)
	require.Equal(t, len(fresh), len(lent), "model calls")
	for i := range fresh {
		require.JSONEq(t, string(fresh[i]), string(lent[i]), "request %d", i+1)
	}
	// The run must go through what the lists describe: truncation applied
	// and given back, summaries, marked requests.
	summaries, truncated, untruncated := 0, 0, 0
	for i, raw := range lent {
		if !model.tools[i] {
			summaries++
			continue
		}
		switch {
		case strings.Contains(string(raw), "(argument truncated)"):
			truncated++
		case truncated > 0:
			untruncated++
		}
		assert.Contains(t, string(raw), "cache_control", "request %d", i+1)
	}
	assert.GreaterOrEqual(t, summaries, 2, "summaries")
	assert.Positive(t, truncated, "calls with truncated arguments")
	assert.Positive(t, untruncated, "calls after a truncation without one")
}
