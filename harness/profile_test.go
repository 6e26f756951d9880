package harness_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/tool"
)

// Cases 21–23 (§3.6–3.7): which profile an agent gets, from a spec or from
// a model instance's identity, observed as the suffix of the prompt sent.
func TestProfileLookup(t *testing.T) {
	suffix := func(s string) profile.HarnessSpec { return profile.HarnessSpec{SystemPromptSuffix: ptr(s)} }
	tests := []struct {
		name     string
		profiles map[string]profile.HarnessSpec
		model    *fakes.Scripted
		spec     string // resolved through a resolver returning model
		want     string
	}{
		{"spec falls back to the provider key", map[string]profile.HarnessSpec{"testprov": suffix("provider")}, fakeModel("x", "y"), "testprov:some-model", "provider"},
		{"spec's exact key merges over the provider's", map[string]profile.HarnessSpec{"testprov": suffix("provider"), "testprov:some-model": suffix("exact")}, fakeModel("x", "y"), "testprov:some-model", "exact"},
		{"a spec wins over the model's identity", map[string]profile.HarnessSpec{"testprov": suffix("spec"), "x": suffix("identity")}, fakeModel("x", "y"), "testprov:some-model", "spec"},
		{"instance: provider:identifier falls back to provider", map[string]profile.HarnessSpec{"fakeprov": suffix("provider")}, fakeModel("fakeprov", "some-model-name"), "", "provider"},
		{"instance: exact over provider, model-level suffix wins", map[string]profile.HarnessSpec{"fakeprov": suffix("provider"), "fakeprov:my-model": suffix("model")}, fakeModel("fakeprov", "my-model"), "", "model"},
		{"instance: identifier with a colon is looked up itself", map[string]profile.HarnessSpec{"myprov": suffix("by identifier")}, fakeModel("", "myprov:my-model"), "", "by identifier"},
		{"instance: a bare identifier never matches a provider key", map[string]profile.HarnessSpec{"openai": suffix("wrong")}, fakeModel("", "openai"), "", ""},
		{"instance: nothing known gives an empty profile", map[string]profile.HarnessSpec{"other": suffix("wrong")}, fakeModel("fakeprov", "m"), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := harness.Config{Profiles: registryWith(t, tt.profiles)}
			if tt.spec != "" {
				cfg.ModelSpec = tt.spec
				cfg.ResolveModel = func(string) (llm.ChatModel, error) { return tt.model, nil }
			} else {
				cfg.Model = tt.model
			}
			a := newAgent(t, cfg)
			assert.Equal(t, tt.want, firstRequest(t, a, tt.model).SystemText())
		})
	}
}

// Case 24: registry keys are validated on registration; malformed specs
// never match anything and are refused by harness.New.
func TestProfileKeys(t *testing.T) {
	reg := emptyRegistry()
	p := profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("S")})
	for _, key := range []string{"", "a:b:c", "p:", ":m", " p", "p :m"} {
		assert.ErrorIs(t, reg.RegisterHarness(key, p), profile.ErrInvalidKey, "key %q", key)
		assert.ErrorIs(t, reg.RegisterProvider(key, profile.NewProviderProfile(profile.ProviderSpec{})), profile.ErrInvalidKey, "key %q", key)
	}
	for _, key := range []string{"openai", "openai:gpt-5"} {
		assert.NoError(t, reg.RegisterHarness(key, p))
	}
	for _, spec := range []string{"", "a:b:c", "openai:", ":x"} {
		got, err := reg.Harness(spec)
		require.NoError(t, err)
		assert.Nil(t, got, "spec %q", spec)
	}
}

