package agentserver_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// TestAsyncSubAgentLifecycle drives the five async tools of an assembled
// agent against a served worker, over HTTP and in process: start, check
// while running, update (the running task is interrupted and continues on
// the same thread), check the result, start another, list, cancel, list
// by status and check the cancelled one.
func TestAsyncSubAgentLifecycle(t *testing.T) {
	for _, transport := range []string{"http", "in-process"} {
		t.Run(transport, func(t *testing.T) {
			srv := agentserver.New(agentserver.Options{})
			require.NoError(t, srv.Add("worker", newWorker(t)))
			t.Cleanup(srv.Close)
			spec := harness.SubAgentSpec{Name: "researcher", Description: "researches a topic", GraphID: "worker"}
			c := &client{t: t, h: srv}
			var local *agentserver.Server
			if transport == "http" {
				hs := httptest.NewServer(srv)
				t.Cleanup(hs.Close)
				spec.URL = hs.URL
				c = &client{t: t, base: hs.URL}
			} else {
				local = srv
			}
			cp := agent.NewMemoryCheckpointer()
			clock := func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
			turn := func(call llm.ToolCall) (string, map[string]middleware.AsyncTask) {
				t.Helper()
				cfg := harness.Config{
					Model:        fakes.NewScripted(fakes.Calls("", call), fakes.Reply("ok")),
					SubAgents:    []harness.SubAgentSpec{spec},
					Checkpointer: cp,
				}
				if local != nil {
					cfg.LocalGraphs = local
				}
				a, err := harness.New(cfg)
				require.NoError(t, err)
				res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithThread("main"), agent.WithClock(clock))
				require.NoError(t, err)
				msgs := res.State.Messages
				tasks, _ := agent.Value[map[string]middleware.AsyncTask](res.State, middleware.AsyncTasksKey)
				return msgs[len(msgs)-2].Text(), tasks
			}

			out, tasks := turn(fakes.Call("start_async_task", `{"description":"slow survey of Go HTTP routers","subagent_type":"researcher"}`))
			require.Len(t, tasks, 1)
			var first middleware.AsyncTask
			for _, task := range tasks {
				first = task
			}
			assert.Equal(t, "Launched async subagent. task_id: "+first.TaskID, out)

			out, _ = turn(fakes.Call("check_async_task", `{"task_id":"`+first.TaskID+`"}`))
			assert.Equal(t, `{"status":"running","thread_id":"`+first.TaskID+`"}`, out)

			out, tasks = turn(fakes.Call("update_async_task", `{"task_id":"`+first.TaskID+`","message":"only net/http"}`))
			assert.Equal(t, "Updated async subagent. task_id: "+first.TaskID, out)
			updated := tasks[first.TaskID]
			assert.NotEqual(t, first.RunID, updated.RunID, "an update is a new run on the same thread")
			assert.Equal(t, "success", c.waitDone(updated.ThreadID, updated.RunID)["status"])
			assert.Equal(t, "interrupted", c.waitDone(first.ThreadID, first.RunID)["status"], "the update interrupted the first run")

			out, _ = turn(fakes.Call("check_async_task", `{"task_id":"`+first.TaskID+`"}`))
			assert.Equal(t, `{"result":"finished: only net/http","status":"success","thread_id":"`+first.TaskID+`"}`, out)

			out, tasks = turn(fakes.Call("start_async_task", `{"description":"slow benchmark","subagent_type":"researcher"}`))
			require.Len(t, tasks, 2)
			var second middleware.AsyncTask
			for id, task := range tasks {
				if id != first.TaskID {
					second = task
				}
			}
			assert.Equal(t, "Launched async subagent. task_id: "+second.TaskID, out)

			out, _ = turn(fakes.Call("list_async_tasks", `{}`))
			assert.Contains(t, out, "2 tracked task(s):")
			assert.Contains(t, out, "- task_id: "+first.TaskID+"  agent: researcher  status: success")
			assert.Contains(t, out, "- task_id: "+second.TaskID+"  agent: researcher  status: running")

			out, _ = turn(fakes.Call("cancel_async_task", `{"task_id":"`+second.TaskID+`"}`))
			assert.Equal(t, "Cancelled async subagent task: "+second.TaskID, out)
			assert.Equal(t, "interrupted", c.waitDone(second.ThreadID, second.RunID)["status"])

			out, _ = turn(fakes.Call("list_async_tasks", `{"status_filter":"cancelled"}`))
			assert.Equal(t, "1 tracked task(s):\n- task_id: "+second.TaskID+"  agent: researcher  status: cancelled", out)

			out, _ = turn(fakes.Call("check_async_task", `{"task_id":"`+second.TaskID+`"}`))
			assert.Equal(t, `{"status":"interrupted","thread_id":"`+second.TaskID+`"}`, out)

			// The cancelled task's thread kept its input (it never reached a
			// checkpoint), so a later update sees it.
			out, _ = turn(fakes.Call("update_async_task", `{"task_id":"`+second.TaskID+`","message":"just the summary"}`))
			assert.Equal(t, "Updated async subagent. task_id: "+second.TaskID, out)
			_, tasks = turn(fakes.Call("list_async_tasks", `{"status_filter":"all"}`))
			again := tasks[second.TaskID]
			c.waitDone(again.ThreadID, again.RunID)
			_, th := c.do("GET", "/threads/"+again.ThreadID, nil)
			var texts []any
			for _, m := range th["values"].(map[string]any)["messages"].([]any) {
				texts = append(texts, m.(map[string]any)["content"])
			}
			assert.Equal(t, []any{"slow benchmark", "just the summary", "finished: just the summary"}, texts)
		})
	}
}

// TestAsyncSubAgentWithoutServer reports that nothing runs a URL-less
// subagent's graph when no in-process server is given.
func TestAsyncSubAgentWithoutServer(t *testing.T) {
	a, err := harness.New(harness.Config{
		Model:        fakes.NewScripted(fakes.Calls("", fakes.Call("start_async_task", `{"description":"x","subagent_type":"researcher"}`)), fakes.Reply("ok")),
		SubAgents:    []harness.SubAgentSpec{{Name: "researcher", Description: "researches", GraphID: "worker"}},
		Checkpointer: agent.NewMemoryCheckpointer(),
	})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithThread("main"))
	require.NoError(t, err)
	msgs := res.State.Messages
	assert.Contains(t, msgs[len(msgs)-2].Text(), `async subagent "researcher" has no url, and no in-process server runs its graph "worker"`)
}
