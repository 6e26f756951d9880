package rubrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/rubrics"
)

func ptr[T any](v T) *T { return &v }

// weatherRecord is a finished run: the agent looked up the weather twice,
// wrote a note and answered.
func weatherRecord() *rubrics.Record {
	rec := record(calls(`get_weather{"city":"Paris","units":"metric"}`, `get_weather{"city":"Lyon"}`, `write_file{"path":"/notes/paris.md"}`))
	rec.Messages = []llm.Message{llm.User("weather in Paris?"), llm.Assistant("It is Sunny and 21C in Paris.")}
	rec.Files = rubrics.StateFiles{
		"/notes/paris.md": {Content: "# Paris\nsunny, 21C\n"},
		"/bin.dat":        {Content: "aGVsbG8=", Encoding: "base64"},
	}
	rec.Usage = rubrics.RoleUsage{
		Agent:     llm.Usage{InputTokens: 1000, OutputTokens: 200},
		Subagents: llm.Usage{InputTokens: 300, OutputTokens: 50, CacheReadTokens: 50},
		Grader:    llm.Usage{InputTokens: 5000},
	}
	rec.Steps = 7
	rec.CostUSD = ptr(0.0123)
	return rec
}

func TestChecks(t *testing.T) {
	tests := []struct {
		check  string
		rec    func(*rubrics.Record)
		name   string
		passed bool
		score  float64
		detail string
	}{
		// final_answer
		{check: "final_answer: {contains: Sunny}", name: "final_answer", passed: true, score: 1, detail: `all 1 conditions hold for the final answer "It is Sunny and 21C in Paris."`},
		{check: "final_answer: {contains: [sunny, 21]}", passed: false, score: 0.5, detail: `1 of 2 conditions hold; the final answer "It is Sunny and 21C in Paris." does not contain "sunny"`},
		{check: "final_answer: {contains: [sunny, 21], ignore_case: true}", passed: true, score: 1},
		{check: "final_answer: {not_contains: [rain, Sunny]}", passed: false, score: 0.5, detail: `contains "Sunny"`},
		{check: `final_answer: {regex: "\\d+C"}`, passed: true, score: 1},
		{check: `final_answer: {regex: "^Rain"}`, passed: false, score: 0, detail: "does not match /^Rain/"},
		{check: `final_answer: {equals: "  It is Sunny and 21C in Paris.\n"}`, passed: true, score: 1},
		{check: `final_answer: {equals: "it is sunny and 21c in paris.", ignore_case: true}`, passed: true, score: 1},
		{check: `final_answer: {equals: "Sunny"}`, passed: false, detail: `does not equal "Sunny"`},
		{check: "final_answer: {json_schema: {type: object, required: [temp]}}", passed: false, detail: "does not match the JSON schema: it is not JSON"},
		{check: "final_answer: {json_schema: {type: object, required: [temp], properties: {temp: {type: number}}}}", passed: true, score: 1,
			rec: func(r *rubrics.Record) {
				r.Messages = append(r.Messages, llm.Assistant("```json\n{\"temp\": 21}\n```"))
			}},
		{check: "final_answer: {json_schema: {type: object, required: [temp], properties: {temp: {type: number}}}}", passed: false, detail: "does not match the JSON schema",
			rec: func(r *rubrics.Record) { r.Messages = append(r.Messages, llm.Assistant(`{"temp": "warm"}`)) }},
		{check: "final_answer: {json_schema: {type: object, required: [temp]}, contains: temp}", passed: true, score: 1,
			rec: func(r *rubrics.Record) { r.StructuredResponse = json.RawMessage(`{"temp":21}`) }},
		{check: "final_answer: {contains: x}", passed: false, detail: "the final answer (empty)", rec: func(r *rubrics.Record) { r.Messages = nil }},

		// tool_called
		{check: "tool_called: get_weather", name: "tool_called(get_weather)", passed: true, score: 1, detail: "expected at least 1 call(s) of get_weather in any agent; found 2"},
		{check: "tool_called: {name: get_weather, args: {city: Paris}}", passed: true, score: 1, detail: `get_weather(args ⊇ {"city":"Paris"})`},
		{check: "tool_called: {name: get_weather, args: {city: Paris}, args_mode: exact}", passed: false, score: 0,
			detail: `expected at least 1 call(s) of get_weather(args = {"city":"Paris"}) in any agent; found 0; non-matching calls of get_weather: get_weather{"city":"Paris","units":"metric"}, get_weather{"city":"Lyon"}`},
		{check: "tool_called: {name: get_weather, times: 1}", passed: false, score: 0.5, detail: "expected exactly 1 call(s)"},
		{check: "tool_called: {name: get_weather, min: 2, max: 3}", passed: true, score: 1, detail: "between 2 and 3"},
		{check: "tool_called: {name: get_weather, min: 4}", passed: false, score: 0.5},
		{check: "tool_called: {name: delete_file}", passed: false, score: 0, detail: "tools called: get_weather, write_file"},
		{check: `tool_called: {name: get_weather, args_regex: {city: "^Ly"}}`, passed: true, score: 1},
		{check: `tool_called: {name: get_weather, args_path: {"$.units": metric}}`, passed: true, score: 1},
		{check: "tool_called: {name: get_weather, agent: researcher}", name: "tool_called(get_weather @researcher)", passed: false, detail: "in researcher; found 0"},

		// tool_not_called
		{check: "tool_not_called: delete_file", name: "tool_not_called(delete_file)", passed: true, score: 1, detail: "expected no call of delete_file in any agent; none was made"},
		{check: "tool_not_called: {name: get_weather, args: {city: Lyon}}", passed: false, score: 0, detail: `found get_weather{"city":"Lyon"} in main`},
		{check: "tool_not_called: {name: get_weather, args: {city: Rome}}", passed: true, score: 1},

		// files
		{check: "file_exists: /notes/paris.md", name: "file_exists(/notes/paris.md)", passed: true, score: 1},
		{check: "file_exists: {path: /notes/rome.md}", passed: false, detail: "expected /notes/rome.md to exist; it does not"},
		{check: "file_exists: /notes/paris.md", passed: false, detail: "the run's files are not available", rec: func(r *rubrics.Record) { r.Files = nil }},
		{check: "file_contains: {path: /notes/paris.md, text: sunny}", name: "file_contains(/notes/paris.md)", passed: true, score: 1},
		{check: "file_contains: {path: /notes/paris.md, text: [sunny, rain], regex: '\\d+C'}", passed: false, score: 2.0 / 3, detail: `/notes/paris.md: "rain" is missing; its content is "# Paris\nsunny, 21C\n"`},
		{check: "file_contains: {path: /bin.dat, text: hello}", passed: true, score: 1},
		{check: "file_contains: {path: /notes/rome.md, text: sunny}", passed: false, detail: "it does not exist"},
		{check: "file_contains: {path: /notes/paris.md, text: x}", passed: false, detail: "could not be read: disk on fire",
			rec: func(r *rubrics.Record) { r.Files = brokenFiles{} }},

		// budgets
		{check: "max_steps: 10", name: "max_steps(10)", passed: true, score: 1, detail: "expected at most 10 steps; the run took 7"},
		{check: "max_steps: 5", passed: false, score: 5.0 / 7},
		{check: "max_tokens: 1600", name: "max_tokens(1600)", passed: true, score: 1, detail: "expected at most 1600 tokens; the run used 1600 (agent 1200, subagents 400)"},
		{check: "max_tokens: 800", passed: false, score: 0.5},
		{check: "max_tokens: 1600", passed: false, detail: "the run's usage is unknown: 1 model calls reported none, the others 1600 tokens",
			rec: func(r *rubrics.Record) { r.Usage.Agent.UnknownCalls = 1 }},
		{check: "max_tokens: 800", passed: false, score: 0.5, detail: "the run used 1600", rec: func(r *rubrics.Record) { r.Usage.Agent.UnknownCalls = 1 }},
		{check: "max_cost_usd: 0.05", name: "max_cost_usd(0.05)", passed: true, score: 1, detail: "expected at most $0.05; the run cost $0.012300"},
		{check: "max_cost_usd: 0.01", passed: false, score: 0.01 / 0.0123},
		{check: "max_cost_usd: 0.01", passed: false, detail: "the run's cost is unknown", rec: func(r *rubrics.Record) { r.CostUSD = nil }},

		// no_error
		{check: "no_error: true", name: "no_error", passed: true, score: 1},
		{check: "no_error: {}", passed: false, detail: "it failed: agent: recursion limit", rec: func(r *rubrics.Record) { r.Err = &agent.RecursionLimitError{Limit: 3} }},
		{check: "no_error:", passed: true, score: 1},
	}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			cs, err := rubrics.ParseChecks("checks.yaml", []byte("- "+tt.check))
			require.NoError(t, err)
			require.Len(t, cs, 1)
			rec := weatherRecord()
			if tt.rec != nil {
				tt.rec(rec)
			}
			res := cs[0].Evaluate(t.Context(), rec)
			assert.Equal(t, tt.passed, res.Passed, res.Detail)
			assert.InDelta(t, tt.score, res.Score, 1e-9, res.Detail)
			assert.Contains(t, res.Detail, tt.detail)
			if tt.name != "" {
				assert.Equal(t, tt.name, res.Name)
			}
		})
	}
}

