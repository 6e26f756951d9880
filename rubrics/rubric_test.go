package rubrics_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/rubrics"
)

const weightedRubric = `name: report
description: |
  Judge the weather report.
policy: weighted
threshold: 0.75
criteria:
  - name: cites-source
    description: Names the tool the data came from.
    weight: 1
  - name: correct-city
    description: |
      Reports the weather for the city the user asked about,
      not a neighbouring one.
    weight: 3
`

func TestParseRubric(t *testing.T) {
	r, err := rubrics.ParseRubric("report.yaml", []byte(weightedRubric))
	require.NoError(t, err)
	assert.Equal(t, &rubrics.Rubric{
		Name:        "report",
		Description: "Judge the weather report.\n",
		Policy:      rubrics.PolicyWeighted,
		Threshold:   0.75,
		Criteria: []rubrics.Criterion{
			{Name: "cites-source", Description: "Names the tool the data came from.", Weight: 1},
			{Name: "correct-city", Description: "Reports the weather for the city the user asked about,\nnot a neighbouring one.", Weight: 3},
		},
	}, r)
	require.NoError(t, r.Validate())
	assert.Equal(t, `Rubric: report

Judge the weather report.

Criteria (judge each one on its own and report it under its exact name):
- cites-source (weight 1): Names the tool the data came from.
- correct-city (weight 3): Reports the weather for the city the user asked about,
  not a neighbouring one.

To pass, the criteria that are met must carry at least 75% of the total weight.`, r.Render())

	all, err := rubrics.ParseRubric("inline.yaml", []byte("- name: a\n  description: first\n- name: b\n  description: second\n"))
	require.NoError(t, err)
	assert.Equal(t, rubrics.PolicyAll, all.Policy)
	assert.Equal(t, []float64{1, 1}, []float64{all.Criteria[0].Weight, all.Criteria[1].Weight})
	assert.Equal(t, `Criteria (judge each one on its own and report it under its exact name):
- a: first
- b: second

To pass, every criterion must be met.`, all.Render())
}

func TestRubricGrade(t *testing.T) {
	r, err := rubrics.ParseRubric("report.yaml", []byte(weightedRubric))
	require.NoError(t, err)
	tests := []struct {
		name     string
		verdicts []middleware.CriterionVerdict
		score    float64
		passed   bool
		unknown  []string
		missing  []string
	}{
		{"all pass", []middleware.CriterionVerdict{{Name: "cites-source", Passed: true}, {Name: "correct-city", Passed: true}}, 1, true, nil, nil},
		{"heavy passes", []middleware.CriterionVerdict{{Name: "cites-source", Gap: "no source"}, {Name: "Correct-City ", Passed: true}}, 0.75, true, nil, nil},
		{"light passes", []middleware.CriterionVerdict{{Name: "cites-source", Passed: true}, {Name: "correct-city", Gap: "wrong city"}}, 0.25, false, nil, nil},
		{"missing verdict fails", []middleware.CriterionVerdict{{Name: "correct-city", Passed: true}, {Name: "tone", Passed: true}}, 0.75, true, []string{"tone"}, []string{"cites-source"}},
		{"conflicting verdicts fail", []middleware.CriterionVerdict{{Name: "correct-city", Passed: true}, {Name: "correct-city", Gap: "second look: wrong"}, {Name: "cites-source", Passed: true}}, 0.25, false, nil, nil},
		{"nothing", nil, 0, false, nil, []string{"cites-source", "correct-city"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := r.Grade(tt.verdicts)
			assert.InDelta(t, tt.score, g.Score, 1e-9)
			assert.Equal(t, tt.passed, g.Passed)
			assert.Equal(t, tt.unknown, g.Unknown)
			require.Len(t, g.Criteria, 2)
			assert.Equal(t, tt.missing, g.Missing)
		})
	}
	g := r.Grade([]middleware.CriterionVerdict{{Name: "correct-city", Gap: "second look: wrong"}})
	assert.Equal(t, "second look: wrong", g.Criteria[1].Gap)
	assert.Equal(t, "the grader gave no verdict on this criterion", g.Criteria[0].Gap)

	// Policy all: one failure fails the rubric, whatever the weights.
	all := &rubrics.Rubric{Criteria: []rubrics.Criterion{{Name: "a", Description: "x", Weight: 9}, {Name: "b", Description: "y"}}}
	require.NoError(t, all.Validate())
	g = all.Grade([]middleware.CriterionVerdict{{Name: "a", Passed: true}, {Name: "b", Gap: "no"}})
	assert.False(t, g.Passed)
	assert.InDelta(t, 0.9, g.Score, 1e-9)
}

