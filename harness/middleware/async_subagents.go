package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// AsyncSubAgent is a subagent that runs on a remote LangGraph server: the
// agent starts it, keeps working, and checks on it later.
type AsyncSubAgent struct {
	Name        string            `json:"name" yaml:"name"`
	Description string            `json:"description" yaml:"description"`
	GraphID     string            `json:"graph_id" yaml:"graph_id"`
	URL         string            `json:"url,omitempty" yaml:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// AsyncTask is what the agent remembers about one launched task (state key
// "async_tasks", keyed by task id).
type AsyncTask struct {
	TaskID        string `json:"task_id"`
	AgentName     string `json:"agent_name"`
	ThreadID      string `json:"thread_id"`
	RunID         string `json:"run_id"`
	Status        string `json:"status"`
	CreatedAt     string `json:"created_at"`
	LastCheckedAt string `json:"last_checked_at"`
	LastUpdatedAt string `json:"last_updated_at"`
}

// AsyncTasksKey is the state key holding the tracked tasks.
const AsyncTasksKey = "async_tasks"

// AsyncSubAgentOptions configures AsyncSubAgentMiddleware.
type AsyncSubAgentOptions struct {
	SubAgents []AsyncSubAgent
	// SystemPrompt, when set, is appended to every model call with the list of types.
	SystemPrompt string
	// ToolDescriptions replaces the descriptions of the five tools by tool
	// name; "{available_agents}" in start_async_task's is replaced by the
	// list of async subagents.
	ToolDescriptions map[string]string
	// HTTPClient talks to the LangGraph servers (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Local serves the graphs of async subagents that have no URL, in
	// process: the deployment this agent is part of (in Deep Agents such a
	// subagent runs on the same LangGraph server), such as the
	// harness/agentserver that serves it. Its requests never touch the network.
	Local http.Handler
}

// AsyncSubAgentMiddleware gives the agent tools to start, check, update,
// cancel and list tasks on remote LangGraph deployments.
type AsyncSubAgentMiddleware struct {
	agent.Base
	opts   AsyncSubAgentOptions
	byName map[string]AsyncSubAgent
	tools  []tool.Tool
	mu     sync.Mutex
}

// NewAsyncSubAgentMiddleware validates the specs and builds the tools.
func NewAsyncSubAgentMiddleware(opts AsyncSubAgentOptions) (*AsyncSubAgentMiddleware, error) {
	if len(opts.SubAgents) == 0 {
		return nil, errors.New("AsyncSubAgentMiddleware: at least one async subagent must be specified")
	}
	m := &AsyncSubAgentMiddleware{opts: opts, byName: map[string]AsyncSubAgent{}}
	var dups []string
	for _, sa := range opts.SubAgents {
		if sa.Name == "" || sa.GraphID == "" {
			return nil, fmt.Errorf("AsyncSubAgentMiddleware: async subagent %q needs a name and a graph_id", sa.Name)
		}
		if _, dup := m.byName[sa.Name]; dup {
			dups = append(dups, sa.Name)
		}
		m.byName[sa.Name] = sa
	}
	if len(dups) > 0 {
		slices.Sort(dups)
		return nil, fmt.Errorf("AsyncSubAgentMiddleware: duplicate async subagent names: %s", strings.Join(dups, ", "))
	}
	list := m.agentList()
	mk := func(name, desc, schema string, fn func(context.Context, json.RawMessage) (tool.Result, error)) tool.Tool {
		if d := opts.ToolDescriptions[name]; d != "" {
			desc = strings.ReplaceAll(d, "{available_agents}", list)
		}
		return tool.ValidatedBy(&tool.Func{ToolSpec: llm.ToolSpec{Name: name, Description: desc, Parameters: json.RawMessage(schema)}, Fn: fn}, tool.BuiltinSchema(json.RawMessage(schema)))
	}
	m.tools = []tool.Tool{
		mk("start_async_task", "Start a long-running task on a remote subagent and return at once with its task_id; the subagent keeps working while you do other things.\n\nAvailable async subagent types:\n"+list+"\n\nThe description must be self-contained: the remote agent sees nothing else.",
			`{"type":"object","properties":{"description":{"type":"string","description":"Complete instructions for the remote subagent."},"subagent_type":{"type":"string","description":"One of the async subagent types."}},"required":["description","subagent_type"]}`, m.start),
		mk("check_async_task", "Get the current status of an async task and, when it has finished, its result. Statuses you saw earlier may be stale: call this to know.",
			`{"type":"object","properties":{"task_id":{"type":"string"}},"required":["task_id"]}`, m.check),
		mk("update_async_task", "Send new instructions to a running async task; the remote subagent drops what it was doing and continues with the message on the same thread.",
			`{"type":"object","properties":{"task_id":{"type":"string"},"message":{"type":"string","description":"The new instructions."}},"required":["task_id","message"]}`, m.update),
		mk("cancel_async_task", "Cancel an async task that is no longer needed.",
			`{"type":"object","properties":{"task_id":{"type":"string"}},"required":["task_id"]}`, m.cancel),
		mk("list_async_tasks", "List the async tasks you launched with their live status. Use status_filter to narrow the list.",
			`{"type":"object","properties":{"status_filter":{"anyOf":[{"type":"string","enum":["running","success","error","cancelled","all"]},{"type":"null"}],"default":null}}}`, m.list),
	}
	return m, nil
}

// WithOverrides implements Overridable: a profile's descriptions apply to
// the tools the options left with their defaults.
func (m *AsyncSubAgentMiddleware) WithOverrides(o TextOverrides) agent.Middleware {
	var descs map[string]string
	for _, t := range m.tools {
		name := t.Spec().Name
		if d, ok := o.overrideFor(name, m.opts.ToolDescriptions[name] != ""); ok && d != "" {
			if descs == nil {
				descs = maps.Clone(m.opts.ToolDescriptions)
				if descs == nil {
					descs = map[string]string{}
				}
			}
			descs[name] = d
		}
	}
	if descs == nil {
		return m
	}
	opts := m.opts
	opts.ToolDescriptions = descs
	c, err := NewAsyncSubAgentMiddleware(opts)
	if err != nil {
		return m // unreachable: m was built from the same subagents
	}
	return c
}

func (m *AsyncSubAgentMiddleware) agentList() string {
	var lines []string
	for _, sa := range m.opts.SubAgents {
		lines = append(lines, "- "+sa.Name+": "+sa.Description)
	}
	return strings.Join(lines, "\n")
}

// Name implements agent.Middleware.
func (m *AsyncSubAgentMiddleware) Name() string { return AsyncSubAgentName }

// Tools implements agent.Middleware.
func (m *AsyncSubAgentMiddleware) Tools() []tool.Tool { return m.tools }

// StateKeys implements agent.Middleware: tasks merge per task id.
func (m *AsyncSubAgentMiddleware) StateKeys() []agent.StateKey {
	return []agent.StateKey{{Name: AsyncTasksKey, Reduce: mergeTasks}}
}

func mergeTasks(cur, upd json.RawMessage) (json.RawMessage, error) {
	tasks := map[string]AsyncTask{}
	if len(cur) > 0 {
		if err := json.Unmarshal(cur, &tasks); err != nil {
			return nil, err
		}
	}
	var u map[string]AsyncTask
	if err := json.Unmarshal(upd, &u); err != nil {
		return nil, err
	}
	maps.Copy(tasks, u)
	return json.Marshal(tasks)
}

// WrapModelCall appends the optional system prompt with the list of types.
func (m *AsyncSubAgentMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	if m.opts.SystemPrompt != "" {
		req = req.AppendSystem(m.opts.SystemPrompt + "\n\nAvailable async subagent types:\n\n" + m.agentList())
	}
	return next(ctx, req)
}

func stamp(ctx context.Context) string { return agent.Now(ctx).UTC().Format("2006-01-02T15:04:05Z") }

func trackedTasks(ctx context.Context) map[string]AsyncTask {
	tasks, _ := agent.Value[map[string]AsyncTask](agent.ToolState(ctx), AsyncTasksKey)
	return tasks
}

func saveTasks(ctx context.Context, tasks ...AsyncTask) error {
	m := map[string]AsyncTask{}
	for _, t := range tasks {
		m[t.TaskID] = t
	}
	return agent.UpdateState(ctx, (&agent.Update{}).MustValue(AsyncTasksKey, m))
}

func (m *AsyncSubAgentMiddleware) start(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		Description  string `json:"description"`
		SubagentType string `json:"subagent_type"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.InvalidArgs("start_async_task", err), nil
	}
	sa, ok := m.byName[a.SubagentType]
	if !ok {
		var names []string
		for _, s := range m.opts.SubAgents {
			names = append(names, "`"+s.Name+"`")
		}
		return tool.Text(fmt.Sprintf("Unknown async subagent type `%s`. Available types: %s", a.SubagentType, strings.Join(names, ", "))), nil
	}
	c, err := m.client(sa)
	if err != nil {
		return tool.Text(fmt.Sprintf("Failed to launch async subagent '%s': %v", sa.Name, err)), nil
	}
	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	if err := c.do(ctx, http.MethodPost, "/threads", map[string]any{}, &thread); err != nil {
		return tool.Text(fmt.Sprintf("Failed to launch async subagent '%s': %v", sa.Name, err)), nil
	}
	var run struct {
		RunID string `json:"run_id"`
	}
	body := map[string]any{"assistant_id": sa.GraphID, "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": a.Description}}}}
	if err := c.do(ctx, http.MethodPost, "/threads/"+thread.ThreadID+"/runs", body, &run); err != nil {
		return tool.Text(fmt.Sprintf("Failed to launch async subagent '%s': %v", sa.Name, err)), nil
	}
	now := stamp(ctx)
	task := AsyncTask{TaskID: thread.ThreadID, AgentName: sa.Name, ThreadID: thread.ThreadID, RunID: run.RunID, Status: "running", CreatedAt: now, LastCheckedAt: now, LastUpdatedAt: now}
	return tool.Text("Launched async subagent. task_id: " + task.TaskID), saveTasks(ctx, task)
}

