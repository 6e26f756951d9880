package rubrics_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/rubrics"
)

// calls builds a trajectory from "name" or "name{json args}" items, one model
// turn each; items joined with "|" share a turn.
func calls(items ...string) []rubrics.ToolCall {
	var out []rubrics.ToolCall
	for step, item := range items {
		for _, part := range strings.Split(item, "|") {
			name, args := part, "{}"
			if i := strings.IndexByte(part, '{'); i >= 0 {
				name, args = part[:i], part[i:]
			}
			out = append(out, rubrics.ToolCall{ID: fmt.Sprintf("c%d", len(out)+1), Name: name, Args: json.RawMessage(args), Step: step + 1})
		}
	}
	return out
}

func record(main []rubrics.ToolCall, subs ...*rubrics.Trajectory) *rubrics.Record {
	root := &rubrics.Trajectory{Agent: "main", Calls: main}
	rec := &rubrics.Record{Trajectory: root, Runs: []*rubrics.Trajectory{root}}
	rec.Runs = append(rec.Runs, subs...)
	return rec
}

func trajectoryCheck(t *testing.T, yaml string) rubrics.Check {
	t.Helper()
	cs, err := rubrics.ParseChecks("checks.yaml", []byte(yaml))
	require.NoError(t, err)
	require.Len(t, cs, 1)
	return cs[0]
}

func TestTrajectoryModes(t *testing.T) {
	tests := []struct {
		name   string
		check  string
		actual []rubrics.ToolCall
		passed bool
		score  float64
		detail string
	}{
		{"strict exact", "{mode: strict, calls: [search, read, write]}", calls("search", "read", "write"), true, 1, "3 of 3 positions match"},
		{"strict order matters", "{mode: strict, calls: [search, read, write]}", calls("read", "search", "write"), false, 1.0 / 3, "1 of 3 positions match"},
		{"strict extra call", "{mode: strict, calls: [search, write]}", calls("search", "write", "write"), false, 2.0 / 3, "2 of 3 positions match"},
		{"strict parallel calls in any order", "{mode: strict, calls: [search, read, write]}", calls("read|search", "write"), true, 1, ""},
		{"strict parallel turn boundary", "{mode: strict, calls: [search, read, write]}", calls("read", "search|write"), false, 1.0 / 3, ""},
		{"strict empty", "{mode: strict, calls: []}", nil, true, 1, ""},
		{"unordered", "{mode: unordered, calls: [search, read, write]}", calls("write", "search", "read"), true, 1, ""},
		{"unordered missing and extra", "{mode: unordered, calls: [search, read]}", calls("search", "write"), false, 0.5, "missing: read; unexpected: write"},
		{"unordered counts repeats", "{mode: unordered, calls: [search, search]}", calls("search"), false, 2.0 / 3, "missing: search"},
		{"superset allows extras", "{mode: superset, calls: [search, write]}", calls("ls", "search", "read", "write"), true, 1, ""},
		{"superset missing", "{mode: superset, calls: [search, write]}", calls("search"), false, 0.5, "missing: write"},
		{"subset allows missing", "{mode: subset, calls: [search, read, write]}", calls("read"), true, 1, ""},
		{"subset extra", "{mode: subset, calls: [search, read]}", calls("read", "delete"), false, 0.5, "unexpected: delete"},
		{"subset nothing called", "{mode: subset, calls: [search]}", nil, true, 1, ""},
		{"in_order with gaps", "{mode: in_order, calls: [search, write]}", calls("search", "ls", "write"), true, 1, "2 of 2 found in order"},
		{"in_order wrong order", "{mode: in_order, calls: [search, write]}", calls("write", "search"), false, 0.5, "not found in order: write"},
		{"before holds", "{mode: before, calls: [search, write]}", calls("search", "search", "write"), true, 1, "1 of 1 orderings hold"},
		{"before violated", "{mode: before, calls: [search, write]}", calls("write", "search", "write"), false, 0, "the second was called first (call 1, before call 2)"},
		{"before second missing", "{mode: before, calls: [search, write]}", calls("search"), false, 0, "the second was never called"},
		{"before chain partial", "{mode: before, calls: [read, search, write]}", calls("read", "write", "search"), false, 0.5, "1 of 2 orderings hold"},
		{"threshold lets partial pass", "{mode: superset, calls: [a, b, c, d], threshold: 0.75}", calls("a", "c", "d"), true, 0.75, "missing: b"},
		{"any tool", `{mode: strict, calls: [search, "*", write]}`, calls("search", "ls", "write"), true, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := trajectoryCheck(t, "- trajectory: "+tt.check)
			res := c.Evaluate(t.Context(), record(tt.actual))
			assert.Equal(t, tt.passed, res.Passed, res.Detail)
			assert.InDelta(t, tt.score, res.Score, 1e-9, res.Detail)
			assert.Contains(t, res.Detail, tt.detail)
		})
	}
}