// Case 25 through the assembly: Config.Profile (the --profile files) is
// merged over the registry's profile field by field.
func TestProfileMergeInAssembly(t *testing.T) {
	reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {
		BaseSystemPrompt:         ptr("Registry base."),
		SystemPromptSuffix:       ptr("Registry suffix."),
		ToolDescriptionOverrides: map[string]string{"ls": "Registry ls.", "glob": "Registry glob."},
		ExcludedTools:            []string{"delete"},
		GeneralPurposeSubagent:   &profile.GeneralPurposeSubagent{Enabled: ptr(false)},
	}})
	over := profile.MustHarnessProfile(profile.HarnessSpec{
		SystemPromptSuffix:       ptr("Override suffix."),
		ToolDescriptionOverrides: map[string]string{"ls": "Override ls."},
		ExcludedTools:            []string{"grep"},
		GeneralPurposeSubagent:   &profile.GeneralPurposeSubagent{Enabled: ptr(true)},
	})
	m := fakeModel("anthropic", "claude-sonnet-4-6")
	a := newAgent(t, harness.Config{Model: m, Profiles: reg, Profile: over})
	req := firstRequest(t, a, m)
	assert.Equal(t, "Registry base.\n\nOverride suffix.", req.SystemText())
	assert.Equal(t, "Override ls.", toolDescription(t, req.Tools, "ls"))
	assert.Equal(t, "Registry glob.", toolDescription(t, req.Tools, "glob"))
	assert.Equal(t, []string{"ls", "read_file", "write_file", "edit_file", "glob", "task"}, toolNames(req.Tools))

	as := describe(t, a)
	assert.Equal(t, []string{"delete", "grep"}, as.Profile.ExcludedTools)
	require.NotNil(t, as.Profile.GeneralPurposeSubagent)
	assert.Equal(t, ptr(true), as.Profile.GeneralPurposeSubagent.Enabled, "the override re-enables the general-purpose subagent")
	assert.Equal(t, "subagent:"+gpName, as.Stacks[1].Name)
}

// Case 26: a model resolved from a spec gets its provider profile's init
// options — static, overlaid by the factory's — and a pre-init check can
// refuse the model.
func TestModelResolverAppliesProviderProfile(t *testing.T) {
	reg := emptyRegistry()
	require.NoError(t, reg.RegisterProvider("openai", profile.NewProviderProfile(profile.ProviderSpec{
		InitOptions:        map[string]any{"max_tokens": 100, "use_responses_api": false},
		InitOptionsFactory: func() (map[string]any, error) { return map[string]any{"max_tokens": 200}, nil },
		PreInit: func(spec string) error {
			if strings.HasSuffix(spec, ":refused") {
				return errors.New("this model is not supported")
			}
			return nil
		},
	})))
	var got provider.Config
	models := provider.NewResolver(provider.Config{})
	require.NoError(t, models.Register(provider.KindOpenAI, func(c provider.Config) (llm.ChatModel, error) {
		got = c
		return fakeModel(c.Provider, c.Model), nil
	}))
	resolve := harness.ModelResolver(reg, models)

	a := newAgent(t, harness.Config{ModelSpec: "openai:gpt-5", Profiles: reg, ResolveModel: resolve})
	assert.Equal(t, "gpt-5", got.Model)
	assert.Equal(t, 200, got.MaxTokens, "the factory's options win over the static ones")
	require.NotNil(t, got.UseResponsesAPI)
	assert.False(t, *got.UseResponsesAPI)
	assert.Equal(t, "openai:gpt-5", describe(t, a).Model)

	_, err := harness.New(harness.Config{ModelSpec: "openai:refused", Profiles: reg, ResolveModel: resolve})
	assert.ErrorContains(t, err, "this model is not supported")

	t.Run("built-in openai profile turns on the Responses API", func(t *testing.T) {
		var got provider.Config
		models := provider.NewResolver(provider.Config{})
		require.NoError(t, models.Register(provider.KindOpenAI, func(c provider.Config) (llm.ChatModel, error) {
			got = c
			return fakeModel(c.Provider, c.Model), nil
		}))
		reg := profile.NewRegistry(profile.WithPlugins())
		newAgent(t, harness.Config{ModelSpec: "openai:gpt-5", Profiles: reg, ResolveModel: harness.ModelResolver(reg, models)})
		require.NotNil(t, got.UseResponsesAPI)
		assert.True(t, *got.UseResponsesAPI)
	})
}

