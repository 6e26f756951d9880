package profile_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
)

func suffixOf(t *testing.T, p *profile.HarnessProfile) string {
	t.Helper()
	require.NotNil(t, p)
	s := p.Describe().SystemPromptSuffix
	require.NotNil(t, s, "profile has no suffix")
	return *s
}

func withSuffix(s string) *profile.HarnessProfile {
	return profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: &s})
}

func TestKeySyntax(t *testing.T) {
	// Case 24.
	r := isolated()
	for _, bad := range []string{"", "a:b:c", "p:", ":m", " p", "p ", "p :m", "p: m"} {
		err := r.RegisterHarness(bad, withSuffix("x"))
		require.ErrorIs(t, err, profile.ErrInvalidKey, "harness key %q", bad)
		require.ErrorIs(t, r.RegisterProvider(bad, profile.NewProviderProfile(profile.ProviderSpec{})), profile.ErrInvalidKey, "provider key %q", bad)
		require.ErrorIs(t, profile.ValidateKey(bad), profile.ErrInvalidKey)
		p, err := r.Harness(bad)
		require.NoError(t, err)
		assert.Nil(t, p, "lookups of malformed specs find nothing")
	}
	for _, good := range []string{"openai", "openai:gpt-5", "ollama:llama 3"} {
		require.NoError(t, r.RegisterHarness(good, withSuffix(good)))
		require.NoError(t, r.RegisterProvider(good, profile.NewProviderProfile(profile.ProviderSpec{})))
	}
	keys, err := r.HarnessKeys()
	require.NoError(t, err)
	assert.Equal(t, []string{"ollama:llama 3", "openai", "openai:gpt-5"}, keys)
	pkeys, err := r.ProviderKeys()
	require.NoError(t, err)
	assert.Equal(t, keys, pkeys)
	assert.ErrorContains(t, profile.ValidateKey("p :m"), `invalid profile key "p :m": there is whitespace next to the colon`)
	require.ErrorIs(t, r.RegisterHarness("x", nil), profile.ErrInvalidProfile)
}

func TestHarnessLookup(t *testing.T) {
	r := isolated()
	provider := withSuffix("provider")
	require.NoError(t, r.RegisterHarness("testprov", provider))
	require.NoError(t, r.RegisterHarness("testprov:special", profile.MustHarnessProfile(profile.HarnessSpec{BaseSystemPrompt: ptr("model base")})))
	require.NoError(t, r.RegisterHarness("solo:model", withSuffix("solo")))

	// Case 21: provider-level fallback returns the registered object itself.
	got, err := r.Harness("testprov:some-model")
	require.NoError(t, err)
	assert.Same(t, provider, got)
	got, err = r.HarnessForModel(nil, "testprov:some-model")
	require.NoError(t, err)
	assert.Same(t, provider, got)

	got, err = r.Harness("testprov:special")
	require.NoError(t, err)
	assert.Equal(t, "model base\n\nprovider", got.ApplyPrompt(""), "exact merged over provider")

	got, err = r.Harness("solo:model")
	require.NoError(t, err)
	assert.Equal(t, "solo", suffixOf(t, got))

	for _, miss := range []string{"some-model", "testprov:", "solo", "other:model", "special"} {
		got, err = r.Harness(miss)
		require.NoError(t, err)
		assert.Nil(t, got, "spec %q", miss)
	}
	got, err = r.Harness("testprov")
	require.NoError(t, err)
	assert.Same(t, provider, got, "a bare spec matches its key exactly")
}

