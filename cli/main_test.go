package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// runCLI runs the CLI in-process and returns exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code := runMain(t.Context(), e, args)
	return code, out.String(), errb.String()
}

func TestCLIBasics(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    []string
		stderr    []string
		wantNoOut bool
	}{
		{name: "no args prints usage", args: nil, code: 2, stderr: []string{"Usage: dageval <command>", "demo", "version"}},
		{name: "help", args: []string{"help"}, code: 0, stdout: []string{"Commands:", "help", "Exit codes"}},
		{name: "--help", args: []string{"--help"}, code: 0, stdout: []string{"Commands:"}},
		{name: "help for a command", args: []string{"help", "demo"}, code: 0, stdout: []string{"Usage: dageval demo", "scripted model"}},
		{name: "help --help", args: []string{"help", "--help"}, code: 0, stdout: []string{"Commands:"}},
		{name: "help for unknown command", args: []string{"help", "nope"}, code: 2, stderr: []string{`unknown command "nope"`}},
		{name: "command --help", args: []string{"version", "--help"}, code: 0, stdout: []string{"Usage: dageval version"}},
		{name: "command --help for every command", args: []string{"run", "-h"}, code: 0, stdout: []string{"Usage: dageval run", "-tolerate-errors"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: []string{`unknown command "frobnicate"`}},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"dageval " + version}},
		{name: "bad flag", args: []string{"demo", "--bogus"}, code: 2, stderr: []string{"unknown flag --bogus"}},
		{name: "a flag with a typo", args: []string{"run", "--fromat", "md", "x.yaml"}, code: 2, stderr: []string{"dageval run: unknown flag --fromat (did you mean --format?)"}},
		{name: "a command with a typo", args: []string{"rnu"}, code: 2, stderr: []string{`unknown command "rnu"; did you mean "run"?`}},
		{name: "help for a command with a typo", args: []string{"help", "comapre"}, code: 2, stderr: []string{`did you mean "compare"?`}},
		{name: "a model not in the catalog", args: []string{"assemble", "--model", "openai:gpt5"}, code: 0, stderr: []string{"warning: --model openai:gpt5 is not in the model catalog (did you mean openai:gpt-5?)"}},
		{name: "stray argument", args: []string{"demo", "extra"}, code: 2, stderr: []string{`unexpected argument "extra"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, s := range tt.stdout {
				assert.Contains(t, out, s)
			}
			for _, s := range tt.stderr {
				assert.Contains(t, errOut, s)
			}
		})
	}
}

func TestDemoPrintsTranscript(t *testing.T) {
	code, out, errOut := runCLI(t, "demo")
	assert.Equal(t, 0, code, errOut)
	for _, s := range []string{
		`→ get_weather {"city":"Paris"}`,
		`→ get_weather {"city":"Tokyo"}`,
		"── tool get_weather\n  sunny, 21C",
		"── tool get_weather\n  light rain, 17C",
		"Saved /notes/weather.md",
		"5 steps",
		"file /notes/weather.md:\n  # Weather",
	} {
		assert.Contains(t, out, s)
	}
	_, again, _ := runCLI(t, "demo")
	assert.Equal(t, out, again, "the demo is deterministic")
}
