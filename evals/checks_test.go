package evals_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
)

// checkedAgent is an inline agent with two declared tools and a subagent.
const checkedAgent = `
agent:
  name: checked
  tools:
    - {name: get_weather, parameters: {type: object, properties: {city: {type: string}}, required: [city]}}
    - {name: search, parameters: {type: object, properties: {query: {type: string}}, required: [query]}}
  subagents:
    - {name: helper, description: Finds things., system_prompt: You find things with search., tools: [search]}
tools:
  get_weather:
    mock:
      match:
        - {args: {city: Paris}, result: "sunny, 21C"}
        - {args: {city: Tokyo}, result: "rain, 17C"}
  search: {mock: {result: "42"}}
`

// TestEveryCheckKindThroughASuite runs a suite whose cases carry every
// kind of check, each once where it holds and once where it does not,
// against a local provider in live mode, and pins each verdict.
func TestEveryCheckKindThroughASuite(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{
		"weather please": {
			say("", call("get_weather", `{"city":"Paris"}`), call("get_weather", `{"city":"Tokyo"}`)),
			say("", call("write_file", `{"file_path":"/out/report.json","content":"{\"ok\":true}"}`)),
			say(`{"city":"Paris","temp":21}`),
		},
		"delegate it": {
			say("", call("task", `{"subagent_type":"helper","description":"find the answer"}`)),
			say("found: 42"),
		},
		"find the answer": {
			say("", call("search", `{"query":"answer"}`)),
			say("42"),
		},
	}}
	srv := server(t, m)
	// The built-in openai entry points at the local server, so the model is
	// a priced catalog model and the cost checks have a cost to judge.
	suite := "version: 1\nname: checks\nmode: live\n" +
		"providers: {openai: {kind: openai, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: TEST_KEY}}\n" +
		"models: [openai:gpt-5]\n" + checkedAgent + `
cases:
  - id: weather
    input: weather please
    checks:
      - final_answer: {contains: Paris}
      - final_answer: {not_contains: Tokyo}
      - final_answer: {regex: '"temp":\s*2\d'}
      - final_answer: {equals: '{"city":"Paris","temp":21}'}
      - final_answer: {json_schema: {type: object, required: [city, temp], properties: {temp: {type: integer}}}}
      - final_answer: {json_schema: {type: object, required: [humidity]}}
      - tool_called: {name: get_weather, args: {city: Paris}}
      - tool_called: {name: get_weather, args: {city: Tokyo}, args_mode: exact}
      - tool_called: {name: get_weather, args_regex: {city: "^T"}}
      - tool_called: {name: get_weather, args_path: {"$.city": Tokyo}}
      - tool_called: {name: get_weather, times: 2}
      - tool_called: {name: get_weather, max: 1}
      - tool_called: search
      - tool_not_called: search
      - tool_not_called: {name: get_weather, args: {city: Tokyo}}
      - trajectory: {mode: strict, calls: [get_weather, get_weather, write_file]}
      - trajectory: {mode: unordered, calls: [write_file, get_weather, get_weather]}
      - trajectory: {mode: subset, calls: [get_weather, get_weather, write_file, search]}
      - trajectory: {mode: subset, calls: [get_weather, write_file]}
      - trajectory: {mode: superset, calls: [{name: get_weather}, {name: get_weather, args: {city: Paris}}]}
      - trajectory: {mode: in_order, calls: [get_weather, write_file]}
      - trajectory: {mode: before, calls: [write_file, get_weather]}
      - file_exists: /out/report.json
      - file_exists: /missing.txt
      - file_contains: {path: /out/report.json, text: ok}
      - file_contains: {path: /out/report.json, regex: "false"}
      - max_steps: 10
      - max_steps: 3
      - max_tokens: 1000000
      - max_tokens: 10
      - max_cost_usd: 1.0
      - max_cost_usd: 0.000001
      - no_error: true
  - id: delegate
    input: delegate it
    checks:
      - tool_called: {name: search, agent: helper}
      - tool_called: {name: search, agent: main}
      - trajectory: {mode: strict, agent: helper, calls: [search]}
      - trajectory: {mode: superset, calls: [{name: task, subagent: {mode: strict, calls: [search]}}]}
      - trajectory: {mode: superset, calls: [{name: task, subagent: {mode: strict, calls: [get_weather]}}]}
      - trajectory: {mode: strict, agent: all, calls: [task, search]}
      - no_error: true
`
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{Concurrency: 2})
	require.Len(t, oc.Results, 2)

	want := map[string][]bool{
		"weather": {
			true, true, true, true, true, false, // final_answer
			true, true, true, true, true, false, false, // tool_called
			true, false, // tool_not_called
			true, true, true, false, true, true, false, // trajectory (superset: greedy matching would fail it)
			true, false, true, false, // files
			true, false, true, false, true, false, // budgets
			true, // no_error
		},
		"delegate": {true, false, true, true, false, true, true},
	}
	for _, r := range oc.Results {
		require.Equal(t, evals.StatusFail, r.Status, "%s: %s", r.Case, r.Error)
		exp := want[r.Case]
		require.Len(t, r.Checks, len(exp), r.Case)
		for i, c := range r.Checks {
			assert.Equal(t, exp[i], c.Passed, "%s check %d %s: %s", r.Case, i, c.Name, c.Detail)
			if c.Passed {
				assert.Equal(t, 1.0, c.Score, c.Name)
			}
			assert.NotEmpty(t, c.Detail, c.Name)
		}
	}
	w := resultOf(t, oc, "weather")
	assert.True(t, w.CostKnown)
	assert.Greater(t, w.CostUSD, 0.0)
	assert.Equal(t, []string{"get_weather", "get_weather", "write_file"}, w.ToolCalls)
	assert.Equal(t, 5, w.Steps)
	d := resultOf(t, oc, "delegate")
	assert.Positive(t, d.Usage.Subagents.InputTokens, "the helper's tokens count as subagent usage")
	assert.Equal(t, []string{"task"}, d.ToolCalls)
}
