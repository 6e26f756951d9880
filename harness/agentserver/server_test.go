package agentserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// worker answers "finished: <task>" for the last user message, except
// that a task containing "slow" blocks until its run is cancelled, which
// makes "running" observable without timing.
type worker struct{}

func (worker) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	var last string
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			last = m.Text()
		}
	}
	if strings.Contains(last, "slow") {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &llm.Response{Message: llm.Assistant("finished: " + last), StopReason: llm.StopEndTurn}, nil
}

func (worker) Identity() llm.Identity { return llm.Identity{Provider: "test", Model: "worker"} }

func newWorker(t *testing.T) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{Name: "worker", Model: worker{}})
	require.NoError(t, err)
	return a
}

// asker pauses on a tool that asks the caller, then reports the answer.
func newAsker(t *testing.T) *agent.Agent {
	t.Helper()
	ask, err := tool.Validated(&tool.Func{
		ToolSpec: llm.ToolSpec{Name: "ask", Description: "ask the user", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			ans, err := agent.Interrupt(ctx, map[string]string{"question": "which file?"})
			if err != nil {
				return tool.Result{}, err
			}
			return tool.Text("user said " + string(ans)), nil
		},
	})
	require.NoError(t, err)
	model := fakes.NewScripted(fakes.Calls("", fakes.Call("ask", `{}`)), fakes.Reply("done asking"))
	a, err := agent.New(agent.Config{Name: "asker", Model: model, Tools: []tool.Tool{ask}})
	require.NoError(t, err)
	return a
}

// client talks to a server over HTTP (base) or, with h set, in process.
type client struct {
	t    *testing.T
	base string
	h    http.Handler
}

func serve(t *testing.T, graphs map[string]*agent.Agent) (*agentserver.Server, *client) {
	t.Helper()
	s := agentserver.New(agentserver.Options{Clock: func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }})
	for id, a := range graphs {
		require.NoError(t, s.Add(id, a))
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); hs.Close() })
	return s, &client{t: t, base: hs.URL}
}

// do sends a request and returns the status and the decoded JSON body.
func (c *client) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	code, raw := c.raw(method, path, body)
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 && raw[0] == '{' {
		require.NoError(c.t, json.Unmarshal(raw, &out), string(raw))
	}
	return code, out
}

func (c *client) raw(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, rd)
	require.NoError(c.t, err)
	if c.h != nil {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, raw
}

func (c *client) thread() string {
	c.t.Helper()
	code, th := c.do("POST", "/threads", map[string]any{})
	require.Equal(c.t, http.StatusOK, code)
	return th["thread_id"].(string)
}

func userInput(text string) map[string]any {
	return map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}
}

// waitDone joins a run (blocking until it ends) and returns its record.
func (c *client) waitDone(thread, run string) map[string]any {
	c.t.Helper()
	code, _ := c.raw("GET", "/threads/"+thread+"/runs/"+run+"/join", nil)
	require.Equal(c.t, http.StatusOK, code)
	_, r := c.do("GET", "/threads/"+thread+"/runs/"+run, nil)
	return r
}

func lastContent(v map[string]any) any {
	msgs := v["messages"].([]any)
	return msgs[len(msgs)-1].(map[string]any)["content"]
}

func TestThreadsAndRuns(t *testing.T) {
	_, c := serve(t, map[string]*agent.Agent{"worker": newWorker(t)})

	code, found := c.raw("POST", "/assistants/search", map[string]any{})
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, string(found), `"graph_id":"worker"`)

	th := c.thread()
	code, out := c.do("POST", "/threads/"+th+"/runs/wait", map[string]any{"assistant_id": "worker", "input": userInput("count the files")})
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "finished: count the files", lastContent(out))
	first := out["messages"].([]any)[0].(map[string]any)
	assert.Equal(t, "human", first["type"])

	code, thread := c.do("GET", "/threads/"+th, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "idle", thread["status"])
	assert.Equal(t, "finished: count the files", lastContent(thread["values"].(map[string]any)))

	// A background run, then the list, newest first.
	code, run := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("again")})
	require.Equal(t, http.StatusOK, code)
	// The answer is the run as it is when the answer is written: a run this
	// short may have finished by then, but it is never left pending.
	assert.Contains(t, []any{"running", "success"}, run["status"], "a run on an idle thread starts at once")
	done := c.waitDone(th, run["run_id"].(string))
	assert.Equal(t, "success", done["status"])
	code, list := c.raw("GET", "/threads/"+th+"/runs", nil)
	require.Equal(t, http.StatusOK, code)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal(list, &runs))
	require.Len(t, runs, 2)
	assert.Equal(t, run["run_id"], runs[0]["run_id"])

	// The assistant id works as well as the graph id; a stateless run gets its own thread.
	_, asst := c.do("GET", "/assistants/worker", nil)
	code, out = c.do("POST", "/runs/wait", map[string]any{"assistant_id": asst["assistant_id"], "input": userInput("alone")})
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "finished: alone", lastContent(out))
}

