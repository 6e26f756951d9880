package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

// mapEnv is a getenv over a map.
func mapEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// writeFiles writes files into a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func TestRunQuickstart(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "../evals/examples/quickstart/suite.yaml", "--out", out)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	for _, s := range []string{
		"suite quickstart (replay mode)",
		"PASSED: 30 of 32 cells passed",
		"| anthropic:claude-sonnet-4-6 | terse    |     8 |    7 |",
		"FAIL  packing-list · openai:gpt-5 · terse · epoch 1",
		`does not contain "umbrella"`,
		"PASSED: ",
	} {
		assert.Contains(t, stdout, s)
	}
	assert.Contains(t, stderr, "[32/32]", "plain progress lines when stderr is not a terminal")
	for _, f := range []string{evals.ResultsFile, evals.SummaryFile, evals.SummaryMarkdownFile, "cells/refund-policy--openai-gpt-5--terse--e1.json"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	md, err := os.ReadFile(filepath.Join(out, evals.SummaryMarkdownFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| `anthropic:claude-sonnet-4-6` | baseline | 100.0% (67.6%–100.0%) | 8/8 |")

	out2 := t.TempDir()
	code, stdout, _ = runCLI(t, "run", "../evals/examples/quickstart/suite.yaml", "--out", out2, "--filter", "case=paris-weather profile=terse", "--epochs", "1", "--format", "md,json,junit,html")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "**PASSED: 2 of 2 cells passed")
	for _, f := range []string{"report.json", "report.junit.xml", "report.html"} {
		assert.FileExists(t, filepath.Join(out2, f), "file formats are written to --out")
	}
}

// graderAndAgent answers as the agent (one weather lookup, then an answer)
// and, when offered GraderResponse, as a grader that passes every criterion.
func graderAndAgent() llm.ChatModel {
	return fakes.NewRuleModel(
		fakes.Rule{
			Name: "grader",
			When: func(r *llm.Request) bool {
				for _, s := range r.Tools {
					if s.Name == "GraderResponse" {
						return true
					}
				}
				return false
			},
			Reply: func(r *llm.Request) (*llm.Response, error) {
				args := `{"result":"satisfied","explanation":"fine","criteria":[{"name":"answers","passed":true}]}`
				return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "GraderResponse", Args: json.RawMessage(args)})}, nil
			},
		},
		fakes.Rule{
			Name: "answer",
			When: fakes.LastIsToolResult("get_weather"),
			Reply: func(*llm.Request) (*llm.Response, error) {
				return &llm.Response{Message: llm.Assistant("It is sunny in Paris.")}, nil
			},
		},
		fakes.Rule{
			Name: "look up",
			Reply: func(*llm.Request) (*llm.Response, error) {
				return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)})}, nil
			},
		},
	)
}

const liveAgent = "agent: {name: weather, tools: [{name: get_weather, parameters: {type: object, properties: {city: {type: string}}}}]}\ntools: {get_weather: {mock: {result: sunny}}}\n"

// TestRunLiveWithGrader runs a suite live against a local OpenAI-compatible
// server, the grader's calls included, through the CLI.
func TestRunLiveWithGrader(t *testing.T) {
	srv := llmserver.NewServer(graderAndAgent())
	defer srv.Close()
	dir := writeFiles(t, map[string]string{"suite.yaml": `version: 1
name: live
providers: {local: {kind: openai-compatible, base_url: "` + srv.OpenAIBaseURL() + `", api_key_env: LOCAL_KEY}}
models: [local:agent-model]
grader: {model: local:grader-model, temperature: 0, seed: 7}
` + liveAgent + `cases:
  - id: weather
    input: What is the weather in Paris?
    rubric: [{name: answers, description: Answers the question.}]
    checks: [{tool_called: {name: get_weather, args: {city: Paris}}}, {final_answer: {contains: sunny}}]
`})
	out := t.TempDir()
	code, stdout, stderr := runCLIEnv(t, mapEnv(map[string]string{"LOCAL_KEY": "k", "CI": "true"}), "run", filepath.Join(dir, "suite.yaml"), "--mode", "live", "--out", out)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "(live mode)", "an explicit live mode survives CI=true")

	var r evals.CellResult
	data, err := os.ReadFile(filepath.Join(out, evals.ResultsFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, evals.StatusPass, r.Status)
	require.NotNil(t, r.Rubric)
	assert.Equal(t, "satisfied", r.Rubric.Result)
	assert.Positive(t, r.Usage.Agent.InputTokens)
	assert.Positive(t, r.Usage.Grader.InputTokens)
	assert.False(t, r.CostKnown, "a local model has no price")

	models := map[string]int{}
	for _, req := range srv.Requests() {
		models[req.Model]++
		assert.Equal(t, cassette.APIOpenAIChat, req.API)
	}
	assert.Equal(t, map[string]int{"agent-model": 2, "grader-model": 1}, models)
	graderReq := srv.Requests()[2].Request
	require.NotNil(t, graderReq.Temperature)
	assert.Equal(t, 0.0, *graderReq.Temperature, "the grader runs at the suite's temperature")
}

