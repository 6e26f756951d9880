package harness_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/tool"
)

// Case 32, string form (§2.1): USER → BASE → SUFFIX joined by blank lines,
// as the model receives it.
func TestMainPromptAssembly(t *testing.T) {
	tests := []struct {
		name         string
		user         string
		base, suffix *string
		want         string
	}{
		{name: "base only", base: ptr("You are a custom agent."), want: "You are a custom agent."},
		{name: "base and suffix", base: ptr("B"), suffix: ptr("S"), want: "B\n\nS"},
		{name: "suffix only", suffix: ptr("S"), want: "S"},
		{name: "user and base", user: "U", base: ptr("B"), want: "U\n\nB"},
		{name: "user, base and suffix", user: "U", base: ptr("B"), suffix: ptr("S"), want: "U\n\nB\n\nS"},
		{name: "empty base", base: ptr(""), want: ""},
		{name: "empty suffix still adds the blank line", base: ptr("B"), suffix: ptr(""), want: "B\n\n"},
		{name: "nothing", want: ""},
		{name: "user only", user: "U", want: "U"},
		{name: "user and suffix", user: "U", suffix: ptr("S"), want: "U\n\nS"},
		{name: "user and an empty base", user: "U", base: ptr(""), want: "U"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {BaseSystemPrompt: tt.base, SystemPromptSuffix: tt.suffix}})
			m := fakeModel("anthropic", "claude-sonnet-4-6")
			a := newAgent(t, harness.Config{Model: m, Profiles: reg, SystemPrompt: tt.user})
			req := firstRequest(t, a, m)
			assert.Equal(t, tt.want, req.SystemText())
			assert.Equal(t, tt.want, stackOf(t, describe(t, a), "main").SystemPrompt)
		})
	}
}

// Case 32, block form: the caller's blocks keep their cache-control
// markers, the profile part becomes one more block, and the caller's
// slice is never changed.
func TestMainPromptBlocks(t *testing.T) {
	caller := []llm.Block{
		{Type: llm.BlockText, Text: "You are Bobby, a virtual assistant for company X.", CacheControl: llm.Ephemeral()},
		llm.TextBlock("Be kind."),
	}
	orig := []llm.Block{caller[0], caller[1]}
	origCC := *caller[0].CacheControl

	t.Run("with a profile part", func(t *testing.T) {
		reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {BaseSystemPrompt: ptr("B"), SystemPromptSuffix: ptr("S")}})
		m := fakeModel("anthropic", "claude-sonnet-4-6")
		a := newAgent(t, harness.Config{Model: m, Profiles: reg, SystemBlocks: caller})
		req := firstRequest(t, a, m)
		require.Len(t, req.System, 3)
		assert.Equal(t, caller[0].Text, req.System[0].Text)
		require.NotNil(t, req.System[0].CacheControl, "the caller's cache marker survives")
		assert.Equal(t, "ephemeral", req.System[0].CacheControl.Type)
		assert.Equal(t, "Be kind.", req.System[1].Text)
		assert.Equal(t, "\n\nB\n\nS", req.System[2].Text)
		// Prompt caching marks the last system block for Anthropic models.
		assert.Equal(t, llm.Ephemeral(), req.System[2].CacheControl)
		assert.Equal(t, orig, caller, "the caller's blocks are not changed")
		assert.Equal(t, origCC, *caller[0].CacheControl)

		m = fakeModel("openai", "gpt-5")
		reg = registryWith(t, map[string]profile.HarnessSpec{"openai": {BaseSystemPrompt: ptr("B"), SystemPromptSuffix: ptr("S")}})
		req = firstRequest(t, newAgent(t, harness.Config{Model: m, Profiles: reg, SystemBlocks: caller}), m)
		assert.Equal(t, append(append([]llm.Block{}, caller...), llm.TextBlock("\n\nB\n\nS")), req.System)
	})
	t.Run("without one, the blocks pass through as they are", func(t *testing.T) {
		m := fakeModel("openai", "gpt-5")
		a := newAgent(t, harness.Config{Model: m, SystemBlocks: caller})
		req := firstRequest(t, a, m)
		assert.Equal(t, caller, req.System)
	})
	t.Run("the stored prompt does not alias the caller's markers", func(t *testing.T) {
		blocks := []llm.Block{{Type: llm.BlockText, Text: "U", CacheControl: llm.Ephemeral()}}
		m := fakeModel("anthropic", "claude-sonnet-4-6")
		a := newAgent(t, harness.Config{Model: m, SystemBlocks: blocks})
		blocks[0].CacheControl.TTL = "1h" // the caller reuses its blocks afterwards
		req := firstRequest(t, a, m)
		assert.Empty(t, req.System[0].CacheControl.TTL)
	})
}