func TestIDsAreDeterministic(t *testing.T) {
	ids := func() []string {
		_, c := serve(t, map[string]*agent.Agent{"worker": newWorker(t)})
		th := c.thread()
		_, run := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("x")})
		c.waitDone(th, run["run_id"].(string))
		return []string{th, run["run_id"].(string)}
	}
	first := ids()
	assert.Equal(t, first, ids())
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, first[0])
}

func TestProtocolErrors(t *testing.T) {
	_, c := serve(t, map[string]*agent.Agent{"worker": newWorker(t), "asker": newAsker(t)})
	missing := "00000000-0000-0000-0000-000000000000"
	for _, tc := range []struct {
		method, path string
		body         any
		code         int
		detail       string
	}{
		{"GET", "/threads/" + missing, nil, 404, "Thread with ID " + missing + " not found"},
		{"GET", "/threads/" + missing + "/state", nil, 404, "not found"},
		{"POST", "/threads/" + missing + "/runs", map[string]any{"assistant_id": "worker"}, 404, "not found"},
		{"GET", "/threads/" + missing + "/runs/" + missing, nil, 404, "not found"},
		{"POST", "/threads/" + missing + "/runs/" + missing + "/cancel", nil, 404, "not found"},
		{"GET", "/assistants/nope", nil, 404, `Assistant "nope" not found (graphs served: [asker worker])`},
		{"POST", "/runs", map[string]any{"assistant_id": "nope"}, 404, "Assistant"},
		{"POST", "/runs", map[string]any{}, 422, "assistant_id is required"},
		{"POST", "/runs", map[string]any{"assistant_id": "worker", "multitask_strategy": "sideways"}, 422, "multitask_strategy"},
		{"POST", "/runs/stream", map[string]any{"assistant_id": "worker", "stream_mode": "debug"}, 422, `stream_mode "debug"`},
		{"POST", "/runs", map[string]any{"assistant_id": "worker", "input": map[string]any{"messages": []map[string]string{{"role": "robot", "content": "x"}}}}, 422, `input.messages[0]: role "robot"`},
		{"POST", "/runs", map[string]any{"assistant_id": "worker", "command": map[string]any{"goto": "model"}}, 422, "only resume"},
	} {
		code, out := c.do(tc.method, tc.path, tc.body)
		assert.Equal(t, tc.code, code, "%s %s", tc.method, tc.path)
		assert.Contains(t, fmt.Sprint(out["detail"]), tc.detail, "%s %s", tc.method, tc.path)
	}
	code, raw := c.raw("POST", "/runs", nil)
	assert.Equal(t, 422, code, string(raw))

	// A resume on a thread that never paused.
	th := c.thread()
	code, out := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "asker", "command": map[string]any{"resume": "x"}})
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, out["detail"], "has no pending interrupt")

	// Cancelling a finished run.
	_, run := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("quick")})
	c.waitDone(th, run["run_id"].(string))
	code, out = c.do("POST", "/threads/"+th+"/runs/"+run["run_id"].(string)+"/cancel", nil)
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, out["detail"], "has already finished (success)")
}

func TestInterruptAndResume(t *testing.T) {
	_, c := serve(t, map[string]*agent.Agent{"asker": newAsker(t)})
	th := c.thread()
	code, out := c.do("POST", "/threads/"+th+"/runs/wait", map[string]any{"assistant_id": "asker", "input": userInput("edit a file")})
	require.Equal(t, http.StatusOK, code)
	ints := out["__interrupt__"].([]any)
	require.Len(t, ints, 1)
	assert.Equal(t, map[string]any{"question": "which file?"}, ints[0].(map[string]any)["value"])

	_, thread := c.do("GET", "/threads/"+th, nil)
	assert.Equal(t, "interrupted", thread["status"])
	_, state := c.do("GET", "/threads/"+th+"/state", nil)
	assert.Equal(t, []any{"tools"}, state["next"])
	require.Len(t, state["tasks"], 1)

	code, out = c.do("POST", "/threads/"+th+"/runs/wait", map[string]any{"assistant_id": "asker", "command": map[string]any{"resume": "main.go"}})
	require.Equal(t, http.StatusOK, code)
	assert.Nil(t, out["__interrupt__"])
	msgs := out["messages"].([]any)
	assert.Equal(t, `user said "main.go"`, msgs[len(msgs)-2].(map[string]any)["content"])
	assert.Equal(t, "done asking", lastContent(out))

	// The second resume of the same interrupt finds nothing to resume.
	code, out = c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "asker", "command": map[string]any{"resume": "main.go"}})
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, out["detail"], "no pending interrupt")
	_, thread = c.do("GET", "/threads/"+th, nil)
	assert.Equal(t, "idle", thread["status"])
}