// First-fit matching pairs the permissive expectation with the only call the
// strict one could take and reports a false failure; maximum matching does not.
func TestTrajectoryMatchingIsNotGreedy(t *testing.T) {
	actual := calls(`get_weather{"city":"Paris"}`, `get_weather{"city":"London"}`)
	for _, mode := range []string{"superset", "unordered", "subset"} {
		t.Run(mode, func(t *testing.T) {
			c := trajectoryCheck(t, `
- trajectory:
    mode: `+mode+`
    calls:
      - get_weather                                # any arguments
      - {name: get_weather, args: {city: Paris}}   # only the first call fits
`)
			res := c.Evaluate(t.Context(), record(actual))
			assert.True(t, res.Passed, res.Detail)
			assert.InDelta(t, 1, res.Score, 1e-9)
			// What greedy matching would do: the first expectation takes the
			// first call, and the second finds only London.
			greedyFound := 0
			used := map[int]bool{}
			for _, want := range []func(rubrics.ToolCall) bool{
				func(rubrics.ToolCall) bool { return true },
				func(c rubrics.ToolCall) bool { return strings.Contains(string(c.Args), "Paris") },
			} {
				for j, call := range actual {
					if !used[j] && want(call) {
						used[j] = true
						greedyFound++
						break
					}
				}
			}
			assert.Equal(t, 1, greedyFound, "the case must defeat first-fit matching")
		})
	}

	// Partial credit is optimal too: the longest in-order match of [A, B, C]
	// in [B, C, A] is B, C (2 of 3), not the A that a first-fit scan finds.
	c := trajectoryCheck(t, "- trajectory: {mode: in_order, calls: [a, b, c]}")
	res := c.Evaluate(t.Context(), record(calls("b", "c", "a")))
	assert.InDelta(t, 2.0/3, res.Score, 1e-9, res.Detail)
	assert.Contains(t, res.Detail, "not found in order: a")
}