// Case 33 (§2.2): a declarative subagent's prompt goes through its own
// profile: the base replaces the authored prompt, the suffix follows it.
func TestDeclarativeSubagentPrompt(t *testing.T) {
	reg := registryWith(t, map[string]profile.HarnessSpec{
		"terse":     {SystemPromptSuffix: ptr("Be terse.")},
		"based":     {BaseSystemPrompt: ptr("Profile base."), SystemPromptSuffix: ptr("Suffix.")},
		"anthropic": {SystemPromptSuffix: ptr("Parent suffix.")},
	})
	resolve := func(spec string) (llm.ChatModel, error) {
		id, err := llm.ParseSpec(spec)
		if err != nil {
			return nil, err
		}
		return fakeModel(id.Provider, id.Model), nil
	}
	tests := []struct{ model, want string }{
		{"terse:m", "Authored worker prompt.\n\nBe terse."},
		{"based:m", "Profile base.\n\nSuffix."},
		{"plain:m", "Authored worker prompt."},
		{"", "Authored worker prompt.\n\nParent suffix."}, // no model: the parent's model and so its profile
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg, ResolveModel: resolve,
				SubAgents: []harness.SubAgentSpec{{Name: "worker", Description: "Works.", SystemPrompt: "Authored worker prompt.", ModelSpec: tt.model}}})
			assert.Equal(t, tt.want, stackOf(t, describe(t, a), "subagent:worker").SystemPrompt)
			assert.Equal(t, "Parent suffix.", stackOf(t, describe(t, a), "main").SystemPrompt)
		})
	}

	t.Run("without a model the profile comes from the parent model's identity, not its spec", func(t *testing.T) {
		reg := registryWith(t, map[string]profile.HarnessSpec{
			"specprov": {SystemPromptSuffix: ptr("from the spec")},
			"idprov":   {SystemPromptSuffix: ptr("from the identity")},
		})
		a := newAgent(t, harness.Config{ModelSpec: "specprov:m", Profiles: reg,
			ResolveModel: func(string) (llm.ChatModel, error) { return fakeModel("idprov", "m"), nil },
			SubAgents:    []harness.SubAgentSpec{{Name: "worker", Description: "Works.", SystemPrompt: "Authored."}}})
		as := describe(t, a)
		assert.Equal(t, "from the spec", stackOf(t, as, "main").SystemPrompt)
		assert.Equal(t, "Authored.\n\nfrom the identity", stackOf(t, as, "subagent:worker").SystemPrompt)
	})
}

// Case 34 (§2.2): the general-purpose prompt's precedence.
func TestGeneralPurposePrompt(t *testing.T) {
	tests := []struct {
		name string
		spec profile.HarnessSpec
		want string
	}{
		{"default", profile.HarnessSpec{}, harness.DefaultSubagentPrompt},
		{"suffix only", profile.HarnessSpec{SystemPromptSuffix: ptr("GP suffix.")}, harness.DefaultSubagentPrompt + "\n\nGP suffix."},
		{"override and suffix; the profile base is ignored", profile.HarnessSpec{
			BaseSystemPrompt: ptr("Profile base."), SystemPromptSuffix: ptr("Trailer."),
			GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{SystemPrompt: ptr("GP override.")},
		}, "GP override.\n\nTrailer."},
		{"base and suffix without override", profile.HarnessSpec{BaseSystemPrompt: ptr("Profile base."), SystemPromptSuffix: ptr("Trailer.")}, "Profile base.\n\nTrailer."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: registryWith(t, map[string]profile.HarnessSpec{"anthropic": tt.spec})})
			assert.Equal(t, tt.want, stackOf(t, describe(t, a), "subagent:"+gpName).SystemPrompt)
		})
	}
}

// Case 35: a subagent with its own model gets its own profile's hidden
// tools and descriptions; neither side's leak into the other.
func TestSubagentLevelProfile(t *testing.T) {
	reg := registryWith(t, map[string]profile.HarnessSpec{
		"anthropic": {ExcludedTools: []string{"glob"}, ToolDescriptionOverrides: map[string]string{"ls": "Parent ls.", "lookup": "Parent lookup."}},
		"other":     {ExcludedTools: []string{"grep"}, ToolDescriptionOverrides: map[string]string{"ls": "Child ls.", "lookup": "Child lookup."}},
	})
	sub := fakeModel("other", "m")
	lookup := echoTool(t, "lookup", "Looks things up.")
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg, Tools: []tool.Tool{lookup},
		SubAgents: []harness.SubAgentSpec{
			{Name: "own", Description: "Own model.", SystemPrompt: "Own.", Model: sub},
			{Name: "inherits", Description: "Parent's model.", SystemPrompt: "Inherits."},
		}})
	as := describe(t, a)
	check := func(stack, hidden, shown, ls, lk string) {
		t.Helper()
		s := stackOf(t, as, stack)
		names := stackTools(s)
		assert.NotContains(t, names, hidden, stack)
		assert.Contains(t, names, shown, stack)
		for _, tl := range s.Tools {
			switch tl.Name {
			case "ls":
				assert.Equal(t, ls, tl.Description, stack)
			case "lookup":
				assert.Equal(t, lk, tl.Description, stack)
			}
		}
	}
	check("main", "glob", "grep", "Parent ls.", "Parent lookup.")
	check("subagent:"+gpName, "glob", "grep", "Parent ls.", "Parent lookup.")
	check("subagent:own", "grep", "glob", "Child ls.", "Child lookup.")
	check("subagent:inherits", "glob", "grep", "Parent ls.", "Parent lookup.")
	assert.Equal(t, "Looks things up.", lookup.Spec().Description)

	// The subagent's own model receives that view when the task runs.
	res, err := subAgents(t, a)[1].Runner.Invoke(t.Context(), inputOf("go"))
	require.NoError(t, err)
	assert.Equal(t, "hello!", res.Text())
	req := sub.Requests()[0]
	assert.NotContains(t, toolNames(req.Tools), "grep")
	assert.Equal(t, "Child ls.", toolDescription(t, req.Tools, "ls"))
}