// Case 27: the built-in harness profiles, through the assembly.
func TestBuiltinProfiles(t *testing.T) {
	builtins := func() *profile.Registry { return profile.NewRegistry(profile.WithPlugins()) }
	tags := []string{"<use_parallel_tool_calls>", "<investigate_before_answering>", "<tool_result_reflection>"}
	tests := []struct {
		provider, model string
		want, notWant   []string
		extra           string
	}{
		{provider: "anthropic", model: "claude-sonnet-4-6", want: tags, notWant: []string{"<tool_usage>", "<subagent_usage>"}},
		{provider: "anthropic", model: "claude-haiku-4-5", want: tags},
		{provider: "anthropic", model: "claude-opus-4-7", want: append([]string{"<tool_usage>", "<subagent_usage>"}, tags...)},
		{provider: "anthropic", model: "claude-2.1"},
		{provider: "openai", model: "gpt-5"},
		{provider: "openai", model: "gpt-5.1-codex", want: []string{"write_todos"}, extra: todoMW},
		{provider: "openai", model: "gpt-5.3-codex", want: []string{"write_todos"}, extra: todoMW},
	}
	for _, tt := range tests {
		t.Run(tt.provider+":"+tt.model, func(t *testing.T) {
			m := fakeModel(tt.provider, tt.model)
			a := newAgent(t, harness.Config{Model: m, Profiles: builtins()})
			sys := firstRequest(t, a, m).SystemText()
			if len(tt.want) == 0 {
				assert.Empty(t, sys, "no harness profile")
			}
			for _, s := range tt.want {
				assert.Contains(t, sys, s)
			}
			for _, s := range tt.notWant {
				assert.NotContains(t, sys, s)
			}
			if tt.extra != "" {
				assert.Equal(t, []string{fsMW, subMW, summMW, patchMW, tt.extra, cacheMW}, a.Middleware())
				assert.Contains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), tt.extra)
			}
		})
	}
	t.Run("codex profiles are identical", func(t *testing.T) {
		var prompts []string
		for _, id := range []string{"gpt-5.1-codex", "gpt-5.2-codex", "gpt-5.3-codex"} {
			m := fakeModel("openai", id)
			prompts = append(prompts, firstRequest(t, newAgent(t, harness.Config{Model: m, Profiles: builtins()}), m).SystemText())
		}
		assert.Equal(t, prompts[0], prompts[1])
		assert.Equal(t, prompts[0], prompts[2])
	})
}

// Case 30: general-purpose edits; disabling it removes the task tool unless
// a sync subagent is declared.
func TestGeneralPurposeEdits(t *testing.T) {
	reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{
		Description: ptr("D: the all-rounder."), SystemPrompt: ptr("P: you are the all-rounder."),
	}}})
	m := fakeModel("anthropic", "claude-sonnet-4-6")
	a := newAgent(t, harness.Config{Model: m, Profiles: reg})
	req := firstRequest(t, a, m)
	assert.Contains(t, toolDescription(t, req.Tools, "task"), "- general-purpose: D: the all-rounder.")
	gp := subAgents(t, a)[0]
	assert.Equal(t, gpName, gp.Name)
	assert.Equal(t, "D: the all-rounder.", gp.Description)
	assert.Equal(t, "P: you are the all-rounder.", stackOf(t, describe(t, a), "subagent:"+gpName).SystemPrompt)

	off := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(false)}}})
	m2 := fakeModel("anthropic", "claude-sonnet-4-6")
	b := newAgent(t, harness.Config{Model: m2, Profiles: off})
	assert.NotContains(t, toolNames(firstRequest(t, b, m2).Tools), "task")
	assert.NotContains(t, toolNames(b.ToolSpecs()), "task", "no task tool in the tool node either")

	m3 := fakeModel("anthropic", "claude-sonnet-4-6")
	c := newAgent(t, harness.Config{Model: m3, Profiles: off, SubAgents: []harness.SubAgentSpec{{Name: "w", Description: "Works.", SystemPrompt: "Work."}}})
	task := toolDescription(t, firstRequest(t, c, m3).Tools, "task")
	assert.Contains(t, task, "- w: Works.")
	assert.NotContains(t, task, gpName)
}

