package evals_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
)

// Numbers are what the file says: a fraction where a whole number belongs
// is refused with its value, not truncated (epochs: 2.9 ran two epochs,
// concurrency: 0.5 was reported as "got 0").
func TestSuiteNumbersAreStrict(t *testing.T) {
	tests := []struct{ name, extra, want string }{
		{"fractional epochs", "epochs: 2.9\n", "suite.yaml:5:9: epochs: want a whole number, got 2.9"},
		{"fractional concurrency", "concurrency: 0.5\n", "suite.yaml:5:14: concurrency: want a whole number, got 0.5"},
		{"quoted epochs", "epochs: \"2\"\n", `suite.yaml:5:9: epochs: want a whole number, got "2"`},
		{"fractional max_steps", "limits: {max_steps: 1.5}\n", "suite.yaml:5:21: limits.max_steps: want a whole number, got 1.5"},
		{"huge epochs", "epochs: 99999999999999999999\n", "suite.yaml:5:9: epochs:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSuite(t, map[string]string{
				"suite.yaml": hostileSuiteHead + tt.extra + "cases:\n  - {id: a, input: hi, epochs: 1}\n",
				"agent.yaml": "name: a\n",
			})
			_, err := evals.ValidateFile(t.Context(), path, evals.Options{Mode: "live"})
			require.Error(t, err)
			assert.Contains(t, strings.ReplaceAll(err.Error(), filepath.Dir(path)+string(filepath.Separator), ""), tt.want)
		})
	}
}

// A byte order mark at the start of a suite (some Windows editors write
// one) is not part of the first key.
func TestSuiteWithByteOrderMark(t *testing.T) {
	path := writeSuite(t, map[string]string{
		"suite.yaml": "\ufeff# a suite saved by Notepad\n" + hostileSuiteHead + "cases:\n  - {id: a, input: hi}\n",
		"agent.yaml": "\ufeffname: a\n",
	})
	_, err := evals.ValidateFile(t.Context(), path, evals.Options{Mode: "live"})
	require.NoError(t, err)
}

// Names holding bidirectional control characters read differently on
// screen from what they are, and are refused: seeded file names, tool
// names, models, case ids and profile names.
func TestSuiteNamesWithBidiControls(t *testing.T) {
	rlo := "\u202e"
	tests := []struct{ name, body, want string }{
		{"file name", "cases:\n  - {id: a, input: hi, files: {\"/notes/" + rlo + "dm.exe\": x}}\n", "cases[0].files: file path \"/notes/\\u202edm.exe\" holds the bidirectional control character U+202E"},
		{"tool name", "tools: {\"t" + rlo + "x\": {mock: {result: x}}}\ncases:\n  - {id: a, input: hi}\n", "holds the bidirectional control character U+202E"},
		{"case id", "cases:\n  - {id: \"a" + rlo + "b\", input: hi}\n", "cases[0].id:"},
		{"profile name", "profiles: [{name: \"p\u2066\"}]\ncases:\n  - {id: a, input: hi}\n", "profiles[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSuite(t, map[string]string{
				"suite.yaml": hostileSuiteHead + tt.body,
				"agent.yaml": "name: a\n",
			})
			_, err := evals.ValidateFile(t.Context(), path, evals.Options{Mode: "live"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	path := writeSuite(t, map[string]string{
		"suite.yaml": strings.Replace(hostileSuiteHead, "[anthropic:claude-sonnet-4-6]", "[\"anthropic:claude-sonnet-4-6\u200f\"]", 1) + "cases:\n  - {id: a, input: hi}\n",
		"agent.yaml": "name: a\n",
	})
	_, err := evals.ValidateFile(t.Context(), path, evals.Options{Mode: "live"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "models[0]: model \"anthropic:claude-sonnet-4-6\\u200f\" holds the bidirectional control character U+200F")
}
