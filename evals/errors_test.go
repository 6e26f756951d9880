package evals_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/rubrics"
)

// Validation reports every problem of a suite and the files it names at
// once, sorted by file and line, instead of one per run.
func TestValidateFileReportsEveryProblem(t *testing.T) {
	path := writeSuite(t, map[string]string{
		"suite.yaml": `version: 1
name: many
agent: agent.yaml
models: [anthropic:claude-sonnet-4-6, anthropic:claude-sonnet-4-6]
profiles:
  - {name: terse, file: profiles/terse.yaml}
  - {name: broken, file: profiles/broken.yaml}
epochs: 0
tools: {get_weather: {go: weather_impl}}
cases:
  - {id: a, input: hi}
  - {id: b, input: hi, rubric: bad-rubric.yaml}
  - {id: c, input: "", checks: [{toll_called: x}]}
  - {id: d, input: hi, tools: {get_wether: {mock: {result: x}}}}
`,
		"agent.yaml":           "name: a\ntools:\n  - {name: get_weather}\n",
		"bad-rubric.yaml":      "name: r\ncriteria: [{name: ok}]\n",
		"profiles/terse.yaml":  "system_prompt_suffix: Be terse.\n",
		"profiles/broken.yaml": "excluded_tools: notalist\n",
	})
	dir := filepath.Dir(path)
	_, err := evals.ValidateFile(t.Context(), path, evals.Options{Mode: "live"})
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	rel := func(l string) string { return strings.TrimPrefix(l, dir+string(filepath.Separator)) }
	for i := range lines {
		lines[i] = rel(lines[i])
	}
	assert.Equal(t, []string{
		`bad-rubric.yaml:2:12: criteria[0]: missing key description (what the grader should check)`,
		`profiles/broken.yaml:1:17: excluded_tools: must be a list of strings, got a string`,
		`suite.yaml:4:39: models[1]: model anthropic:claude-sonnet-4-6 is listed twice`,
		`suite.yaml:8:1: epochs: epochs must be at least 1, got 0`,
		`suite.yaml:9:23: tools.get_weather.go: no Go tool is registered as "weather_impl" (none is registered; register one on an evals.Registry, or with cli.WithTool in a program built on cli.Main)`,
		`suite.yaml:13:13: cases[2].input: the input is empty`,
		`suite.yaml:14:32: cases[3].tools.get_wether: the agent declares no tool "get_wether"; did you mean get_weather? (declared tools: get_weather)`,
	}, lines)
	var fe *rubrics.FieldError
	assert.True(t, errors.As(err, &fe), "each problem is a positioned error")

	_, err = evals.Load(path)
	require.Error(t, err)
	assert.Len(t, strings.Split(err.Error(), "\n"), 5, "Load reports the problems of the files; Validate adds the tools'")
}

func TestValidationErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nname: cap\nagent: {name: a}\nmodels: [openai:gpt-5]\ncases:\n")
	for i := range 25 {
		fmt.Fprintf(&b, "  - {id: c%d}\n", i)
	}
	_, err := evals.Parse("suite.yaml", []byte(b.String()))
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 21)
	assert.Equal(t, "suite.yaml:6:6: cases[0]: case c0 needs an input (the user's message)", lines[0])
	assert.Equal(t, "suite.yaml:25:6: cases[19]: case c19 needs an input (the user's message)", lines[19])
	assert.Equal(t, "… and 5 more problems", lines[20])
}