func TestHarnessForModelInstance(t *testing.T) {
	// Cases 22 and 23.
	r := isolated()
	require.NoError(t, r.RegisterHarness("myprov", withSuffix("myprov")))
	require.NoError(t, r.RegisterHarness("fakeprov", profile.MustHarnessProfile(profile.HarnessSpec{
		BaseSystemPrompt: ptr("fake base"), SystemPromptSuffix: ptr("provider suffix"),
	})))
	require.NoError(t, r.RegisterHarness("fakeprov:my-model", withSuffix("model suffix")))
	require.NoError(t, r.RegisterHarness("openai", withSuffix("openai")))

	tests := []struct {
		name            string
		provider, model string
		want            string // ApplyPrompt("") of the found profile; "" for the empty profile
	}{
		{"identifier with a colon", "", "myprov:my-model", "myprov"},
		{"provider and identifier", "fakeprov", "some-model-name", "fake base\n\nprovider suffix"},
		{"exact merged over provider; model suffix wins", "fakeprov", "my-model", "fake base\n\nmodel suffix"},
		{"provider only", "myprov", "", "myprov"},
		{"unknown", "nobody", "nothing", ""},
		{"bare identifier equal to a provider key never matches", "", "openai", ""},
		{"nothing known", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := fakes.NewScripted().WithIdentity(tt.provider, tt.model)
			p, err := r.HarnessForModel(model, "")
			require.NoError(t, err)
			require.NotNil(t, p, "never nil")
			assert.Equal(t, tt.want, p.ApplyPrompt(""))
			if tt.want == "" {
				assert.Equal(t, profile.Description{}, p.Describe())
			}
		})
	}

	// An explicit spec wins over the model's identity.
	p, err := r.HarnessForModel(fakes.NewScripted().WithIdentity("myprov", "x"), "openai:gpt-5")
	require.NoError(t, err)
	assert.Equal(t, "openai", suffixOf(t, p))
	p, err = r.HarnessForModel(fakes.NewScripted(), "unknown:spec")
	require.NoError(t, err)
	assert.Equal(t, profile.Description{}, p.Describe())
	// A model without an identity.
	p, err = r.HarnessForModel(anonymousModel{}, "")
	require.NoError(t, err)
	assert.Equal(t, profile.Description{}, p.Describe())
}

// anonymousModel does not report an llm.Identity.
type anonymousModel struct{}

func (anonymousModel) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, errors.New("unused")
}

func TestMissLogLevel(t *testing.T) {
	logger, logs := newLogger()
	r := profile.NewRegistry(profile.WithPlugins(), profile.WithLogger(logger), profile.WithBuiltins(func(r *profile.Registry) error {
		return r.RegisterHarness("builtin", withSuffix("b"))
	}))
	_, err := r.HarnessForModel(fakes.NewScripted().WithIdentity("x", "y"), "")
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "level=DEBUG msg=\"profile: the model matched no harness profile", "only built-ins: debug")
	assert.Contains(t, logs.String(), `tried="[x:y x]"`)

	require.NoError(t, r.RegisterHarness("user", withSuffix("u")))
	_, err = r.HarnessForModel(fakes.NewScripted().WithIdentity("x", "y"), "")
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "level=WARN msg=\"profile: the model matched no harness profile", "user profiles exist: warning")
}

