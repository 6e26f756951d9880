package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

func echoTool(t testing.TB) tool.Tool {
	return tool.Must(tool.New("echo", "Echoes its input.", func(_ context.Context, a echoArgs) (string, error) {
		return "echo: " + a.Text, nil
	}))
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func addTool() tool.Tool {
	return tool.Must(tool.New("add", "Adds two integers.", func(_ context.Context, a addArgs) (string, error) {
		return fmt.Sprint(a.A + a.B), nil
	}))
}

func failingTool() tool.Tool {
	return tool.Must(tool.New("explode", "Always fails.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("disk on fire")
	}))
}

// roles renders a transcript compactly for comparisons.
func roles(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role)
		if m.Role == llm.RoleTool {
			s += "(" + m.Name + ")"
			if m.IsError {
				s += "!"
			}
		}
		if t := m.Text(); t != "" {
			s += ": " + t
		}
		for _, tc := range m.ToolCalls {
			s += " -> " + tc.Name + string(tc.Args)
		}
		out = append(out, s)
	}
	return out
}

func TestLoop(t *testing.T) {
	tests := []struct {
		name      string
		steps     []fakes.Step
		tools     []tool.Tool
		want      []string
		wantSteps int
	}{
		{
			name:      "plain answer",
			steps:     []fakes.Step{fakes.Reply("Paris.")},
			want:      []string{"user: capital of France?", "assistant: Paris."},
			wantSteps: 1,
		},
		{
			name: "multi-step tool loop",
			steps: []fakes.Step{
				fakes.Calls("", fakes.Call("echo", `{"text":"one"}`)),
				fakes.Calls("again", fakes.Call("add", `{"a":2,"b":3}`)),
				fakes.Reply("done"),
			},
			tools: []tool.Tool{echoTool(t), addTool()},
			want: []string{
				"user: capital of France?",
				`assistant -> echo{"text":"one"}`,
				"tool(echo): echo: one",
				`assistant: again -> add{"a":2,"b":3}`,
				"tool(add): 5",
				"assistant: done",
			},
			wantSteps: 5,
		},
		{
			name: "parallel tool calls keep call order",
			steps: []fakes.Step{
				fakes.Calls("", fakes.Call("add", `{"a":1,"b":1}`), fakes.Call("echo", `{"text":"x"}`), fakes.Call("add", `{"a":2,"b":2}`)),
				fakes.Reply("ok"),
			},
			tools: []tool.Tool{echoTool(t), addTool()},
			want: []string{
				"user: capital of France?",
				`assistant -> add{"a":1,"b":1} -> echo{"text":"x"} -> add{"a":2,"b":2}`,
				"tool(add): 2", "tool(echo): echo: x", "tool(add): 4",
				"assistant: ok",
			},
			wantSteps: 3,
		},
		{
			name:  "tool error becomes an error message",
			steps: []fakes.Step{fakes.Calls("", fakes.Call("explode", `{}`)), fakes.Reply("sorry")},
			tools: []tool.Tool{failingTool()},
			want: []string{
				"user: capital of France?", "assistant -> explode{}",
				"tool(explode)!: Error: disk on fire", "assistant: sorry",
			},
			wantSteps: 3,
		},
		{
			name:  "unknown tool lists the available tools",
			steps: []fakes.Step{fakes.Calls("", fakes.Call("teleport", `{}`)), fakes.Reply("fine")},
			tools: []tool.Tool{echoTool(t), addTool()},
			want: []string{
				"user: capital of France?", "assistant -> teleport{}",
				`tool(teleport)!: Error: tool "teleport" does not exist. Available tools: echo, add.`, "assistant: fine",
			},
			wantSteps: 3,
		},
		{
			name:  "invalid arguments are reported, not crashed on",
			steps: []fakes.Step{fakes.Calls("", fakes.Call("add", `{"a":"two"}`)), fakes.Reply("fine")},
			tools: []tool.Tool{addTool()},
			want: []string{
				"user: capital of France?", `assistant -> add{"a":"two"}`,
				`tool(add)!: Error: invalid arguments for tool add: validating root: validating /properties/a: type: two has type "string", want "integer". Fix the arguments and call the tool again.`,
				"assistant: fine",
			},
			wantSteps: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := fakes.NewScripted(tt.steps...)
			a, err := agent.New(agent.Config{Model: model, Tools: tt.tools})
			require.NoError(t, err)
			res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("capital of France?")}})
			require.NoError(t, err)
			if diff := cmp.Diff(tt.want, roles(res.State.Messages)); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
			assert.Equal(t, tt.wantSteps, res.Steps)
			assert.Zero(t, model.Remaining(), "script not fully consumed")
			for i, m := range res.State.Messages {
				assert.Equal(t, fmt.Sprintf("msg-%d", i+1), m.ID, "stable message ids")
			}
		})
	}
}

