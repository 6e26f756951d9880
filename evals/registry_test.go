package evals_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
	"github.com/dageval/dageval/rubrics"
)

// mentionsOpts are the options of a team's own check, as a suite writes them.
type mentionsOpts struct {
	Words []string `yaml:"words"`
	// Need is how many of the words must appear (all when 0).
	Need int `yaml:"need"`
}

func (o mentionsOpts) Validate() error {
	if len(o.Words) == 0 {
		return errors.New("mentions needs words")
	}
	if o.Need > len(o.Words) {
		return fmt.Errorf("need (%d) is more than the %d words", o.Need, len(o.Words))
	}
	return nil
}

// mentions is a scorer: partial credit for each word the answer has.
func mentions(_ context.Context, o mentionsOpts, run *rubrics.Record) rubrics.CheckVerdict {
	answer := strings.ToLower(run.FinalAnswer())
	found := 0
	var missing []string
	for _, w := range o.Words {
		if strings.Contains(answer, strings.ToLower(w)) {
			found++
		} else {
			missing = append(missing, w)
		}
	}
	need := o.Need
	if need == 0 {
		need = len(o.Words)
	}
	v := rubrics.CheckVerdict{Passed: found >= need, Score: float64(found) / float64(len(o.Words))}
	if len(missing) > 0 {
		v.Detail = "missing: " + strings.Join(missing, ", ")
	}
	return v
}

func checkRegistry() *evals.Registry {
	return evals.NewRegistry().
		AddCheck("mentions", evals.NewCheck(mentions)).
		AddCheck("polite", evals.NewCheck(func(_ context.Context, _ struct{}, run *rubrics.Record) rubrics.CheckVerdict {
			return rubrics.CheckVerdict{Passed: strings.Contains(run.FinalAnswer(), "please")}
		})).
		AddCheck("fragile", evals.NewCheck(func(context.Context, struct{}, *rubrics.Record) rubrics.CheckVerdict { panic("index out of range") }))
}

// Go checks registered by name are used in suite files like built-in ones,
// with their options decoded strictly and the verdicts of built-in checks.
func TestRegisteredChecks(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{"weather": {say("Sunny and warm in Paris.")}}}
	srv := server(t, m)
	path := writeSuite(t, map[string]string{"suite.yaml": liveHeader(srv.URL) + `models: [local:m]
agent: {name: a}
cases:
  - id: weather
    input: weather
    checks:
      - mentions: {words: [sunny, Paris, humidity], need: 2}
      - polite:
      - fragile: {}
      - final_answer: {contains: Paris}
`})
	reg := checkRegistry()
	s, err := reg.Load(path)
	require.NoError(t, err)
	oc, err := s.Run(t.Context(), evals.Options{Getenv: testEnv})
	require.NoError(t, err)
	r := oc.Results[0]
	require.Len(t, r.Checks, 4)
	assert.Equal(t, rubrics.CheckVerdict{Name: "mentions", Passed: true, Score: 2.0 / 3, Detail: "missing: humidity"}, r.Checks[0])
	assert.Equal(t, rubrics.CheckVerdict{Name: "polite", Passed: false, Score: 0}, r.Checks[1])
	assert.Equal(t, rubrics.CheckVerdict{Name: "fragile", Detail: "check fragile panicked: index out of range"}, r.Checks[2])
	assert.True(t, r.Checks[3].Passed)
	assert.Equal(t, evals.StatusFail, r.Status)
	assert.InDelta(t, (2.0/3+0+0+1)/4, r.Score, 1e-9, "a Go check's score counts like a built-in one's")

	_, err = evals.Load(path)
	require.ErrorContains(t, err, `checks[0].mentions: unknown check "mentions" (known checks: final_answer,`, "a registry's checks are its suites' alone")
}

func TestRegisteredCheckOptionErrors(t *testing.T) {
	head := "version: 1\nname: c\nagent: {name: a}\nmodels: [openai:gpt-5]\ncases:\n  - id: a\n    input: hi\n    checks:\n"
	for spec, want := range map[string]string{
		"      - mentions: {words: [a], nede: 1}\n": `suite.yaml:9:32: cases[0].checks[0].mentions.nede: unknown key "nede"`,
		"      - mentions: {words: a}\n":            `suite.yaml:9:27: cases[0].checks[0].mentions.words: `,
		"      - mentions: {words: [a], need: 3}\n": `suite.yaml:9:9: cases[0].checks[0].mentions: need (3) is more than the 1 words`,
		"      - mentions:\n":                       `suite.yaml:9:9: cases[0].checks[0].mentions: mentions needs words`,
		"      - mention: {words: [a]}\n":           `suite.yaml:9:9: cases[0].checks[0].mention: unknown check "mention" (known checks: final_answer, assistant_text, tool_result, tool_called, tool_not_called, trajectory, same_turn, turns, tool_call_count, file_exists, file_contains, file_equals, file_excludes, file_absent, state, max_steps, max_tokens, max_cost_usd, no_error, not, script, fragile, mentions, polite)`,
	} {
		_, err := checkRegistry().Parse("suite.yaml", []byte(head+spec))
		assert.ErrorContains(t, err, want, spec)
	}
}

func TestRegistryRefusesConflicts(t *testing.T) {
	noop := evals.NewCheck(func(context.Context, struct{}, *rubrics.Record) rubrics.CheckVerdict { return rubrics.CheckVerdict{} })
	assert.PanicsWithValue(t, "evals: final_answer is a built-in check", func() { evals.NewRegistry().AddCheck("final_answer", noop) })
	assert.PanicsWithValue(t, "evals: a check named x is already registered", func() { evals.NewRegistry().AddCheck("x", noop).AddCheck("x", noop) })
	assert.Panics(t, func() { evals.NewRegistry().AddCheck("y", evals.CheckDef{}) })
	assert.Equal(t, []string{"fragile", "mentions", "polite"}, checkRegistry().Checks())
}

// A registry's tools and agent factories reach the suites it loads, and
// the error for a name it lacks lists what it has.
func TestRegistryToolsAndAgents(t *testing.T) {
	reg := evals.NewRegistry().AddTool("clock", clockTool(t))
	path := writeSuite(t, map[string]string{"suite.yaml": "version: 1\nname: r\nmode: live\nagent: {tools: [{name: now}]}\nmodels: [openai:gpt-5]\ntools: {now: {go: clock}}\ncases: [{id: a, input: hi}]\n"})
	s, err := reg.Load(path)
	require.NoError(t, err)
	require.NoError(t, s.Validate(t.Context(), evals.Options{}))

	s, err = evals.NewRegistry().AddTool("calendar", clockTool(t)).Load(path)
	require.NoError(t, err)
	err = s.Validate(t.Context(), evals.Options{})
	assert.ErrorContains(t, err, `tools.now.go: no Go tool is registered as "clock" (registered: calendar; register one with evals.RegisterTool or a Registry`)
}

func clockTool(t *testing.T) tool.Tool {
	t.Helper()
	return tool.Must(tool.New("clock", "The time.", func(context.Context, struct{}) (string, error) { return "12:00", nil }))
}