func TestRegistrationIsAdditive(t *testing.T) {
	// Case 13 (last part): re-registering unions types and strings.
	logger, logs := newLogger()
	r := isolated(profile.WithLogger(logger))
	require.NoError(t, r.RegisterHarness("p:m", profile.MustHarnessProfile(profile.HarnessSpec{
		ExcludedMiddlewareTypes: []reflect.Type{typeOf[*StubMW]()},
		SystemPromptSuffix:      ptr("first"),
		BaseSystemPrompt:        ptr("kept"),
	})))
	require.NoError(t, r.RegisterHarness("p:m", profile.MustHarnessProfile(profile.HarnessSpec{
		ExcludedMiddleware: []string{"SummarizationMiddleware"},
		SystemPromptSuffix: ptr("second"),
	})))
	p, err := r.Harness("p:m")
	require.NoError(t, err)
	assert.Equal(t, []string{"*profile_test.StubMW"}, p.Describe().ExcludedMiddlewareTypes)
	assert.Equal(t, []string{"SummarizationMiddleware"}, p.Describe().ExcludedMiddleware)
	assert.Equal(t, "kept\n\nsecond", p.ApplyPrompt(""))
	assert.Contains(t, logs.String(), "level=INFO msg=\"profile: merging HarnessProfile")

	require.NoError(t, r.RegisterProvider("p", profile.NewProviderProfile(profile.ProviderSpec{InitOptions: map[string]any{"a": 1, "b": 1}})))
	require.NoError(t, r.RegisterProvider("p", profile.NewProviderProfile(profile.ProviderSpec{InitOptions: map[string]any{"b": 2}})))
	require.NoError(t, r.RegisterProvider("p:m", profile.NewProviderProfile(profile.ProviderSpec{InitOptions: map[string]any{"c": 3}})))
	opts, err := r.ApplyProvider("p:m", map[string]any{"a": "caller"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": "caller", "b": 2, "c": 3}, opts, "exact merged over provider, caller wins")
	opts, err = r.ApplyProvider("p:other", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": 1, "b": 2}, opts)
	opts, err = r.ApplyProvider("q:m", map[string]any{"x": 1})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"x": 1}, opts, "no profile: a copy of the caller's options")
	pp, err := r.Provider("nope")
	require.NoError(t, err)
	assert.Nil(t, pp)
}

func TestBuiltins(t *testing.T) {
	// Case 27, for the built-ins this port ships.
	r := profile.NewRegistry(profile.WithPlugins())
	keys, err := r.HarnessKeys()
	require.NoError(t, err)
	assert.Equal(t, []string{
		"anthropic:claude-haiku-4-5", "anthropic:claude-opus-4-7", "anthropic:claude-sonnet-4-6",
		"openai:gpt-5.1-codex", "openai:gpt-5.2-codex", "openai:gpt-5.3-codex",
	}, keys)
	pkeys, err := r.ProviderKeys()
	require.NoError(t, err)
	assert.Equal(t, []string{"openai"}, pkeys)

	opts, err := r.ApplyProvider("openai:gpt-5", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"use_responses_api": true}, opts)
	opts, err = r.ApplyProvider("azure_openai:gpt-4.1", nil)
	require.NoError(t, err)
	assert.Empty(t, opts, "Azure deployments stay on Chat Completions, as AzureChatOpenAI does")
	opts, err = r.ApplyProvider("openai:gpt-5", map[string]any{"use_responses_api": false})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"use_responses_api": false}, opts, "the caller still wins")

	// As in Deep Agents, the Claude and Codex profiles are keyed by their
	// first-party specs only: the same models through a cloud route get
	// none, and no provider profile applies to the cloud routes.
	for _, none := range []string{"openai:gpt-5", "anthropic:claude-2.1", "anthropic", "openai",
		"bedrock:anthropic.claude-sonnet-4-6", "vertex:claude-sonnet-4-6", "azure_openai:gpt-5.1-codex"} {
		p, err := r.Harness(none)
		require.NoError(t, err)
		assert.Nil(t, p, none)
	}

	universal := []string{"<use_parallel_tool_calls>", "<investigate_before_answering>", "<tool_result_reflection>"}
	opusOnly := []string{"<tool_usage>", "<subagent_usage>"}
	sonnet, err := r.Harness("anthropic:claude-sonnet-4-6")
	require.NoError(t, err)
	haiku, err := r.Harness("anthropic:claude-haiku-4-5")
	require.NoError(t, err)
	opus, err := r.Harness("anthropic:claude-opus-4-7")
	require.NoError(t, err)
	assert.Equal(t, suffixOf(t, sonnet), suffixOf(t, haiku))
	for _, tag := range universal {
		closing := "</" + tag[1:]
		for _, p := range []*profile.HarnessProfile{sonnet, opus} {
			assert.Contains(t, suffixOf(t, p), tag)
			assert.Contains(t, suffixOf(t, p), closing)
		}
	}
	for _, tag := range opusOnly {
		assert.Contains(t, suffixOf(t, opus), tag)
		assert.NotContains(t, suffixOf(t, sonnet), tag)
	}
	assert.True(t, strings.HasPrefix(suffixOf(t, opus), suffixOf(t, sonnet)))
	for _, p := range []*profile.HarnessProfile{sonnet, opus} {
		assert.Nil(t, p.Describe().BaseSystemPrompt)
		assert.Empty(t, p.Describe().ExtraMiddleware)
	}

	var codex []profile.Description
	for _, k := range []string{"openai:gpt-5.1-codex", "openai:gpt-5.2-codex", "openai:gpt-5.3-codex"} {
		p, err := r.Harness(k)
		require.NoError(t, err)
		codex = append(codex, p.Describe())
		a, b := p.MaterializeExtraMiddleware(), p.MaterializeExtraMiddleware()
		require.Equal(t, []string{"TodoListMiddleware"}, names(a))
		assert.NotSame(t, a[0], b[0], "a fresh todo list per stack")
		s := suffixOf(t, p)
		assert.Contains(t, s, "write_todos")
		assert.Contains(t, s, "## Parallel tool use")
	}
	assert.Equal(t, codex[0], codex[1])
	assert.Equal(t, codex[0], codex[2])

	// The default registry holds the same built-ins.
	assert.Same(t, profile.Default(), profile.Default())
	p, err := profile.Default().Harness("anthropic:claude-sonnet-4-6")
	require.NoError(t, err)
	assert.Equal(t, suffixOf(t, sonnet), suffixOf(t, p))
}