func TestToolsVisibleToModel(t *testing.T) {
	model := fakes.NewScripted(fakes.Reply("hi"))
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{echoTool(t)}, System: []llm.Block{llm.TextBlock("be brief")}})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hello")}})
	require.NoError(t, err)
	req := model.Requests()[0]
	assert.Equal(t, "be brief", req.SystemText())
	require.Len(t, req.Tools, 1)
	assert.Equal(t, "echo", req.Tools[0].Name)
	assert.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string","description":"text to echo"}},"required":["text"],"additionalProperties":false}`, string(req.Tools[0].Parameters))
}

func TestRecursionLimit(t *testing.T) {
	var steps []fakes.Step
	for range 10 {
		steps = append(steps, fakes.Calls("", fakes.Call("echo", `{"text":"again"}`)))
	}
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(steps...), Tools: []tool.Tool{echoTool(t)}})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("loop")}}, agent.WithRecursionLimit(4))
	var rle *agent.RecursionLimitError
	require.ErrorAs(t, err, &rle)
	assert.Equal(t, 4, rle.Limit)
	assert.Contains(t, err.Error(), "recursion limit of 4 steps")
}

func TestScriptExhaustedIsAnError(t *testing.T) {
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("echo", `{"text":"x"}`))), Tools: []tool.Tool{echoTool(t)}})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.ErrorIs(t, err, fakes.ErrExhausted)
	assert.Contains(t, err.Error(), "call 2")
}

func TestInjectedModelError(t *testing.T) {
	boom := errors.New("upstream 500")
	model := fakes.NewScripted(fakes.Calls("", fakes.Call("echo", `{"text":"x"}`)), fakes.Reply("never")).FailOn(2, boom)
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{echoTool(t)}})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.ErrorIs(t, err, boom)
}

