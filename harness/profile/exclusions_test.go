package profile_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
)

func TestExclusionValidation(t *testing.T) {
	tests := []struct {
		name     string
		names    []string
		types    []reflect.Type
		is       error
		contains []string
	}{
		{"filesystem type", nil, []reflect.Type{typeOf[*FilesystemMiddleware]()}, profile.ErrScaffolding, []string{"FilesystemMiddleware", "scaffolding", "excluded_tools"}},
		{"subagent type", nil, []reflect.Type{typeOf[*SubAgentMiddleware]()}, profile.ErrScaffolding, []string{"SubAgentMiddleware", "scaffolding"}},
		{"type whose instances report a scaffolding name", nil, []reflect.Type{typeOf[*subAgentImpl]()}, profile.ErrScaffolding, []string{"subAgentImpl", "scaffolding"}},
		{"filesystem string", []string{"FilesystemMiddleware"}, nil, profile.ErrScaffolding, []string{`"FilesystemMiddleware" (string)`, "scaffolding"}},
		{"subagent string", []string{"SubAgentMiddleware"}, nil, profile.ErrScaffolding, []string{`"SubAgentMiddleware" (string)`}},
		{"both forms in one error", []string{"SubAgentMiddleware"}, []reflect.Type{typeOf[*FilesystemMiddleware]()}, profile.ErrScaffolding,
			[]string{`"SubAgentMiddleware" (string), *profile_test.FilesystemMiddleware`}},
		{"underscore", []string{"_ToolExclusionMiddleware"}, nil, profile.ErrInvalidExclusion, []string{"cannot start with '_'"}},
		{"class path", []string{"pkg.mod:Middleware"}, nil, profile.ErrInvalidExclusion, []string{"contains ':'"}},
		{"empty", []string{""}, nil, profile.ErrInvalidExclusion, []string{"is empty"}},
		{"whitespace", []string{"  \t"}, nil, profile.ErrInvalidExclusion, []string{"is empty"}},
		{"nil type", nil, []reflect.Type{nil}, profile.ErrInvalidExclusion, []string{"ExcludedMiddlewareTypes[0] is nil"}},
		{"not a middleware", nil, []reflect.Type{typeOf[notMiddleware]()}, profile.ErrInvalidExclusion, []string{"does not implement agent.Middleware"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := profile.NewHarnessProfile(profile.HarnessSpec{ExcludedMiddleware: tt.names, ExcludedMiddlewareTypes: tt.types})
			require.ErrorIs(t, err, tt.is)
			for _, s := range tt.contains {
				assert.ErrorContains(t, err, s)
			}
			if len(tt.names) > 0 && tt.types == nil {
				assert.ErrorIs(t, profile.Config{ExcludedMiddleware: tt.names}.Validate(), tt.is, "the config form checks the same")
			}
		})
	}
	for _, ok := range []string{"SummarizationMiddleware", "TodoListMiddleware", "My Custom MW"} {
		assert.NoError(t, profile.CheckExclusionName(ok))
	}
	assert.Equal(t, []string{"FilesystemMiddleware", "SubAgentMiddleware"}, profile.RequiredMiddleware())
}

func TestFilterByType(t *testing.T) {
	// Case 13: the exact type goes, other types and embedders stay.
	p := profile.MustHarnessProfile(profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{typeOf[*StubMW]()}})
	m := p.NewExclusionMatcher()
	stack := []agent.Middleware{&StubMW{}, &OtherMW{}, &SubStub{}}
	out, err := m.Filter(stack)
	require.NoError(t, err)
	assert.Equal(t, []agent.Middleware{&OtherMW{}, &SubStub{}}, out)
	assert.Len(t, stack, 3, "the input stack is not changed")
	assert.IsType(t, &StubMW{}, stack[0])
	require.NoError(t, m.Verify())

	// A value type and its pointer are different types.
	m = profile.MustHarnessProfile(profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{typeOf[StubMW]()}}).NewExclusionMatcher()
	out, err = m.Filter([]agent.Middleware{&StubMW{}, StubMW{}})
	require.NoError(t, err)
	assert.Equal(t, []agent.Middleware{&StubMW{}}, out)
}

