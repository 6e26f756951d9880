package evals_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/rubrics"
)

// ruleModel answers by rule: the conversation is named by the case's own
// input (the last user message that is not a tool result), and turn counts
// the assistant messages after it. It keeps every request.
type ruleModel struct {
	mu   sync.Mutex
	reqs []*llm.Request
	rule func(input string, turn int, req *llm.Request) (llm.Message, error)
}

func (m *ruleModel) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	input, turn := "", 0
	for _, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleUser:
			input, turn = msg.Text(), 0
		case llm.RoleAssistant:
			turn++
		}
	}
	msg, err := m.rule(input, turn, req)
	if err != nil {
		return nil, err
	}
	return &llm.Response{Message: msg}, nil
}

// requestsFor returns the requests whose last user message is input.
func (m *ruleModel) requestsFor(input string) []*llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*llm.Request
	for _, r := range m.reqs {
		last := ""
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleUser {
				last = msg.Text()
			}
		}
		if last == input {
			out = append(out, r)
		}
	}
	return out
}

func systemText(r *llm.Request) string {
	var b strings.Builder
	for _, bl := range r.System {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// expressiveModel plays every case of expressiveSuite.
func expressiveModel() *ruleModel {
	return &ruleModel{rule: func(input string, turn int, req *llm.Request) (llm.Message, error) {
		switch input {
		case "informational":
			// Two turns where the checks expected one: informational only.
			if turn == 0 {
				return say("Looking.", call("ls", `{"path":"/"}`)), nil
			}
			return say("Done."), nil
		case "parallel":
			switch turn {
			case 0:
				return say("", call("read_file", `{"file_path":"/a.md"}`), call("read_file", `{"file_path":"/b.md"}`)), nil
			case 1:
				return say("", call("write_file", `{"file_path":"/out.md","content":"same"}`)), nil
			}
			return say("Both say same; wrote /out.md."), nil
		case "what is your name":
			if strings.Contains(systemText(req), "Your name is Foo Bar.") {
				return say("My name is Foo Bar."), nil
			}
			return say("I have no name."), nil
		case "negations":
			if turn == 0 {
				return say("", call("write_file", `{"file_path":"/kept.md","content":"stable facts"}`)), nil
			}
			return say("Saved the stable facts only."), nil
		case "script":
			return say("The answer is 42."), nil
		case "Now in C++ please.":
			// The history's earlier answer and tool call are not the run's.
			if turn == 0 {
				return say("", call("read_file", `{"file_path":"/notes.md"}`)), nil
			}
			return say("std::vector<int> nums{1, 2, 3};"), nil
		case "texts":
			switch turn {
			case 0:
				return say("Planning first.", call("write_todos", `{"todos":[{"content":"search","status":"completed"}]}`)), nil
			case 1:
				return say("Searching.", call("search", `{"query":"refunds"}`)), nil
			}
			return say("Refunds take 14 days."), nil
		case "include":
			if turn == 0 {
				return say("", call("read_file", `{"file_path":"/data.txt"}`)), nil
			}
			text := ""
			for _, m := range req.Messages {
				if m.Role == llm.RoleTool {
					text = m.Text()
				}
			}
			if !strings.Contains(text, "gamma") {
				return llm.Message{}, fmt.Errorf("the included file did not reach the agent: %q", text)
			}
			return say("alpha beta gamma"), nil
		case "zero-width":
			return say("The matching file is /a\u200b.txt."), nil
		case "formats":
			return say("Here:\n```json\n{\"name\": \"Ada\", \"age\": 36}\n```\nand <note><to>Ada</to></note>"), nil
		case "sql":
			return say("```sql\nSELECT name FROM users WHERE age > 30 ORDER BY name;\n```"), nil
		case "summary":
			return say("The quick brown fox jumps over the lazy dog."), nil
		}
		return llm.Message{}, fmt.Errorf("no rule for %q", input)
	}}
}

const expressiveSuite = `
agent:
  system_prompt: You help.
  tools:
    - {name: search, description: Searches the docs., parameters: {type: object, properties: {query: {type: string}}}}
models: [local:m]
tools:
  search: {mock: {result: "file://fixtures/refunds.md"}}
cases:
  - id: informational
    input: informational
    checks:
      - final_answer: {contains: Done}
      - {turns: 1, gating: false}
    expect:
      - tool_call_count: 0
      - tool_called: {name: ls, turn: 2}

  - id: parallel
    input: parallel
    files: {/a.md: same, /b.md: same}
    checks:
      - same_turn: [{name: read_file, args: {file_path: /a.md}}, {name: read_file, args: {file_path: /b.md}}]
      - tool_called: {name: read_file, turn: 1, times: 2}
      - tool_called: {name: write_file, turn: 2}
      - turns: 3
      - tool_call_count: {count: 3}
      - file_equals: {path: /out.md, content: same}

  - id: override
    input: what is your name
    agent:
      system_prompt: Your name is Foo Bar.
      memory: [/project/AGENTS.md]
    files: {/project/AGENTS.md: "# Memory"}
    checks:
      - final_answer: {contains: Foo Bar}
      - turns: 1

  - id: negations
    input: negations
    files: {/kept.md: "old"}
    checks:
      - file_absent: /transient.md
      - file_excludes: {path: /kept.md, text: [coffee shop]}
      - not: {file_contains: {path: /kept.md, text: old}}
      - not: {tool_called: search}
      - final_answer: {not_contains: coffee}

  - id: script
    input: script
    checks:
      - script: {command: [sh, judge.sh], timeout: 10s}

  - id: history
    input: Now in C++ please.
    messages:
      - {role: user, content: How do I make a list?}
      - role: assistant
        content: Let me check my notes.
        tool_calls: [{id: h1, name: read_file, args: {file_path: /notes.md}}]
      - {role: tool, tool_call_id: h1, content: "lists: nums = [1, 2, 3]"}
      - {role: assistant, content: "In Python: nums = [1, 2, 3]"}
    files: {/notes.md: "lists"}
    checks:
      - final_answer: {contains: std::vector, not_contains: Python}
      - tool_call_count: 1
      - turns: 2
      - tool_called: {name: read_file, turn: 1}

  - id: texts
    input: texts
    agent:
      middleware: [{name: TodoListMiddleware}]
    checks:
      - assistant_text: {contains: Planning}
      - assistant_text: {regex: "\\.$", match: all}
      - tool_result: {tool: search, contains: 14 days}
      - state: {path: "$.todos[0].status", equals: completed}
      - final_answer: {contains: "file://fixtures/answer.txt"}

  - id: include
    input: include
    files: {/data.txt: "file://fixtures/data.txt"}
    checks:
      - final_answer: {equals: "file://fixtures/data.txt"}

  - id: zero-width
    input: zero-width
    checks:
      - final_answer: {contains: /a.txt, contains_any: [/b.txt, /a.txt]}
      - final_answer: {contains: /a.txt, from: last_message}

  - id: formats
    input: formats
    checks:
      - final_answer: {contains_json: {schema: {type: object, required: [name, age]}}}
      - not: {final_answer: {is_json: true}}
      - not: {final_answer: {is_xml: true}}

  - id: sql
    input: sql
    checks:
      - final_answer: {is_sql: true}

  - id: summary
    input: summary
    checks:
      - final_answer: {levenshtein: {value: "The quick brown fox jumps over the lazy dog", max_distance: 1}}
      - final_answer: {rouge_n: {reference: the quick brown fox, n: 2}}
      - final_answer: {bleu: {reference: The quick brown fox jumped over the lazy dog., threshold: 0.4}}
`

// judgeScript is a code assertion: it reads the run on stdin and passes
// when the final answer holds 42 and no tool was called.
const judgeScript = `in=$(cat)
case "$in" in
  *'"final_answer":"The answer is 42."'*'"tool_calls":[]'*) echo '{"pass": true, "score": 1, "reason": "42, and no tools"}' ;;
  *) echo '{"pass": false, "score": 0, "reason": "not what was asked"}' ;;
esac
`

func expressiveFiles(url string) map[string]string {
	return map[string]string{
		"suite.yaml":           liveHeader(url) + expressiveSuite,
		"judge.sh":             judgeScript,
		"fixtures/refunds.md":  "Refunds take 14 days.",
		"fixtures/answer.txt":  "14 days",
		"fixtures/data.txt":    "alpha beta gamma",
		"fixtures/unused.yaml": "",
	}
}

// TestExpressiveSuite runs one suite through every row of the format's
// additions: informational checks, turn-level trajectories, per-case agent
// overrides, negations, code assertions, a prior history, checks of every
// assistant text, tool result and state value, file:// includes, zero-width
// characters, contains_any, similarity metrics and format validators.
func TestExpressiveSuite(t *testing.T) {
	m := expressiveModel()
	srv := server(t, m)
	path := writeSuite(t, expressiveFiles(srv.URL))
	_, err := evals.ValidateFile(t.Context(), path, evals.Options{Getenv: testEnv})
	require.NoError(t, err)
	oc := runSuite(t, path, evals.Options{OutDir: t.TempDir()})
	for _, r := range oc.Results {
		assert.Equal(t, evals.StatusPass, r.Status, "%s: %s %s", r.Case, r.Error, failedChecks(r))
	}

	info := resultOf(t, oc, "informational")
	require.Len(t, info.Checks, 4)
	assert.True(t, info.Checks[0].Gating())
	for _, v := range info.Checks[1:] {
		assert.False(t, v.Gating(), v.Name)
		assert.False(t, v.Passed, "the informational checks fail, yet the cell passes: %s", v.Name)
	}
	assert.Equal(t, 1.0, info.Score, "informational checks do not count in the score")

	// The case's override reached the model; the other cases kept the suite's prompt.
	reqs := m.requestsFor("what is your name")
	require.NotEmpty(t, reqs)
	assert.Contains(t, systemText(reqs[0]), "Your name is Foo Bar.")
	assert.NotContains(t, systemText(reqs[0]), "You help.")
	assert.Contains(t, systemText(m.requestsFor("script")[0]), "You help.")
	assert.Contains(t, systemText(reqs[0]), "# Memory", "the case's memory file is loaded")

	// The history reached the model before the case's input.
	hr := m.requestsFor("Now in C++ please.")[0]
	require.GreaterOrEqual(t, len(hr.Messages), 5)
	assert.Equal(t, "How do I make a list?", hr.Messages[0].Text())
	assert.Equal(t, "h1", hr.Messages[1].ToolCalls[0].ID)
}

func failedChecks(r evals.CellResult) string {
	var out []string
	for _, c := range r.Checks {
		if !c.Passed && c.Gating() {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return strings.Join(out, "\n")
}

// TestExpressiveChecksFail makes each new kind of check fail where it
// should, with the cell failing for the gating ones only.
func TestExpressiveChecksFail(t *testing.T) {
	m := expressiveModel()
	srv := server(t, m)
	suite := liveHeader(srv.URL) + `
agent: {system_prompt: You help.}
models: [local:m]
cases:
  - id: parallel
    input: parallel
    files: {/a.md: same, /b.md: same}
    checks:
      - turns: 1
      - same_turn: [read_file, write_file]
      - tool_called: {name: write_file, turn: 1}
  - id: override
    input: what is your name
    checks:
      - final_answer: {contains: Foo Bar}
  - id: zero-width
    input: zero-width
    checks:
      - final_answer: {contains: /b.txt}
    expect:
      - final_answer: {contains: /a.txt}
`
	path := writeSuite(t, map[string]string{"suite.yaml": suite})
	oc := runSuite(t, path, evals.Options{OutDir: t.TempDir()})
	par := resultOf(t, oc, "parallel")
	assert.Equal(t, evals.StatusFail, par.Status)
	for _, c := range par.Checks {
		assert.False(t, c.Passed, c.Name)
	}
	assert.Contains(t, par.Checks[0].Detail, "expected exactly 1 model turns; the agent took 3")
	assert.Contains(t, par.Checks[1].Detail, "turn 1: read_file")
	assert.Equal(t, evals.StatusFail, resultOf(t, oc, "override").Status, "without the override the agent has no name")
	zw := resultOf(t, oc, "zero-width")
	assert.Equal(t, evals.StatusFail, zw.Status)
	assert.True(t, zw.Checks[1].Passed)
	assert.False(t, zw.Checks[1].Gating())
}

// TestValidationChecksToolNames: a check or a mock of a tool the agent
// does not have is an error at its key, with the nearest name.
func TestValidationChecksToolNames(t *testing.T) {
	suite := liveHeader("http://127.0.0.1:1") + `
agent:
  tools: [{name: search, description: Searches.}]
models: [local:m]
tools:
  search: {mock: {result: ok}}
cases:
  - id: a
    input: hi
    checks:
      - tool_not_called: serach
      - trajectory: {mode: in_order, calls: [{name: read_fille}, search]}
      - {not: {tool_called: {name: wirte_file}}, gating: false}
      - tool_result: {tool: grepp, contains: x}
      - tool_called: "*"
      - tool_called: search
  - id: b
    input: hi
    agent:
      tools: [{name: fetch, description: Fetches.}]
    tools:
      fetch: {mock: {result: ok}}
    checks:
      - tool_called: search
`
	path := writeSuite(t, map[string]string{"suite.yaml": suite})
	_, err := evals.ValidateFile(t.Context(), path, evals.Options{Getenv: testEnv, Mode: "live"})
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`suite.yaml:15:9: cases[0].checks[0].tool_not_called: the agent of case a has no tool "serach"; did you mean search? A check of a tool the agent lacks judges nothing (its tools: ls, read_file, write_file, edit_file, delete, glob, grep, task, search)`,
		`cases[0].checks[1].trajectory.calls[0].name: the agent of case a has no tool "read_fille"; did you mean read_file?`,
		`cases[0].checks[2].not.tool_called.name: the agent of case a has no tool "wirte_file"; did you mean write_file?`,
		`cases[0].checks[3].tool_result.tool: the agent of case a has no tool "grepp"; did you mean grep?`,
		`cases[1].checks[0].tool_called: the agent of case b has no tool "search". A check`,
	} {
		assert.Contains(t, msg, want)
	}
	assert.Equal(t, 5, strings.Count(msg, "\n")+1, msg)

	// Mocks of tools the agent does not declare, suite-wide and per case.
	suite = liveHeader("http://127.0.0.1:1") + `
agent:
  tools: [{name: search, description: Searches.}]
models: [local:m]
tools:
  search: {mock: {result: ok}}
  serch: {mock: {result: ok}}
cases:
  - id: b
    input: hi
    agent:
      tools: [{name: fetch, description: Fetches.}]
    tools:
      fetch: {mock: {result: ok}}
      fetchh: {mock: {result: ok}}
`
	path = writeSuite(t, map[string]string{"suite.yaml": suite})
	_, err = evals.ValidateFile(t.Context(), path, evals.Options{Getenv: testEnv, Mode: "live"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tools.serch: the agent declares no tool "serch"; did you mean search? (declared tools: search, fetch)`)
	assert.Contains(t, err.Error(), `cases[0].tools.fetchh: the agent of case b declares no tool "fetchh"; did you mean fetch? (declared tools: fetch)`)
}

// TestCaseSyntaxErrors: the new case keys report problems at their place.
func TestCaseSyntaxErrors(t *testing.T) {
	tests := map[string]string{
		"    messages: [{role: user, content: a}]\n":                                              `cases[0].messages[0]: the history ends with a user message; put the case's own turn in input`,
		"    messages: [{role: robot, content: a}]\n":                                             `cases[0].messages[0].role: unknown role "robot"`,
		"    messages: [{role: tool, tool_call_id: x, content: a}]\n":                             `cases[0].messages[0].tool_call_id: no earlier assistant message made a tool call "x"`,
		"    messages: [{role: assistant, tool_calls: [{id: a, name: ls}]}]\n":                    `cases[0].messages: 1 tool call(s) of the history have no tool message answering them`,
		"    messages: [{role: assistant, tool_calls: [{name: ls}]}, {role: user, content: x}]\n": `cases[0].messages[0].tool_calls[0]: a tool call needs an id and a name`,
		"    messages: {role: user}\n":                                                            `cases[0].messages: want a list of messages`,
		"    agent: {system_promt: x}\n":                                                          `cases[0].agent.system_promt: unknown key "system_promt"`,
		"    agent: {memory: [notes.md]}\n":                                                       `cases[0].agent.memory[0]: "notes.md" is not an absolute path`,
		"    agent: nope\n":                                                                       `cases[0].agent: want a mapping with the keys of an agent file`,
		"    files: {/x.md: \"file://missing.md\"}\n":                                             `cases[0].files./x.md: file://missing.md: file`,
		"    checks: [{final_answer: {contains: \"file://missing.txt\"}}]\n":                      `cases[0].checks[0].final_answer.contains: file://missing.txt: file`,
		"    expect: [{turns: {}}]\n":                                                             `cases[0].expect[0].turns: want a count`,
		"    checks: [{turns: 1, gating: false, tool_called: ls}]\n":                              `a check has exactly one kind, got 2 keys`,
		"    checks: [{script: {command: []}}]\n":                                                 `cases[0].checks[0].script.command: the command is empty`,
	}
	for extra, want := range tests {
		t.Run(want, func(t *testing.T) {
			suite := liveHeader("http://127.0.0.1:1") + "agent: {system_prompt: hi}\nmodels: [local:m]\ncases:\n  - id: a\n    input: hi\n" + extra
			path := writeSuite(t, map[string]string{"suite.yaml": suite})
			_, err := evals.Load(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			assert.Regexp(t, `suite\.yaml:\d+:\d+: `, err.Error())
		})
	}
}

// TestGoCheckInformational: a Go check shares the verdict shape, gating: false included.
func TestGoCheckInformational(t *testing.T) {
	m := expressiveModel()
	srv := server(t, m)
	reg := evals.NewRegistry().AddCheck("answer_is", evals.NewCheck(func(_ context.Context, o struct {
		Want string `yaml:"want"`
	}, run *rubrics.Record) rubrics.CheckVerdict {
		return rubrics.CheckVerdict{Passed: run.FinalAnswer() == o.Want, Detail: "compared"}
	}))
	suite := liveHeader(srv.URL) + `
agent: {system_prompt: You help.}
models: [local:m]
cases:
  - id: script
    input: script
    checks:
      - answer_is: {want: The answer is 42.}
      - {answer_is: {want: 41}, gating: false}
`
	path := writeSuite(t, map[string]string{"suite.yaml": suite})
	s, err := reg.Load(path)
	require.NoError(t, err)
	oc, err := s.Run(t.Context(), evals.Options{OutDir: t.TempDir(), Getenv: testEnv})
	require.NoError(t, err)
	r := resultOf(t, oc, "script")
	assert.Equal(t, evals.StatusPass, r.Status)
	require.Len(t, r.Checks, 2)
	assert.True(t, r.Checks[0].Passed)
	assert.False(t, r.Checks[1].Passed)
	assert.False(t, r.Checks[1].Gating())
}
