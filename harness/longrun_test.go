package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
	"github.com/dageval/dageval/harness/provider/openai"
)

// A long run is the workload of a long-horizon deep agent: at step k the
// model writes one of ten note files and reads back the one written the
// step before, with two parallel calls in one turn; after the last step it
// answers. The file count stays bounded so that what grows is the history.

// longRunFiles is how many note files a long run cycles through.
const longRunFiles = 10

// longRunModel plays a long run. It decides from the last message (the
// result of the previous step's read), so it keeps no state and costs the
// loop little, and it writes the summaries SummarizationMiddleware asks for.
type longRunModel struct {
	id    llm.Identity
	steps int
	// calls[k] is the assistant turn of step k (1-based), built up front.
	calls [][]llm.ToolCall
	// usage reports token usage as providers do; nil reports none.
	usage func(req *llm.Request, step int) llm.Usage
	// record, when set, sees every request before it is answered.
	record func(req *llm.Request)
}

func notePath(step int) string {
	return fmt.Sprintf("/notes/%d.md", (step%longRunFiles+longRunFiles)%longRunFiles)
}

func newLongRunModel(id llm.Identity, steps int, content func(step int) string) *longRunModel {
	m := &longRunModel{id: id, steps: steps, calls: make([][]llm.ToolCall, steps+1)}
	for k := 1; k <= steps; k++ {
		write, err := json.Marshal(map[string]string{"file_path": notePath(k), "content": content(k)})
		if err != nil {
			panic(err)
		}
		m.calls[k] = []llm.ToolCall{
			{ID: "call_w_" + strconv.Itoa(k), Name: "write_file", Args: write},
			{ID: "call_r_" + strconv.Itoa(k), Name: "read_file", Args: json.RawMessage(`{"file_path":"` + notePath(k-1) + `"}`)},
		}
	}
	return m
}

// Identity implements llm.Identified: the profile and the summarization
// policy follow it.
func (m *longRunModel) Identity() llm.Identity { return m.id }

func (m *longRunModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	if m.record != nil {
		m.record(req)
	}
	if len(req.Tools) == 0 && len(req.Messages) == 1 && strings.Contains(req.Messages[0].Text(), "<conversation>") {
		text := fmt.Sprintf("The agent has been keeping notes in %s to %s; the conversation so far ran to %d characters.",
			notePath(0), notePath(longRunFiles-1), len(req.Messages[0].Text()))
		return &llm.Response{Message: llm.Assistant(text), StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 40}}, nil
	}
	step := 1
	if n := len(req.Messages); n > 0 {
		if id, ok := strings.CutPrefix(req.Messages[n-1].ToolCallID, "call_r_"); ok {
			k, err := strconv.Atoi(id)
			if err != nil {
				return nil, fmt.Errorf("unexpected tool call id %q", req.Messages[n-1].ToolCallID)
			}
			step = k + 1
		}
	}
	resp := &llm.Response{StopReason: llm.StopToolUse}
	if step > m.steps {
		resp.Message, resp.StopReason = llm.Assistant("All notes are written."), llm.StopEndTurn
	} else {
		resp.Message = llm.Assistant("Step "+strconv.Itoa(step)+": writing the next note.", m.calls[step]...)
	}
	if m.usage != nil {
		resp.Usage = m.usage(req, step)
	}
	return resp, nil
}

// linearUsage is a cheap stand-in for provider usage: the prompt grows by
// a fixed amount per step.
func linearUsage(_ *llm.Request, step int) llm.Usage {
	return llm.Usage{InputTokens: 2500 + 150*step, OutputTokens: 60}
}

// shortNote is what a benchmarked step writes: a few lines.
func shortNote(step int) string {
	return fmt.Sprintf("# Step %d\n\nChecked the next part of the task and noted what remains.\nNothing is blocked.\n", step)
}

// longRunInput seeds the note files so that the first read finds one.
func longRunInput() agent.Input {
	in := agent.Input{Messages: []llm.Message{llm.User("Work through the task step by step and keep notes in /notes/ as you go.")}, Files: map[string]agent.FileData{}}
	for i := range longRunFiles {
		in.Files[notePath(i)] = agent.FileData{Content: "(empty)\n"}
	}
	return in
}

// longRunClock stamps files identically on every run.
func longRunClock() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// newLongRunAgent assembles the default deep agent (harness.New's stacks
// with the built-in profiles) on model.
func newLongRunAgent(tb testing.TB, model llm.ChatModel, cp agent.Checkpointer) *harness.Agent {
	tb.Helper()
	a, err := harness.New(harness.Config{Model: model, Profiles: profile.NewRegistry(profile.WithPlugins()), Checkpointer: cp})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// runLongRun runs a to the end and checks that it took every step.
func runLongRun(tb testing.TB, a *harness.Agent, steps int, opts ...agent.Option) *agent.Result {
	tb.Helper()
	res, err := a.Invoke(context.Background(), longRunInput(), append([]agent.Option{agent.WithClock(longRunClock)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Steps != 2*steps+1 || res.Text() != "All notes are written." {
		tb.Fatalf("run took %d steps and ended with %q; want %d steps", res.Steps, res.Text(), 2*steps+1)
	}
	return res
}

// localProvider starts the local provider server answering with m. It is
// the only place naming the server's package.
func localProvider(tb testing.TB, m llm.ChatModel) *llmserver.Server {
	srv := llmserver.NewServer(m)
	tb.Cleanup(srv.Close)
	return srv
}

// wireAPI is one wire format a long run can go over.
type wireAPI struct {
	name  string
	model func(tb testing.TB, srv *llmserver.Server, modelID string) llm.ChatModel
}

var wireAPIs = []wireAPI{
	{"anthropic", func(tb testing.TB, srv *llmserver.Server, modelID string) llm.ChatModel {
		m, err := anthropic.New(provider.Config{Model: modelID, BaseURL: srv.URL, APIKey: "test-key"})
		if err != nil {
			tb.Fatal(err)
		}
		return m
	}},
	{"openai-chat", func(tb testing.TB, srv *llmserver.Server, modelID string) llm.ChatModel {
		return openaiModel(tb, srv, modelID, false)
	}},
	{"openai-responses", func(tb testing.TB, srv *llmserver.Server, modelID string) llm.ChatModel {
		return openaiModel(tb, srv, modelID, true)
	}},
}

func openaiModel(tb testing.TB, srv *llmserver.Server, modelID string, responses bool) llm.ChatModel {
	m, err := openai.New(provider.Config{Kind: provider.KindOpenAI, Model: modelID, BaseURL: srv.OpenAIBaseURL(), APIKey: "test-key", UseResponsesAPI: &responses})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