type brokenFiles struct{}

func (brokenFiles) ReadFile(context.Context, string) (string, error) {
	return "", errors.New("disk on fire")
}

func TestEvaluateAllKeepsOrder(t *testing.T) {
	cs, err := rubrics.ParseChecks("checks.yaml", []byte(`
- no_error: true
- tool_called: {name: get_weather, args: {city: Paris}}
- file_contains: {path: /notes/paris.md, text: sunny}
- trajectory: {mode: in_order, calls: [get_weather, write_file]}
- max_steps: 40
`))
	require.NoError(t, err)
	res := rubrics.EvaluateAll(t.Context(), cs, weatherRecord())
	var names []string
	for _, r := range res {
		names = append(names, r.Name)
		assert.True(t, r.Passed, r.Detail)
	}
	assert.Equal(t, []string{"no_error", "tool_called(get_weather)", "file_contains(/notes/paris.md)", "trajectory(in_order)", "max_steps(40)"}, names)
	raw, err := json.Marshal(res[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"no_error","passed":true,"score":1,"detail":"expected the run to finish without an error; it did"}`, string(raw))
}

func TestMalformedChecks(t *testing.T) {
	tests := []struct{ src, want string }{
		{"tool_called: x\n", "checks.yaml:1:1: want a list, got a mapping"},
		{"- tool_callled: get_weather\n", `checks.yaml:1:3: [0].tool_callled: unknown check "tool_callled" (known checks: final_answer, assistant_text, tool_result, tool_called, tool_not_called, trajectory, same_turn, turns, tool_call_count, file_exists, file_contains, file_equals, file_excludes, file_absent, state, max_steps, max_tokens, max_cost_usd, no_error, not, script)`},
		{"- get_weather\n", "checks.yaml:1:3: [0]: a check is a one-key mapping such as {tool_called: get_weather}; got a string"},
		{"- {tool_called: a, no_error: true}\n", "checks.yaml:1:3: [0]: a check has exactly one kind, got 2 keys (tool_called, no_error)"},
		{"- tool_called: {name: get_weather, argz: {city: Paris}}\n", `checks.yaml:1:36: [0].tool_called.argz: unknown key "argz" (known keys: name, args, args_mode, args_path, args_regex, subagent, agent, times, min, max, turn)`},
		{"- tool_called: {args: {city: Paris}}\n", "checks.yaml:1:16: [0].tool_called: missing key name"},
		{"- tool_called: [get_weather]\n", "checks.yaml:1:16: [0].tool_called: want a tool name or a mapping with name and args, got a list"},
		{"- tool_called: {name: get_weather, args: Paris}\n", "checks.yaml:1:42: [0].tool_called.args: want a mapping of argument names to values, got a string"},
		{"- tool_called: {name: get_weather, args_mode: fuzzy, args: {a: 1}}\n", `checks.yaml:1:47: [0].tool_called.args_mode: unknown args_mode "fuzzy"`},
		{"- tool_called: {name: get_weather, args_mode: exact}\n", "checks.yaml:1:47: [0].tool_called.args_mode: args_mode exact needs args"},
		{"- tool_called: {name: get_weather, args_regex: {city: '(unclosed'}}\n", "checks.yaml:1:55: [0].tool_called.args_regex.city: invalid regular expression"},
		{"- tool_called: {name: get_weather, args_path: {'$.a[x]': 1}}\n", `[0].tool_called.args_path.$.a[x]: JSON path "$.a[x]": [x] is neither an index nor a quoted key`},
		{"- tool_called: {name: get_weather, times: 0}\n", "checks.yaml:1:43: [0].tool_called.times: must be at least 1, got 0"},
		{"- tool_called: {name: get_weather, times: 2, min: 1}\n", "[0].tool_called.times: times cannot be combined with min"},
		{"- tool_called: {name: get_weather, min: 3, max: 2}\n", "checks.yaml:1:49: [0].tool_called.max: max (2) is below min (3)"},
		{"- tool_called: {name: get_weather, subagent: {mode: strict, calls: [a]}}\n", "[0].tool_called.subagent: only task calls start subagents"},
		{"- tool_not_called: {name: rm, agent: ''}\n", "[0].tool_not_called.agent: the agent is empty"},
		{"- trajectory: {calls: [a]}\n", "checks.yaml:1:15: [0].trajectory: missing key mode (one of strict, unordered, superset, subset, in_order, before)"},
		{"- trajectory: {mode: sideways, calls: [a]}\n", `checks.yaml:1:22: [0].trajectory.mode: unknown mode "sideways"`},
		{"- trajectory: {mode: strict}\n", "[0].trajectory: missing key calls"},
		{"- trajectory: {mode: before, calls: [a]}\n", "checks.yaml:1:37: [0].trajectory.calls: mode before needs at least two calls"},
		{"- trajectory: {mode: strict, calls: [a, 3]}\n", "checks.yaml:1:41: [0].trajectory.calls[1]: want a tool name or a mapping with name and args, got a number"},
		{"- trajectory: {mode: strict, calls: [a], threshold: 2}\n", "checks.yaml:1:53: [0].trajectory.threshold: must be greater than 0 and at most 1, got 2"},
		{"- trajectory:\n    mode: strict\n    calls:\n      - name: task\n        subagent: {mode: strict, calls: [a], agent: x}\n", `checks.yaml:5:46: [0].trajectory.calls[0].subagent.agent: unknown key "agent" (known keys: mode, calls, threshold)`},
		{"- final_answer: {}\n", "checks.yaml:1:17: [0].final_answer: final_answer needs at least one of contains, contains_any, not_contains, starts_with, regex, equals, json_schema, is_json, contains_json, is_xml, is_sql, levenshtein, rouge_n, bleu"},
		{"- final_answer: {regex: '['}\n", "checks.yaml:1:25: [0].final_answer.regex: invalid regular expression"},
		{"- final_answer: {contains: []}\n", "checks.yaml:1:28: [0].final_answer.contains: the list is empty"},
		{"- final_answer: {contains: {a: b}}\n", "[0].final_answer.contains: want a string or a list of strings, got a mapping"},
		{"- final_answer: {json_schema: {type: 12}}\n", "checks.yaml:1:31: [0].final_answer.json_schema:"},
		{"- final_answer: {json_schema: object}\n", "[0].final_answer.json_schema: want a JSON Schema mapping, got a string"},
		{"- final_answer: {contains: a, ignore_case: yes please}\n", "[0].final_answer.ignore_case: want true or false, got a string"},
		{"- file_exists: notes/paris.md\n", `checks.yaml:1:16: [0].file_exists: path "notes/paris.md" must be absolute (start with /)`},
		{"- file_exists: {}\n", "[0].file_exists: missing key path"},
		{"- file_contains: {path: /a}\n", "checks.yaml:1:18: [0].file_contains: file_contains needs text or regex"},
		{"- file_contains: {text: a}\n", "[0].file_contains: missing key path"},
		{"- max_steps: many\n", "checks.yaml:1:14: [0].max_steps: want a whole number, got a string"},
		{"- max_steps: 0\n", "checks.yaml:1:14: [0].max_steps: must be at least 1, got 0"},
		{"- max_tokens: 1.5\n", "checks.yaml:1:15: [0].max_tokens: want a whole number, got a number"},
		{"- max_cost_usd: -1\n", "checks.yaml:1:17: [0].max_cost_usd: must be a positive amount in US dollars, got -1"},
		{"- no_error: false\n", "checks.yaml:1:13: [0].no_error: no_error: false checks nothing"},
		{"- no_error: [x]\n", "[0].no_error: want true or {}, got a list"},
		{"- tool_called: {name: *ref}\n", "checks.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := rubrics.ParseChecks("checks.yaml", []byte(tt.src))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var fe *rubrics.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "checks.yaml", fe.File)
		})
	}
}

func TestDecodeChecksInsideASuite(t *testing.T) {
	// A suite decodes the checks of a case from its own document, so errors
	// point into the suite file with the full key path.
	suite := []byte(`name: s
cases:
  - id: one
    checks:
      - tool_called: {name: get_weather}
      - max_steps: lots
`)
	root, err := rubrics.ParseYAML("suite.yaml", suite)
	require.NoError(t, err)
	path, err := yaml.PathString("$.cases[0].checks")
	require.NoError(t, err)
	node, err := path.FilterNode(root)
	require.NoError(t, err)
	_, err = rubrics.DecodeChecks("suite.yaml", node, "cases[0].checks")
	require.EqualError(t, err, "suite.yaml:6:20: cases[0].checks[1].max_steps: want a whole number, got a string")

	one, err := rubrics.DecodeCheck("suite.yaml", node.(*ast.SequenceNode).Values[0], "cases[0].checks[0]")
	require.NoError(t, err)
	assert.Equal(t, "tool_called(get_weather)", one.Name())

	// Inline rubrics decode the same way.
	src := []byte("rubric:\n  - name: a\n    description: d\n    weight: -2\n")
	root, err = rubrics.ParseYAML("suite.yaml", src)
	require.NoError(t, err)
	path, _ = yaml.PathString("$.rubric")
	node, err = path.FilterNode(root)
	require.NoError(t, err)
	_, err = rubrics.DecodeRubric("suite.yaml", node, "rubric")
	require.EqualError(t, err, "suite.yaml:4:13: rubric.criteria[0].weight: weight must be a positive number, got -2")
}

func TestStateFiles(t *testing.T) {
	files := rubrics.StateFiles{"/a": {Content: "plain"}, "/b": {Content: "!!", Encoding: "base64"}}
	got, err := files.ReadFile(t.Context(), "/a")
	require.NoError(t, err)
	assert.Equal(t, "plain", got)
	_, err = files.ReadFile(t.Context(), "/missing")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = files.ReadFile(t.Context(), "/b")
	assert.ErrorContains(t, err, "bad base64")
}

func TestChecksBuiltInGoAreValidated(t *testing.T) {
	rec := weatherRecord()
	for _, c := range []rubrics.Check{
		&rubrics.FinalAnswerCheck{},
		&rubrics.FinalAnswerCheck{TextMatch: rubrics.TextMatch{Regex: "("}},
		&rubrics.ToolCalledCheck{Call: rubrics.CallMatcher{Name: "get_weather"}, Min: 3, Max: 2},
		&rubrics.ToolCalledCheck{Call: rubrics.CallMatcher{Name: "x", Args: rubrics.ArgsMatcher{Mode: "fuzzy"}}},
		&rubrics.ToolNotCalledCheck{Call: rubrics.CallMatcher{Name: ""}},
		&rubrics.FileContainsCheck{Path: "/notes/paris.md"},
	} {
		res := c.Evaluate(t.Context(), rec)
		assert.False(t, res.Passed, c.Name())
		assert.Contains(t, res.Detail, "invalid check: ", c.Name())
	}
	ok := &rubrics.ToolCalledCheck{Call: rubrics.CallMatcher{Name: "get_weather", Args: rubrics.ArgsMatcher{Value: json.RawMessage(`{"city":"Lyon"}`)}}, Agent: rubrics.ScopeMain}
	res := ok.Evaluate(t.Context(), rec)
	assert.True(t, res.Passed, res.Detail)
	assert.Equal(t, "tool_called(get_weather @main)", res.Name)
	assert.Contains(t, res.Detail, "by the main agent")
	assert.Equal(t, fmt.Sprint([]string{"get_weather", "get_weather", "write_file"}), fmt.Sprint(rec.ToolCallNames()))
}