func (m *AsyncSubAgentMiddleware) lookup(ctx context.Context, raw json.RawMessage) (AsyncTask, *asyncClient, string) {
	var a struct {
		TaskID string `json:"task_id"`
	}
	_ = json.Unmarshal(raw, &a)
	id := strings.TrimSpace(a.TaskID)
	task, ok := trackedTasks(ctx)[id]
	if !ok {
		return AsyncTask{}, nil, fmt.Sprintf("No tracked task found for task_id: '%s'", id)
	}
	c, err := m.client(m.byName[task.AgentName])
	if err != nil {
		return task, nil, err.Error()
	}
	return task, c, ""
}

type runStatus struct {
	Status string `json:"status"`
	Error  any    `json:"error,omitempty"`
}

func (m *AsyncSubAgentMiddleware) check(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	task, c, msg := m.lookup(ctx, raw)
	if msg != "" {
		return tool.Text(msg), nil
	}
	var run runStatus
	if err := c.do(ctx, http.MethodGet, "/threads/"+task.ThreadID+"/runs/"+task.RunID, nil, &run); err != nil {
		return tool.Text("Failed to get run status: " + err.Error()), nil
	}
	out := map[string]any{"status": run.Status, "thread_id": task.ThreadID}
	switch run.Status {
	case "success":
		var thread struct {
			Values struct {
				Messages []struct {
					Content any `json:"content"`
				} `json:"messages"`
			} `json:"values"`
		}
		if err := c.do(ctx, http.MethodGet, "/threads/"+task.ThreadID, nil, &thread); err != nil {
			out["result"] = "(could not read the result: " + err.Error() + ")"
		} else if msgs := thread.Values.Messages; len(msgs) > 0 {
			out["result"] = contentText(msgs[len(msgs)-1].Content)
		} else {
			out["result"] = "(completed with no output messages)"
		}
	case "error":
		if run.Error != nil {
			out["error"] = fmt.Sprint(run.Error)
		} else {
			out["error"] = "The async subagent run failed without an error message."
		}
	}
	now := stamp(ctx)
	task.LastCheckedAt = now
	if task.Status != run.Status {
		task.Status, task.LastUpdatedAt = run.Status, now
	}
	b, _ := json.Marshal(out)
	return tool.Text(string(b)), saveTasks(ctx, task)
}

