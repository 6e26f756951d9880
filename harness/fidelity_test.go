package harness_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
)

// specResolver resolves every spec to a fake model with that spec's identity,
// as the built-in providers do, without a network or a key.
func specResolver(spec string) (llm.ChatModel, error) {
	id, err := llm.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return fakeModel(id.Provider, id.Model), nil
}

// Issue 16, bug 1: Deep Agents decides whether to add its general-purpose
// subagent from the inline (synchronous) subagents only, so an async
// subagent named general-purpose leaves both the synchronous one and the
// task tool in place.
func TestAsyncSubagentNamedGeneralPurposeKeepsTheSyncOne(t *testing.T) {
	a := newAgent(t, harness.Config{ModelSpec: "anthropic:claude-sonnet-4-5", ResolveModel: specResolver,
		SubAgents: []harness.SubAgentSpec{{Name: gpName, Description: "remote", GraphID: "gp", URL: "http://x"}}})
	assert.Equal(t, []string{fsMW, subMW, summMW, patchMW, asyncMW, cacheMW}, a.Middleware())
	names := make([]string, 0)
	for _, s := range subAgents(t, a) {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{gpName}, names, "the task tool launches the synchronous general-purpose subagent")

	as := describe(t, a)
	main := stackOf(t, as, "main")
	assert.Contains(t, stackTools(main), "task")
	assert.Contains(t, stackTools(main), "start_async_task")
	var kinds []string
	for _, s := range as.Stacks {
		if s.Name == "subagent:"+gpName {
			kinds = append(kinds, s.Kind)
		}
	}
	assert.Equal(t, []string{"general-purpose", "async"}, kinds, "both are described")

	// Disabling the general-purpose subagent in head shows as the removal
	// of that stack alone, not as a change to the async one of the same name.
	off := profile.MustHarnessProfile(profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(false)}})
	head := describe(t, newAgent(t, harness.Config{ModelSpec: "anthropic:claude-sonnet-4-5", ResolveModel: specResolver, Profile: off,
		SubAgents: []harness.SubAgentSpec{{Name: gpName, Description: "remote", GraphID: "gp", URL: "http://x"}}}))
	out, differ := harness.Diff(as, head)
	require.True(t, differ)
	assert.Contains(t, out, "--- base/subagent:general-purpose (general-purpose)\n+++ head/subagent:general-purpose (general-purpose)\n")
	assert.Contains(t, out, "-== subagent:general-purpose (general-purpose) ==\n")
	assert.NotContains(t, out, "subagent:general-purpose (async)\n", "the async stack did not change")
}

// Issue 16, bug 2: Deep Agents looks a subagent's profile up by the
// subagent's model, so a profile for the main model (Config.Profile: the
// --profile files, an eval cell's profile) reaches a subagent that spells
// out the main model exactly as it reaches one without a model.
func TestConfigProfileReachesSubagentNamingTheMainModel(t *testing.T) {
	over := profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("SUFFIX"), ExcludedTools: []string{"grep"}})
	for _, tt := range []struct {
		name string
		cfg  harness.Config
	}{
		{"main model from a spec", harness.Config{ModelSpec: "anthropic:claude-sonnet-4-5"}},
		{"main model given ready-made", harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-5")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.ResolveModel, cfg.Profile = specResolver, over
			cfg.SubAgents = []harness.SubAgentSpec{
				{Name: "inherits", Description: "d", SystemPrompt: "Inherits."},
				{Name: "spells-out", Description: "d", SystemPrompt: "Spells out.", ModelSpec: "anthropic:claude-sonnet-4-5"},
				{Name: "other", Description: "d", SystemPrompt: "Other.", ModelSpec: "anthropic:claude-haiku-4-5"},
			}
			as := describe(t, newAgent(t, cfg))
			for _, name := range []string{"inherits", "spells-out"} {
				s := stackOf(t, as, "subagent:"+name)
				assert.Contains(t, s.SystemPrompt, "\n\nSUFFIX", name)
				assert.NotContains(t, stackTools(s), "grep", name)
				assert.Contains(t, s.Middleware, toolExMW, name)
			}
			other := stackOf(t, as, "subagent:other")
			assert.NotContains(t, other.SystemPrompt, "SUFFIX", "another model keeps its own profile")
			assert.Contains(t, stackTools(other), "grep")
		})
	}
}

// Issue 16, bug 3: the Assembly shows the system prompt as the blocks the
// model is sent and every cache breakpoint (tools, system, messages), so a
// prompt given as two blocks with cache_control differs from the same text
// given as one string.
func TestAssemblyShowsBlocksAndCacheBreakpoints(t *testing.T) {
	text := "You are Bobby.\n\nToday: billing."
	str := describe(t, newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemPrompt: text}))
	blocks := describe(t, newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemBlocks: []llm.Block{
		{Type: llm.BlockText, Text: "You are Bobby.", CacheControl: llm.Ephemeral()},
		llm.TextBlock("\n\nToday: billing."),
	}}))
	require.Equal(t, stackOf(t, str, "main").SystemPrompt, stackOf(t, blocks, "main").SystemPrompt, "the same text")

	out, differ := harness.Diff(str, blocks)
	require.True(t, differ, "one string and two blocks with cache_control are different requests")
	for _, s := range []string{
		"-system prompt:\n+system prompt (2 blocks):\n+  [block 1]\n   You are Bobby.\n+  [block 2]\n",
		"   - system block 1 (ephemeral)\n+  - system block 2 (ephemeral)\n",
	} {
		assert.Contains(t, out, s)
	}

	main := stackOf(t, blocks, "main")
	require.Len(t, main.SystemBlocks, 2)
	assert.Equal(t, llm.Ephemeral(), main.SystemBlocks[0].CacheControl)
	assert.Equal(t, llm.Ephemeral(), main.SystemBlocks[1].CacheControl, "prompt caching marks the last block")
	assert.Equal(t, []harness.CacheBreakpoint{
		{Target: "tool", Index: 8, Name: "task", CacheControl: *llm.Ephemeral()},
		{Target: "system", Index: 1, CacheControl: *llm.Ephemeral()},
		{Target: "system", Index: 2, CacheControl: *llm.Ephemeral()},
		{Target: "message", Index: 1, Block: 1, Role: "user", CacheControl: *llm.Ephemeral()},
	}, main.CacheBreakpoints)
	assert.Contains(t, main.Text(), "cache breakpoints:\n  - tool task (ephemeral)\n  - system block 1 (ephemeral)\n  - system block 2 (ephemeral)\n  - message 1 (user) block 1 (ephemeral)\n")

	// A TTL is part of the marker; a model without prompt caching has none.
	ttl := describe(t, newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SystemBlocks: []llm.Block{
		{Type: llm.BlockText, Text: "You are Bobby.", CacheControl: &llm.CacheControl{Type: "ephemeral", TTL: "1h"}},
		llm.TextBlock("\n\nToday: billing."),
	}}))
	out, differ = harness.Diff(blocks, ttl)
	require.True(t, differ)
	assert.Contains(t, out, "-  - system block 1 (ephemeral)\n+  - system block 1 (ephemeral, ttl 1h)\n")
	plain := stackOf(t, describe(t, newAgent(t, harness.Config{Model: fakeModel("openai", "gpt-5"), SystemPrompt: text})), "main")
	assert.Empty(t, plain.CacheBreakpoints)
	assert.NotContains(t, plain.Text(), "cache breakpoints")
	assert.Contains(t, plain.Text(), "system prompt:\n  You are Bobby.\n\n  Today: billing.\n", "one unmarked block reads as plain text")
}
