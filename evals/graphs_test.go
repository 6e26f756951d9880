package evals_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/llm"
)

// deployModel plays two agents of one deployment on the local provider:
// "lead" starts a task on its url-less async subagent and reports the
// tool's answer; "worker" answers "finished: <task>".
type deployModel struct{}

func (deployModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	served, _ := llmserver.ServedCallFrom(ctx)
	var user string
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			user = m.Text()
		}
	}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case served.Model == "lead" && last.Role == llm.RoleTool:
		return &llm.Response{Message: llm.Assistant("lead: " + last.Text())}, nil
	case served.Model == "lead":
		args, _ := json.Marshal(map[string]string{"description": "survey " + user, "subagent_type": "helper"})
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "call_1", Name: "start_async_task", Args: args})}, nil
	}
	return &llm.Response{Message: llm.Assistant("finished: " + user)}, nil
}

// An async subagent without a url runs in the cell, on the graph the
// suite's graphs: names, as under `dageval serve`: its model calls are
// recorded in the cell's cassette, in a lane of their own, and replayed
// from it. The replay passes only if the task ran again in process (an
// unplayed recorded call errors the cell).
func TestInProcessGraphs(t *testing.T) {
	srv := server(t, deployModel{})
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("worker.yaml", "model: local:worker\nsystem_prompt: You research what you are asked.\n")
	suite := func(mode, graphs string) string {
		return "version: 1\nname: deployment\nproviders: {local: {kind: openai-compatible, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: TEST_KEY}}\n" +
			"mode: " + mode + "\nmodels: [local:lead]\n" + graphs +
			"agent:\n  system_prompt: You hand research to your helper.\n  subagents: [{name: helper, description: researches a topic, graph_id: worker}]\n" +
			"cases:\n  - id: routers\n    input: Go HTTP routers\n    checks:\n      - tool_called: start_async_task\n      - final_answer: {contains: 'lead: Launched async subagent. task_id: '}\n"
	}
	path := filepath.Join(dir, "suite.yaml")

	write("suite.yaml", suite("record", ""))
	_, err := evals.Load(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `suite.yaml:6:1: agent: async subagent "helper" (subagents[0]) has no url, so its graph "worker" runs in process, but the suite serves no graphs (add graphs: {worker: AGENT_FILE})`)

	write("suite.yaml", suite("record", "graphs: {worker: worker.yaml}\n"))
	rec := runSuite(t, path, evals.Options{})
	require.Equal(t, 1, rec.Summary.Totals.Passed, "%+v", rec.Results)
	cassette, err := os.ReadFile(filepath.Join(dir, "cassettes", "routers--local-lead--default--e1.yaml"))
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(cassette), "\n  - id: "), "two calls of the lead and the worker's one")
	assert.Contains(t, string(cassette), "graph:worker/", "the task's calls replay in their own lane")
	assert.Contains(t, string(cassette), "finished: survey Go HTTP routers")

	srv.Close()
	write("suite.yaml", suite("replay", "graphs: {worker: worker.yaml}\n"))
	for range 3 {
		rep := runSuite(t, path, evals.Options{})
		require.Equal(t, 1, rep.Summary.Totals.Passed, "%+v", rep.Results)
	}
}

// cancelModel: "lead" starts a slow task on its in-process helper, then,
// once the worker's call has reached the server, cancels it; the worker's
// call waits until it is cancelled. Without the wait the cancel can come
// before the task's call is sent, and the recording is then complete.
type cancelModel struct {
	workerCalled chan struct{}
	once         sync.Once
}

func newCancelModel() *cancelModel { return &cancelModel{workerCalled: make(chan struct{})} }

func (m *cancelModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	served, _ := llmserver.ServedCallFrom(ctx)
	var tools []string
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			tools = append(tools, m.Text())
		}
	}
	switch {
	case served.Model != "lead":
		m.once.Do(func() { close(m.workerCalled) })
		<-ctx.Done()
		return nil, ctx.Err()
	case len(tools) == 0:
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "call_1", Name: "start_async_task", Args: json.RawMessage(`{"description":"slow survey","subagent_type":"helper"}`)})}, nil
	case len(tools) == 1:
		select {
		case <-m.workerCalled:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		id := strings.TrimPrefix(tools[0], "Launched async subagent. task_id: ")
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "call_2", Name: "cancel_async_task", Args: json.RawMessage(`{"task_id":"` + id + `"}`)})}, nil
	}
	return &llm.Response{Message: llm.Assistant("lead: " + tools[len(tools)-1])}, nil
}

// A task cancelled while its model call is in flight during a recording
// leaves a call that never answered: the recording is not saved, and the
// cell says so (README, "Evaluating a served agent").
func TestInProcessCancelWhileRecording(t *testing.T) {
	srv := server(t, newCancelModel())
	path := writeSuite(t, map[string]string{
		"worker.yaml": "model: local:worker\nsystem_prompt: You research.\n",
		"suite.yaml": "version: 1\nname: cancel\nproviders: {local: {kind: openai-compatible, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: TEST_KEY}}\n" +
			"mode: record\nmodels: [local:lead]\ngraphs: {worker: worker.yaml}\n" +
			"agent:\n  system_prompt: You delegate.\n  subagents: [{name: helper, description: researches, graph_id: worker}]\n" +
			"cases:\n  - {id: cancel, input: go}\n",
	})
	oc := runSuite(t, path, evals.Options{})
	r := resultOf(t, oc, "cancel")
	assert.Equal(t, evals.StatusError, r.Status)
	assert.Contains(t, r.Error, "provider error")
	assert.NoFileExists(t, filepath.Join(filepath.Dir(path), "cassettes", "cancel--local-lead--default--e1.yaml"))
}

// A graph may be an agent factory registered in Go; it runs on the
// cell's model when its config names none.
func TestInProcessFactoryGraph(t *testing.T) {
	srv := server(t, deployModel{})
	path := writeSuite(t, map[string]string{
		"suite.yaml": "version: 1\nname: factory\nproviders: {local: {kind: openai-compatible, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: TEST_KEY}}\n" +
			"mode: record\nmodels: [local:lead]\ngraphs: {worker: {factory: worker}}\n" +
			"agent:\n  system_prompt: You delegate.\n  subagents: [{name: helper, description: researches, graph_id: worker}]\n" +
			"cases:\n  - {id: one, input: routers, checks: [{final_answer: {contains: 'lead: Launched async subagent.'}}]}\n",
	})
	var asked []string
	oc := runSuite(t, path, evals.Options{Agents: map[string]evals.AgentFactory{
		"worker": func(_ context.Context, req evals.AgentRequest) (harness.Config, error) {
			asked = append(asked, req.Model)
			return harness.Config{SystemPrompt: "You research."}, nil
		},
	}})
	r := resultOf(t, oc, "one")
	require.Equal(t, evals.StatusPass, r.Status, r.Error)
	require.NotEmpty(t, asked) // once to validate the assembly, once for the cell
	for _, m := range asked {
		assert.Equal(t, "local:lead", m)
	}
	cassette, err := os.ReadFile(filepath.Join(filepath.Dir(path), "cassettes", "one--local-lead--default--e1.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(cassette), "graph:worker/", "the factory's agent ran the task in process")
}
