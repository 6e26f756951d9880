package evals_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/rubrics"
)

const datasetHead = "version: 1\nname: ds\nagent: {tools: [{name: get_weather}]}\nmodels: [openai:gpt-5]\ntools: {get_weather: {mock: {result: sunny}}}\n"

// Cases come from JSONL and CSV files, mixed with inline cases, with the
// rows' vars templated into input, files and checks.
func TestDatasetCases(t *testing.T) {
	path := writeSuite(t, map[string]string{
		"suite.yaml": datasetHead + `cases:
  - {id: inline, input: hi}
  - file: data/weather.jsonl
    input: "What is the weather in {{city}}?"
    files: {"/notes/{{city | printf \"%s\" }}.md": "Notes on {{city}}."}
    epochs: "{{runs}}"
    checks:
      - final_answer: {contains: "{{expected}}"}
      - tool_called: {name: get_weather, args: {city: "{{city}}"}}
    tags: [weather]
  - file: data/capitals.csv
    input: "What is the capital of {{country}}?"
    checks: [{final_answer: {contains: "{{capital}}"}}]
`,
		"data/weather.jsonl": `{"id": "paris", "city": "Paris", "expected": "sunny", "runs": 2}

{"vars": {"city": "Oslo", "expected": "snow"}, "runs": 1, "tags": ["cold"]}
{"city": "Lima", "expected": "fog", "runs": 1, "input": "Weather in {{city}}, please."}
`,
		"data/capitals.csv": "country,capital,tags\nFrance,Paris,europe\n\"Peru, the republic\",Lima,\"americas south\"\n",
	})
	s, err := evals.Load(path)
	require.NoError(t, err)
	var ids []string
	for _, c := range s.Cases {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"inline", "paris", "weather-2", "weather-3", "capitals-1", "capitals-2"}, ids,
		"rows keep their file order at their entry's place; a row without an id is <file>-<row>")
	dir := filepath.Dir(path)
	paris := s.Cases[1]
	assert.Equal(t, "What is the weather in Paris?", paris.Input)
	assert.Equal(t, map[string]string{"/notes/Paris.md": "Notes on Paris."}, paris.Files)
	assert.Equal(t, 2, paris.Epochs, `"{{runs}}" alone takes the var's type`)
	assert.Equal(t, []string{"weather"}, paris.Tags)
	assert.Equal(t, filepath.Join(dir, "data", "weather.jsonl")+":1", paris.Source)
	require.Len(t, paris.Checks, 2)
	fa := paris.Checks[0].(*rubrics.FinalAnswerCheck)
	assert.Equal(t, []string{"sunny"}, fa.Contains)
	tc := paris.Checks[1].(*rubrics.ToolCalledCheck)
	assert.JSONEq(t, `{"city": "Paris"}`, string(tc.Call.Args.Value))

	oslo := s.Cases[2]
	assert.Equal(t, "What is the weather in Oslo?", oslo.Input)
	assert.Equal(t, []string{"cold"}, oslo.Tags, "a row's own keys win over the template")
	assert.Equal(t, filepath.Join(dir, "data", "weather.jsonl")+":3", oslo.Source, "blank lines count")
	assert.Equal(t, "Weather in Lima, please.", s.Cases[3].Input, "a row's input is a template too")

	peru := s.Cases[5]
	assert.Equal(t, "What is the capital of Peru, the republic?", peru.Input)
	assert.Equal(t, []string{"americas", "south"}, peru.Tags)
	assert.Equal(t, filepath.Join(dir, "data", "capitals.csv")+":3", peru.Source)
}

