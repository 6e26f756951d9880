package harness_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/profile"
)

// The JSON form has the documented shape and carries exactly what the text
// form shows.
func TestAssemblyJSON(t *testing.T) {
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemPrompt: "Use <tags> & quotes \"as is\".",
		SubAgents: []harness.SubAgentSpec{{Name: "remote", Description: "d", GraphID: "g"}}})
	as := describe(t, a)
	raw, err := as.JSON()
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `\u003c`, "no HTML escaping")
	assert.Contains(t, string(raw), `Use <tags> & quotes \"as is\".`)

	var doc struct {
		Model   string         `json:"model"`
		Profile map[string]any `json:"profile"`
		Stacks  []struct {
			Name       string   `json:"name"`
			Kind       string   `json:"kind"`
			Middleware []string `json:"middleware"`
			Tools      []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"tools"`
			SystemPrompt *string `json:"system_prompt"`
		} `json:"stacks"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.Equal(t, "anthropic:claude-sonnet-4-6", doc.Model)
	assert.NotNil(t, doc.Profile)
	require.Len(t, doc.Stacks, 3)
	assert.Equal(t, []string{"main", "subagent:general-purpose", "subagent:remote"}, []string{doc.Stacks[0].Name, doc.Stacks[1].Name, doc.Stacks[2].Name})
	for _, s := range doc.Stacks[:2] {
		require.NotNil(t, s.SystemPrompt, s.Name)
		require.NotEmpty(t, s.Tools, s.Name)
		for _, tl := range s.Tools {
			var schema map[string]any
			require.NoError(t, json.Unmarshal(tl.Parameters, &schema), "%s/%s", s.Name, tl.Name)
			assert.Equal(t, "object", schema["type"], "%s/%s", s.Name, tl.Name)
			assert.NotEmpty(t, tl.Description)
		}
	}
	assert.Equal(t, "Use <tags> & quotes \"as is\".", *doc.Stacks[0].SystemPrompt)
	// An async subagent has no local stack: empty lists, not null.
	assert.NotNil(t, doc.Stacks[2].Middleware)
	assert.NotNil(t, doc.Stacks[2].Tools)

	var back harness.Assembly
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, as.Text(), back.Text(), "the JSON holds everything the text shows")
}

// Same inputs, same bytes: describing twice (or two agents built alike)
// gives identical text and JSON.
func TestAssemblyDeterministic(t *testing.T) {
	build := func() *harness.Assembly {
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Skills: []string{"/skills/user/", "/skills/project/"}, Memory: []string{"/memory/AGENTS.md"},
			Profile:   profile.MustHarnessProfile(profile.HarnessSpec{ToolDescriptionOverrides: map[string]string{"ls": "L", "glob": "G", "grep": "R"}, ExcludedTools: []string{"delete", "edit_file", "write_file"}}),
			SubAgents: []harness.SubAgentSpec{{Name: "a", Description: "A", SystemPrompt: "a"}, {Name: "b", Description: "B", GraphID: "g", Headers: map[string]string{"x": "1", "y": "2"}}}})
		as, err := a.Describe(t.Context(), harness.DescribeOptions{Files: skillsAndMemoryFiles})
		require.NoError(t, err)
		return as
	}
	first := build()
	for range 5 {
		again := build()
		assert.Equal(t, first.Text(), again.Text())
		j1, err := first.JSON()
		require.NoError(t, err)
		j2, err := again.JSON()
		require.NoError(t, err)
		assert.Equal(t, string(j1), string(j2))
	}
}

// Diff compares two assemblies section by section.
func TestDiff(t *testing.T) {
	base := describe(t, newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemPrompt: "Be brief."}))
	same := describe(t, newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemPrompt: "Be brief."}))
	out, differ := harness.Diff(base, same)
	assert.False(t, differ)
	assert.Empty(t, out)

	head := describe(t, newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemPrompt: "Be thorough.",
		SubAgents: []harness.SubAgentSpec{{Name: "critic", Description: "Criticises.", SystemPrompt: "Criticise."}}}))
	out, differ = harness.Diff(base, head)
	require.True(t, differ)
	for _, s := range []string{
		"--- base/main\n+++ head/main\n",
		"-  Be brief.\n+  Be thorough.\n",
		"+    - critic: Criticises.\n",
		"--- base/subagent:critic\n+++ head/subagent:critic\n", // a stack only head has
		"+== subagent:critic (declarative) ==\n",
	} {
		assert.Contains(t, out, s)
	}
	assert.NotContains(t, out, "--- base\n", "the model and profile did not change")
	assert.NotContains(t, out, "base/subagent:general-purpose", "unchanged stacks are left out")

	back, differ := harness.Diff(head, base)
	require.True(t, differ)
	assert.Contains(t, back, "-== subagent:critic (declarative) ==\n", "a stack only base has is shown as removed")

	profiled := describe(t, newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemPrompt: "Be brief.",
		Profile: profile.MustHarnessProfile(profile.HarnessSpec{ExcludedTools: []string{"delete"}})}))
	out, differ = harness.Diff(base, profiled)
	require.True(t, differ)
	for _, s := range []string{
		"--- base\n+++ head\n@@ -1,3 +1,5 @@\n model: anthropic:claude-sonnet-4-6\n-profile: (none)\n+profile:\n+  excluded_tools:\n+    - delete\n",
		"+  6. _ToolExclusionMiddleware\n",
		"+  5. _ToolExclusionMiddleware\n", // general-purpose shares the profile
		"-tool delete:\n",
	} {
		assert.Contains(t, out, s)
	}
}