func TestRunExitCodes(t *testing.T) {
	srv := llmserver.NewServer(graderAndAgent())
	defer srv.Close()
	head := "version: 1\nname: codes\nmode: live\nproviders: {local: {kind: openai-compatible, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: LOCAL_KEY}}\nmodels: [local:m]\n" + liveAgent
	env := map[string]string{"LOCAL_KEY": "k"}
	tests := []struct {
		name, suite string
		code        int
		stdout      string
		stderr      string
	}{
		{"all pass", head + "cases: [{id: a, input: go, checks: [{final_answer: {contains: sunny}}]}]\n", 0, "PASSED: 1 of 1 cells passed", ""},
		{"a failing cell without thresholds", head + "cases: [{id: a, input: go, checks: [{final_answer: {contains: snow}}]}]\n", 1, "FAILED: 0 of 1 cells passed", "does not pass: 1 cell failed"},
		{"thresholds hold", head + "thresholds: {pass_rate: 0.5}\ncases: [{id: a, input: go}, {id: b, input: go, checks: [{final_answer: {contains: snow}}]}]\n", 0, "PASSED: ", ""},
		{"thresholds do not hold", head + "thresholds: {pass_rate: 0.75}\ncases: [{id: a, input: go}, {id: b, input: go, checks: [{final_answer: {contains: snow}}]}]\n", 1, "pass rate 0.5 is below the threshold 0.75", ""},
		{"missing cassette in replay", strings.Replace(head, "mode: live", "mode: replay", 1) + "cases: [{id: a, input: go}]\n", 2, "", "cassettes: 1 of 1 cells have no cassette to replay"},
		{"filter selects nothing", head + "cases: [{id: a, input: go}]\n", 2, "", "selects no cells"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"suite.yaml": tt.suite})
			args := []string{"run", filepath.Join(dir, "suite.yaml"), "--out", t.TempDir()}
			if tt.name == "filter selects nothing" {
				args = append(args, "--filter", "case=zzz")
			}
			code, stdout, stderr := runCLIEnv(t, mapEnv(env), args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, tt.stdout)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
}

// badSuiteFiles are the files the malformed suites refer to.
var badSuiteFiles = map[string]string{
	"agent.yaml":           "name: a\ntools:\n  - {name: get_weather, parameters: {type: object, properties: {city: {type: string}}}}\n",
	"bad-agent.yaml":       "name: a\ncolour: red\n",
	"rubric.yaml":          "name: r\ncriteria: [{name: ok, description: Fine.}]\n",
	"bad-rubric.yaml":      "name: r\ncriteria: [{name: ok}]\n",
	"profiles/terse.yaml":  "system_prompt_suffix: Be terse.\n",
	"profiles/broken.yaml": "excluded_tools: notalist\n",
	"profiles/nomw.yaml":   "excluded_middleware: [NoSuchMiddleware]\n",
}

const goodHead = "version: 1\nname: bad\nagent: agent.yaml\nmodels: [anthropic:claude-sonnet-4-6]\nmode: live\ntools: {get_weather: {mock: {result: sunny}}}\n"

