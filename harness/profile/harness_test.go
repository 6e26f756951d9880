package profile_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/profile"
)

func TestHarnessProfileIsImmutable(t *testing.T) {
	base, suffix := "Base.", "Suffix."
	enabled, desc := false, "GP."
	overrides := map[string]string{"ls": "List."}
	tools := []string{"execute", "write_file"}
	mwNames := []string{"SummarizationMiddleware"}
	mwTypes := []reflect.Type{typeOf[*StubMW]()}
	extra := []agent.Middleware{&OtherMW{}}
	gp := &profile.GeneralPurposeSubagent{Enabled: &enabled, Description: &desc}
	p, err := profile.NewHarnessProfile(profile.HarnessSpec{
		BaseSystemPrompt: &base, SystemPromptSuffix: &suffix, ToolDescriptionOverrides: overrides,
		ExcludedTools: tools, ExcludedMiddleware: mwNames, ExcludedMiddlewareTypes: mwTypes,
		ExtraMiddleware: extra, GeneralPurposeSubagent: gp,
	})
	require.NoError(t, err)
	before := p.Describe()

	// Everything the caller still holds is changed afterwards.
	base, suffix, enabled, desc = "X", "Y", true, "Z"
	overrides["ls"], overrides["grep"] = "changed", "new"
	tools[0], mwNames[0], mwTypes[0] = "ls", "Other", typeOf[*OtherMW]()
	extra[0] = &StubMW{}
	gp.SystemPrompt = ptr("late")
	// And so is everything the accessors and Describe hand out.
	p.ToolDescriptionOverrides()["ls"] = "changed"
	p.ExcludedTools()[0] = "changed"
	d := p.Describe()
	*d.BaseSystemPrompt = "changed"
	d.ToolDescriptionOverrides["ls"] = "changed"
	d.ExcludedMiddleware[0] = "changed"
	d.GeneralPurposeSubagent.Description = ptr("changed")

	assert.Equal(t, before, p.Describe())
	assert.Equal(t, "Base.\n\nSuffix.", p.ApplyPrompt(""))
	assert.Equal(t, []string{"execute", "write_file"}, p.ExcludedTools())
	assert.Equal(t, []string{"OtherMW"}, names(p.MaterializeExtraMiddleware()))
	assert.False(t, p.GeneralPurposeEnabled())
	assert.Equal(t, "GP.", p.GeneralPurposeDescription("default"))
}

func TestApplyPrompt(t *testing.T) {
	// Deep Agents' TestSystemPromptAssembly cases for the BASE+SUFFIX part,
	// and the declarative-subagent cases where the authored prompt is the base.
	tests := []struct {
		name         string
		base, suffix *string
		authored     string
		want         string
	}{
		{"base only", ptr("You are a custom agent."), nil, "", "You are a custom agent."},
		{"base and suffix", ptr("B"), ptr("S"), "", "B\n\nS"},
		{"suffix only", nil, ptr("S"), "", "S"},
		{"empty base replaces", ptr(""), nil, "", ""},
		{"empty suffix still adds the blank line", ptr("B"), ptr(""), "", "B\n\n"},
		{"nothing", nil, nil, "", ""},
		{"subagent: suffix after the authored prompt", nil, ptr("Be terse."), "Authored worker prompt.", "Authored worker prompt.\n\nBe terse."},
		{"subagent: profile base replaces the authored prompt", ptr("Profile base."), ptr("Suffix."), "Authored worker prompt.", "Profile base.\n\nSuffix."},
		{"subagent: empty base wipes the authored prompt", ptr(""), ptr("S"), "Authored.", "S"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := profile.MustHarnessProfile(profile.HarnessSpec{BaseSystemPrompt: tt.base, SystemPromptSuffix: tt.suffix})
			assert.Equal(t, tt.want, p.ApplyPrompt(tt.authored))
		})
	}
	var none *profile.HarnessProfile
	assert.Equal(t, "Authored.", none.ApplyPrompt("Authored."))
}