func TestNewRejectsBadConfig(t *testing.T) {
	m := fakes.NewScripted()
	tests := []struct {
		name string
		cfg  agent.Config
		want string
	}{
		{"no model", agent.Config{}, "no model"},
		{"duplicate tools", agent.Config{Model: m, Tools: []tool.Tool{addTool(), addTool()}}, `two tools are named "add"`},
		{"duplicate middleware", agent.Config{Model: m, Middleware: []agent.Middleware{&recorder{name: "A"}, &recorder{name: "A"}}}, `"A" appears twice`},
		{"bad response schema", agent.Config{Model: m, ResponseFormat: &agent.ResponseFormat{Schema: json.RawMessage(`{"type": 3}`)}}, "response format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// recorder is a middleware that logs every hook it sees into a shared log.
type recorder struct {
	agent.Base
	name string
	log  *[]string
	mu   *sync.Mutex
	jump map[string]agent.Jump // hook → jump to return
}

func (r *recorder) Name() string { return r.name }

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.log = append(*r.log, r.name+"."+s)
}

func (r *recorder) hook(h string) (*agent.Update, error) {
	r.add(h)
	if j, ok := r.jump[h]; ok {
		return &agent.Update{JumpTo: j}, nil
	}
	return nil, nil
}

func (r *recorder) BeforeAgent(context.Context, *agent.State) (*agent.Update, error) {
	return r.hook("before_agent")
}
func (r *recorder) BeforeModel(context.Context, *agent.State) (*agent.Update, error) {
	return r.hook("before_model")
}
func (r *recorder) AfterModel(context.Context, *agent.State) (*agent.Update, error) {
	return r.hook("after_model")
}
func (r *recorder) AfterAgent(context.Context, *agent.State) (*agent.Update, error) {
	return r.hook("after_agent")
}
func (r *recorder) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	r.add("wrap_model:enter")
	resp, err := next(ctx, req.AppendSystem("from "+r.name))
	r.add("wrap_model:exit")
	return resp, err
}
func (r *recorder) WrapToolCall(ctx context.Context, req *agent.ToolRequest, next agent.ToolHandler) (*agent.ToolResponse, error) {
	r.add("wrap_tool:enter")
	resp, err := next(ctx, req)
	r.add("wrap_tool:exit")
	return resp, err
}

func newRecorders(names ...string) ([]agent.Middleware, *[]string) {
	log := &[]string{}
	mu := &sync.Mutex{}
	var mws []agent.Middleware
	for _, n := range names {
		mws = append(mws, &recorder{name: n, log: log, mu: mu})
	}
	return mws, log
}

func TestHookOrder(t *testing.T) {
	mws, log := newRecorders("A", "B", "C")
	model := fakes.NewScripted(fakes.Calls("", fakes.Call("echo", `{"text":"x"}`)), fakes.Reply("done"))
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{echoTool(t)}, Middleware: mws, System: []llm.Block{llm.TextBlock("base")}})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	modelTurn := []string{
		"A.before_model", "B.before_model", "C.before_model",
		"A.wrap_model:enter", "B.wrap_model:enter", "C.wrap_model:enter",
		"C.wrap_model:exit", "B.wrap_model:exit", "A.wrap_model:exit",
		"C.after_model", "B.after_model", "A.after_model",
	}
	var want []string
	want = append(want, "A.before_agent", "B.before_agent", "C.before_agent")
	want = append(want, modelTurn...)
	want = append(want, "A.wrap_tool:enter", "B.wrap_tool:enter", "C.wrap_tool:enter", "C.wrap_tool:exit", "B.wrap_tool:exit", "A.wrap_tool:exit")
	want = append(want, modelTurn...)
	want = append(want, "C.after_agent", "B.after_agent", "A.after_agent")
	if diff := cmp.Diff(want, *log); diff != "" {
		t.Errorf("hook order (-want +got):\n%s", diff)
	}
	// System prompt fragments accumulate in stack order.
	assert.Equal(t, "base\n\nfrom A\n\nfrom B\n\nfrom C", model.Requests()[0].SystemText())
}

func TestJumpToEnd(t *testing.T) {
	mws, log := newRecorders("A", "B")
	mws[0].(*recorder).jump = map[string]agent.Jump{"before_model": agent.JumpEnd}
	model := fakes.NewScripted()
	a, err := agent.New(agent.Config{Model: model, Middleware: mws})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	assert.Zero(t, model.CallCount(), "the model must not be called")
	assert.Equal(t, []string{"A.before_agent", "B.before_agent", "A.before_model", "B.after_agent", "A.after_agent"}, *log)
	assert.Equal(t, 0, res.Steps)
}

func TestAfterAgentJumpBackToModel(t *testing.T) {
	// An after-agent hook may send the agent back (the rubric grader does).
	var calls atomic.Int32
	mw := &jumpOnce{calls: &calls}
	model := fakes.NewScripted(fakes.Reply("draft"), fakes.Reply("final"))
	a, err := agent.New(agent.Config{Model: model, Middleware: []agent.Middleware{mw}})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("write")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"user: write", "assistant: draft", "user: revise please", "assistant: final"}, roles(res.State.Messages))
}

type jumpOnce struct {
	agent.Base
	calls *atomic.Int32
}

func (*jumpOnce) Name() string { return "JumpOnce" }
func (j *jumpOnce) AfterAgent(context.Context, *agent.State) (*agent.Update, error) {
	if j.calls.Add(1) > 1 {
		return nil, nil
	}
	return &agent.Update{Messages: []llm.Message{llm.User("revise please")}, JumpTo: agent.JumpModel}, nil
}

var answerSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string"}},"required":["city","country"],"additionalProperties":false}`)

