package evals_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/internal/memtest"
)

const hostileSuiteHead = `version: 1
name: hostile
agent: agent.yaml
models: [anthropic:claude-sonnet-4-6]
`

// laughs is an alias chain: each level lists the one before ten times, so
// that eight levels of a 4.6 KB file expand to gigabytes. indent is the
// indentation of its lines.
func laughs(indent string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sl0: &l0 [%s]\n", indent, strings.TrimSuffix(strings.Repeat(strings.Repeat("ha", 200)+",", 10), ","))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ","))
	}
	return b.String()
}

// Hostile suites, agent files, rubrics, profiles and cassettes are refused
// at a position, before they cost memory. Validation runs in a child
// process with 256 MiB of address space to grow into: before the limits,
// the alias chain in a mock result died at 2.7 GB, the 40 000 brackets at
// 2.3 GB and the 10 000 levels took 355 MB and failed with no position.
func TestValidateRefusesHostileYAML(t *testing.T) {
	if !memtest.Bound(t, 256<<20) {
		return
	}
	agent := "name: a\n"
	okCase := "cases:\n  - {id: a, input: hi}\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"alias chain in a mock result", map[string]string{
			"suite.yaml": hostileSuiteHead + "tools:\n  t:\n    mock:\n      result:\n" + laughs("        ", 8) + okCase,
			"agent.yaml": agent,
		}, "suite.yaml:12:50: the aliases expand to more than 4 MiB, which exceeds the limit for what aliases may add (set DAGEVAL_YAML_MAX_ALIAS_BYTES to raise it)"},
		{"40000 brackets", map[string]string{
			"suite.yaml": hostileSuiteHead + "tags: " + strings.Repeat("[", 40000) + "\n" + okCase,
			"agent.yaml": agent,
		}, "suite.yaml:5:106: the nesting of mappings and lists exceeds the limit of 100 levels (set DAGEVAL_YAML_MAX_DEPTH to raise it)"},
		{"10000 levels", map[string]string{
			"suite.yaml": hostileSuiteHead + "tools:\n  t:\n    mock:\n      result:\n        " + strings.Repeat("- ", 10000) + "x\n" + okCase,
			"agent.yaml": agent,
		}, "suite.yaml:9:201: the nesting of mappings and lists exceeds the limit of 100 levels"},
		{"alias chain in an agent file", map[string]string{
			"suite.yaml": hostileSuiteHead + okCase,
			"agent.yaml": agent + "x:\n" + laughs("  ", 8),
		}, "agent.yaml:6:44: the aliases expand to more than 4 MiB"},
		{"alias chain in a rubric", map[string]string{
			"suite.yaml":  hostileSuiteHead + "cases:\n  - {id: a, input: hi, rubric: rubric.yaml}\n",
			"agent.yaml":  agent,
			"rubric.yaml": "name: r\ncriteria: [{name: ok, description: fine}]\nx:\n" + laughs("  ", 8),
		}, "rubric.yaml:7:44: the aliases expand to more than 4 MiB"},
		{"alias chain in a profile", map[string]string{
			"suite.yaml":   hostileSuiteHead + "profiles: [{name: p, file: profile.yaml}]\n" + okCase,
			"agent.yaml":   agent,
			"profile.yaml": "system_prompt_suffix: x\nexcluded_tools:\n" + laughs("  - ", 8),
		}, "profile.yaml:6:46: not a valid profile file: the aliases expand to more than 4 MiB"},
		{"brackets in a cassette", map[string]string{
			"suite.yaml": hostileSuiteHead + "mode: replay\ncassettes: cassettes\n" + okCase,
			"agent.yaml": agent,
			"cassettes/a--anthropic-claude-sonnet-4-6--default--e1.yaml": "version: 2\ninteractions: " + strings.Repeat("[", 40000) + "\n",
		}, "cassettes/a--anthropic-claude-sonnet-4-6--default--e1.yaml:2:115: the nesting of mappings and lists exceeds the limit of 100 levels"},
		{"alias chain in a cassette", map[string]string{
			"suite.yaml": hostileSuiteHead + "mode: replay\ncassettes: cassettes\n" + okCase,
			"agent.yaml": agent,
			"cassettes/a--anthropic-claude-sonnet-4-6--default--e1.yaml": "version: 2\nx:\n" + laughs("  ", 8) + "interactions: []\n",
		}, "cassettes/a--anthropic-claude-sonnet-4-6--default--e1.yaml:6:44: the aliases expand to more than 4 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSuite(t, tt.files)
			_, err := evals.ValidateFile(t.Context(), path, evals.Options{})
			require.Error(t, err)
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(path)+string(filepath.Separator), "")
			assert.Contains(t, msg, tt.want)
		})
	}
}