func TestBootstrapIsLazyAndOnce(t *testing.T) {
	var runs atomic.Int32
	r := profile.NewRegistry(profile.WithPlugins(), profile.WithBuiltins(func(r *profile.Registry) error {
		runs.Add(1)
		// Built-ins register through the handle without waiting on themselves.
		return r.RegisterHarness("builtin", withSuffix("b"))
	}))
	assert.Zero(t, runs.Load(), "creating a registry loads nothing")
	require.NoError(t, r.Load())
	require.NoError(t, r.Load())
	_, err := r.Harness("builtin")
	require.NoError(t, err)
	assert.Equal(t, int32(1), runs.Load(), "the loader is idempotent")
}

func TestConcurrentFirstUseWaitsForBootstrap(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	r := profile.NewRegistry(profile.WithPlugins(), profile.WithBuiltins(func(r *profile.Registry) error {
		close(started)
		<-release
		return r.RegisterHarness("late", withSuffix("registered at the end of bootstrap"))
	}))
	go func() { _ = r.Load() }()
	<-started // bootstrap is in progress from here on

	const readers = 16
	results := make(chan *profile.HarnessProfile, readers)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			p, err := r.Harness("late")
			assert.NoError(t, err)
			results <- p
		})
	}
	close(release)
	wg.Wait()
	close(results)
	for p := range results {
		assert.NotNil(t, p, "a reader that did not wait would miss the profile")
	}
}

func TestBootstrapFailureRollsBackAndRetries(t *testing.T) {
	logger, logs := newLogger()
	attempts := 0
	r := profile.NewRegistry(profile.WithPlugins(), profile.WithLogger(logger), profile.WithBuiltins(func(r *profile.Registry) error {
		attempts++
		if err := r.RegisterHarness("partial", withSuffix("half done")); err != nil {
			return err
		}
		switch attempts {
		case 1:
			return errors.New("built-in table is broken")
		case 2:
			panic("loader crashed")
		}
		return r.RegisterHarness("complete", withSuffix("ok"))
	}))
	_, err := r.Harness("partial")
	require.ErrorContains(t, err, "profile: bootstrap: built-in table is broken")
	assert.Contains(t, logs.String(), "level=ERROR")

	// A rolled-back registry holds nothing from the failed attempt. Listing
	// keys triggers the next attempt, which panics — and is rolled back too.
	_, err = r.HarnessKeys()
	require.ErrorContains(t, err, "panic: loader crashed")

	keys, err := r.HarnessKeys()
	require.NoError(t, err, "the third attempt succeeds")
	assert.Equal(t, []string{"complete", "partial"}, keys)
	assert.Equal(t, 3, attempts)
	p, err := r.Harness("partial")
	require.NoError(t, err)
	assert.Equal(t, "half done", suffixOf(t, p), "registered once, not merged with leftovers of failed attempts")
}

