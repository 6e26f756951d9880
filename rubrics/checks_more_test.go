package rubrics_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/rubrics"
)

// turnRecord is a run of four model turns: two parallel reads, a write, a
// todo update, and an answer whose path a model broke with a zero-width
// space.
func turnRecord() *rubrics.Record {
	main := []rubrics.ToolCall{
		{ID: "1", Name: "read_file", Args: json.RawMessage(`{"file_path":"/a.md"}`), Turn: 1, Result: "alpha"},
		{ID: "2", Name: "read_file", Args: json.RawMessage(`{"file_path":"/b.md"}`), Turn: 1, Result: "Error: /b.md not found", IsError: true},
		{ID: "3", Name: "write_file", Args: json.RawMessage(`{"file_path":"/out.md"}`), Turn: 2, Result: "Updated /out.md"},
		{ID: "4", Name: "write_todos", Args: json.RawMessage(`{}`), Turn: 3, Result: "ok"},
	}
	rec := record(main)
	rec.Trajectory.Turns = 4
	rec.Replies = []llm.Message{
		llm.Assistant("Reading both.", llm.ToolCall{ID: "1"}, llm.ToolCall{ID: "2"}),
		llm.Assistant("", llm.ToolCall{ID: "3"}),
		llm.Assistant("Noting it.", llm.ToolCall{ID: "4"}),
		llm.Assistant("Wrote /out\u200b.md from /a.md."),
	}
	rec.Messages = append([]llm.Message{llm.User("go")}, rec.Replies...)
	rec.Files = rubrics.StateFiles{"/out.md": {Content: "alpha\n"}, "/AGENTS.md": {Content: "# Memory\nprefers bullets\n"}}
	rec.Todos = []agent.Todo{{Content: "write", Status: "completed"}}
	rec.Values = map[string]json.RawMessage{"_summarization_event": json.RawMessage(`{"cutoff":3}`)}
	return rec
}

