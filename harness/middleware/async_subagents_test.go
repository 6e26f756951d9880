package middleware_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// langGraph is a tiny stand-in for a LangGraph server's thread/run API.
type langGraph struct {
	mu          sync.Mutex
	threads     int
	runs        map[string]string // run id → status
	calls       []string
	authSchemes []string
	failThread  bool
}

func (g *langGraph) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, r.Method+" "+r.URL.Path)
	g.authSchemes = append(g.authSchemes, r.Header.Get("x-auth-scheme"))
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && len(parts) == 1:
		g.threads++
		fmt.Fprintf(w, `{"thread_id":"thread-%d"}`, g.threads)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "runs":
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		id := fmt.Sprintf("run-%d", len(g.runs)+1)
		g.runs[id] = "running"
		fmt.Fprintf(w, `{"run_id":%q,"status":"pending"}`, id)
	case r.Method == http.MethodGet && len(parts) == 4:
		status := g.runs[parts[3]]
		if status == "error" {
			fmt.Fprintf(w, `{"status":"error","error":"remote agent crashed"}`)
			return
		}
		fmt.Fprintf(w, `{"status":%q}`, status)
	case r.Method == http.MethodGet && len(parts) == 2:
		if g.failThread {
			http.Error(w, `{"detail":"boom"}`, http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, `{"values":{"messages":[{"content":"working"},{"content":[{"type":"text","text":"report: 3 bugs found"}]}]}}`)
	case r.Method == http.MethodPost && len(parts) == 5 && parts[4] == "cancel":
		g.runs[parts[3]] = "cancelled"
		fmt.Fprint(w, `{}`)
	default:
		http.NotFound(w, r)
	}
}

func (g *langGraph) set(run, status string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs[run] = status
}