func TestRubricValidateGoBuilt(t *testing.T) {
	tests := []struct {
		r    rubrics.Rubric
		want string
	}{
		{rubrics.Rubric{}, "no criteria"},
		{rubrics.Rubric{Policy: "most"}, `unknown policy "most"`},
		{rubrics.Rubric{Policy: rubrics.PolicyWeighted, Criteria: []rubrics.Criterion{{Name: "a", Description: "d"}}}, "needs a threshold"},
		{rubrics.Rubric{Threshold: 0.5, Criteria: []rubrics.Criterion{{Name: "a", Description: "d"}}}, "threshold only applies"},
		{rubrics.Rubric{Criteria: []rubrics.Criterion{{Name: "a", Description: "d"}, {Name: "A", Description: "e"}}}, `two criteria are named "A"`},
		{rubrics.Rubric{Criteria: []rubrics.Criterion{{Name: "a"}}}, `criterion "a" has no description`},
		{rubrics.Rubric{Criteria: []rubrics.Criterion{{Name: "a", Description: "d", Weight: -1}}}, "weight must be a positive number"},
		{rubrics.Rubric{Criteria: []rubrics.Criterion{{Name: "a\nb", Description: "d"}}}, "single line"},
	}
	for _, tt := range tests {
		assert.ErrorContains(t, tt.r.Validate(), tt.want)
	}
}

func TestMalformedRubrics(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", "bad.yaml:1:1: the document is empty"},
		{"syntax", "name: [unclosed\n", "bad.yaml:1:7:"},
		{"not a mapping", "just text\n", "bad.yaml:1:1: want a mapping, got a string"},
		{"unknown key", "name: x\ncriterias: []\n", `bad.yaml:2:1: criterias: unknown key "criterias" (known keys: name, description, policy, threshold, criteria)`},
		{"missing criteria", "name: x\n", "bad.yaml:1:1: missing key criteria"},
		{"criteria not a list", "criteria: {a: b}\n", "bad.yaml:1:11: criteria: want a list, got a mapping"},
		{"no criteria", "criteria: []\n", "bad.yaml:1:11: criteria: a rubric needs at least one criterion"},
		{"criterion unknown key", "criteria:\n  - name: a\n    description: d\n    wieght: 2\n", `bad.yaml:4:5: criteria[0].wieght: unknown key "wieght" (known keys: name, description, weight)`},
		{"weight type", "criteria:\n  - name: a\n    description: d\n    weight: heavy\n", "bad.yaml:4:13: criteria[0].weight: want a number, got a string"},
		{"weight zero", "criteria:\n  - name: a\n    description: d\n    weight: 0\n", "bad.yaml:4:13: criteria[0].weight: weight must be a positive number, got 0"},
		{"missing name", "criteria:\n  - description: d\n", "bad.yaml:2:5: criteria[0]: missing key name"},
		{"missing description", "criteria:\n  - name: a\n", "bad.yaml:2:5: criteria[0]: missing key description"},
		{"duplicate name", "criteria:\n  - name: a\n    description: d\n  - name: A\n    description: e\n", `bad.yaml:4:11: criteria[1].name: duplicate criterion name "A"`},
		{"name type", "criteria:\n  - name: [a]\n    description: d\n", "bad.yaml:2:11: criteria[0].name: want a string, got a list"},
		{"unknown policy", "policy: most\ncriteria:\n  - name: a\n    description: d\n", `bad.yaml:1:9: policy: unknown policy "most" (want all or weighted)`},
		{"weighted without threshold", "policy: weighted\ncriteria:\n  - name: a\n    description: d\n", "bad.yaml:1:9: policy: policy weighted needs a threshold"},
		{"threshold without weighted", "threshold: 0.5\ncriteria:\n  - name: a\n    description: d\n", "bad.yaml:1:1: threshold: threshold only applies to policy: weighted"},
		{"threshold range", "policy: weighted\nthreshold: 1.5\ncriteria:\n  - name: a\n    description: d\n", "bad.yaml:2:12: threshold: must be greater than 0 and at most 1, got 1.5"},
		{"duplicate key", "name: a\nname: b\ncriteria: []\n", "bad.yaml:2:1:"},
		{"two documents", "name: a\n---\nname: b\n", "bad.yaml:3:1: only one YAML document is allowed per file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rubrics.ParseRubric("bad.yaml", []byte(tt.src))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var fe *rubrics.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "bad.yaml", fe.File)
			assert.Positive(t, fe.Line)
			assert.Positive(t, fe.Column)
		})
	}
}

func TestStockRubrics(t *testing.T) {
	names := rubrics.StockNames()
	assert.Equal(t, []string{"concise", "faithful-to-tools", "helpful"}, names)
	for _, name := range names {
		embedded, err := rubrics.StockRubric(name)
		require.NoError(t, err, name)
		require.NoError(t, embedded.Validate(), name)
		assert.Equal(t, name, embedded.Name)
		// The same file loads by path from the source tree.
		fromDisk, err := rubrics.LoadRubric(name + ".yaml")
		require.NoError(t, err)
		assert.Equal(t, embedded, fromDisk)
		fromFS, err := rubrics.LoadRubricFS(rubrics.Stock(), name+".yaml")
		require.NoError(t, err)
		assert.Equal(t, embedded, fromFS)
		assert.NotEmpty(t, embedded.Render())
	}
	_, err := rubrics.StockRubric("nope")
	require.ErrorContains(t, err, `no stock rubric "nope" (stock rubrics: concise, faithful-to-tools, helpful)`)

	dir := t.TempDir()
	path := filepath.Join(dir, "r.yaml")
	require.NoError(t, os.WriteFile(path, []byte("criteria:\n  - name: a\n    description: d\n    weight: x\n"), 0o600))
	_, err = rubrics.LoadRubric(path)
	require.ErrorContains(t, err, path+":4:13: criteria[0].weight: want a number, got a string")
	_, err = rubrics.LoadRubric(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "no such file")
}