func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			if mp, ok := p.(map[string]any); ok {
				if s, ok := mp["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func (m *AsyncSubAgentMiddleware) update(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	task, c, msg := m.lookup(ctx, raw)
	if msg != "" {
		return tool.Text(msg), nil
	}
	var a struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &a)
	var run struct {
		RunID string `json:"run_id"`
	}
	body := map[string]any{"assistant_id": m.byName[task.AgentName].GraphID, "input": map[string]any{"messages": []map[string]string{{"role": "user", "content": a.Message}}}, "multitask_strategy": "interrupt"}
	if err := c.do(ctx, http.MethodPost, "/threads/"+task.ThreadID+"/runs", body, &run); err != nil {
		return tool.Text("Failed to update async subagent: " + err.Error()), nil
	}
	task.RunID, task.Status, task.LastUpdatedAt = run.RunID, "running", stamp(ctx)
	return tool.Text("Updated async subagent. task_id: " + task.TaskID), saveTasks(ctx, task)
}

func (m *AsyncSubAgentMiddleware) cancel(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	task, c, msg := m.lookup(ctx, raw)
	if msg != "" {
		return tool.Text(msg), nil
	}
	if err := c.do(ctx, http.MethodPost, "/threads/"+task.ThreadID+"/runs/"+task.RunID+"/cancel", map[string]any{}, nil); err != nil {
		return tool.Text("Failed to cancel async subagent: " + err.Error()), nil
	}
	task.Status, task.LastUpdatedAt = "cancelled", stamp(ctx)
	return tool.Text("Cancelled async subagent task: " + task.TaskID), saveTasks(ctx, task)
}