func TestGeneralPurposeSettings(t *testing.T) {
	const def = "Default subagent prompt."
	tests := []struct {
		name string
		spec profile.HarnessSpec
		want string
	}{
		{"suffix only", profile.HarnessSpec{SystemPromptSuffix: ptr("GP suffix.")}, def + "\n\nGP suffix."},
		{"override and suffix; base ignored", profile.HarnessSpec{
			BaseSystemPrompt: ptr("Profile base."), SystemPromptSuffix: ptr("Trailer."),
			GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{SystemPrompt: ptr("GP override.")},
		}, "GP override.\n\nTrailer."},
		{"base and suffix, no override", profile.HarnessSpec{BaseSystemPrompt: ptr("Profile base."), SystemPromptSuffix: ptr("Trailer.")}, "Profile base.\n\nTrailer."},
		{"override alone", profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{SystemPrompt: ptr("Only.")}}, "Only."},
		{"empty sub-profile keeps defaults", profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{}}, def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, profile.MustHarnessProfile(tt.spec).GeneralPurposePrompt(def))
		})
	}

	p := profile.MustHarnessProfile(profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Description: ptr("D"), Enabled: ptr(true)}})
	assert.Equal(t, "D", p.GeneralPurposeDescription("default"))
	assert.True(t, p.GeneralPurposeEnabled())
	off := profile.MustHarnessProfile(profile.HarnessSpec{GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(false)}})
	assert.False(t, off.GeneralPurposeEnabled())
	assert.Equal(t, "default", off.GeneralPurposeDescription("default"))
	var none *profile.HarnessProfile
	assert.True(t, none.GeneralPurposeEnabled())
	assert.Nil(t, none.Describe().GeneralPurposeSubagent)
	assert.Equal(t, def, none.GeneralPurposePrompt(def))
}

func TestExtraMiddleware(t *testing.T) {
	shared := &OtherMW{}
	list := profile.MustHarnessProfile(profile.HarnessSpec{ExtraMiddleware: []agent.Middleware{shared}})
	a, b := list.MaterializeExtraMiddleware(), list.MaterializeExtraMiddleware()
	assert.Same(t, shared, a[0], "a list is shared by every stack")
	a[0] = nil
	assert.Same(t, shared, b[0], "each call returns a new slice")
	assert.Same(t, shared, list.MaterializeExtraMiddleware()[0])

	calls := 0
	factory := profile.MustHarnessProfile(profile.HarnessSpec{ExtraMiddlewareFactory: func() []agent.Middleware {
		calls++
		return []agent.Middleware{&labelled{id: "fresh"}}
	}})
	x, y := factory.MaterializeExtraMiddleware(), factory.MaterializeExtraMiddleware()
	assert.Equal(t, 2, calls, "the factory runs once per stack")
	assert.NotSame(t, x[0], y[0])
	assert.Equal(t, []string{"labelled"}, factory.Describe().ExtraMiddleware)
	assert.Empty(t, profile.MustHarnessProfile(profile.HarnessSpec{}).Describe().ExtraMiddleware)

	_, err := profile.NewHarnessProfile(profile.HarnessSpec{
		ExtraMiddleware:        []agent.Middleware{shared},
		ExtraMiddlewareFactory: func() []agent.Middleware { return nil },
	})
	require.ErrorIs(t, err, profile.ErrInvalidProfile)
	var nilMW *OtherMW
	_, err = profile.NewHarnessProfile(profile.HarnessSpec{ExtraMiddleware: []agent.Middleware{shared, nilMW}})
	require.ErrorIs(t, err, profile.ErrInvalidProfile)
	assert.ErrorContains(t, err, "ExtraMiddleware[1] is nil")
}

func TestAccessors(t *testing.T) {
	p := profile.MustHarnessProfile(profile.HarnessSpec{
		ToolDescriptionOverrides: map[string]string{"ls": "List."},
		ExcludedTools:            []string{"write_file", "execute", "execute"},
		ExcludedMiddleware:       []string{"b", "a", "a"},
	})
	d, ok := p.ToolDescription("ls")
	assert.True(t, ok)
	assert.Equal(t, "List.", d)
	_, ok = p.ToolDescription("grep")
	assert.False(t, ok)
	assert.Equal(t, []string{"execute", "write_file"}, p.ExcludedTools(), "sorted and de-duplicated")
	assert.Equal(t, profile.Description{
		ToolDescriptionOverrides: map[string]string{"ls": "List."},
		ExcludedTools:            []string{"execute", "write_file"},
		ExcludedMiddleware:       []string{"a", "b"},
	}, p.Describe(), "sorted and de-duplicated; unset prompts stay nil")
	assert.Equal(t, profile.Description{}, profile.MustHarnessProfile(profile.HarnessSpec{}).Describe())

	var none *profile.HarnessProfile
	assert.Nil(t, none.ExcludedTools())
	assert.Nil(t, none.MaterializeExtraMiddleware())
	assert.Equal(t, profile.Description{}, none.Describe())
}
