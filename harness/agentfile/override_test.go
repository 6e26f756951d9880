package agentfile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agentfile"
	"github.com/dageval/dageval/internal/yamlx"
)

func TestOverride(t *testing.T) {
	base, err := agentfile.Parse("agent.yaml", []byte(`name: base
system_prompt: You are terse.
tools:
  - {name: search, description: Searches.}
memory: [/AGENTS.md]
subagents:
  - {name: helper, description: Helps., system_prompt: Help., tools: [search]}
`))
	require.NoError(t, err)
	suite := []byte(`cases:
  - id: a
    agent:
      system_prompt: Your name is Foo Bar.
      memory: [/project/AGENTS.md]
  - id: b
    agent:
      tools: [{name: fetch, description: Fetches.}]
  - id: c
    agent: {memory: [relative.md]}
  - id: d
    agent: {sytem_prompt: x}
`)
	doc, err := yamlx.Parse("suite.yaml", suite)
	require.NoError(t, err)

	a, err := base.Override(doc, "cases[0].agent")
	require.NoError(t, err)
	assert.Equal(t, "Your name is Foo Bar.", a.SystemPrompt.Text)
	assert.Equal(t, []string{"/project/AGENTS.md"}, *a.Memory)
	assert.Equal(t, "base", a.Name, "keys the override leaves out are kept")
	assert.Len(t, a.Tools, 1)
	assert.Equal(t, []string{"system_prompt", "memory"}, a.OverrideKeys())
	assert.Equal(t, "You are terse.", base.SystemPrompt.Text, "the base agent is not changed")
	assert.Empty(t, base.OverrideKeys())

	// The override replaces the tools, so the subagent's tool list (from
	// the agent file) names a tool that is gone: reported in agent.yaml.
	_, err = base.Override(doc, "cases[1].agent")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `agent.yaml:7:`)
	assert.Contains(t, err.Error(), `subagents[0].tools[0]: tool "search" is not declared in the agent's tools`)

	// A problem in the override is reported in the suite.
	_, err = base.Override(doc, "cases[2].agent")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `suite.yaml:10:22:`)
	assert.Contains(t, err.Error(), `cases[2].agent.memory[0]: "relative.md" is not an absolute path`)

	_, err = base.Override(doc, "cases[3].agent")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `suite.yaml:12:13:`)
	assert.Contains(t, err.Error(), "sytem_prompt")
}