// A dataset's problems are reported at the row (file:line: key: …), its
// template's syntax at the suite.
func TestDatasetErrors(t *testing.T) {
	tests := []struct {
		name, entry, data string
		want              []string
	}{
		{"unknown var", "{file: d.jsonl, input: \"Weather in {{citty}}?\"}", `{"city": "Paris"}` + "\n",
			[]string{`d.jsonl:1: input: "Weather in {{citty}}?" uses {{citty}}, but the row has no var citty (its vars: city)`}},
		{"bad check from a row", "{file: d.jsonl, input: x, checks: [{final_answer: {regex: \"{{re}}\"}}]}", `{"re": "ok"}` + "\n" + `{"re": "("}` + "\n",
			[]string{`d.jsonl:2: checks[0].final_answer.regex: invalid regular expression`}},
		{"every bad row", "{file: d.jsonl}", `{"id": "a"}` + "\n" + `{"input": ""}` + "\n" + `not json` + "\n",
			[]string{`d.jsonl:3: not a JSON object`}},
		{"rows", "{file: d.jsonl}", `{"id": "a"}` + "\n" + `{"id": "b/c", "input": "x"}` + "\n",
			[]string{`d.jsonl:1: case a needs an input (the user's message)`, `d.jsonl:2: id: case id "b/c" may only hold letters`}},
		{"duplicate ids", "{file: d.jsonl, input: x}", `{"id": "inline"}` + "\n" + `{"id": "z"}` + "\n" + `{"id": "z"}` + "\n",
			[]string{`d.jsonl:1: id: duplicate case id "inline" (also cases[0])`, `d.jsonl:3: id: duplicate case id "z" (also `}},
		{"template syntax", "{file: d.jsonl, input: \"Weather in {{city\"}", `{"city": "Paris"}` + "\n",
			[]string{`suite.yaml:8:28: cases[1].input: invalid template: 1: unclosed action`}},
		{"missing file", "{file: none.jsonl}", "", []string{`suite.yaml:8:6: cases[1].file: dataset file `, `none.jsonl does not exist`}},
		{"format", "{file: d.txt}", "x\n", []string{`d.txt: unknown dataset format: want a .jsonl file`}},
		{"unknown template key", "{file: d.jsonl, cassette: x.yaml}", `{}` + "\n", []string{`suite.yaml:8:21: cases[1].cassette: unknown key "cassette" in a dataset entry`}},
		{"vars not an object", "{file: d.jsonl}", `{"vars": 3}` + "\n", []string{`d.jsonl:1: vars: want an object`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"suite.yaml": datasetHead + "cases:\n  - {id: inline, input: hi}\n  - " + tt.entry + "\n"}
			if tt.data != "" {
				name := "d.jsonl"
				if strings.Contains(tt.entry, "d.txt") {
					name = "d.txt"
				}
				files[name] = tt.data
			}
			_, err := evals.Load(writeSuite(t, files))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// A dataset's cases run like inline ones: here the templated checks judge
// each row's answer.
func TestDatasetRun(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{
		"Weather in Paris?": {say("", call("get_weather", `{"city": "Paris"}`)), say("It is sunny in Paris.")},
		"Weather in Oslo?":  {say("", call("get_weather", `{"city": "Oslo"}`)), say("It is sunny in Oslo.")},
	}}
	srv := server(t, m)
	path := writeSuite(t, map[string]string{
		"suite.yaml": liveHeader(srv.URL) + `models: [local:m]
agent: {tools: [{name: get_weather}]}
tools: {get_weather: {mock: {result: sunny}}}
cases:
  file: cities.csv
  input: "Weather in {{city}}?"
  checks:
    - tool_called: {name: get_weather, args: {city: "{{city}}"}}
    - final_answer: {contains: "{{expect}}"}
`,
		"cities.csv": "id,city,expect\nparis,Paris,sunny\noslo,Oslo,snow\n",
	})
	oc := runSuite(t, path, evals.Options{})
	assert.Equal(t, evals.StatusPass, resultOf(t, oc, "paris").Status)
	oslo := resultOf(t, oc, "oslo")
	assert.Equal(t, evals.StatusFail, oslo.Status)
	assert.Contains(t, oslo.Checks[1].Detail, `the final answer "It is sunny in Oslo." does not contain "snow"`)
}
