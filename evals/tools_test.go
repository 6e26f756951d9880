package evals_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// toolResults returns the tool results of a cell's transcript, in order.
func toolResults(t *testing.T, dir, id string) []string {
	t.Helper()
	var d evals.CellDetail
	readJSON(t, dir+"/cells/"+id+".json", &d)
	var out []string
	for _, m := range d.Messages {
		if m.Role == llm.RoleTool {
			s := m.Text()
			if m.IsError {
				s = "ERR " + s
			}
			out = append(out, s)
		}
	}
	return out
}

func TestToolBehaviours(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	twice := func(name, a1, a2 string) []llm.Message {
		return []llm.Message{say("", call(name, a1), call(name, a2)), say("done")}
	}
	m := &convModel{convs: map[string][]llm.Message{
		"fixed":    twice("lookup", `{"q":"a"}`, `{"q":"b"}`),
		"override": twice("lookup", `{"q":"a"}`, `{"q":"b"}`),
		"match":    twice("lookup", `{"q":"a","extra":1}`, `{"q":"zzz"}`),
		// Called in parallel: answers follow the order of the calls in the
		// transcript, not the order the calls happen to run in.
		"sequence": {say("", call("lookup", `{"q":"1"}`), call("lookup", `{"q":"2"}`), call("lookup", `{"q":"3"}`)), say("done")},
		"error":    twice("lookup", `{"q":"a"}`, `{"q":"b"}`),
		"exec":     twice("shell", `{"n":2}`, `{"n":-1}`),
		"env":      {say("", call("printenv", `{}`)), say("done")},
		"slow":     {say("", call("sleepy", `{}`)), say("done")},
		"go":       twice("greet", `{"name":"Ada"}`, `{"name":"Bob"}`),
	}}
	srv := server(t, m)
	t.Setenv("DAGEVAL_LEAK_CHECK", "must-not-leak")
	suite := liveHeader(srv.URL) + `models: [local:m]
agent:
  tools:
    - {name: lookup, parameters: {type: object, properties: {q: {type: string}, extra: {type: integer}}}}
    - {name: shell, parameters: {type: object, properties: {n: {type: integer}}}}
    - {name: printenv}
    - {name: sleepy}
    - {name: greet, parameters: {type: object, properties: {name: {type: string}}, required: [name]}}
tools:
  lookup: {mock: {result: {answer: 42, unit: none}}}
  shell:
    exec:
      command: 'read args; n=$(printf %s "$args" | sed "s/[^0-9-]//g"); if [ "$n" -lt 0 ]; then echo "negative: $n" >&2; exit 3; fi; echo "twice: $((n*2))"'
  printenv: {exec: {command: [sh, -c, 'echo "PATH=$PATH LEAK=${DAGEVAL_LEAK_CHECK:-none} FOO=$FOO"'], env: {FOO: bar}}}
  sleepy: {exec: {command: "sleep 5", timeout: 100ms}}
  greet: {go: greeter}
cases:
  - {id: fixed, input: fixed}
  - id: override
    input: override
    tools: {lookup: {mock: {result: overridden}}}
  - id: match
    input: match
    tools:
      lookup:
        mock:
          match:
            - {args: {q: a}, result: "A!"}
            - {args: {q: b}, error: "b is broken"}
          default: nothing matched
  - id: sequence
    input: sequence
    tools: {lookup: {mock: {sequence: [first, second]}}}
  - id: error
    input: error
    tools: {lookup: {mock: {error: "service down"}}}
  - {id: exec, input: exec}
  - {id: env, input: env}
  - {id: slow, input: slow}
  - {id: go, input: go}
`
	greeter := tool.Must(tool.New("greeter", "Greets someone.", func(_ context.Context, a struct {
		Name string `json:"name"`
	}) (string, error) {
		return "hello " + a.Name, nil
	}))
	out := t.TempDir()
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{OutDir: out, Tools: map[string]tool.Tool{"greeter": greeter}})
	require.Len(t, oc.Results, 9)
	for _, r := range oc.Results {
		require.NotEqual(t, evals.StatusError, r.Status, "%s: %s", r.Case, r.Error)
	}
	want := map[string][]string{
		"fixed":    {`{"answer":42,"unit":"none"}`, `{"answer":42,"unit":"none"}`},
		"override": {"overridden", "overridden"},
		"match":    {"A!", "nothing matched"},
		"sequence": {"first", "second", "ERR Error: lookup was called 3 times; its mock answers only 2 calls"},
		"error":    {"ERR service down", "ERR service down"},
		"exec":     {"twice: 4", "ERR Error: shell failed (exit status 3): negative: -1"},
		"env":      {"PATH=/usr/local/bin:/usr/bin:/bin LEAK=none FOO=bar"},
		"slow":     {"ERR Error: sleepy timed out after 100ms"},
		"go":       {"hello Ada", "hello Bob"},
	}
	for _, r := range oc.Results {
		assert.Equal(t, want[r.Case], toolResults(t, out, r.ID), r.Case)
	}
}