func TestMoreChecks(t *testing.T) {
	tests := []struct {
		check  string
		rec    func(*rubrics.Record)
		passed bool
		score  float64
		detail string
		name   string
	}{
		// zero-width characters and final answer sources
		{check: "final_answer: {contains: /out.md}", passed: true, score: 1},
		{check: "final_answer: {contains_any: [/nope, /a.md]}", passed: true, score: 1},
		{check: "final_answer: {contains_any: [/nope, /none]}", passed: false, detail: `contains none of ["/nope", "/none"]`},
		{check: "final_answer: {starts_with: wrote, ignore_case: true}", passed: true, score: 1},
		{check: "final_answer: {contains: Wrote, from: last_message}", passed: true, score: 1},
		{check: "final_answer: {contains: Noting, from: last_message}", passed: false, detail: "the last assistant message (empty)",
			rec: func(r *rubrics.Record) { r.Messages = append(r.Messages[:4], llm.Assistant("")) }},
		{check: "final_answer: {contains: Noting}", passed: true, score: 1,
			rec: func(r *rubrics.Record) { r.Messages = append(r.Messages[:4], llm.Assistant("")) }},
		// a prior history is not the run's
		{check: "final_answer: {contains: earlier}", passed: false,
			rec: func(r *rubrics.Record) {
				r.Messages = []llm.Message{llm.User("before"), llm.Assistant("earlier answer"), llm.User("now"), llm.Assistant("")}
				r.Start = 2
			}},
		// formats
		{check: "final_answer: {is_json: true}", passed: false, detail: "is not JSON"},
		{check: "final_answer: {is_json: true}", passed: true, score: 1, rec: answer("```json\n[1, 2]\n```")},
		{check: "final_answer: {contains_json: true}", passed: true, score: 1, rec: answer(`Here it is: {"a": 1} — done`)},
		{check: "final_answer: {contains_json: {schema: {type: object, required: [b]}}}", passed: false, detail: "contains no JSON that matches the schema", rec: answer(`{"a": 1} and [2]`)},
		{check: "final_answer: {contains_json: {schema: {type: object, required: [b]}}}", passed: true, score: 1, rec: answer(`{"a": 1} then {"b": 2}`)},
		{check: "final_answer: {contains_json: true}", passed: false, detail: "contains no JSON object or array"},
		{check: "final_answer: {is_xml: true}", passed: true, score: 1, rec: answer(`<?xml version="1.0"?><a><b x="1">t</b></a>`)},
		{check: "final_answer: {is_xml: true}", passed: false, detail: "is not well-formed XML", rec: answer(`<a><b></a>`)},
		{check: "final_answer: {is_xml: true}", passed: false, detail: "a second root element", rec: answer(`<a/><b/>`)},
		{check: "final_answer: {is_sql: true}", passed: true, score: 1, rec: answer("```sql\nSELECT name, COUNT(*) FROM users WHERE id IN (1, 2) GROUP BY name; -- done\n```")},
		{check: "final_answer: {is_sql: true}", passed: false, detail: `starts with "Here"`, rec: answer("Here is the query: SELECT 1")},
		{check: "final_answer: {is_sql: true}", passed: false, detail: "never closed", rec: answer("SELECT 'open FROM t")},
		{check: "final_answer: {is_sql: true}", passed: false, detail: "SELECT selects nothing", rec: answer("SELECT FROM t")},
		// similarity
		{check: "final_answer: {levenshtein: {value: Wrote /out.md from /a.md!, max_distance: 1}}", passed: true, score: 1},
		{check: "final_answer: {levenshtein: {value: wrote /out.md from /a.md, max_distance: 0}}", passed: false, detail: "is 2 edits from"},
		{check: "final_answer: {rouge_n: {reference: wrote out md from a md}}", passed: true, score: 1},
		{check: "final_answer: {rouge_n: {reference: the cat sat on the mat, n: 2, threshold: 0.5}}", passed: false, detail: "ROUGE-2 recall 0.000"},
		{check: "final_answer: {bleu: {reference: Wrote /out.md from /a.md.}}", passed: true, score: 1},
		{check: "final_answer: {bleu: {reference: a completely different sentence here, threshold: 0.3}}", passed: false, detail: "has BLEU"},
		// assistant texts and tool results
		{check: "assistant_text: {contains: Reading}", name: "assistant_text(any)", passed: true, score: 1, detail: "1 of 3 meet"},
		{check: "assistant_text: {regex: \"\\\\.$\", match: all}", passed: true, score: 1, detail: "every assistant text (3)"},
		{check: "assistant_text: {contains: Noting, match: all}", passed: false, score: 1.0 / 3, detail: "1 of 3 meet the conditions; assistant text 1 of 3"},
		{check: "tool_result: {tool: read_file, contains: alpha}", name: "tool_result(read_file, any)", passed: true, score: 1},
		{check: "tool_result: {tool: read_file, not_contains: Error, match: all}", passed: false, score: 0.5, detail: "result of read_file 2 of 2"},
		{check: "tool_result: {tool: grep, contains: x}", passed: false, detail: "there is no result of grep"},
		// state
		{check: `state: {path: "$.todos[0].status", equals: completed}`, name: "state($.todos[0].status)", passed: true, score: 1},
		{check: `state: {path: "todos[0].status", equals: pending}`, passed: false, detail: `differs (it is "\"completed\"")`},
		{check: "state: {path: $.values._summarization_event}", passed: true, score: 1},
		{check: "state: {path: $.values._summarization_event.cutoff, regex: \"^[0-9]+$\"}", passed: true, score: 1},
		{check: "state: {path: $.values.missing}", passed: false, detail: "$.values.missing is missing"},
		// files
		{check: "file_equals: {path: /out.md, content: \"alpha\\n\"}", passed: true, score: 1},
		{check: "file_equals: {path: /out.md, content: alpha}", passed: false, detail: `expected /out.md to hold "alpha"; it holds "alpha\n"`},
		{check: "file_equals: {path: /nope.md, content: x}", passed: false, detail: "it does not exist"},
		{check: "file_absent: /nope.md", name: "file_absent(/nope.md)", passed: true, score: 1},
		{check: "file_absent: {path: /out.md}", passed: false, detail: "it does"},
		{check: "file_excludes: {path: /AGENTS.md, text: [coffee, weather]}", passed: true, score: 1},
		{check: "file_excludes: {path: /AGENTS.md, text: [coffee, bullets]}", passed: false, score: 0.5, detail: `holds "bullets"`},
		{check: "file_excludes: {path: /nope.md, text: x}", passed: true, score: 1, detail: "does not exist"},
		// turns and counts
		{check: "turns: 4", name: "turns(exactly 4)", passed: true, score: 1},
		{check: "turns: 2", passed: false, score: 0.5, detail: "expected exactly 2 model turns; the agent took 4"},
		{check: "turns: {max: 5}", passed: true, score: 1},
		{check: "turns: {min: 5}", passed: false, score: 0.8},
		{check: "tool_call_count: 4", passed: true, score: 1},
		{check: "tool_call_count: 0", passed: false, score: 0, detail: "expected exactly 0 tool calls by the main agent; found 4"},
		{check: "tool_call_count: {count: 2, tool: read_file}", name: "tool_call_count(exactly 2 read_file)", passed: true, score: 1},
		{check: "tool_call_count: {max: 1, tool: read_file}", passed: false, score: 0.5},
		{check: "tool_call_count: 0", passed: true, score: 1, rec: func(r *rubrics.Record) { r.Trajectory.Calls = nil }},
		// turn-pinned and parallel calls
		{check: "tool_called: {name: write_file, turn: 2}", name: "tool_called(write_file, turn 2)", passed: true, score: 1},
		{check: "tool_called: {name: write_file, turn: 1}", passed: false, detail: "in turn 1 in any agent; found 0; non-matching calls of write_file: write_file{\"file_path\":\"/out.md\"} (turn 2)"},
		{check: "same_turn: [{name: read_file, args: {file_path: /a.md}}, {name: read_file, args: {file_path: /b.md}}]", name: "same_turn", passed: true, score: 1, detail: "turn 1 requested"},
		{check: "same_turn: {turn: 1, calls: [read_file, read_file]}", name: "same_turn(turn 1)", passed: true, score: 1},
		{check: "same_turn: {turn: 2, calls: [read_file, read_file]}", passed: false, detail: "turn 2 did (best: 0 of 2)"},
		{check: "same_turn: [read_file, write_file]", passed: false, score: 0.5, detail: "turn 1: read_file"},
		// negation and informational checks
		{check: "not: {file_contains: {path: /AGENTS.md, text: coffee}}", name: "not(file_contains(/AGENTS.md))", passed: true, score: 1, detail: "as expected, the negated check fails"},
		{check: "not: {tool_called: read_file}", passed: false, score: 0, detail: "the negated check holds"},
		{check: "not: {final_answer: {}}", passed: false, detail: "invalid check", rec: nil},
	}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			cs, err := rubrics.ParseChecks("checks.yaml", []byte("- "+tt.check))
			if tt.detail == "invalid check" {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			rec := turnRecord()
			if tt.rec != nil {
				tt.rec(rec)
			}
			res := cs[0].Evaluate(t.Context(), rec)
			assert.Equal(t, tt.passed, res.Passed, res.Detail)
			assert.InDelta(t, tt.score, res.Score, 1e-9, res.Detail)
			assert.Contains(t, res.Detail, tt.detail)
			assert.False(t, res.Informational)
			if tt.name != "" {
				assert.Equal(t, tt.name, res.Name)
			}
		})
	}
}