// TestMalformedSuites feeds the CLI broken suites; each must exit 2 with
// the file, line, column and key of the problem.
func TestMalformedSuites(t *testing.T) {
	tests := []struct {
		name, suite string
		want        string // a regular expression over stderr
	}{
		{"unknown key", goodHead + "colour: red\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:1: colour: unknown key "colour"`},
		{"wrong type", goodHead + "epochs: many\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:9: epochs: want a whole number, got "many"`},
		{"missing version", strings.Replace(goodHead, "version: 1\n", "", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:1:1: version: missing key version`},
		{"unsupported version", strings.Replace(goodHead, "version: 1", "version: 2", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:1:1: version: unsupported suite version 2`},
		{"syntax error", goodHead + "cases: [{id: a, input: hi}\n", `suite\.yaml:\d+:\d+: `},
		{"missing agent", strings.Replace(goodHead, "agent: agent.yaml\n", "", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:1:1: agent: missing key agent`},
		{"agent file missing", strings.Replace(goodHead, "agent.yaml", "nope.yaml", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:3:1: agent: agent file .*nope\.yaml does not exist`},
		{"agent file invalid", strings.Replace(goodHead, "agent: agent.yaml", "agent: bad-agent.yaml", 1) + "cases: [{id: a, input: hi}]\n", `bad-agent\.yaml:2:1: colour: unknown key "colour"`},
		{"inline agent invalid", strings.Replace(goodHead, "agent: agent.yaml", "agent: {name: a, model: gpt5}", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:3:\d+: agent\.model: model spec "gpt5" has no provider`},
		{"unknown model provider", strings.Replace(goodHead, "anthropic:claude-sonnet-4-6", "nope:model", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:4:\d+: models\[0\]: unknown provider "nope"`},
		{"bad model spec", strings.Replace(goodHead, "anthropic:claude-sonnet-4-6", "gpt-5", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:4:\d+: models\[0\]: model spec "gpt-5" has no provider`},
		{"empty models", strings.Replace(goodHead, "[anthropic:claude-sonnet-4-6]", "[]", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:4:1: models: missing key models`},
		{"duplicate model", strings.Replace(goodHead, "[anthropic:claude-sonnet-4-6]", "[openai:gpt-5, openai:gpt-5]", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:4:\d+: models\[1\]: model openai:gpt-5 is listed twice`},
		{"bad provider entry", goodHead + "providers: {local: {kind: openai-compatible}}\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:\d+: providers\.local: provider entry local: base_url is required`},
		{"missing rubric file", goodHead + "grader: {model: openai:gpt-5, temperature: 0}\ncases: [{id: a, input: hi, rubric: rubrics/none.yaml}]\n", `suite\.yaml:8:\d+: cases\[0\]\.rubric: rubric file .*none\.yaml does not exist`},
		{"invalid rubric file", goodHead + "grader: {model: openai:gpt-5, temperature: 0}\ncases: [{id: a, input: hi, rubric: bad-rubric.yaml}]\n", `bad-rubric\.yaml:2:\d+: criteria\[0\]: missing key description`},
		{"invalid inline rubric", goodHead + "grader: {model: openai:gpt-5, temperature: 0}\ncases:\n  - id: a\n    input: hi\n    rubric: {criteria: [{name: ok, description: Fine., weight: -1}]}\n", `suite\.yaml:11:\d+: cases\[0\]\.rubric\.criteria\[0\]\.weight: weight must be a positive number`},
		{"rubric without grader", goodHead + "cases: [{id: a, input: hi, rubric: rubric.yaml}]\n", `suite\.yaml:7:\d+: cases\[0\]\.rubric: case a has a rubric but the suite has no grader`},
		{"grader max_iterations", goodHead + "grader: {model: openai:gpt-5, max_iterations: 0}\ncases: [{id: a, input: hi, rubric: rubric.yaml}]\n", `suite\.yaml:7:\d+: grader\.max_iterations: max_iterations must be at least 1`},
		{"duplicate case ids", goodHead + "cases:\n  - {id: a, input: hi}\n  - {id: a, input: there}\n", `suite\.yaml:9:\d+: cases\[1\]\.id: duplicate case id "a" \(also cases\[0\]\)`},
		{"case id with a slash", goodHead + "cases: [{id: a/b, input: hi}]\n", `suite\.yaml:7:\d+: cases\[0\]\.id: case id "a/b" may only hold`},
		{"case without input", goodHead + "cases:\n  - id: a\n", `suite\.yaml:8:\d+: cases\[0\]: case a needs an input`},
		{"no cases", goodHead, `suite\.yaml:1:1: cases: missing key cases`},
		{"relative file path", goodHead + "cases: [{id: a, input: hi, files: {notes.md: x}}]\n", `suite\.yaml:7:\d+: cases\[0\]\.files: file path "notes.md" must be absolute`},
		{"bad check spec", goodHead + "cases:\n  - id: a\n    input: hi\n    checks: [{tool_called: {nme: x}}]\n", `suite\.yaml:10:\d+: cases\[0\]\.checks\[0\]\.tool_called\.nme: unknown key "nme"`},
		{"unknown check", goodHead + "cases:\n  - id: a\n    input: hi\n    checks: [{toll_called: x}]\n", `suite\.yaml:10:\d+: cases\[0\]\.checks\[0\]\.toll_called: unknown check "toll_called"`},
		{"bad check regex", goodHead + "cases:\n  - id: a\n    input: hi\n    checks: [{final_answer: {regex: '('}}]\n", `suite\.yaml:10:\d+: cases\[0\]\.checks\[0\]\.final_answer\.regex: invalid regular expression`},
		{"bad mock spec", strings.Replace(goodHead, "{mock: {result: sunny}}", "{mock: {result: sunny, sequence: [a]}}", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:6:\d+: tools\.get_weather\.mock: a mock is exactly one of result \(or error\), match or sequence, got 2`},
		{"mock match without args", strings.Replace(goodHead, "{mock: {result: sunny}}", "{mock: {match: [{result: x}]}}", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:6:\d+: tools\.get_weather\.mock\.match\[0\]: a match entry needs args`},
		{"two behaviours", strings.Replace(goodHead, "{mock: {result: sunny}}", "{mock: {result: sunny}, go: x}", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:6:\d+: tools\.get_weather: a tool behaviour is exactly one of mock, exec or go, got 2`},
		{"bad exec timeout", strings.Replace(goodHead, "{mock: {result: sunny}}", "{exec: {command: cat, timeout: soon}}", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:6:\d+: tools\.get_weather\.exec\.timeout: not a positive duration: "soon"`},
		{"exec without command", strings.Replace(goodHead, "{mock: {result: sunny}}", "{exec: {timeout: 1s}}", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:6:\d+: tools\.get_weather\.exec: exec needs a command`},
		{"tool without behaviour", strings.Replace(goodHead, "tools: {get_weather: {mock: {result: sunny}}}\n", "", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:6:\d+: cases\[0\]: tool get_weather, declared by the agent, has no behaviour in case a`},
		{"behaviour for an undeclared tool", goodHead + "cases: [{id: a, input: hi, tools: {get_wether: {mock: {result: x}}}}]\n", `suite\.yaml:7:\d+: cases\[0\]\.tools\.get_wether: the agent declares no tool "get_wether"`},
		{"unregistered go tool", strings.Replace(goodHead, "{mock: {result: sunny}}", "{go: weather_impl}", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:6:\d+: tools\.get_weather\.go: no Go tool is registered as "weather_impl"`},
		{"epochs below 1", goodHead + "epochs: 0\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:1: epochs: epochs must be at least 1, got 0`},
		{"case epochs below 1", goodHead + "cases:\n  - id: a\n    input: hi\n    epochs: -2\n", `suite\.yaml:10:\d+: cases\[0\]\.epochs: epochs must be at least 1, got -2`},
		{"concurrency below 1", goodHead + "concurrency: 0\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:\d+: concurrency: concurrency must be at least 1`},
		{"unknown profile file", goodHead + "profiles: [{name: p, file: profiles/none.yaml}]\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:\d+: profiles\[0\]\.file: profile file .*none\.yaml does not exist`},
		{"invalid profile file", goodHead + "profiles: [{name: p, file: profiles/broken.yaml}]\ncases: [{id: a, input: hi}]\n", `broken\.yaml:1:\d+: excluded_tools: `},
		{"profile excluding a missing middleware", goodHead + "profiles:\n  - {name: p, file: profiles/nomw.yaml}\ncases: [{id: a, input: hi}]\n", `suite\.yaml:8:\d+: profiles\[0\]: the agent does not assemble with model anthropic:claude-sonnet-4-6 and profile p`},
		{"duplicate profile", goodHead + "profiles: [{name: p}, {name: p}]\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:\d+: profiles\[1\]\.name: profile "p" is listed twice`},
		{"bad duration", goodHead + "limits: {timeout: soon}\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:\d+: limits\.timeout: not a positive duration: "soon"`},
		{"bad threshold", goodHead + "thresholds: {pass_rate: 1.5}\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:\d+: thresholds\.pass_rate: pass_rate must be between 0 and 1, got 1\.5`},
		{"unknown threshold", goodHead + "thresholds: {pass_rat: 0.5}\ncases: [{id: a, input: hi}]\n", `suite\.yaml:7:\d+: thresholds\.pass_rat: unknown key "pass_rat"`},
		{"mode unknown", strings.Replace(goodHead, "mode: live", "mode: sometimes", 1) + "cases: [{id: a, input: hi}]\n", `suite\.yaml:5:1: mode: unknown mode "sometimes"`},
		{"case model not in the suite", goodHead + "cases:\n  - id: a\n    input: hi\n    models: [openai:gpt-5]\n", `suite\.yaml:10:\d+: cases\[0\]\.models\[0\]: model openai:gpt-5 is not one of the suite's models`},
		{"alias used as tags", goodHead + "cases:\n  - {id: a, input: hi, checks: &c [{final_answer: {contains: x}}]}\n  - {id: b, input: hi, tags: *c}\n", `suite\.yaml:9:30: cases\[1\]\.tags: through alias \*c \(anchored at line 8\): cases\[0\]\.checks\[0\]: got a mapping, want a string`},
		{"own cassette for several cells", goodHead + "cases: [{id: a, input: hi, epochs: 2, cassette: x.yaml}]\n", `suite\.yaml:7:\d+: cases\[0\]\.cassette: a case with its own cassette must have exactly one cell`},
	}
	require.GreaterOrEqual(t, len(tests), 15)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"suite.yaml": tt.suite}
			for k, v := range badSuiteFiles {
				files[k] = v
			}
			dir := writeFiles(t, files)
			suite := filepath.Join(dir, "suite.yaml")
			for _, cmd := range []string{"validate", "run"} {
				code, stdout, stderr := runCLI(t, cmd, suite, "--out", t.TempDir())
				if cmd == "validate" {
					code, stdout, stderr = runCLI(t, cmd, suite)
				}
				assert.Equal(t, 2, code, "%s: stdout:\n%s\nstderr:\n%s", cmd, stdout, stderr)
				assert.Regexp(t, regexp.MustCompile(tt.want), stderr, cmd)
				assert.Equal(t, 1, strings.Count(stderr, "\n"), "%s: one line naming the problem:\n%s", cmd, stderr)
			}
		})
	}
}

func TestValidateQuickstart(t *testing.T) {
	code, stdout, stderr := runCLI(t, "validate", "../evals/examples/quickstart/suite.yaml")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "valid: 7 cases × 2 models × 2 profiles, 32 cells")
}

func TestRunIsInterruptible(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code := runMain(ctx, e, []string{"run", "../evals/examples/quickstart/suite.yaml", "--out", t.TempDir()})
	assert.Equal(t, 2, code, errb.String())
	assert.Contains(t, errb.String(), "interrupted: 0 of 32 cells finished")
}

// A grader that is also a model under test is warned about once, however
// many cells it grades.
func TestRunWarnsAboutSelfGradingOnce(t *testing.T) {
	srv := llmserver.NewServer(graderAndAgent())
	defer srv.Close()
	dir := writeFiles(t, map[string]string{"suite.yaml": `version: 1
name: self
mode: live
providers: {local: {kind: openai-compatible, base_url: "` + srv.OpenAIBaseURL() + `", api_key_env: LOCAL_KEY}}
models: [local:same]
grader: {model: local:same, temperature: 0}
epochs: 3
` + liveAgent + `cases: [{id: a, input: go, rubric: [{name: answers, description: Answers.}]}]
`})
	code, stdout, stderr := runCLIEnv(t, mapEnv(map[string]string{"LOCAL_KEY": "k"}), "run", filepath.Join(dir, "suite.yaml"), "--out", t.TempDir())
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Equal(t, 1, strings.Count(stderr, "warning: grader model local:same is also a model under test"), stderr)
	assert.LessOrEqual(t, strings.Count(stderr, "the grader model is also the model under test"), 1, stderr)
}

func TestRunCannotWriteItsOutput(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, []byte("x"), 0o644))
	code, _, stderr := runCLI(t, "run", "../evals/examples/quickstart/suite.yaml", "--out", notADir)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "output directory")
}

// validate reports every problem of a suite at once, one line each.
func TestValidateReportsEveryProblem(t *testing.T) {
	files := map[string]string{"suite.yaml": strings.Replace(goodHead, "{mock: {result: sunny}}", "{go: weather_impl}", 1) +
		"epochs: 0\nprofiles: [{name: p, file: profiles/broken.yaml}]\ncases:\n  - {id: a, input: hi, rubric: bad-rubric.yaml}\n  - {id: a, input: there}\n"}
	for k, v := range badSuiteFiles {
		files[k] = v
	}
	dir := writeFiles(t, files)
	code, _, stderr := runCLI(t, "validate", filepath.Join(dir, "suite.yaml"))
	assert.Equal(t, 2, code)
	for _, want := range []string{
		`bad-rubric\.yaml:2:\d+: criteria\[0\]: missing key description`,
		`broken\.yaml:1:\d+: excluded_tools: `,
		`suite\.yaml:6:\d+: tools\.get_weather\.go: no Go tool is registered as "weather_impl"`,
		`suite\.yaml:7:1: epochs: epochs must be at least 1, got 0`,
		`suite\.yaml:11:\d+: cases\[1\]\.id: duplicate case id "a" \(also cases\[0\]\)`,
	} {
		assert.Regexp(t, want, stderr)
	}
	assert.Equal(t, 5, strings.Count(stderr, "\n"), stderr)
}

// TestRunHonoursDAGEVALRecord is observation 4 of issue 12 through the
// CLI: DAGEVAL_RECORD overrides the suite's own mode: (here an explicit
// replay), and --mode overrides DAGEVAL_RECORD.
func TestRunHonoursDAGEVALRecord(t *testing.T) {
	srv := llmserver.NewServer(graderAndAgent())
	defer srv.Close()
	dir := writeFiles(t, map[string]string{"suite.yaml": "version: 1\nname: rec\nmode: replay\nproviders: {local: {kind: openai-compatible, base_url: \"" + srv.OpenAIBaseURL() + "\", api_key_env: LOCAL_KEY}}\nmodels: [local:m]\n" + liveAgent +
		"cases: [{id: a, input: go, checks: [{final_answer: {contains: sunny}}]}]\n"})
	suite := filepath.Join(dir, "suite.yaml")
	cassettePath := filepath.Join(dir, "cassettes", "a--local-m--default--e1.yaml")

	code, stdout, stderr := runCLIEnv(t, mapEnv(map[string]string{"LOCAL_KEY": "k", "DAGEVAL_RECORD": "missing"}), "run", suite, "--out", t.TempDir())
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "(record-missing mode)")
	assert.Contains(t, stderr, "mode record-missing: DAGEVAL_RECORD=missing")
	assert.FileExists(t, cassettePath)
	assert.Len(t, srv.Requests(), 2)
	recorded, err := os.ReadFile(cassettePath)
	require.NoError(t, err)

	// --mode replay wins over DAGEVAL_RECORD=1: nothing is called or rewritten.
	code, stdout, stderr = runCLIEnv(t, mapEnv(map[string]string{"LOCAL_KEY": "k", "DAGEVAL_RECORD": "1"}), "run", suite, "--mode", "replay", "--out", t.TempDir())
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "(replay mode)")
	assert.Len(t, srv.Requests(), 2)
	after, err := os.ReadFile(cassettePath)
	require.NoError(t, err)
	assert.Equal(t, string(recorded), string(after))

	// DAGEVAL_RECORD=1 alone re-records.
	code, _, stderr = runCLIEnv(t, mapEnv(map[string]string{"LOCAL_KEY": "k", "DAGEVAL_RECORD": "1"}), "run", suite, "--out", t.TempDir())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "mode record: DAGEVAL_RECORD=1")
	assert.Len(t, srv.Requests(), 4)
}

// TestRunThirdPartyRecordings: `dageval run` replays the suite of recordings
// other projects made, the streamed tool loops included, offline; the
// results carry the recorded tool calls, usage (unknown where a stream
// reported none), latency and warnings.
func TestRunThirdPartyRecordings(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLIEnv(t, func(string) string { return "" }, "run", "../evals/examples/thirdparty/suite.yaml", "--out", out)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "PASSED: 12 of 12 cells passed")
	data, err := os.ReadFile(filepath.Join(out, evals.ResultsFile))
	require.NoError(t, err)
	results := map[string]evals.CellResult{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r evals.CellResult
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		results[r.Case] = r
	}
	streamed := results["openai-chat-streamed-tool-loop"]
	assert.Equal(t, evals.StatusPass, streamed.Status)
	assert.Equal(t, []string{"get_capital"}, streamed.ToolCalls)
	assert.Equal(t, llm.Usage{InputTokens: 131, OutputTokens: 24}, streamed.Usage.Agent)
	assert.Equal(t, llm.Usage{InputTokens: 43, OutputTokens: 282}, results["anthropic-thinking-stream"].Usage.Agent)
	assert.Equal(t, 1, results["quirk-no-usage"].Usage.Agent.UnknownCalls)
	q := results["quirk-no-finish-reason"]
	require.NotNil(t, q.Latency)
	assert.Equal(t, int64(2010), q.Latency.ModelMS)
	assert.NotEmpty(t, q.Warnings)
	assert.Contains(t, stdout, "Latency (recorded model time per cell)")
}