func TestTrajectoryArgumentMatchers(t *testing.T) {
	actual := calls(`write_file{"path":"/notes/paris.md","content":"sunny, 21C","meta":{"tags":["weather","paris"],"n":2}}`)
	tests := []struct {
		matcher string
		passed  bool
	}{
		{`{name: write_file, args: {path: /notes/paris.md}}`, true},
		{`{name: write_file, args: {path: /notes/paris.md}, args_mode: exact}`, false},
		{`{name: write_file, args: {path: /notes/paris.md, content: "sunny, 21C", meta: {tags: [weather, paris], n: 2}}, args_mode: exact}`, true},
		{`{name: write_file, args: {meta: {n: 2.0}}}`, true},
		{`{name: write_file, args: {meta: {tags: [weather]}}}`, false},
		{`{name: write_file, args: {path: /notes/london.md}}`, false},
		{`{name: write_file, args_regex: {path: "^/notes/.*\\.md$", "$.content": "\\d+C"}}`, true},
		{`{name: write_file, args_regex: {content: "^rain"}}`, false},
		{`{name: write_file, args_regex: {"$.meta.n": "^2$"}}`, true},
		{`{name: write_file, args_path: {"$.meta.tags[1]": paris}}`, true},
		{`{name: write_file, args_path: {"$['meta']['tags'][0]": weather}}`, true},
		{`{name: write_file, args_path: {"$.meta.tags[2]": paris}}`, false},
		{`{name: write_file, args_path: {"meta.n": 3}}`, false},
		{`{name: write_file, args_mode: ignore}`, true},
		{`{name: read_file}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.matcher, func(t *testing.T) {
			c := trajectoryCheck(t, "- trajectory: {mode: superset, calls: ["+tt.matcher+"]}")
			res := c.Evaluate(t.Context(), record(actual))
			assert.Equal(t, tt.passed, res.Passed, res.Detail)
		})
	}
}

func TestTrajectorySubagentScopes(t *testing.T) {
	researcher1 := &rubrics.Trajectory{Agent: "main/task:researcher", Subagent: "researcher", Calls: calls("web_search", "read_url")}
	researcher2 := &rubrics.Trajectory{Agent: "main/task:researcher", Subagent: "researcher", Calls: calls("read_url")}
	writer := &rubrics.Trajectory{Agent: "main/task:writer", Subagent: "writer", Calls: calls("write_file")}
	main := calls(`task{"subagent_type":"researcher","description":"a"}|task{"subagent_type":"researcher","description":"b"}`, `task{"subagent_type":"writer","description":"c"}`)
	main[0].Subagent, main[1].Subagent, main[2].Subagent = researcher1, researcher2, writer
	rec := record(main, researcher1, researcher2, writer)

	tests := []struct {
		check  string
		passed bool
		score  float64
		detail string
	}{
		{"{mode: in_order, calls: [web_search, read_url], agent: researcher}", false, 0.75, "run 2 of 2 (main/task:researcher)"},
		{"{mode: superset, calls: [read_url], agent: researcher}", true, 1, ""},
		{"{mode: strict, calls: [write_file], agent: writer}", true, 1, ""},
		{"{mode: strict, calls: [write_file], agent: main/task:writer}", true, 1, ""},
		{"{mode: superset, calls: [x], agent: critic}", false, 0, "no run of critic was found"},
		{"{mode: in_order, calls: [task, web_search, read_url, task, read_url, task, write_file], agent: all}", true, 1, ""},
		{"{mode: strict, calls: [task, task, task]}", true, 1, ""},
		{"{mode: strict, calls: [task, task, task], agent: main}", true, 1, ""},
		// Looking inside task calls: the matcher holds only for the task whose
		// subagent run searched before reading.
		{`{mode: superset, calls: [{name: task, args: {subagent_type: researcher}, subagent: {mode: in_order, calls: [web_search, read_url]}}]}`, true, 1, ""},
		{`{mode: superset, calls: [{name: task, subagent: {mode: strict, calls: [web_search, read_url]}}, {name: task, args: {subagent_type: researcher}, subagent: {mode: strict, calls: [web_search, read_url]}}]}`, false, 0.5, "missing: task("},
		{`{mode: superset, calls: [{name: task, subagent: {mode: superset, calls: [write_file]}}]}`, true, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			c := trajectoryCheck(t, "- trajectory: "+tt.check)
			res := c.Evaluate(t.Context(), rec)
			assert.Equal(t, tt.passed, res.Passed, res.Detail)
			assert.InDelta(t, tt.score, res.Score, 1e-9, res.Detail)
			assert.Contains(t, res.Detail, tt.detail)
		})
	}
	assert.Equal(t, "trajectory(in_order @researcher)", trajectoryCheck(t, "- trajectory: {mode: in_order, calls: [a], agent: researcher}").Name())
}

func TestTrajectoryCheckBuiltInGo(t *testing.T) {
	c := &rubrics.TrajectoryCheck{Mode: "sideways", Calls: []rubrics.CallMatcher{{Name: "a"}}}
	res := c.Evaluate(t.Context(), record(calls("a")))
	assert.False(t, res.Passed)
	assert.Contains(t, res.Detail, `invalid check: unknown trajectory mode "sideways"`)

	c = &rubrics.TrajectoryCheck{Mode: rubrics.TrajectoryUnordered, Calls: []rubrics.CallMatcher{
		{Name: "get_weather", Args: rubrics.ArgsMatcher{Paths: []rubrics.PathMatch{{Path: "$.city", Regex: "^(Paris|London)$"}}}},
		{Name: "get_weather", Args: rubrics.ArgsMatcher{Value: json.RawMessage(`{"city":"Paris"}`)}},
	}}
	require.NoError(t, c.Validate())
	res = c.Evaluate(t.Context(), record(calls(`get_weather{"city":"Paris"}`, `get_weather{"city":"London"}`)))
	assert.True(t, res.Passed, res.Detail)
	assert.Equal(t, `expected unordered [get_weather($.city ~ /^(Paris|London)$/), get_weather(args ⊇ {"city":"Paris"})]; actual [get_weather{"city":"Paris"}, get_weather{"city":"London"}]; 2 matched`, res.Detail)
}

func BenchmarkTrajectoryUnordered(b *testing.B) {
	// 60 expected calls against 80 actual calls of three tools, permissive
	// matchers: the worst case for augmenting paths.
	var items []string
	var matchers []string
	for i := range 80 {
		items = append(items, fmt.Sprintf(`tool%d{"i":%d}`, i%3, i))
		if i < 60 {
			matchers = append(matchers, fmt.Sprintf("tool%d", i%3))
		}
	}
	cs, err := rubrics.ParseChecks("b.yaml", []byte("- trajectory: {mode: superset, calls: ["+strings.Join(matchers, ", ")+"]}"))
	require.NoError(b, err)
	rec := record(calls(items...))
	b.ReportAllocs()
	for b.Loop() {
		if res := cs[0].Evaluate(b.Context(), rec); !res.Passed {
			b.Fatal(res.Detail)
		}
	}
}