func TestFilterByName(t *testing.T) {
	// Case 18: a name entry removes whatever middleware reports that name.
	p := profile.MustHarnessProfile(profile.HarnessSpec{ExcludedMiddleware: []string{"SummarizationMiddleware"}})
	m := p.NewExclusionMatcher()
	out, err := m.Filter([]agent.Middleware{&OtherMW{}, &summarizationImpl{}, &labelled{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"OtherMW", "labelled"}, names(out))
	require.NoError(t, m.Verify())

	// Case 19: one name matching two distinct types in one stack is ambiguous.
	p = profile.MustHarnessProfile(profile.HarnessSpec{ExcludedMiddleware: []string{"StubMW"}})
	_, err = p.NewExclusionMatcher().Filter([]agent.Middleware{&StubMW{}, &impostor{}})
	require.ErrorIs(t, err, profile.ErrAmbiguousExclusion)
	assert.ErrorContains(t, err, "matched multiple distinct")
	assert.ErrorContains(t, err, `"StubMW" matched *profile_test.StubMW and *profile_test.impostor`)
	// ...but the same name in two different stacks is fine.
	m = p.NewExclusionMatcher()
	_, err = m.Filter([]agent.Middleware{&StubMW{}})
	require.NoError(t, err)
	_, err = m.Filter([]agent.Middleware{&impostor{}})
	require.NoError(t, err)
	// Two instances of the same type are not ambiguous.
	_, err = p.NewExclusionMatcher().Filter([]agent.Middleware{&StubMW{}, &StubMW{}})
	require.NoError(t, err)
}

func TestExclusionCoverage(t *testing.T) {
	// Case 17: entries that match nothing anywhere are errors.
	p := profile.MustHarnessProfile(profile.HarnessSpec{
		ExcludedMiddleware:      []string{"DoesNotExistMiddleware", "TodoListMiddleware", "OtherMW"},
		ExcludedMiddlewareTypes: []reflect.Type{typeOf[*StubMW]()},
	})
	m := p.NewExclusionMatcher()
	_, err := m.Filter([]agent.Middleware{&OtherMW{}, &labelled{}})
	require.NoError(t, err)
	err = m.Verify()
	require.ErrorIs(t, err, profile.ErrUnmatchedExclusion)
	assert.ErrorContains(t, err, "matched no middleware")
	assert.ErrorContains(t, err, `"DoesNotExistMiddleware", "TodoListMiddleware", *profile_test.StubMW;`)
	assert.NotContains(t, err.Error(), `"OtherMW"`)

	// Matching in any stack that shares the matcher (main or general-purpose) is enough.
	m = p.NewExclusionMatcher()
	_, err = m.Filter([]agent.Middleware{&OtherMW{}, &StubMW{}})
	require.NoError(t, err)
	_, err = m.Filter([]agent.Middleware{&summarizationImpl{}, middleware.NewTodoList(middleware.TodoListConfig{})})
	require.NoError(t, err)
	require.Error(t, m.Verify(), "DoesNotExistMiddleware still matched nothing")
	_, err = m.Filter([]agent.Middleware{namedMW("DoesNotExistMiddleware")})
	require.NoError(t, err)
	require.NoError(t, m.Verify())

	// No exclusions: Filter copies, Verify passes.
	none := profile.MustHarnessProfile(profile.HarnessSpec{}).NewExclusionMatcher()
	in := []agent.Middleware{&OtherMW{}}
	out, err := none.Filter(in)
	require.NoError(t, err)
	out[0] = nil
	assert.NotNil(t, in[0])
	require.NoError(t, none.Verify())
	var nilProfile *profile.HarnessProfile
	out, err = nilProfile.NewExclusionMatcher().Filter(in)
	require.NoError(t, err)
	assert.Len(t, out, 1)
}

func TestExclusionTwoPasses(t *testing.T) {
	// Case 20: the profile excludes the implementation type; the caller
	// replaces it by name with a type that embeds it. Pass one (defaults)
	// matches the exclusion; pass two (after the caller's middleware) keeps
	// the caller's instance; coverage is satisfied.
	p := profile.MustHarnessProfile(profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{typeOf[*summarizationImpl]()}})
	m := p.NewExclusionMatcher()
	core, err := m.Filter([]agent.Middleware{&OtherMW{}, &summarizationImpl{}})
	require.NoError(t, err)
	assert.Equal(t, []string{"OtherMW"}, names(core))
	caller := &callerSummarization{&summarizationImpl{}}
	final, err := m.Filter(append(core, caller))
	require.NoError(t, err)
	require.Len(t, final, 2)
	assert.Same(t, caller, final[1])
	require.NoError(t, m.Verify())

	// The exact type wins even when the caller passes an instance of it.
	final, err = m.Filter(append(core, &summarizationImpl{}))
	require.NoError(t, err)
	assert.Equal(t, []string{"OtherMW"}, names(final))
}

func TestMergedProfileExcludesProviderExtra(t *testing.T) {
	// Case 14: the provider profile adds p; the model profile excludes p's type.
	r := isolated()
	require.NoError(t, r.RegisterHarness("prov", profile.MustHarnessProfile(profile.HarnessSpec{ExtraMiddleware: []agent.Middleware{&labelled{id: "p"}, &OtherMW{}}})))
	require.NoError(t, r.RegisterHarness("prov:model", profile.MustHarnessProfile(profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{typeOf[*labelled]()}})))
	p, err := r.Harness("prov:model")
	require.NoError(t, err)
	m := p.NewExclusionMatcher()
	stack, err := m.Filter(append([]agent.Middleware{&FilesystemMiddleware{}}, p.MaterializeExtraMiddleware()...))
	require.NoError(t, err)
	assert.Equal(t, []string{"FilesystemMiddleware", "OtherMW"}, names(stack))
	require.NoError(t, m.Verify())
}

type named struct {
	agent.Base
	name string
}

func (n *named) Name() string { return n.name }

func namedMW(name string) agent.Middleware { return &named{name: name} }
