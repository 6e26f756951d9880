package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// serveModel plays two agents on the local provider: "worker" answers
// "finished: <task>" (a task containing "slow" waits until its call is
// cancelled); "boss" starts a task on its async subagent, then reports the
// tool's answer.
type serveModel struct{}

func (serveModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	served, _ := llmserver.ServedCallFrom(ctx)
	var user string
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			user = m.Text()
		}
	}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case served.Model == "boss" && last.Role == llm.RoleTool:
		return &llm.Response{Message: llm.Assistant("boss: " + last.Text())}, nil
	case served.Model == "boss":
		args, _ := json.Marshal(map[string]string{"description": user, "subagent_type": "helper"})
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "call_1", Name: "start_async_task", Args: args})}, nil
	case strings.Contains(user, "slow"):
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &llm.Response{Message: llm.Assistant("finished: " + user)}, nil
}

func writeServeAgents(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	providers := `providers: {local: {kind: openai-compatible, base_url: "` + url + `/v1", api_key_env: TEST_KEY}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "worker.yaml"), []byte("model: local:worker\nsystem_prompt: You research what you are asked.\n"+providers), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "boss.yaml"), []byte(`name: boss
model: local:boss
system_prompt: You hand research to your helper.
subagents: [{name: helper, description: researches a topic, graph_id: worker}]
`+providers), 0o644))
	return dir
}

// agentProtocol is a small client of a served agent.
type agentProtocol struct {
	t    *testing.T
	base string
}

func (c agentProtocol) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, rd)
	require.NoError(c.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	var out map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(c.t, json.Unmarshal(raw, &out), string(raw))
	}
	return resp.StatusCode, out
}

// join waits for a run and returns its status.
func (c agentProtocol) join(thread, run string) string {
	c.t.Helper()
	code, _ := c.do("GET", "/threads/"+thread+"/runs/"+run+"/join", nil)
	require.Equal(c.t, http.StatusOK, code)
	_, r := c.do("GET", "/threads/"+thread+"/runs/"+run, nil)
	return r["status"].(string)
}

func lastText(values map[string]any) any {
	msgs := values["messages"].([]any)
	return msgs[len(msgs)-1].(map[string]any)["content"]
}

func TestServeHelpAndErrors(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, exitOK, Main([]string{"serve", "--help"}, WithStdio(nil, &out, &errb)))
	assert.Contains(t, out.String(), "Usage: dageval serve AGENT_FILE|factory:NAME...")
	assert.Contains(t, out.String(), "-addr")
	out.Reset()
	assert.Equal(t, exitBad, Main([]string{"serve"}, WithStdio(nil, &out, &errb)))
	assert.Contains(t, errb.String(), "give at least one agent file")
	errb.Reset()
	assert.Equal(t, exitBad, Main([]string{"serve", "factory:nope"}, WithStdio(nil, &out, &errb)))
	assert.Contains(t, errb.String(), `no agent factory is registered as "nope"`)
	errb.Reset()
	dir := writeServeAgents(t, "http://127.0.0.1:1")
	assert.Equal(t, exitBad, Main([]string{"serve", filepath.Join(dir, "worker.yaml"), filepath.Join(dir, "worker.yaml"), "--addr", "127.0.0.1:0"}, WithStdio(nil, &out, &errb)))
	assert.Contains(t, errb.String(), `graph "worker" is added twice`)
}

// lineWriter hands the first line written to it over a channel; it is
// safe to read while a command writes to it.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan string
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.first != nil {
		if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok {
			w.first <- line
			w.first = nil
		}
	}
	return len(p), nil
}

func servedURL(t *testing.T, line string) string {
	t.Helper()
	_, url, ok := strings.Cut(line, " at ")
	require.True(t, ok, line)
	return url
}

// TestServeInProcessSubagent runs `dageval serve` in process with two
// agents: boss's async subagent has no url and runs worker on the same
// server, without the network between them. SIGINT's context stops it.
func TestServeInProcessSubagent(t *testing.T) {
	prov := llmserver.NewServer(serveModel{})
	defer prov.Close()
	t.Setenv("TEST_KEY", "test-key")
	dir := writeServeAgents(t, prov.URL)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	first := make(chan string, 1)
	out := &lineWriter{first: first}
	errb := &lineWriter{}
	code := make(chan int, 1)
	go func() {
		code <- Main([]string{"serve", filepath.Join(dir, "boss.yaml"), filepath.Join(dir, "worker.yaml"), "--addr", "127.0.0.1:0"}, WithContext(ctx), WithStdio(nil, out, errb))
	}()
	var line string
	select {
	case line = <-first:
	case c := <-code:
		t.Fatalf("serve exited %d: %s", c, errb.String())
	}
	assert.Regexp(t, `^dageval serve: serving boss, worker at http://127\.0\.0\.1:\d+$`, line)
	c := agentProtocol{t: t, base: servedURL(t, line)}

	code200, th := c.do("POST", "/threads", map[string]any{})
	require.Equal(t, http.StatusOK, code200)
	_, res := c.do("POST", "/threads/"+th["thread_id"].(string)+"/runs/wait", map[string]any{"assistant_id": "boss", "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "survey Go routers"}}}})
	answer := lastText(res).(string)
	task, ok := strings.CutPrefix(answer, "boss: Launched async subagent. task_id: ")
	require.True(t, ok, answer)

	// The task is a thread of worker on this server.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", c.base+"/threads/"+task+"/runs", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var list []map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	require.Len(t, list, 1)
	assert.Equal(t, "success", c.join(task, list[0]["run_id"].(string)))
	_, thread := c.do("GET", "/threads/"+task, nil)
	assert.Equal(t, "finished: survey Go routers", lastText(thread["values"].(map[string]any)))

	stop()
	assert.Equal(t, exitOK, <-code, errb.String())
	assert.Contains(t, out.String(), "dageval serve: stopped")
}

// TestServeProcess is the two processes: `dageval serve` runs as a
// process of its own, and an agent assembled here drives its async
// subagent on it — start, check, update, cancel, list — until SIGTERM
// stops the server cleanly.
func TestServeProcess(t *testing.T) {
	prov := llmserver.NewServer(serveModel{})
	defer prov.Close()
	dir := writeServeAgents(t, prov.URL)
	cmd := dagevalProc(t, dir, prov.URL, "serve", "worker.yaml", "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	errb := &lineWriter{}
	cmd.Stderr = errb
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	rd := bufio.NewReader(stdout)
	line, err := rd.ReadString('\n')
	require.NoError(t, err, errb.String())
	url := servedURL(t, strings.TrimSpace(line))
	c := agentProtocol{t: t, base: url}

	cp := agent.NewMemoryCheckpointer()
	clock := func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	spec := harness.SubAgentSpec{Name: "helper", Description: "researches a topic", GraphID: "worker", URL: url}
	turn := func(call llm.ToolCall) (string, map[string]middleware.AsyncTask) {
		t.Helper()
		a, err := harness.New(harness.Config{Model: fakes.NewScripted(fakes.Calls("", call), fakes.Reply("ok")), SubAgents: []harness.SubAgentSpec{spec}, Checkpointer: cp})
		require.NoError(t, err)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithThread("main"), agent.WithClock(clock))
		require.NoError(t, err)
		tasks, _ := agent.Value[map[string]middleware.AsyncTask](res.State, middleware.AsyncTasksKey)
		return res.State.Messages[len(res.State.Messages)-2].Text(), tasks
	}
	out, tasks := turn(fakes.Call("start_async_task", `{"description":"slow survey","subagent_type":"helper"}`))
	require.Len(t, tasks, 1)
	var task middleware.AsyncTask
	for _, tk := range tasks {
		task = tk
	}
	assert.Equal(t, "Launched async subagent. task_id: "+task.TaskID, out)
	out, _ = turn(fakes.Call("check_async_task", `{"task_id":"`+task.TaskID+`"}`))
	assert.Equal(t, `{"status":"running","thread_id":"`+task.TaskID+`"}`, out)
	_, tasks = turn(fakes.Call("update_async_task", `{"task_id":"`+task.TaskID+`","message":"just net/http"}`))
	assert.Equal(t, "success", c.join(task.ThreadID, tasks[task.TaskID].RunID))
	out, _ = turn(fakes.Call("check_async_task", `{"task_id":"`+task.TaskID+`"}`))
	assert.Equal(t, `{"result":"finished: just net/http","status":"success","thread_id":"`+task.TaskID+`"}`, out)

	_, tasks = turn(fakes.Call("start_async_task", `{"description":"slow benchmark","subagent_type":"helper"}`))
	require.Len(t, tasks, 2)
	var second middleware.AsyncTask
	for id, tk := range tasks {
		if id != task.TaskID {
			second = tk
		}
	}
	out, _ = turn(fakes.Call("cancel_async_task", `{"task_id":"`+second.TaskID+`"}`))
	assert.Equal(t, "Cancelled async subagent task: "+second.TaskID, out)
	assert.Equal(t, "interrupted", c.join(second.ThreadID, second.RunID))
	out, _ = turn(fakes.Call("list_async_tasks", `{}`))
	assert.Contains(t, out, "2 tracked task(s):")
	assert.Contains(t, out, "- task_id: "+task.TaskID+"  agent: helper  status: success")
	assert.Contains(t, out, "- task_id: "+second.TaskID+"  agent: helper  status: cancelled")

	// The protocol's errors reach the client as the client expects.
	code, body := c.do("GET", "/threads/"+strings.Repeat("0", 8)+"-0000-0000-0000-000000000000", nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body["detail"], "not found")

	// A run left running is cancelled by SIGTERM; the process exits 0.
	_, run := c.do("POST", "/threads/"+second.ThreadID+"/runs", map[string]any{"assistant_id": "worker", "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "slow again"}}}})
	require.NotEmpty(t, run["run_id"])
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	rest, _ := io.ReadAll(rd)
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("serve exited %d: %s", ee.ExitCode(), errb.String())
	}
	require.NoError(t, err)
	assert.Contains(t, string(rest), "dageval serve: stopped")
}
