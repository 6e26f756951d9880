package middleware_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// TestMain fails the package when a snapshot no longer belongs to any test,
// so stale golden files cannot pile up unnoticed.
func TestMain(m *testing.M) {
	code := m.Run()
	dirty, err := snaps.Clean(m, snaps.CleanOpts{Sort: true})
	if err != nil {
		fmt.Println("snaps.Clean:", err)
		os.Exit(1)
	}
	if dirty {
		fmt.Println("obsolete snapshots; run UPDATE_SNAPS=clean go test ./harness/middleware/")
		os.Exit(1)
	}
	os.Exit(code)
}

// The Deep Agents memory_and_skills smoke scenario: the system prompt of the
// first model call with two skill sources and two memory files.
func TestMemoryAndSkillsPromptSnapshot(t *testing.T) {
	skills, err := middleware.NewSkills(middleware.SkillsOptions{Sources: []middleware.SkillSource{{Path: "/skills/user/"}, {Path: "/skills/project/"}}})
	require.NoError(t, err)
	memory, err := middleware.NewMemory(middleware.MemoryOptions{Sources: []string{"/memory/AGENTS.md", "/memory/user/AGENTS.md"}, AddCacheControl: true})
	require.NoError(t, err)
	model := fakes.NewScripted(fakes.Reply("hello!"), fakes.Reply("hello!"), fakes.Reply("hello!"), fakes.Reply("hello!"))
	a, err := agent.New(agent.Config{Model: model, Middleware: []agent.Middleware{skills, memory}})
	require.NoError(t, err)
	in := agent.Input{
		Messages: []llm.Message{llm.User("hi")},
		Files: plainFiles(
			"/skills/user/web-research/SKILL.md", "---\nname: web-research\ndescription: Structured approach to researching a topic on the web and citing sources\n---\n\n# Web research\n\n1. Plan queries.\n2. Read sources.\n3. Cite them.\n",
			"/skills/project/code-review/SKILL.md", "---\nname: code-review\ndescription: Review a change for correctness, tests and style\nlicense: Apache-2.0\nallowed-tools: read_file grep\n---\n\n# Code review\n",
			"/memory/AGENTS.md", "# Project memory\n\n<!-- Maintained by the team. -->\n- Run `make test` before committing.\n- The API lives in /src/api.\n",
			"/memory/user/AGENTS.md", "# User preferences\n\n- Prefers concise answers.\n- Uses tabs for indentation.\n",
		),
	}
	_, err = a.Invoke(t.Context(), in)
	require.NoError(t, err)
	reqs := model.Requests()
	require.NotEmpty(t, reqs)
	require.Empty(t, reqs[0].Tools, "memory and skills add no tools")
	snaps.MatchSnapshot(t, strings.TrimRight(reqs[0].SystemText(), "\n")+"\n")
}
