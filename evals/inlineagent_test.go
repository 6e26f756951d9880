package evals_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
)

// The inline agent is decoded from its own lines of the suite file, and
// reads the same whatever surrounds it: an alias of an anchor elsewhere in
// the file, a suite in flow style, and an error in the agent is reported
// at its line and column of the suite file.
func TestInlineAgent(t *testing.T) {
	const cases = "cases: [{id: c1, input: &q \"What is 6 x 7?\", checks: [{final_answer: {contains: \"42\"}}]}]\n"
	const head = "version: 1\nname: s\nmodels: [\"openai:gpt-4o\"]\n"
	for name, src := range map[string]string{
		"own lines":      head + "agent:\n  name: answerer\n  system_prompt: You answer.\n" + cases,
		"last key":       head + cases + "agent:\n  name: answerer\n  system_prompt: You answer.",
		"alias":          head + cases + "agent:\n  name: answerer\n  system_prompt: *q\n",
		"flow style":     "{version: 1, name: s, models: [\"openai:gpt-4o\"], agent: {name: answerer, system_prompt: You answer.}, cases: [{id: c1, input: hi}]}\n",
		"comment before": head + "# the agent\nagent: {name: answerer, system_prompt: You answer.} # inline\n" + cases,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := evals.Parse("suite.yaml", []byte(src))
			require.NoError(t, err)
			af, _, err := s.CaseAgent("c1")
			require.NoError(t, err)
			assert.Equal(t, "answerer", af.Name)
			want := "You answer."
			if name == "alias" {
				want = "What is 6 x 7?"
			}
			assert.Equal(t, want, af.SystemPrompt.Text)
		})
	}
	_, err := evals.Parse("suite.yaml", []byte(head+"agent:\n  name: answerer\n  system_promt: You answer.\n"+cases))
	assert.ErrorContains(t, err, `suite.yaml:6:3: agent.system_promt: unknown key "system_promt"`)
}
