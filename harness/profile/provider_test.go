package profile_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/profile"
)

func TestProviderApplyPrecedence(t *testing.T) {
	// Case 26: caller options win over the factory, which wins over static options.
	static := map[string]any{"a": "static", "b": "static", "c": "static", "nested": map[string]any{"k": []any{"v"}}}
	var specs []string
	p := profile.NewProviderProfile(profile.ProviderSpec{
		InitOptions:        static,
		InitOptionsFactory: func() (map[string]any, error) { return map[string]any{"b": "factory", "c": "factory"}, nil },
		PreInit:            func(spec string) error { specs = append(specs, spec); return nil },
	})
	static["a"] = "mutated after construction"
	static["nested"].(map[string]any)["k"] = "mutated"

	caller := map[string]any{"c": "caller", "headers": map[string]string{"x": "1"}}
	got, err := p.Apply("prov:model", caller)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"a": "static", "b": "factory", "c": "caller",
		"nested":  map[string]any{"k": []any{"v"}},
		"headers": map[string]string{"x": "1"},
	}, got)
	assert.Equal(t, []string{"prov:model"}, specs, "pre-init sees the spec")
	assert.Equal(t, map[string]any{"c": "caller", "headers": map[string]string{"x": "1"}}, caller, "caller map not mutated")

	// The result shares nothing with the profile or the caller.
	got["nested"].(map[string]any)["k"] = "changed"
	got["headers"].(map[string]string)["x"] = "changed"
	assert.Equal(t, "1", caller["headers"].(map[string]string)["x"])
	again, err := p.Apply("prov:model", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": []any{"v"}}, again["nested"])
	p.InitOptions()["a"] = "changed"
	assert.Equal(t, "static", p.InitOptions()["a"])

	_, err = p.Apply("prov:model", nil, profile.SkipPreInit())
	require.NoError(t, err)
	assert.Len(t, specs, 2, "SkipPreInit does not run the check")

	var none *profile.ProviderProfile
	got, err = none.Apply("x", caller)
	require.NoError(t, err)
	assert.Equal(t, caller, got)
}

func TestProviderPreInitRefuses(t *testing.T) {
	factoryRan := false
	p := profile.NewProviderProfile(profile.ProviderSpec{
		PreInit:            func(spec string) error { return errors.New("client library too old") },
		InitOptionsFactory: func() (map[string]any, error) { factoryRan = true; return nil, nil },
	})
	_, err := p.Apply("prov:m", nil)
	require.ErrorContains(t, err, "provider profile for prov:m refused the model: client library too old")
	assert.False(t, factoryRan, "options are not computed for a refused model")

	failing := profile.NewProviderProfile(profile.ProviderSpec{InitOptionsFactory: func() (map[string]any, error) { return nil, errors.New("no env") }})
	_, err = failing.Apply("prov:m", nil)
	require.ErrorContains(t, err, "computing options: no env")
}

func TestMergeProvider(t *testing.T) {
	var order []string
	check := func(name string, fail bool) func(string) error {
		return func(spec string) error {
			order = append(order, name+":"+spec)
			if fail {
				return errors.New(name + " failed")
			}
			return nil
		}
	}
	base := profile.NewProviderProfile(profile.ProviderSpec{
		InitOptions:        map[string]any{"a": 1, "b": 1},
		InitOptionsFactory: func() (map[string]any, error) { return map[string]any{"f": "base", "g": "base"}, nil },
		PreInit:            check("base", false),
	})
	override := profile.NewProviderProfile(profile.ProviderSpec{
		InitOptions:        map[string]any{"b": 2},
		InitOptionsFactory: func() (map[string]any, error) { return map[string]any{"g": "override"}, nil },
		PreInit:            check("override", false),
	})
	m := profile.MergeProvider(base, override)
	got, err := m.Apply("p:m", map[string]any{"a": "caller"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": "caller", "b": 2, "f": "base", "g": "override"}, got)
	assert.Equal(t, []string{"base:p:m", "override:p:m"}, order, "chained pre-init: base, then override")

	order = nil
	broken := profile.MergeProvider(profile.NewProviderProfile(profile.ProviderSpec{PreInit: check("base", true)}), override)
	_, err = broken.Apply("p:m", nil)
	require.ErrorContains(t, err, "base pre-init check (the override's check did not run): base failed")
	assert.Equal(t, []string{"base:p:m"}, order)

	order = nil
	_, err = profile.MergeProvider(base, profile.NewProviderProfile(profile.ProviderSpec{PreInit: check("override", true)})).Apply("p:m", nil)
	require.ErrorContains(t, err, "override pre-init check: override failed")
	assert.Equal(t, []string{"base:p:m", "override:p:m"}, order)

	// One side without a hook: the other's is used as is.
	onlyStatic := profile.NewProviderProfile(profile.ProviderSpec{InitOptions: map[string]any{"z": true}})
	assert.True(t, profile.MergeProvider(onlyStatic, base).HasPreInit())
	assert.True(t, profile.MergeProvider(base, onlyStatic).HasFactory())
	assert.False(t, profile.MergeProvider(onlyStatic, onlyStatic).HasPreInit())
	assert.Same(t, base, profile.MergeProvider(base, nil))
	assert.Same(t, base, profile.MergeProvider(nil, base))

	brokenFactory := profile.MergeProvider(base, profile.NewProviderProfile(profile.ProviderSpec{
		InitOptionsFactory: func() (map[string]any, error) { return nil, errors.New("boom") },
	}))
	_, err = brokenFactory.Apply("p:m", nil, profile.SkipPreInit())
	require.ErrorContains(t, err, "override options factory: boom")
}