// Case 31: tool description overrides reach the built-in tools of main and
// general-purpose, and the task tool (with {available_agents} filled in).
func TestToolDescriptionOverrides(t *testing.T) {
	tests := []struct {
		name, task, want string
	}{
		{"verbatim", "custom task", "custom task"},
		{"placeholder", "Pick one:\n{available_agents}", "Pick one:\n- general-purpose: " + harness.DefaultGeneralPurposeDescription},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {ToolDescriptionOverrides: map[string]string{"ls": "Custom ls.", "task": tt.task, "unknown_tool": "ignored"}}})
			m := fakeModel("anthropic", "claude-sonnet-4-6")
			a := newAgent(t, harness.Config{Model: m, Profiles: reg})
			req := firstRequest(t, a, m)
			assert.Equal(t, "Custom ls.", toolDescription(t, req.Tools, "ls"))
			assert.Equal(t, tt.want, toolDescription(t, req.Tools, "task"))
			gp := stackOf(t, describe(t, a), "subagent:"+gpName)
			assert.Equal(t, "Custom ls.", gp.Tools[0].Description)
		})
	}

	t.Run("caller tools are copied, never changed", func(t *testing.T) {
		reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {ToolDescriptionOverrides: map[string]string{"echo": "Overridden echo."}}})
		echo := echoTool(t, "echo", "Original echo.")
		m := fakeModel("anthropic", "claude-sonnet-4-6", fakes.Calls("", fakes.Call("echo", map[string]string{"text": "x"})), fakes.Reply("done"))
		a := newAgent(t, harness.Config{Model: m, Profiles: reg, Tools: []tool.Tool{echo}})
		res := invoke(t, a)
		assert.Equal(t, "Original echo.", echo.Spec().Description, "the caller's tool keeps its description")
		assert.Equal(t, "Overridden echo.", toolDescription(t, m.Requests()[0].Tools, "echo"))
		assert.Equal(t, "echo: x", res.State.Messages[2].Text(), "the copy still runs the caller's function")
	})
}

// Config.Profile shapes every stack on the parent's model, declarative
// subagents included; a subagent with a model of its own keeps its profile.
func TestConfigProfileReachesSubagentsOnTheParentModel(t *testing.T) {
	over := profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("Be terse."), ExcludedTools: []string{"delete"}})
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profile: over, SubAgents: []harness.SubAgentSpec{
		{Name: "same", Description: "d", SystemPrompt: "Same model."},
		{Name: "own", Description: "d", SystemPrompt: "Own model.", Model: fakeModel("other", "m")},
	}})
	as := describe(t, a)
	for _, tt := range []struct{ stack, prompt string }{
		{"main", "Be terse."},
		{"subagent:" + gpName, harness.DefaultSubagentPrompt + "\n\nBe terse."},
		{"subagent:same", "Same model.\n\nBe terse."},
	} {
		s := stackOf(t, as, tt.stack)
		assert.Equal(t, tt.prompt, s.SystemPrompt, tt.stack)
		assert.NotContains(t, stackTools(s), "delete", tt.stack)
	}
	own := stackOf(t, as, "subagent:own")
	assert.Equal(t, "Own model.", own.SystemPrompt)
	assert.Contains(t, stackTools(own), "delete")
}

// Case 28 through the assembly: a plugin's profiles reach harness.New; a
// failing plugin is skipped and what it registered is discarded.
func TestPluginProfilesReachTheAssembly(t *testing.T) {
	reg := profile.NewRegistry(profile.WithBuiltins(nil), profile.WithPlugins(
		profile.Plugin{Name: "acme", Register: func(r *profile.Registry) error {
			return r.RegisterHarness("acme", profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("From the acme plugin.")}))
		}},
		profile.Plugin{Name: "broken", Register: func(r *profile.Registry) error {
			if err := r.RegisterHarness("broken", profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("half done")})); err != nil {
				return err
			}
			return errors.New("the plugin failed")
		}},
	))
	m := fakeModel("acme", "large")
	a := newAgent(t, harness.Config{Model: m, Profiles: reg})
	assert.Equal(t, "From the acme plugin.", firstRequest(t, a, m).SystemText())
	m2 := fakeModel("broken", "x")
	assert.Empty(t, firstRequest(t, newAgent(t, harness.Config{Model: m2, Profiles: reg}), m2).SystemText())
}