var terminal = map[string]bool{"cancelled": true, "success": true, "error": true, "timeout": true, "interrupted": true}

func (m *AsyncSubAgentMiddleware) list(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a struct {
		StatusFilter *string `json:"status_filter"`
	}
	_ = json.Unmarshal(raw, &a)
	tasks := trackedTasks(ctx)
	var picked []AsyncTask
	for _, id := range slices.Sorted(maps.Keys(tasks)) {
		t := tasks[id]
		if a.StatusFilter != nil && *a.StatusFilter != "all" && t.Status != *a.StatusFilter {
			continue
		}
		picked = append(picked, t)
	}
	if len(picked) == 0 {
		return tool.Text("No async subagent tasks tracked."), nil
	}
	now := stamp(ctx)
	lines := []string{fmt.Sprintf("%d tracked task(s):", len(picked))}
	for i, t := range picked {
		if !terminal[t.Status] {
			if c, err := m.client(m.byName[t.AgentName]); err == nil {
				var run runStatus
				if err := c.do(ctx, http.MethodGet, "/threads/"+t.ThreadID+"/runs/"+t.RunID, nil, &run); err == nil {
					t.LastCheckedAt = now
					if run.Status != t.Status {
						t.Status, t.LastUpdatedAt = run.Status, now
					}
				}
			}
			picked[i] = t
		}
		lines = append(lines, fmt.Sprintf("- task_id: %s  agent: %s  status: %s", t.TaskID, t.AgentName, t.Status))
	}
	return tool.Text(strings.Join(lines, "\n")), saveTasks(ctx, picked...)
}

// asyncClient is the part of the LangGraph server API the tools use.
type asyncClient struct {
	base    string
	headers map[string]string
	http    *http.Client
}

func (m *AsyncSubAgentMiddleware) client(sa AsyncSubAgent) (*asyncClient, error) {
	hc := m.opts.HTTPClient
	base := strings.TrimRight(sa.URL, "/")
	if sa.URL == "" {
		if m.opts.Local == nil {
			return nil, fmt.Errorf("async subagent %q has no url, and no in-process server runs its graph %q (give it a url, or serve both agents with `dageval serve`)", sa.Name, sa.GraphID)
		}
		hc, base = &http.Client{Transport: inProcess{m.opts.Local}}, "http://in-process"
	}
	h := map[string]string{"x-auth-scheme": "langsmith"}
	if len(sa.Headers) > 0 {
		h = maps.Clone(sa.Headers)
		if _, ok := h["x-auth-scheme"]; !ok {
			h["x-auth-scheme"] = "langsmith"
		}
	}
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &asyncClient{base: base, headers: h, http: hc}, nil
}

// inProcess is a transport that hands requests to a handler in this
// process. The tools call only endpoints that answer at once (runs are
// started in the background), so a recorded response is enough.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	w := &bufferedResponse{header: http.Header{}}
	t.h.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// bufferedResponse is the http.ResponseWriter of an in-process call: it
// keeps the whole answer, which is all the tools' endpoints give (and
// keeps net/http/httptest, a test package, out of the binary).
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *bufferedResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

func (c *asyncClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, k := range slices.Sorted(maps.Keys(c.headers)) {
		req.Header.Set(k, c.headers[k])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, msg)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: bad response: %w", method, path, err)
	}
	return nil
}