// A matrix beyond the limits is refused at validation with the number it
// would have been, before a cell is made: epochs: 2000000000 grew
// validation to 6 GB in a minute.
func TestValidateRefusesHugeMatrices(t *testing.T) {
	if !memtest.Bound(t, 256<<20) {
		return
	}
	suite := func(extra, cases string) map[string]string {
		return map[string]string{
			"suite.yaml": hostileSuiteHead + extra + "tools: {t: {mock: {result: x}}}\ncases:\n" + cases,
			"agent.yaml": "name: a\ntools:\n  - {name: t}\n",
		}
	}
	one := "  - {id: a, input: hi}\n"
	tests := []struct {
		name   string
		files  map[string]string
		epochs int
		env    map[string]string
		want   string
	}{
		{"suite epochs", suite("epochs: 2000000000\n", one), 0, nil,
			"suite.yaml:5:1: epochs: the matrix would have 2,000,000,000 cells (cases × models × profiles × epochs), which exceeds the limit of 100,000 cells (set DAGEVAL_MAX_CELLS to raise it)"},
		{"case epochs", suite("", "  - {id: a, input: hi}\n  - {id: b, input: hi, epochs: 2000000000}\n"), 0, nil,
			"suite.yaml:8:24: cases[1].epochs: the matrix would have 2,000,000,001 cells"},
		{"--epochs", suite("", one), 2000000000, nil,
			"--epochs 2000000000: the matrix would have 2,000,000,000 cells (cases × models × profiles × epochs), which exceeds the limit of 100,000 cells"},
		{"model calls", suite("epochs: 50000\nlimits: {max_steps: 1000}\n", one), 0, nil,
			"suite.yaml:5:1: epochs: the matrix's 50,000 cells could make 50,000,000 model calls (max_steps 1000 a cell, plus the grader's 3 for a case with a rubric), which exceeds the limit of 10,000,000 (set DAGEVAL_MAX_MODEL_CALLS to raise it)"},
		{"raised cell limit", suite("epochs: 200000\n", one), 0, map[string]string{"DAGEVAL_MAX_CELLS": "100"},
			"the matrix would have 200,000 cells (cases × models × profiles × epochs), which exceeds the limit of 100 cells"},
		{"bad limit", suite("", one), 0, map[string]string{"DAGEVAL_MAX_CELLS": "many"},
			`DAGEVAL_MAX_CELLS="many": want a positive whole number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := writeSuite(t, tt.files)
			_, err := evals.ValidateFile(t.Context(), path, evals.Options{Mode: "live", Epochs: tt.epochs})
			require.Error(t, err)
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(path)+string(filepath.Separator), "")
			assert.Contains(t, msg, tt.want)
		})
	}
	t.Run("within the limits", func(t *testing.T) {
		t.Setenv("DAGEVAL_MAX_CELLS", "3")
		path := writeSuite(t, suite("epochs: 3\n", one))
		s, err := evals.Load(path)
		require.NoError(t, err)
		cells, err := s.Cells("", 0)
		require.NoError(t, err)
		assert.Len(t, cells, 3)
	})
}