func TestStructuredOutput(t *testing.T) {
	t.Run("valid answer through the response tool", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Calls("", fakes.Call("final_answer", `{"city": "Mexico City", "country": "Mexico"}`)))
		a, err := agent.New(agent.Config{Model: model, ResponseFormat: &agent.ResponseFormat{Name: "final_answer", Schema: answerSchema}})
		require.NoError(t, err)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("largest city?")}})
		require.NoError(t, err)
		assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
		assert.Equal(t, 1, res.Steps)
		req := model.Requests()[0]
		require.Len(t, req.Tools, 1)
		assert.Equal(t, "final_answer", req.Tools[0].Name)
		last := res.State.Messages[len(res.State.Messages)-1]
		assert.Equal(t, llm.RoleTool, last.Role)
		assert.Equal(t, `Returning structured response: {"city":"Mexico City","country":"Mexico"}`, last.Text())
	})
	t.Run("invalid answer is sent back to the model", func(t *testing.T) {
		model := fakes.NewScripted(
			fakes.Calls("", fakes.Call("final_answer", `{"city": "Mexico City"}`)),
			fakes.Calls("", fakes.Call("final_answer", `{"city": "Mexico City", "country": "Mexico"}`)),
		)
		a, err := agent.New(agent.Config{Model: model, ResponseFormat: &agent.ResponseFormat{Name: "final_answer", Schema: answerSchema}})
		require.NoError(t, err)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("largest city?")}})
		require.NoError(t, err)
		assert.Equal(t, 2, res.Steps)
		assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
		second := model.Requests()[1]
		fb := second.Messages[len(second.Messages)-1]
		assert.True(t, fb.IsError)
		assert.Contains(t, fb.Text(), `missing properties: ["country"]`)
	})
	t.Run("provider strategy validates the final text", func(t *testing.T) {
		model := fakes.NewScripted(fakes.Reply(`{"city": "Mexico City"}`), fakes.Reply(`{"city":"Mexico City","country":"Mexico"}`))
		a, err := agent.New(agent.Config{Model: model, ResponseFormat: &agent.ResponseFormat{Schema: answerSchema, Strategy: agent.StrategyProvider}})
		require.NoError(t, err)
		res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("largest city?")}})
		require.NoError(t, err)
		assert.JSONEq(t, `{"city":"Mexico City","country":"Mexico"}`, string(res.State.StructuredResponse))
		require.NotNil(t, model.Requests()[0].ResponseFormat)
		assert.Len(t, model.Requests(), 2)
	})
}