func answer(s string) func(*rubrics.Record) {
	return func(r *rubrics.Record) { r.Messages = append(r.Messages, llm.Assistant(s)) }
}

func TestInformationalChecks(t *testing.T) {
	cs, err := rubrics.ParseChecks("checks.yaml", []byte(`
- {turns: 2, gating: false}
- gating: false
  not: {tool_called: write_file}
- turns: 4
`))
	require.NoError(t, err)
	rec := turnRecord()
	vs := rubrics.EvaluateAll(t.Context(), cs, rec)
	assert.True(t, vs[0].Informational)
	assert.False(t, vs[0].Passed)
	assert.False(t, vs[0].Gating())
	assert.True(t, vs[1].Informational)
	assert.Equal(t, "not(tool_called(write_file))", vs[1].Name)
	assert.True(t, vs[2].Gating())
	assert.False(t, rubrics.IsGating(cs[0]))
	assert.True(t, rubrics.IsGating(cs[2]))

	// gating: false is written, a gating check's verdict is unchanged on the wire.
	raw, err := json.Marshal(vs)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"gating":false`)
	assert.Contains(t, string(raw), `{"name":"turns(exactly 4)","passed":true,"score":1,"detail":"expected exactly 4 model turns; the agent took 4"}`)
	var back []rubrics.CheckVerdict
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, vs, back)

	// every check kind may be made informational
	opts := rubrics.DecodeOptions{NonGating: true}
	root, err := rubrics.ParseYAML("x.yaml", []byte("- turns: 1\n"))
	require.NoError(t, err)
	cs, err = rubrics.DecodeChecksOpts("x.yaml", root, "expect", opts)
	require.NoError(t, err)
	assert.True(t, rubrics.EvaluateAll(t.Context(), cs, rec)[0].Informational)
}

func TestMoreMalformedChecks(t *testing.T) {
	tests := map[string]string{
		"- {turns: 2, gating: true}":                           "checks.yaml:1:22: [0].gating: gating: true is the default",
		"- {turns: 2, gating: no}":                             "[0].gating: want true or false",
		"- {turns: 2, file_absent: /x, gating: false}":         "a check has exactly one kind, got 2 keys (turns, file_absent)",
		"- not: {turns: 1, gating: false}":                     "[0].not: put gating: false beside not, not inside it",
		"- turns: -1":                                          "a count cannot be negative",
		"- turns: {min: 3, max: 2}":                            "[0].turns.max: max (2) is below min (3)",
		"- turns: {count: 2, max: 2}":                          "count cannot be combined with min or max",
		"- turns: {min: 0}":                                    "min 0 with no max checks nothing",
		"- turns: {}":                                          "want a count, or {count}, {min}, {max} or {min, max}",
		"- tool_call_count: {count: 1, agentt: main}":          `unknown key "agentt"`,
		"- same_turn: [read_file]":                             "same_turn needs at least two calls",
		"- same_turn: {calls: [a, b], turn: 0}":                "[0].same_turn.turn: must be at least 1",
		"- tool_called: {name: a, turn: 0}":                    "[0].tool_called.turn: must be at least 1",
		"- final_answer: {contains: x, from: first}":           "from must be last_text",
		"- final_answer: {levenshtein: {max_distance: 2}}":     "missing key value",
		"- final_answer: {rouge_n: {reference: x, n: 5}}":      "n must be between 1 and 4",
		"- final_answer: {bleu: {reference: x, threshold: 2}}": "[0].final_answer.bleu.threshold: must be greater than 0 and at most 1",
		"- final_answer: {contains_json: {scheme: {}}}":        `unknown key "scheme"`,
		"- final_answer: {contains_json: maybe}":               "want true, or {schema: {…}}",
		"- assistant_text: {contains: x, match: some}":         "match must be any or all",
		"- assistant_text: {}":                                 "assistant_text needs at least one of",
		"- tool_result: {tool: \"\", contains: x}":             "the tool name is empty",
		"- state: {equals: 1}":                                 "missing key path",
		"- state: {path: \"$.a[x]\"}":                          "is neither an index nor a quoted key",
		"- file_equals: {path: /a}":                            "missing key content",
		"- file_equals: {path: a, content: x}":                 "must be absolute",
		"- file_excludes: {path: /a}":                          "missing key text",
		"- file_absent: relative":                              "must be absolute",
		"- script: {}":                                         "missing key command",
		"- script: {command: []}":                              "the command is empty",
		"- script: {command: x, timeout: soon}":                "not a positive duration",
		"- script: {command: x, env: {\"A=B\": c}}":            "invalid environment variable name",
		"- script: 3":                                          "want {command, timeout, env} or a command",
	}
	for src, want := range tests {
		t.Run(src, func(t *testing.T) {
			_, err := rubrics.ParseChecks("checks.yaml", []byte(src))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			var fe *rubrics.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "checks.yaml", fe.File)
			assert.Positive(t, fe.Line)
		})
	}
}

func TestToolRefs(t *testing.T) {
	cs, err := rubrics.ParseChecks("checks.yaml", []byte(`
- tool_called: get_weather
- tool_not_called: {name: serach}
- trajectory: {mode: in_order, calls: [ls, {name: task, subagent: {mode: superset, calls: [grep]}}]}
- same_turn: [read_file, "*"]
- {not: {tool_called: rm}, gating: false}
- tool_result: {tool: fetch, contains: x}
- tool_call_count: {count: 1, tool: glob}
- turns: 1
`))
	require.NoError(t, err)
	var got []rubrics.ToolRef
	for _, c := range cs {
		got = append(got, rubrics.ToolRefsOf(c)...)
	}
	assert.Equal(t, []rubrics.ToolRef{
		{Name: "get_weather", Key: "[0].tool_called"},
		{Name: "serach", Key: "[1].tool_not_called.name"},
		{Name: "ls", Key: "[2].trajectory.calls[0]"},
		{Name: "task", Key: "[2].trajectory.calls[1].name"},
		{Name: "grep", Key: "[2].trajectory.calls[1].subagent.calls[0]"},
		{Name: "read_file", Key: "[3].same_turn[0]"},
		{Name: "rm", Key: "[4].not.tool_called"},
		{Name: "fetch", Key: "[5].tool_result.tool"},
		{Name: "glob", Key: "[6].tool_call_count.tool"},
	}, got)
}

func TestIncludes(t *testing.T) {
	root, err := rubrics.ParseYAML("s.yaml", []byte(`
- final_answer: {contains: "file://want.txt"}
- file_equals: {path: /out.md, content: "file://out.md"}
`))
	require.NoError(t, err)
	read := func(p string) (string, error) {
		return map[string]string{"want.txt": "/a.md", "out.md": "alpha\n"}[p], nil
	}
	cs, err := rubrics.DecodeChecksOpts("s.yaml", root, "checks", rubrics.DecodeOptions{Include: read})
	require.NoError(t, err)
	for _, v := range rubrics.EvaluateAll(t.Context(), cs, turnRecord()) {
		assert.True(t, v.Passed, v.Detail)
	}
	_, err = rubrics.DecodeChecksOpts("s.yaml", root, "checks", rubrics.DecodeOptions{Include: func(p string) (string, error) {
		return "", os.ErrNotExist
	}})
	assert.ErrorContains(t, err, "s.yaml:2:28: checks[0].final_answer.contains: file does not exist")
}

func TestScriptCheck(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the scripts are shell scripts")
	}
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755))
	}
	// The script sees the run only on stdin: it echoes a piece of it back.
	write("judge.sh", `in=$(cat)
case "$in" in
  *'"schema":"dageval.check-input/v1"'*'"final_answer":"Wrote /out'*'"name":"write_file"'*'"/out.md":"alpha\n"'*'"status":"completed"'*) echo '{"pass": true, "score": 0.75, "reason": "saw the run"}';;
  *) echo "{\"pass\": false, \"reason\": \"unexpected input\"}";;