func TestAsyncSubAgents(t *testing.T) {
	g := &langGraph{runs: map[string]string{}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	m, err := middleware.NewAsyncSubAgentMiddleware(middleware.AsyncSubAgentOptions{SubAgents: []middleware.AsyncSubAgent{
		{Name: "reviewer", Description: "reviews code", GraphID: "review-graph", URL: srv.URL},
		{Name: "custom", Description: "custom auth", GraphID: "g2", URL: srv.URL, Headers: map[string]string{"x-auth-scheme": "bearer"}},
	}})
	require.NoError(t, err)
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Spec().Name)
	}
	assert.Equal(t, []string{"start_async_task", "check_async_task", "update_async_task", "cancel_async_task", "list_async_tasks"}, names)

	cp := agent.NewMemoryCheckpointer()
	clock := func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }
	run := func(calls ...llm.ToolCall) *agent.Result {
		t.Helper()
		a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", calls...), fakes.Reply("ok")), Middleware: []agent.Middleware{m}, Checkpointer: cp})
		require.NoError(t, err)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithThread("t"), agent.WithClock(clock))
		require.NoError(t, err)
		return res
	}
	toolTexts := func(res *agent.Result) []string {
		var out []string
		for _, msg := range res.State.Messages[len(res.State.Messages)-1-countTools(res.State):] {
			if msg.Role == llm.RoleTool {
				out = append(out, msg.Text())
			}
		}
		return out
	}

	res := run(
		fakes.Call("start_async_task", `{"description":"review main.go","subagent_type":"reviewer"}`),
		fakes.Call("start_async_task", `{"description":"x","subagent_type":"nope"}`),
	)
	assert.Equal(t, []string{
		"Launched async subagent. task_id: thread-1",
		"Unknown async subagent type `nope`. Available types: `reviewer`, `custom`",
	}, toolTexts(res))
	tasks, _ := agent.Value[map[string]middleware.AsyncTask](res.State, middleware.AsyncTasksKey)
	assert.Equal(t, middleware.AsyncTask{TaskID: "thread-1", AgentName: "reviewer", ThreadID: "thread-1", RunID: "run-1", Status: "running",
		CreatedAt: "2026-11-29T12:00:00Z", LastCheckedAt: "2026-11-29T12:00:00Z", LastUpdatedAt: "2026-11-29T12:00:00Z"}, tasks["thread-1"])
	assert.Equal(t, "langsmith", g.authSchemes[0], "x-auth-scheme added by default")

	res = run(fakes.Call("check_async_task", `{"task_id":" thread-1 "}`), fakes.Call("check_async_task", `{"task_id":"missing"}`))
	assert.Equal(t, []string{`{"status":"running","thread_id":"thread-1"}`, "No tracked task found for task_id: 'missing'"}, toolTexts(res))

	g.set("run-1", "success")
	res = run(fakes.Call("check_async_task", `{"task_id":"thread-1"}`))
	assert.Equal(t, []string{`{"result":"report: 3 bugs found","status":"success","thread_id":"thread-1"}`}, toolTexts(res))

	g.mu.Lock()
	g.failThread = true
	g.mu.Unlock()
	res = run(fakes.Call("check_async_task", `{"task_id":"thread-1"}`))
	assert.Contains(t, toolTexts(res)[0], `"status":"success"`, "a failed thread read still reports the status")

	res = run(fakes.Call("start_async_task", `{"description":"other","subagent_type":"custom"}`))
	assert.Equal(t, []string{"Launched async subagent. task_id: thread-2"}, toolTexts(res))
	g.mu.Lock()
	assert.Equal(t, "bearer", g.authSchemes[len(g.authSchemes)-1], "a configured x-auth-scheme is kept")
	callsBefore := len(g.calls)
	g.mu.Unlock()

	res = run(fakes.Call("list_async_tasks", `{}`))
	assert.Equal(t, []string{"2 tracked task(s):\n- task_id: thread-1  agent: reviewer  status: success\n- task_id: thread-2  agent: custom  status: running"}, toolTexts(res))
	g.mu.Lock()
	assert.Equal(t, []string{"GET /threads/thread-2/runs/run-2"}, g.calls[callsBefore:], "terminal tasks are not polled")
	g.mu.Unlock()

	res = run(fakes.Call("list_async_tasks", `{"status_filter":"success"}`))
	assert.Equal(t, []string{"1 tracked task(s):\n- task_id: thread-1  agent: reviewer  status: success"}, toolTexts(res))

	res = run(fakes.Call("update_async_task", `{"task_id":"thread-2","message":"focus on tests"}`))
	assert.Equal(t, []string{"Updated async subagent. task_id: thread-2"}, toolTexts(res))
	res = run(fakes.Call("cancel_async_task", `{"task_id":"thread-2"}`))
	assert.Equal(t, []string{"Cancelled async subagent task: thread-2"}, toolTexts(res))
	tasks, _ = agent.Value[map[string]middleware.AsyncTask](res.State, middleware.AsyncTasksKey)
	assert.Equal(t, "cancelled", tasks["thread-2"].Status)
	assert.Equal(t, "run-3", tasks["thread-2"].RunID)

	g.set("run-3", "error")
	res = run(fakes.Call("check_async_task", `{"task_id":"thread-2"}`))
	assert.Equal(t, []string{`{"error":"remote agent crashed","status":"error","thread_id":"thread-2"}`}, toolTexts(res))
}

func countTools(s *agent.State) int {
	n := 0
	for i := len(s.Messages) - 2; i >= 0 && s.Messages[i].Role == llm.RoleTool; i-- {
		n++
	}
	return n + 1
}

func TestAsyncSubAgentValidation(t *testing.T) {
	_, err := middleware.NewAsyncSubAgentMiddleware(middleware.AsyncSubAgentOptions{})
	require.ErrorContains(t, err, "at least one async subagent")
	_, err = middleware.NewAsyncSubAgentMiddleware(middleware.AsyncSubAgentOptions{SubAgents: []middleware.AsyncSubAgent{{Name: "a", GraphID: "g"}, {Name: "a", GraphID: "g"}}})
	require.ErrorContains(t, err, "duplicate async subagent names: a")
}