func TestMatchEntryCanBeAnError(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{"go": {say("", call("lookup", `{"q":"b"}`)), say("done")}}}
	srv := server(t, m)
	suite := liveHeader(srv.URL) + `models: [local:m]
agent: {tools: [{name: lookup}]}
cases:
  - id: c
    input: go
    tools: {lookup: {mock: {match: [{args: {q: b}, error: "b is broken"}]}}}
`
	out := t.TempDir()
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{OutDir: out})
	assert.Equal(t, []string{"ERR b is broken"}, toolResults(t, out, oc.Results[0].ID))
}

// A registered Go tool binds by name to a declared tool that the suite
// gives no other behaviour, and an agent factory builds the agent in Go;
// the suite's tool behaviours still replace the factory's tools.
func TestRegisteredToolsAndAgentFactories(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{
		"hi":   {say("", call("clock", `{}`), call("weather", `{"city":"Oslo"}`)), say("it is noon")},
		"mock": {say("", call("weather", `{"city":"Oslo"}`)), say("ok")},
	}}
	srv := server(t, m)
	evals.RegisterTool("clock_test_tool", tool.Must(tool.New("clock", "The time.", func(context.Context, struct{}) (string, error) { return "12:00", nil })))
	weather := tool.Must(tool.New("weather", "Weather.", func(_ context.Context, a struct {
		City string `json:"city"`
	}) (string, error) {
		return "real weather in " + a.City, nil
	}))
	var requested []evals.AgentRequest
	evals.RegisterAgent("factory_test_agent", func(_ context.Context, req evals.AgentRequest) (harness.Config, error) {
		requested = append(requested, req)
		return harness.Config{Name: "fromgo", ModelSpec: "ignored:x", Tools: []tool.Tool{weather}}, nil
	})
	t.Run("go tool by declared name", func(t *testing.T) {
		suite := liveHeader(srv.URL) + `models: [local:m]
agent: {tools: [{name: clock}, {name: weather, parameters: {type: object, properties: {city: {type: string}}}}]}
tools: {clock: {go: clock_test_tool}, weather: {mock: {result: mocked}}}
cases: [{id: c, input: hi}]
`
		out := t.TempDir()
		oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{OutDir: out})
		assert.Equal(t, []string{"12:00", "mocked"}, toolResults(t, out, oc.Results[0].ID))
	})
	t.Run("factory", func(t *testing.T) {
		suite := liveHeader(srv.URL) + `models: [local:m]
agent: {factory: factory_test_agent}
cases:
  - {id: real, input: hi, tools: {clock: {go: clock_test_tool}}}
  - {id: mocked, input: mock, tools: {weather: {mock: {result: "mocked weather"}}}}
`
		out := t.TempDir()
		oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{OutDir: out, Concurrency: 1})
		require.Len(t, oc.Results, 2)
		// The factory's agent has no clock tool, so the first case's clock
		// call fails; its weather tool is the factory's own.
		res := toolResults(t, out, oc.Results[0].ID)
		require.Len(t, res, 2)
		assert.True(t, strings.HasPrefix(res[0], "ERR"), res[0])
		assert.Equal(t, "real weather in Oslo", res[1])
		assert.Equal(t, []string{"mocked weather"}, toolResults(t, out, oc.Results[1].ID))
		require.Len(t, requested, 2)
		assert.Equal(t, "local:m", requested[0].Model, "the factory is told the model under test")
	})
	t.Run("unregistered factory", func(t *testing.T) {
		s, err := evals.Parse(t.TempDir()+"/suite.yaml", []byte(liveHeader(srv.URL)+"models: [local:m]\nagent: {factory: nobody}\ncases: [{id: c, input: hi}]\n"))
		require.NoError(t, err)
		err = s.Validate(t.Context(), evals.Options{Getenv: testEnv})
		require.Error(t, err)
		assert.Regexp(t, `suite.yaml:\d+:\d+: agent.factory: no agent factory is registered as "nobody"`, err.Error())
	})
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data := readFile(t, path)
	require.NoError(t, json.Unmarshal(data, v), path)
}
