package profile_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/profile"
)

func TestMergeHarness(t *testing.T) {
	// Case 25.
	base := profile.MustHarnessProfile(profile.HarnessSpec{
		BaseSystemPrompt:         ptr("provider base"),
		SystemPromptSuffix:       ptr("provider suffix"),
		ToolDescriptionOverrides: map[string]string{"task": "provider task", "ls": "provider ls"},
		ExcludedTools:            []string{"execute"},
		ExcludedMiddleware:       []string{"SummarizationMiddleware"},
		ExcludedMiddlewareTypes:  []reflect.Type{typeOf[*StubMW]()},
		ExtraMiddleware:          []agent.Middleware{&labelled{id: "base"}},
		GeneralPurposeSubagent:   &profile.GeneralPurposeSubagent{Enabled: ptr(true), Description: ptr("provider desc")},
	})
	override := profile.MustHarnessProfile(profile.HarnessSpec{
		SystemPromptSuffix:       ptr("model suffix"),
		ToolDescriptionOverrides: map[string]string{"task": "model task"},
		ExcludedTools:            []string{"grep"},
		ExcludedMiddleware:       []string{"PatchToolCallsMiddleware"},
		ExcludedMiddlewareTypes:  []reflect.Type{typeOf[*OtherMW]()},
		ExtraMiddleware:          []agent.Middleware{&otherLabelled{id: "override"}},
		GeneralPurposeSubagent:   &profile.GeneralPurposeSubagent{Enabled: ptr(false), SystemPrompt: ptr("model gp")},
	})
	baseBefore, overrideBefore := base.Describe(), override.Describe()

	m := profile.MergeHarness(base, override)
	d := m.Describe()
	assert.Equal(t, ptr("provider base"), d.BaseSystemPrompt, "inherited when the override leaves it unset")
	assert.Equal(t, ptr("model suffix"), d.SystemPromptSuffix, "the override wins when set")
	assert.Equal(t, map[string]string{"task": "model task", "ls": "provider ls"}, m.ToolDescriptionOverrides())
	assert.Equal(t, []string{"execute", "grep"}, m.ExcludedTools())
	assert.Equal(t, []string{"PatchToolCallsMiddleware", "SummarizationMiddleware"}, d.ExcludedMiddleware)
	assert.Equal(t, []string{"*profile_test.OtherMW", "*profile_test.StubMW"}, d.ExcludedMiddlewareTypes)
	assert.Equal(t, []string{"labelled", "otherLabelled"}, names(m.MaterializeExtraMiddleware()), "distinct types concatenated, base first")
	assert.Equal(t, &profile.GeneralPurposeSubagent{Enabled: ptr(false), Description: ptr("provider desc"), SystemPrompt: ptr("model gp")},
		d.GeneralPurposeSubagent, "field by field; enabled=false beats true")

	assert.Equal(t, baseBefore, base.Describe(), "inputs unchanged")
	assert.Equal(t, overrideBefore, override.Describe())

	// A model-level enabled=true re-enables a provider-level false.
	reenabled := profile.MergeHarness(
		profile.MustHarnessProfile(profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(false)}}),
		profile.MustHarnessProfile(profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(true)}}),
	)
	assert.True(t, reenabled.GeneralPurposeEnabled())

	// The todo prompt: the override's when set, else the base's.
	todoBase := profile.MustHarnessProfile(profile.HarnessSpec{TodoSystemPrompt: ptr("base todo")})
	got, ok := profile.MergeHarness(todoBase, override).TodoSystemPrompt()
	assert.True(t, ok)
	assert.Equal(t, "base todo", got)
	got, _ = profile.MergeHarness(todoBase, profile.MustHarnessProfile(profile.HarnessSpec{TodoSystemPrompt: ptr("")})).TodoSystemPrompt()
	assert.Equal(t, "", got, "an empty override still wins")
	_, ok = m.TodoSystemPrompt()
	assert.False(t, ok)

	// Nil sides.
	assert.Same(t, base, profile.MergeHarness(base, nil))
	assert.Same(t, override, profile.MergeHarness(nil, override))
	assert.Nil(t, profile.MergeHarness(nil, nil))
}

func TestMergeExtraMiddlewareByType(t *testing.T) {
	b1, b2, b3 := &labelled{id: "b1"}, &OtherMW{}, &labelled{id: "b3"}
	o1, o2, o3 := &StubMW{}, &labelled{id: "o2"}, &named{name: "new"}
	base := profile.MustHarnessProfile(profile.HarnessSpec{ExtraMiddleware: []agent.Middleware{b1, b2, b3}})
	override := profile.MustHarnessProfile(profile.HarnessSpec{ExtraMiddleware: []agent.Middleware{o1, o2, o3}})
	got := profile.MergeHarness(base, override).MaterializeExtraMiddleware()
	// b1's type is supplied by the override: o2 takes b1's place and the later
	// base duplicate b3 is dropped; new override types follow in order.
	assert.Equal(t, []agent.Middleware{o2, b2, o1, o3}, got)

	// One side empty: the other side as it is, list or factory.
	calls := 0
	factory := profile.MustHarnessProfile(profile.HarnessSpec{ExtraMiddlewareFactory: func() []agent.Middleware {
		calls++
		return []agent.Middleware{&labelled{id: "f"}}
	}})
	empty := profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("s")})
	merged := profile.MergeHarness(empty, factory)
	a, c := merged.MaterializeExtraMiddleware(), merged.MaterializeExtraMiddleware()
	assert.NotSame(t, a[0], c[0], "a factory stays a factory: fresh instances per stack")
	assert.Equal(t, 2, calls)
	assert.Equal(t, []agent.Middleware{b1, b2, b3}, profile.MergeHarness(base, empty).MaterializeExtraMiddleware())

	// Both sides factories: the merged factory calls both on every call.
	merged = profile.MergeHarness(factory, profile.MustHarnessProfile(profile.HarnessSpec{ExtraMiddlewareFactory: func() []agent.Middleware {
		return []agent.Middleware{&labelled{id: "override"}, &OtherMW{}}
	}}))
	calls = 0
	got = merged.MaterializeExtraMiddleware()
	require.Len(t, got, 2)
	assert.Equal(t, "override", got[0].(*labelled).id)
	assert.Equal(t, 1, calls)
}
