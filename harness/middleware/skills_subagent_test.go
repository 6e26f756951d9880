package middleware_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// Reference cases 58 and 61 (the parts that do not need the assembly): a
// subagent with its own skill sources sees only those skills, a subagent
// without skills middleware sees none, and a subagent's skills never
// bubble up to the parent.
func TestSkillsInSubagents(t *testing.T) {
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("task", map[string]string{"description": "Research it.", "subagent_type": "researcher"})),
		fakes.Reply("researched"),
		fakes.Calls("", fakes.Call("task", map[string]string{"description": "Just answer.", "subagent_type": "plain"})),
		fakes.Reply("answered"),
		fakes.Reply("all done"),
	)
	researcher, err := agent.New(agent.Config{Name: "researcher", Model: model, Middleware: []agent.Middleware{
		newSkills(t, middleware.SkillsOptions{Sources: []middleware.SkillSource{{Path: "/skills/research/"}, {Path: "/skills/extra/"}}}),
	}})
	require.NoError(t, err)
	plain, err := agent.New(agent.Config{Name: "plain", Model: model})
	require.NoError(t, err)
	parentSkills := newSkills(t, middleware.SkillsOptions{Sources: []middleware.SkillSource{{Path: "/skills/main/"}}})
	sub, err := middleware.NewSubAgentMiddleware(middleware.SubAgentOptions{
		SubAgents: []middleware.SubAgent{
			{Name: "researcher", Description: "Researches.", Runner: researcher},
			{Name: "plain", Description: "Answers.", Runner: plain},
		},
		PrivateKeys: []string{middleware.SkillsMetadataKey, middleware.SkillsLoadErrorsKey},
	})
	require.NoError(t, err)
	a := newAgent(t, model, "", nil, parentSkills, sub)
	fs := plainFiles(
		"/skills/main/planning/SKILL.md", skillMD("planning", "Plans work."),
		"/skills/research/web-research/SKILL.md", skillMD("web-research", "Researches the web."),
		"/skills/extra/citations/SKILL.md", skillMD("citations", "Formats citations."),
	)
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}, Files: fs}, agent.WithThread("p"))
	require.NoError(t, err)
	assert.Equal(t, "all done", res.Text())

	reqs := model.Requests()
	require.Len(t, reqs, 5)
	parent, child, plainReq := reqs[0].SystemText(), reqs[1].SystemText(), reqs[3].SystemText()
	assert.Contains(t, parent, "**planning**")
	assert.NotContains(t, parent, "**web-research**")
	assert.Contains(t, child, "**web-research**")
	assert.Contains(t, child, "**citations**")
	assert.NotContains(t, child, "**planning**", "the subagent loads its own sources only")
	assert.Empty(t, plainReq, "a subagent without skills middleware has no skills section")

	st := fullState(t, a, "p")
	skills, ok := agent.Value[[]middleware.Skill](st, middleware.SkillsMetadataKey)
	require.True(t, ok)
	require.Len(t, skills, 1)
	assert.Equal(t, "planning", skills[0].Name, "the subagent's skills do not bubble up")
	assert.Contains(t, reqs[4].SystemText(), "**planning**")
}
