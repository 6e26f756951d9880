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
