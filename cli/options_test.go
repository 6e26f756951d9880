package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/cli"
	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/rubrics"
)

type stampOptions struct {
	Text string `yaml:"text"`
}

type stamp struct {
	agent.Base
	text string
}

func (*stamp) Name() string { return "StampMiddleware" }

func (s *stamp) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	req.System = append(req.System, llm.TextBlock(s.text))
	return next(ctx, req)
}

func newStamp(o stampOptions) (agent.Middleware, error) { return &stamp{text: o.Text}, nil }

type cityArgs struct {
	City string `json:"city" jsonschema:"the city"`
}

func weather(t *testing.T) tool.Tool {
	return tool.Must(tool.New("get_weather", "Returns the weather for a city.", func(_ context.Context, a cityArgs) (string, error) {
		return "sunny in " + a.City, nil
	}))
}

// run runs Main in-process and returns its exit code, stdout and stderr.
func run(t *testing.T, opts []cli.Option, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	opts = append([]cli.Option{cli.WithContext(t.Context()), cli.WithStdio(strings.NewReader(""), &out, &errb), cli.WithGetenv(func(string) string { return "" })}, opts...)
	code := cli.Main(args, opts...)
	return code, out.String(), errb.String()
}

// Every command sees the program's registrations: assemble builds a
// registered factory's agent and reads agent files naming registered
// middleware, tools and providers; validate loads suites naming registered
// checks; a name that is not registered is listed with those that are.
func TestMainSeesRegistrations(t *testing.T) {
	dir := t.TempDir()
	agentFile := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(agentFile, []byte(`model: corp:assistant-1
system_prompt: You answer weather questions.
tools: [{go: get_weather}]
middleware: [{name: StampMiddleware, options: {text: "Stamped."}}]
`), 0o644))
	suite := filepath.Join(dir, "suite.yaml")
	require.NoError(t, os.WriteFile(suite, []byte(`version: 1
name: own
mode: live
agent: agent.yaml
models: [corp:assistant-1]
cases:
  - id: paris
    input: Weather in Paris?
    checks: [{short: {max_words: 20}}]
`), 0o644))
	opts := []cli.Option{
		cli.WithTool("get_weather", weather(t)),
		cli.WithMiddleware("StampMiddleware", newStamp),
		cli.WithProvider("corp", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: "http://127.0.0.1:9/v1", KeyOptional: true}),
		cli.WithCheck("short", func(_ context.Context, o struct {
			MaxWords int `yaml:"max_words"`
		}, run *rubrics.Record) rubrics.CheckVerdict {
			return rubrics.CheckVerdict{Passed: len(strings.Fields(run.FinalAnswer())) <= o.MaxWords}
		}),
		cli.WithAgent("weather", func(_ context.Context, req evals.AgentRequest) (harness.Config, error) {
			return harness.Config{Name: "weather", ModelSpec: "corp:assistant-1", SystemPrompt: "From Go.", Tools: []tool.Tool{weather(t)}}, nil
		}),
	}

	code, out, errOut := run(t, opts, "assemble", "--agent", agentFile, "--stack", "main", "--omit-builtin-schemas")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "StampMiddleware")
	assert.Contains(t, out, "Stamped.")
	assert.Contains(t, out, "get_weather")
	assert.Contains(t, out, "the city", "a registered tool's schema")
	assert.NotContains(t, out, "subagent:general-purpose", "--stack main keeps one stack")
	assert.NotContains(t, out, "Absolute path of the directory to list", "--omit-builtin-schemas")

	code, out, errOut = run(t, opts, "assemble", "--agent", "factory:weather", "--omit-builtin-schemas")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "From Go.")
	assert.Contains(t, out, "corp:assistant-1")

	code, out, errOut = run(t, opts, "assemble", "--diff", "--base-agent", "factory:weather", "--head-agent", agentFile, "--stack", "main", "--omit-builtin-schemas")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "+  5. StampMiddleware")

	code, _, errOut = run(t, opts, "assemble", "--agent", "factory:nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `no agent factory is registered as "nope" (registered: weather)`)

	code, out, errOut = run(t, opts, "validate", suite)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "valid: 1 cases × 1 models × 1 profiles, 1 cells")

	// The dageval command itself knows none of it, and says so.
	code, _, errOut = run(t, nil, "validate", suite)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `tools[0].go: no Go tool is registered as "get_weather" (none is registered)`)
	code, _, errOut = run(t, nil, "assemble", "--agent", "factory:weather")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "none is registered; a program built on cli.Main registers them with cli.WithAgent")
	code, _, errOut = run(t, opts, "assemble", "--agent", agentFile, "--stack", "researcher")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "subagent:researcher")
}

// Main adds its registrations to a copy of the registry it is given, so
// the program's registry stays as it was and Main can run again.
func TestMainCopiesTheRegistry(t *testing.T) {
	reg := evals.NewRegistry().AddTool("get_weather", weather(t))
	opts := []cli.Option{cli.WithRegistry(reg), cli.WithMiddleware("StampMiddleware", newStamp)}
	for range 2 {
		code, _, errOut := run(t, opts, "assemble", "--stack", "main")
		require.Equal(t, 0, code, errOut)
	}
	assert.Empty(t, reg.Middleware())
	assert.Equal(t, []string{"get_weather"}, reg.Tools())
}