func TestPlugins(t *testing.T) {
	// Case 28.
	logger, logs := newLogger()
	r := profile.NewRegistry(profile.WithBuiltins(nil), profile.WithLogger(logger), profile.WithPlugins(
		profile.Plugin{Name: "broken", Register: func(r *profile.Registry) error {
			if err := r.RegisterHarness("broken:model", withSuffix("leftover")); err != nil {
				return err
			}
			return errors.New("missing dependency")
		}},
		profile.Plugin{Name: "not-callable"},
		profile.Plugin{Name: "panics", Register: func(*profile.Registry) error { panic("oops") }},
		profile.Plugin{Name: "first", Register: func(r *profile.Registry) error {
			return r.RegisterHarness("shared:model", profile.MustHarnessProfile(profile.HarnessSpec{
				ExcludedTools: []string{"execute"}, SystemPromptSuffix: ptr("first"),
			}))
		}},
		profile.Plugin{Name: "second", Register: func(r *profile.Registry) error {
			if err := r.RegisterProvider("shared", profile.NewProviderProfile(profile.ProviderSpec{InitOptions: map[string]any{"k": "v"}})); err != nil {
				return err
			}
			return r.RegisterHarness("shared:model", profile.MustHarnessProfile(profile.HarnessSpec{
				ExcludedTools: []string{"grep"}, SystemPromptSuffix: ptr("second"),
			}))
		}},
	))
	keys, err := r.HarnessKeys()
	require.NoError(t, err, "plugin failures never fail the bootstrap")
	assert.Equal(t, []string{"shared:model"}, keys, "the broken plugin's registration was discarded")
	p, err := r.Harness("shared:model")
	require.NoError(t, err)
	assert.Equal(t, []string{"execute", "grep"}, p.ExcludedTools(), "two plugins on one key merge")
	assert.Equal(t, "second", suffixOf(t, p))
	opts, err := r.ApplyProvider("shared:model", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": "v"}, opts)

	out := logs.String()
	for _, want := range []string{
		`level=ERROR msg="profile: plugin failed; its registrations were discarded" plugin=broken error="missing dependency"`,
		`level=ERROR msg="profile: plugin has no Register function; skipped" plugin=not-callable`,
		`plugin=panics error="panic: oops`,
	} {
		assert.Contains(t, out, want)
	}
	// Plugin registrations do not count as user profiles.
	_, err = r.HarnessForModel(fakes.NewScripted().WithIdentity("x", "y"), "")
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "level=DEBUG msg=\"profile: the model matched no harness profile")
}

func TestRegisterPluginGlobal(t *testing.T) {
	var order []string
	var mu sync.Mutex
	record := func(name string) func(*profile.Registry) error {
		return func(r *profile.Registry) error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return r.RegisterHarness("zz-plugin-test:"+name, withSuffix(name))
		}
	}
	profile.RegisterPlugin("zz-test-b", record("b"))
	profile.RegisterPlugin("zz-test-a", record("a"))

	r := profile.NewRegistry(profile.WithBuiltins(nil))
	keys, err := r.HarnessKeys()
	require.NoError(t, err)
	assert.Contains(t, keys, "zz-plugin-test:a")
	assert.Contains(t, keys, "zz-plugin-test:b")
	assert.Equal(t, []string{"a", "b"}, order, "plugins run in name order")
	_, err = r.HarnessKeys()
	require.NoError(t, err)
	assert.Len(t, order, 2, "plugins run once per registry")

	// WithPlugins() opts out of the global plugins.
	keys, err = isolated().HarnessKeys()
	require.NoError(t, err)
	assert.Empty(t, keys)
}

func TestRegistryConcurrentUse(t *testing.T) {
	quiet, _ := newLogger()
	r := profile.NewRegistry(profile.WithPlugins(), profile.WithLogger(quiet))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				key := "conc:model"
				if j%2 == 0 {
					assert.NoError(t, r.RegisterHarness(key, profile.MustHarnessProfile(profile.HarnessSpec{ExcludedTools: []string{string(rune('a' + i))}})))
				}
				p, err := r.HarnessForModel(fakes.NewScripted().WithIdentity("conc", "model"), "")
				assert.NoError(t, err)
				assert.NotNil(t, p)
				_, err = r.Harness("anthropic:claude-opus-4-7")
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	p, err := r.Harness("conc:model")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, p.ExcludedTools())
}