func TestCancelAndMultitask(t *testing.T) {
	_, c := serve(t, map[string]*agent.Agent{"worker": newWorker(t)})
	th := c.thread()
	_, slow := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("slow job")})
	slowID := slow["run_id"].(string)

	// reject (the default) refuses a second run while one is active.
	code, out := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("next")})
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, out["detail"], "already running")
	_, thread := c.do("GET", "/threads/"+th, nil)
	assert.Equal(t, "busy", thread["status"])

	// enqueue waits; cancelling the active run lets it go.
	_, queued := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("queued"), "multitask_strategy": "enqueue"})
	code, _ = c.raw("POST", "/threads/"+th+"/runs/"+slowID+"/cancel?wait=1", nil)
	assert.Equal(t, http.StatusNoContent, code)
	_, r := c.do("GET", "/threads/"+th+"/runs/"+slowID, nil)
	assert.Equal(t, "interrupted", r["status"])
	assert.Equal(t, "success", c.waitDone(th, queued["run_id"].(string))["status"])

	// interrupt stops the active run and continues the thread with the new input.
	_, slow = c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("slow again")})
	_, next := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("instead"), "multitask_strategy": "interrupt"})
	assert.Equal(t, "success", c.waitDone(th, next["run_id"].(string))["status"])
	assert.Equal(t, "interrupted", c.waitDone(th, slow["run_id"].(string))["status"])
	_, thread = c.do("GET", "/threads/"+th, nil)
	msgs := thread["values"].(map[string]any)["messages"].([]any)
	var texts []any
	for _, m := range msgs {
		texts = append(texts, m.(map[string]any)["content"])
	}
	assert.Equal(t, []any{"slow job", "queued", "finished: queued", "slow again", "instead", "finished: instead"}, texts)

	// rollback forgets the replaced run and its input.
	_, slow = c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("slow third")})
	_, next = c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("rolled"), "multitask_strategy": "rollback"})
	assert.Equal(t, "success", c.waitDone(th, next["run_id"].(string))["status"])
	code, _ = c.do("GET", "/threads/"+th+"/runs/"+slow["run_id"].(string), nil)
	assert.Equal(t, http.StatusNotFound, code)
	_, thread = c.do("GET", "/threads/"+th, nil)
	msgs = thread["values"].(map[string]any)["messages"].([]any)
	assert.Len(t, msgs, 8)
	assert.Equal(t, "finished: rolled", lastContent(thread["values"].(map[string]any)))
}

// sse reads a server-sent event stream into (event, data) pairs.
func sse(t *testing.T, body io.Reader) [][2]string {
	t.Helper()
	var out [][2]string
	var event string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{event, strings.TrimPrefix(line, "data: ")})
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func TestStream(t *testing.T) {
	_, c := serve(t, map[string]*agent.Agent{"worker": newWorker(t), "asker": newAsker(t)})
	th := c.thread()
	body, _ := json.Marshal(map[string]any{"assistant_id": "worker", "input": userInput("stream me"), "stream_mode": []string{"values", "updates"}})
	resp, err := http.Post(c.base+"/threads/"+th+"/runs/stream", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := sse(t, resp.Body)
	require.NotEmpty(t, events)
	assert.Equal(t, "metadata", events[0][0])
	assert.Contains(t, events[0][1], `"run_id"`)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e[0])
	}
	assert.Contains(t, kinds, "updates")
	last := events[len(events)-1]
	assert.Equal(t, "values", last[0])
	assert.Contains(t, last[1], `"finished: stream me"`)

	// A paused run's last values carry the interrupt.
	body, _ = json.Marshal(map[string]any{"assistant_id": "asker", "input": userInput("ask me")})
	resp2, err := http.Post(c.base+"/runs/stream", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp2.Body.Close()
	events = sse(t, resp2.Body)
	assert.Contains(t, events[len(events)-1][1], `"__interrupt__":[{"value":{"question":"which file?"}`)
}

// Wait returns once every run has ended, and with the context's error
// while one still runs.
func TestWait(t *testing.T) {
	srv := agentserver.New(agentserver.Options{})
	require.NoError(t, srv.Add("worker", newWorker(t)))
	t.Cleanup(srv.Close)
	c := &client{t: t, h: srv}
	require.NoError(t, srv.Wait(t.Context()), "no run: nothing to wait for")

	th := c.thread()
	code, slow := c.do("POST", "/threads/"+th+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("slow survey")})
	require.Equal(t, http.StatusOK, code)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, srv.Wait(ctx), context.DeadlineExceeded, "the slow run blocks until it is cancelled")

	code, _ = c.raw("POST", "/threads/"+th+"/runs/"+slow["run_id"].(string)+"/cancel", map[string]any{})
	require.Equal(t, http.StatusNoContent, code)
	other := c.thread()
	code, _ = c.do("POST", "/threads/"+other+"/runs", map[string]any{"assistant_id": "worker", "input": userInput("quick")})
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, srv.Wait(t.Context()))
	_, st := c.do("GET", "/threads/"+other, nil)
	assert.Equal(t, "finished: quick", lastContent(st["values"].(map[string]any)))
}