// approval is a tool that asks a human before acting.
func approvalTool(ran *atomic.Int32) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "deploy", Description: "Deploys.", Parameters: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`)},
		Fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			answer, err := agent.Interrupt(ctx, map[string]any{"question": "deploy?", "args": args})
			if err != nil {
				return tool.Result{}, err
			}
			var decision string
			if err := json.Unmarshal(answer, &decision); err != nil {
				return tool.Result{}, err
			}
			if decision != "yes" {
				return tool.Text("deployment rejected by the user"), nil
			}
			ran.Add(1)
			return tool.Text("deployed"), nil
		},
	}
}

func TestInterruptAndResume(t *testing.T) {
	var ran atomic.Int32
	cp := agent.NewMemoryCheckpointer()
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("deploy", `{"env":"prod"}`), fakes.Call("echo", `{"text":"side"}`)),
		fakes.Reply("deployed to prod"),
	)
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{approvalTool(&ran), echoTool(t)}, Checkpointer: cp})
	require.NoError(t, err)

	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("ship it")}}, agent.WithThread("t1"))
	require.NoError(t, err)
	require.True(t, res.Interrupted())
	require.Len(t, res.Interrupts, 1)
	assert.JSONEq(t, `{"question":"deploy?","args":{"env":"prod"}}`, string(res.Interrupts[0].Value))
	assert.Equal(t, int32(0), ran.Load())
	assert.Equal(t, 1, model.CallCount())

	_, err = a.Invoke(t.Context(), agent.Input{Resume: "yes"}, agent.WithThread("other"))
	require.ErrorIs(t, err, agent.ErrNothingToResume)

	res, err = a.Invoke(t.Context(), agent.Input{Resume: "yes"}, agent.WithThread("t1"))
	require.NoError(t, err)
	require.False(t, res.Interrupted())
	assert.Equal(t, int32(1), ran.Load())
	assert.Equal(t, []string{
		"user: ship it",
		`assistant -> deploy{"env":"prod"} -> echo{"text":"side"}`,
		"tool(deploy): deployed", "tool(echo): echo: side",
		"assistant: deployed to prod",
	}, roles(res.State.Messages))

	// The thread continues with the next input.
	model.Append(fakes.Reply("anything else?"))
	res, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("thanks")}}, agent.WithThread("t1"))
	require.NoError(t, err)
	assert.Len(t, res.State.Messages, 7)
	assert.Len(t, model.Requests()[2].Messages, 6, "the model sees the whole thread")
}

func TestInterruptWithoutCheckpointer(t *testing.T) {
	var ran atomic.Int32
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("deploy", `{}`))), Tools: []tool.Tool{approvalTool(&ran)}})
	require.NoError(t, err)
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("ship")}})
	require.ErrorIs(t, err, agent.ErrNoCheckpointer)
}

// blockingTool waits until its context ends.
func blockingTool(started chan<- struct{}) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "wait", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			close(started)
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		},
	}
}

func TestCancellationMidRun(t *testing.T) {
	started := make(chan struct{})
	model := fakes.NewScripted(fakes.Calls("", fakes.Call("wait", `{}`)), fakes.Reply("never"))
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{blockingTool(started)}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, agent.Input{Messages: []llm.Message{llm.User("wait")}})
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancellation")
	}
	assert.Equal(t, 1, model.CallCount(), "no model call after cancellation")
}

// emitter is a middleware that emits a custom event before each model call
// and from inside a tool.
type emitter struct{ agent.Base }

func (emitter) Name() string { return "Emitter" }
func (emitter) BeforeModel(ctx context.Context, s *agent.State) (*agent.Update, error) {
	agent.Emit(ctx, "turn", map[string]int{"messages": len(s.Messages)})
	return nil, nil
}

func slowEcho(name string, d time.Duration) tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: name, Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			time.Sleep(d)
			agent.Emit(ctx, "progress", name)
			return tool.Text(name + " done"), nil
		},
	}
}

func TestStreamEventOrder(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("slow", nil), fakes.Call("fast", nil)),
		fakes.Reply("finished"),
	)
	a, err := agent.New(agent.Config{
		Model:      model,
		Tools:      []tool.Tool{slowEcho("slow", 30*time.Millisecond), slowEcho("fast", 0)},
		Middleware: []agent.Middleware{emitter{}},
	})
	require.NoError(t, err)
	var got []string
	var final *agent.Result
	for ev, err := range a.Stream(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}) {
		require.NoError(t, err)
		s := fmt.Sprintf("%d %s", ev.Step, ev.Type)
		switch ev.Type {
		case agent.EventCustom:
			s += " " + ev.Name + " " + string(ev.Payload)
		case agent.EventToolStart, agent.EventToolEnd:
			s += " " + ev.ToolCall.Name
		case agent.EventModelEnd:
			s += fmt.Sprintf(" in=%d out=%d", ev.Response.Usage.InputTokens, ev.Response.Usage.OutputTokens)
		case agent.EventDone:
			final = ev.Result
		}
		got = append(got, s)
	}
	want := []string{
		`0 custom turn {"messages":1}`,
		"1 model_start",
		"1 model_end in=11 out=3",
		"2 tool_start slow",
		"2 tool_start fast",
		`2 custom progress "slow"`,
		"2 tool_end slow",
		`2 custom progress "fast"`,
		"2 tool_end fast",
		`2 custom turn {"messages":4}`,
		"3 model_start",
		"3 model_end in=19 out=2",
		"3 done",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	require.NotNil(t, final)
	assert.Equal(t, "finished", final.Text())
	assert.Equal(t, llm.Usage{InputTokens: 30, OutputTokens: 5}, final.Usage)
}

func TestStreamStopCancelsRun(t *testing.T) {
	model := fakes.NewScripted(fakes.Calls("", fakes.Call("echo", `{"text":"a"}`)), fakes.Reply("b"))
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{echoTool(t)}})
	require.NoError(t, err)
	for ev := range a.Stream(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}) {
		if ev.Type == agent.EventModelEnd {
			break
		}
	}
	assert.Equal(t, 1, model.CallCount())
}

// privateKeys declares one public and one private key.
type privateKeys struct{ agent.Base }

func (privateKeys) Name() string { return "Keys" }
func (privateKeys) StateKeys() []agent.StateKey {
	return []agent.StateKey{{Name: "public_note"}, {Name: "_secret", Private: true}, {Name: "log", Reduce: appendReducer}}
}
func (privateKeys) BeforeAgent(context.Context, *agent.State) (*agent.Update, error) {
	u := &agent.Update{}
	u.MustValue("public_note", "hi").MustValue("_secret", 42).MustValue("log", []string{"start"})
	return u, nil
}
func (privateKeys) AfterAgent(context.Context, *agent.State) (*agent.Update, error) {
	return (&agent.Update{}).MustValue("log", []string{"end"}), nil
}

func appendReducer(cur, upd json.RawMessage) (json.RawMessage, error) {
	var a, b []string
	if cur != nil {
		if err := json.Unmarshal(cur, &a); err != nil {
			return nil, err
		}
	}
	if err := json.Unmarshal(upd, &b); err != nil {
		return nil, err
	}
	return json.Marshal(append(a, b...))
}

func TestStateKeys(t *testing.T) {
	cp := agent.NewMemoryCheckpointer()
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Reply("ok")), Middleware: []agent.Middleware{privateKeys{}}, Checkpointer: cp})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithThread("t"))
	require.NoError(t, err)
	note, ok := agent.Value[string](res.State, "public_note")
	assert.True(t, ok)
	assert.Equal(t, "hi", note)
	_, ok = agent.Value[int](res.State, "_secret")
	assert.False(t, ok, "private keys stay out of the result")
	logv, _ := agent.Value[[]string](res.State, "log")
	assert.Equal(t, []string{"start", "end"}, logv, "reducer merges writes")
	full, err := a.GetState(t.Context(), "t")
	require.NoError(t, err)
	secret, ok := agent.Value[int](full, "_secret")
	assert.True(t, ok)
	assert.Equal(t, 42, secret)
	assert.Equal(t, []string{"_secret"}, a.PrivateKeys())
}

// fileTool writes a file through a state update and reads it back in the same call.
func fileTool() tool.Tool {
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "touch", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			if err := agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{"/a.txt": {Content: "A"}}}); err != nil {
				return tool.Result{}, err
			}
			st := agent.ToolState(ctx)
			return tool.Text("read back: " + st.Files["/a.txt"].Content), nil
		},
	}
}

func TestToolStateUpdates(t *testing.T) {
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("touch", nil)), fakes.Reply("ok")), Tools: []tool.Tool{fileTool()}})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}, Files: map[string]agent.FileData{"/seed.txt": {Content: "S"}}})
	require.NoError(t, err)
	assert.Equal(t, "A", res.State.Files["/a.txt"].Content)
	assert.Equal(t, "S", res.State.Files["/seed.txt"].Content)
	assert.Contains(t, roles(res.State.Messages), "tool(touch): read back: A")
	require.ErrorIs(t, agent.UpdateState(t.Context(), &agent.Update{Todos: []agent.Todo{}}), agent.ErrNoToolCall)
}

func TestToolPanicIsContained(t *testing.T) {
	p := &tool.Func{ToolSpec: llm.ToolSpec{Name: "boom", Parameters: json.RawMessage(`{"type":"object"}`)}, Fn: func(context.Context, json.RawMessage) (tool.Result, error) {
		panic("nil map")
	}}
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("boom", nil)), fakes.Reply("ok")), Tools: []tool.Tool{p}})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	m := res.State.Messages[2]
	assert.True(t, m.IsError)
	assert.True(t, strings.HasPrefix(m.Text(), "Error: tool boom crashed: nil map"))
}

func TestToolInterruptsTwice(t *testing.T) {
	// A tool that asks two questions in turn gets the first answer replayed
	// when it re-runs for the second.
	var asked []string
	twoQ := &tool.Func{
		ToolSpec: llm.ToolSpec{Name: "survey", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			a1, err := agent.Interrupt(ctx, "name?")
			if err != nil {
				return tool.Result{}, err
			}
			a2, err := agent.Interrupt(ctx, "colour?")
			if err != nil {
				return tool.Result{}, err
			}
			asked = append(asked, string(a1)+"/"+string(a2))
			return tool.Text(string(a1) + " likes " + string(a2)), nil
		},
	}
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("survey", nil)), fakes.Reply("noted")), Tools: []tool.Tool{twoQ}, Checkpointer: agent.NewMemoryCheckpointer()})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("survey me")}}, agent.WithThread("s"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, `"name?"`, string(res.Interrupts[0].Value))
	res, err = a.Invoke(t.Context(), agent.Input{Resume: "Ada"}, agent.WithThread("s"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, `"colour?"`, string(res.Interrupts[0].Value))
	res, err = a.Invoke(t.Context(), agent.Input{Resume: "blue"}, agent.WithThread("s"))
	require.NoError(t, err)
	require.False(t, res.Interrupted())
	assert.Equal(t, []string{`"Ada"/"blue"`}, asked, "the tool completed exactly once")
	assert.Contains(t, roles(res.State.Messages), `tool(survey): "Ada" likes "blue"`)
}

// lateWriter records a state change after the tool returned.
type lateWriter struct{ agent.Base }

func (lateWriter) Name() string { return "LateWriter" }
func (lateWriter) WrapToolCall(ctx context.Context, req *agent.ToolRequest, next agent.ToolHandler) (*agent.ToolResponse, error) {
	resp, err := next(ctx, req)
	if err != nil {
		return resp, err
	}
	return resp, agent.UpdateState(ctx, &agent.Update{Files: map[string]*agent.FileData{"/late.txt": {Content: "after " + req.Call.Name}}})
}

func TestUpdatesFromToolWrappersAfterTheToolAreKept(t *testing.T) {
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Calls("", fakes.Call("touch", nil)), fakes.Reply("ok")), Tools: []tool.Tool{fileTool()}, Middleware: []agent.Middleware{lateWriter{}}})
	require.NoError(t, err)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
	require.NoError(t, err)
	assert.Equal(t, "A", res.State.Files["/a.txt"].Content)
	assert.Equal(t, "after touch", res.State.Files["/late.txt"].Content)
}

// howCalled records whether each call came through Generate or Stream.
type howCalled struct {
	*fakes.Scripted
	mu    sync.Mutex
	calls []string
}

func (h *howCalled) note(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, s)
}

func (h *howCalled) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	h.note("generate")
	return h.Scripted.Generate(ctx, req)
}

func (h *howCalled) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	h.note("stream")
	return h.Scripted.Stream(ctx, req)
}

// TestNestedAgentsInheritTokenStreaming: a subagent run from a streaming
// run streams too, unless it is told otherwise (as the rubric grader is).
func TestNestedAgentsInheritTokenStreaming(t *testing.T) {
	for _, tc := range []struct {
		name        string
		parent      []agent.Option
		child       []agent.Option
		parentCalls []string
		childCalls  []string
	}{
		{"plain", nil, nil, []string{"generate", "generate"}, []string{"generate"}},
		{"streaming parent", []agent.Option{agent.WithTokenStream()}, nil, []string{"stream", "stream"}, []string{"stream"}},
		{"child opts out", []agent.Option{agent.WithTokenStream()}, []agent.Option{agent.WithTokenStreaming(false)}, []string{"stream", "stream"}, []string{"generate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			childModel := &howCalled{Scripted: fakes.NewScripted(fakes.Reply("child done"))}
			child, err := agent.New(agent.Config{Name: "child", Model: childModel})
			require.NoError(t, err)
			ask := tool.Must(tool.New("ask", "Asks the child agent.", func(ctx context.Context, _ struct{}) (string, error) {
				res, err := child.Invoke(ctx, agent.Input{Messages: []llm.Message{llm.User("help")}}, tc.child...)
				if err != nil {
					return "", err
				}
				return res.Text(), nil
			}))
			parentModel := &howCalled{Scripted: fakes.NewScripted(fakes.Calls("", fakes.Call("ask", nil)), fakes.Reply("done"))}
			parent, err := agent.New(agent.Config{Model: parentModel, Tools: []tool.Tool{ask}})
			require.NoError(t, err)
			res, err := parent.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, tc.parent...)
			require.NoError(t, err)
			assert.Equal(t, "done", res.Text())
			assert.Equal(t, tc.parentCalls, parentModel.calls)
			assert.Equal(t, tc.childCalls, childModel.calls)
		})
	}
}