// Case 29 through the assembly: a Deep Agents profile file loads unchanged,
// shapes the agent, and the profile the assembly reports round-trips.
func TestProfileConfigThroughAssembly(t *testing.T) {
	cfg, err := profile.ParseConfig("p.yaml", []byte(`base_system_prompt: Base.
system_prompt_suffix: Suffix.
tool_description_overrides: {ls: Lists.}
excluded_tools: [grep, delete]
excluded_middleware: [SummarizationMiddleware]
general_purpose_subagent: {description: Generalist., system_prompt: GP.}
`))
	require.NoError(t, err)
	p, err := cfg.HarnessProfile()
	require.NoError(t, err)
	m := fakeModel("anthropic", "claude-sonnet-4-6")
	a := newAgent(t, harness.Config{Model: m, Profile: p})
	req := firstRequest(t, a, m)
	assert.Equal(t, "Base.\n\nSuffix.", req.SystemText())
	assert.Equal(t, "Lists.", toolDescription(t, req.Tools, "ls"))
	assert.Equal(t, []string{"ls", "read_file", "write_file", "edit_file", "glob", "task"}, toolNames(req.Tools))
	assert.Equal(t, []string{fsMW, subMW, patchMW, cacheMW, toolExMW}, a.Middleware())
	as := describe(t, a)
	assert.Equal(t, "GP.\n\nSuffix.", stackOf(t, as, "subagent:"+gpName).SystemPrompt)

	back, err := profile.ConfigFromHarness(p)
	require.NoError(t, err)
	assert.Equal(t, cfg.Normalized(), back.Normalized())
	assert.Equal(t, []string{"delete", "grep"}, as.Profile.ExcludedTools, "sorted")
}

// A profile's tool descriptions reach every tool a built-in middleware adds,
// wherever the middleware came from, and its todo prompt reaches every todo
// list, in each stack the profile shapes; text the caller gave a middleware
// itself wins.
func TestProfileRewordsEveryBuiltinTool(t *testing.T) {
	todoPrompt := "PROFILE todo prompt."
	descs := map[string]string{"ls": "PROFILE ls.", "write_todos": "PROFILE write_todos.", "check_async_task": "PROFILE check.",
		"start_async_task": "PROFILE start:\n{available_agents}"}
	reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {
		ExtraMiddlewareFactory: func() []agent.Middleware {
			return []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{})}
		},
	}})
	cfg := harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg,
		Profile: profile.MustHarnessProfile(profile.HarnessSpec{ToolDescriptionOverrides: descs, TodoSystemPrompt: &todoPrompt}),
		SubAgents: []harness.SubAgentSpec{
			{Name: "remote", Description: "Works remotely.", GraphID: "g", URL: "http://127.0.0.1:9"},
			{Name: "planner", Description: "Plans.", SystemPrompt: "You plan.",
				Middleware: []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{ToolDescription: "OWN write_todos."})}},
		}}
	as := describe(t, newAgent(t, cfg))
	desc := func(s harness.Stack, name string) string {
		for _, tl := range s.Tools {
			if tl.Name == name {
				return tl.Description
			}
		}
		t.Fatalf("stack %s has no tool %s: %v", s.Name, name, stackTools(s))
		return ""
	}
	main := stackOf(t, as, "main")
	assert.Equal(t, "PROFILE ls.", desc(main, "ls"))
	assert.Equal(t, "PROFILE write_todos.", desc(main, "write_todos"), "the profile factory's todo list")
	assert.Equal(t, "PROFILE check.", desc(main, "check_async_task"))
	assert.Equal(t, "PROFILE start:\n- remote: Works remotely.", desc(main, "start_async_task"))
	assert.True(t, strings.HasSuffix(main.SystemPrompt, "\n\n"+todoPrompt) || main.SystemPrompt == todoPrompt, main.SystemPrompt)

	gp := stackOf(t, as, "subagent:general-purpose")
	assert.Equal(t, "PROFILE write_todos.", desc(gp, "write_todos"))
	assert.True(t, strings.HasSuffix(gp.SystemPrompt, "\n\n"+todoPrompt), gp.SystemPrompt)

	planner := stackOf(t, as, "subagent:planner")
	assert.Equal(t, "OWN write_todos.", desc(planner, "write_todos"), "the caller's own description wins")
	assert.True(t, strings.HasSuffix(planner.SystemPrompt, "\n\n"+todoPrompt), "its prompt was left to the profile: %s", planner.SystemPrompt)

	// Without the profile, the text is the middleware's own.
	cfg.Profile = nil
	main = stackOf(t, describe(t, newAgent(t, cfg)), "main")
	assert.NotEqual(t, "PROFILE write_todos.", desc(main, "write_todos"))
	assert.NotContains(t, main.SystemPrompt, todoPrompt)
}