esac
`)
	write("bad.sh", `echo "not json"`)
	write("fails.sh", `echo "boom" >&2; exit 3`)
	write("slow.sh", `sleep 30`)
	write("env.sh", `cat >/dev/null; if [ "$MODE" = strict ] && [ "$PATH" = /usr/local/bin:/usr/bin:/bin ]; then echo '{"pass": true}'; else echo '{"pass": false, "reason": "'"$MODE $PATH"'"}'; fi`)
	tests := []struct {
		spec   string
		passed bool
		score  float64
		detail string
	}{
		{spec: "./judge.sh", passed: true, score: 0.75, detail: "saw the run"},
		{spec: "{command: [./bad.sh]}", passed: false, detail: `the script must print {"pass": true|false`},
		{spec: "{command: ./fails.sh}", passed: false, detail: `the script failed (exit status 3): "boom"`},
		{spec: "{command: ./slow.sh, timeout: 100ms}", passed: false, detail: "did not finish within 100ms"},
		{spec: "{command: ./env.sh, env: {MODE: strict}}", passed: true, score: 1, detail: "the script says pass: true"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			root, err := rubrics.ParseYAML("s.yaml", []byte("- script: "+tt.spec))
			require.NoError(t, err)
			cs, err := rubrics.DecodeChecksOpts("s.yaml", root, "checks", rubrics.DecodeOptions{Dir: dir})
			require.NoError(t, err)
			rec := turnRecord()
			rec.CaseID, rec.Input = "c1", "go"
			res := cs[0].Evaluate(t.Context(), rec)
			assert.Equal(t, tt.passed, res.Passed, res.Detail)
			assert.InDelta(t, tt.score, res.Score, 1e-9)
			assert.Contains(t, res.Detail, tt.detail)
		})
	}
}

func TestScriptInput(t *testing.T) {
	rec := turnRecord()
	rec.CaseID, rec.Input = "c1", "go"
	in := rubrics.NewScriptInput(t.Context(), rec)
	assert.Equal(t, rubrics.ScriptInputSchema, in.Schema)
	assert.Equal(t, "c1", in.Case.ID)
	assert.Equal(t, 4, in.Turns)
	assert.Len(t, in.Calls, 4)
	assert.Equal(t, "main", in.Calls[0].Agent)
	assert.Equal(t, map[string]any{"/out.md": "alpha\n", "/AGENTS.md": "# Memory\nprefers bullets\n"}, in.Files)
	assert.Equal(t, []string{"Reading both.", "Noting it.", "Wrote /out\u200b.md from /a.md."}, in.Texts)
}

func TestSimilarityMetrics(t *testing.T) {
	// ROUGE-1 recall: 5 of the reference's 6 words (the twice counted once).
	assert.InDelta(t, 5.0/6, rubrics.RougeN("the cat sat on a mat", "the cat sat on the mat", 1), 1e-9)
	// ROUGE-2: bigrams the-cat, cat-sat, sat-on of the-cat, cat-sat, sat-on, on-the, the-mat.
	assert.InDelta(t, 3.0/5, rubrics.RougeN("the cat sat on a mat", "the cat sat on the mat", 2), 1e-9)
	assert.InDelta(t, 1, rubrics.RougeN("x", "", 1), 1e-9)
	assert.InDelta(t, 1, rubrics.BLEU("The cat sat on the mat.", "the cat sat on the mat"), 1e-9)
	assert.InDelta(t, 0, rubrics.BLEU("", "the cat"), 1e-9)
	// Precisions 5/6, 3/5, 2/4, 1/3; equal lengths, so no brevity penalty.
	want := 0.0
	for _, p := range []float64{5.0 / 6, 3.0 / 5, 2.0 / 4, 1.0 / 3} {
		want += 0.25 * math.Log(p)
	}
	assert.InDelta(t, math.Exp(want), rubrics.BLEU("the cat sat on a mat", "the cat sat on the mat"), 1e-9)
	// No 4-gram in common: that precision counts 0.1 of a match.
	want = 0
	for _, p := range []float64{2.0 / 4, 1.0 / 3, 0.1 / 2, 0.1 / 1} {
		want += 0.25 * math.Log(p)
	}
	assert.InDelta(t, math.Exp(want)*math.Exp(1-4.0/4), rubrics.BLEU("the cat ate fish", "the cat sat down"), 1e-9)
	// A shorter candidate pays the brevity penalty exp(1 - 6/3).
	assert.Less(t, rubrics.BLEU("the cat sat", "the cat sat on the mat"), 0.5)
}
