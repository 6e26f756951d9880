package evals_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
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
	assert.ErrorContains(t, err, `tools.now.go: no Go tool is registered as "clock" (registered: calendar; register one on an evals.Registry, or with cli.WithTool in a program built on cli.Main)`)
}

func clockTool(t *testing.T) tool.Tool {
	t.Helper()
	return tool.Must(tool.New("clock", "The time.", func(context.Context, struct{}) (string, error) { return "12:00", nil }))
}

// systemRecorder notes every system prompt a model is sent.
type systemRecorder struct {
	llm.ChatModel
	mu      sync.Mutex
	systems []string
}

func (r *systemRecorder) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	var sb strings.Builder
	for _, b := range req.System {
		sb.WriteString(b.Text)
	}
	r.mu.Lock()
	r.systems = append(r.systems, sb.String())
	r.mu.Unlock()
	return r.ChatModel.Generate(ctx, req)
}

type orderArgs struct {
	Order string `json:"order"`
}

type noteOpts struct {
	Line string `yaml:"line"`
}

// noteMiddleware adds a line to every system prompt.
type noteMiddleware struct {
	agent.Base
	line string
}

func (*noteMiddleware) Name() string { return "NoteMiddleware" }

func (m *noteMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	req.System = append(req.System, llm.TextBlock(m.line))
	return next(ctx, req)
}

// A suite's agent file names the registry's middleware, Go tool, compiled
// subagent and provider; the run uses them all, and the suite may still
// replace the Go tool with a mock in a case.
func TestRegistryReachesTheAgentFile(t *testing.T) {
	m := &systemRecorder{ChatModel: &convModel{convs: map[string][]llm.Message{
		"where is A-17?":     {say("", call("lookup_order", `{"order":"A-17"}`)), say("", call("task", `{"description":"Summarise: shipped","subagent_type":"helper"}`)), say("A-17 has shipped.")},
		"where is B-2?":      {say("", call("lookup_order", `{"order":"B-2"}`)), say("B-2 is lost.")},
		"Summarise: shipped": {say("Shipped.")},
	}}}
	srv := server(t, m)
	lookup := tool.Must(tool.New("lookup_order", "Looks an order up.", func(_ context.Context, a orderArgs) (string, error) { return "order " + a.Order + ": shipped", nil }))
	reg := evals.NewRegistry().
		AddProvider("corp", provider.Entry{Kind: provider.KindOpenAICompatible, BaseURL: srv.URL + "/v1", APIKeyEnv: "TEST_KEY"}).
		AddTool("lookup_order", lookup).
		AddMiddleware("NoteMiddleware", agentfile.NewMiddleware(func(o noteOpts) (agent.Middleware, error) { return &noteMiddleware{line: o.Line}, nil })).
		AddSubAgent("helper", func(env agentfile.SubAgentEnv) (harness.SubAgentSpec, error) {
			model, err := env.ResolveModel(env.ModelSpec)
			if err != nil {
				return harness.SubAgentSpec{}, err
			}
			a, err := agent.New(agent.Config{Name: "helper", Model: model})
			return harness.SubAgentSpec{Description: "Summarises.", Runner: a}, err
		})
	path := writeSuite(t, map[string]string{"suite.yaml": `version: 1
name: own
mode: live
models: [corp:m]
agent:
  tools: [{go: lookup_order}]
  middleware: [{name: NoteMiddleware, options: {line: "Orders are confidential."}}]
  subagents: [{compiled: helper}]
cases:
  - id: shipped
    input: where is A-17?
    checks: [{tool_called: {name: task}}, {final_answer: {contains: shipped}}]
  - id: mocked
    input: where is B-2?
    tools: {lookup_order: {mock: {result: "order B-2: lost"}}}
    checks: [{final_answer: {contains: lost}}]
`})
	s, err := reg.Load(path)
	require.NoError(t, err)
	require.NoError(t, s.Validate(t.Context(), evals.Options{Getenv: testEnv}), "the Go tool needs no behaviour in the suite")
	oc, err := s.Run(t.Context(), evals.Options{Getenv: testEnv})
	require.NoError(t, err)
	for _, r := range oc.Results {
		assert.Equal(t, evals.StatusPass, r.Status, "%s: %+v", r.ID, r)
	}
	assert.Contains(t, m.systems[0], "Orders are confidential.")

	_, err = evals.Load(path)
	assert.ErrorContains(t, err, `agent.tools[0].go: no Go tool is registered as "lookup_order" (none is registered)`, "a registry's names are its suites' alone")
}
