package harness_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/tool"
)

// Case 1 and the worked orders of §1.3: the main stack for the shapes of
// configuration Deep Agents documents.
func TestMainStackOrder(t *testing.T) {
	disabled := map[string]profile.HarnessSpec{"anthropic": {GeneralPurposeSubagent: &profile.GeneralPurposeSubagent{Enabled: ptr(false)}}}
	declarative := harness.SubAgentSpec{Name: "researcher", Description: "Researches.", SystemPrompt: "You research."}
	async := harness.SubAgentSpec{Name: "remote", Description: "Runs remotely.", GraphID: "remote-graph"}
	tests := []struct {
		name     string
		cfg      func(t *testing.T) harness.Config
		want     []string
		gp       bool   // a general-purpose subagent is assembled
		hasTask  bool   // the model is offered the task tool
		extraWan string // a tool that must be offered too
	}{
		{
			name:    "minimal",
			cfg:     func(*testing.T) harness.Config { return harness.Config{} },
			want:    []string{fsMW, subMW, summMW, patchMW, cacheMW},
			gp:      true,
			hasTask: true,
		},
		{
			name: "general-purpose disabled, no sync subagents: no task tool",
			cfg: func(t *testing.T) harness.Config {
				return harness.Config{Profiles: registryWith(t, disabled)}
			},
			want: []string{fsMW, summMW, patchMW, cacheMW},
		},
		{
			name: "general-purpose disabled, one declarative subagent keeps task",
			cfg: func(t *testing.T) harness.Config {
				return harness.Config{Profiles: registryWith(t, disabled), SubAgents: []harness.SubAgentSpec{declarative}}
			},
			want:    []string{fsMW, subMW, summMW, patchMW, cacheMW},
			hasTask: true,
		},
		{
			name: "only async subagents, general-purpose disabled",
			cfg: func(t *testing.T) harness.Config {
				return harness.Config{Profiles: registryWith(t, disabled), SubAgents: []harness.SubAgentSpec{async}}
			},
			want:     []string{fsMW, summMW, patchMW, asyncMW, cacheMW},
			extraWan: "start_async_task",
		},
		{
			name: "everything",
			cfg: func(t *testing.T) harness.Config {
				reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {
					ExtraMiddleware: []agent.Middleware{mw("X")},
					ExcludedTools:   []string{"grep"},
				}})
				return harness.Config{
					Profiles:    reg,
					Skills:      []string{"/skills/"},
					Memory:      []string{"/AGENTS.md"},
					SubAgents:   []harness.SubAgentSpec{declarative, async},
					InterruptOn: middleware.InterruptOn{"write_file": {}},
					Middleware:  []agent.Middleware{mw("U"), mw(summMW)},
				}
			},
			want:     []string{skillsMW, fsMW, subMW, summMW, patchMW, asyncMW, "U", "X", cacheMW, memoryMW, hitlMW, toolExMW},
			gp:       true,
			hasTask:  true,
			extraWan: "check_async_task",
		},
		{
			name: "interrupt-mode permissions bring human-in-the-loop",
			cfg: func(*testing.T) harness.Config {
				return harness.Config{Permissions: []middleware.Permission{{Operations: []middleware.Operation{middleware.OpWrite}, Paths: []string{"/secrets/**"}, Mode: middleware.Interrupt}}}
			},
			want:    []string{fsMW, subMW, summMW, patchMW, cacheMW, hitlMW},
			gp:      true,
			hasTask: true,
		},
		{
			name: "a caller TodoListMiddleware lands right after the core",
			cfg: func(*testing.T) harness.Config {
				return harness.Config{SubAgents: []harness.SubAgentSpec{async}, Middleware: []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{})}}
			},
			want:     []string{fsMW, subMW, summMW, patchMW, asyncMW, todoMW, cacheMW},
			gp:       true,
			hasTask:  true,
			extraWan: "write_todos",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg(t)
			m := fakeModel("anthropic", "claude-sonnet-4-6")
			cfg.Model = m
			a := newAgent(t, cfg)
			assert.Equal(t, tt.want, a.Middleware())
			as := describe(t, a)
			assert.Equal(t, tt.want, stackOf(t, as, "main").Middleware)
			hasGP := false
			for _, s := range as.Stacks {
				hasGP = hasGP || s.Name == "subagent:"+gpName
			}
			assert.Equal(t, tt.gp, hasGP, "general-purpose subagent")

			req := firstRequest(t, a, m)
			names := toolNames(req.Tools)
			assert.Equal(t, tt.hasTask, contains(names, "task"), "task tool among %v", names)
			if tt.extraWan != "" {
				assert.Contains(t, names, tt.extraWan)
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Case 1's metadata: Deep Agents binds recursion_limit 9999 (and tracing
// metadata, which has no Go counterpart); the Go agent carries the limit.
func TestRecursionLimit(t *testing.T) {
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6")})
	assert.Equal(t, harness.DefaultRecursionLimit, a.Config().RecursionLimit)
	assert.Equal(t, 9999, harness.DefaultRecursionLimit)
	for _, s := range subAgents(t, a) {
		assert.Equal(t, 9999, s.Runner.(*agent.Agent).Config().RecursionLimit, "subagent %s", s.Name)
	}
	b := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), RecursionLimit: 7})
	assert.Equal(t, 7, b.Config().RecursionLimit)
}

// With no model, the default spec is resolved without an API key and
// without the network (TestMain fails the run on any non-loopback dial).
func TestDefaultModelNeedsNoKey(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		t.Setenv(k, "")
	}
	a, err := harness.New(harness.Config{})
	require.NoError(t, err)
	as := describe(t, a)
	assert.Equal(t, harness.DefaultModelSpec, as.Model)
	assert.Equal(t, "anthropic:claude-sonnet-4-6", as.Model)
	require.NotNil(t, as.Profile.SystemPromptSuffix, "the built-in Sonnet 4.6 profile applies")
	assert.Equal(t, *as.Profile.SystemPromptSuffix, stackOf(t, as, "main").SystemPrompt)
}

func TestModelSpecErrors(t *testing.T) {
	for _, spec := range []string{"a:b:c", ":x", "openai:", "nosuchprovider:model"} {
		t.Run(spec, func(t *testing.T) {
			_, err := harness.New(harness.Config{ModelSpec: spec, Profiles: emptyRegistry()})
			require.Error(t, err)
			assert.Contains(t, err.Error(), spec)
		})
	}
	_, err := harness.New(harness.Config{Model: fakeModel("a", "b"), SystemPrompt: "x", SystemBlocks: []llm.Block{llm.TextBlock("y")}})
	assert.ErrorContains(t, err, "not both")
}

// Cases 2–5 (§1.7): caller middleware replace by name in place; new names
// go right after the last core entry, in caller order.
func TestCallerMiddlewareMerge(t *testing.T) {
	tests := []struct {
		name   string
		caller []agent.Middleware
		want   []string
	}{
		{"a new name precedes prompt caching", []agent.Middleware{mw("CustomMW")}, []string{fsMW, subMW, summMW, patchMW, "CustomMW", cacheMW}},
		{"same name replaces in place", []agent.Middleware{mw(patchMW)}, []string{fsMW, subMW, summMW, patchMW, cacheMW}},
		{"replace and add", []agent.Middleware{mw(fsMW), mw("New")}, []string{fsMW, subMW, summMW, patchMW, "New", cacheMW}},
		{"new names keep caller order", []agent.Middleware{mw("X"), mw("Y")}, []string{fsMW, subMW, summMW, patchMW, "X", "Y", cacheMW}},
		{"a tail entry is replaced where it is", []agent.Middleware{mw(cacheMW), mw("Z")}, []string{fsMW, subMW, summMW, patchMW, "Z", cacheMW}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Middleware: tt.caller})
			assert.Equal(t, tt.want, a.Middleware())
			// Every caller instance is in the stack itself, not a copy.
			for _, c := range tt.caller {
				assert.Contains(t, mainMiddleware(a), c)
			}
		})
	}

	t.Run("a later duplicate name wins", func(t *testing.T) {
		first, second := mw(patchMW), mw(patchMW)
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Middleware: []agent.Middleware{first, second}})
		assert.Equal(t, []string{fsMW, subMW, summMW, patchMW, cacheMW}, a.Middleware())
		assert.Same(t, second, mainMiddleware(a)[3])
	})
}

// mySummarization embeds the summarization middleware and keeps its name;
// renamedSummarization embeds it under another name.
type mySummarization struct {
	*middleware.SummarizationMiddleware
}

type renamedSummarization struct {
	*middleware.SummarizationMiddleware
}

func (renamedSummarization) Name() string { return "CustomSummarization" }

func newSummarization(t *testing.T) *middleware.SummarizationMiddleware {
	t.Helper()
	s, err := middleware.NewSummarization(middleware.SummarizationOptions{Trigger: []middleware.Threshold{{Messages: 50}}})
	require.NoError(t, err)
	return s
}

// Cases 3 and 4.
func TestCallerSummarization(t *testing.T) {
	t.Run("replaces the default at its index", func(t *testing.T) {
		mine := newSummarization(t)
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Middleware: []agent.Middleware{mine}})
		mws := mainMiddleware(a)
		count := 0
		for i, m := range mws {
			if m.Name() == summMW {
				count++
				assert.Equal(t, 2, i)
				assert.Same(t, mine, m)
			}
		}
		assert.Equal(t, 1, count)
		// The general-purpose subagent inherits the replacement of a default.
		gp := subAgentConfig(t, a, gpName)
		assert.Contains(t, gp.Middleware, agent.Middleware(mine))
	})
	t.Run("an embedder with another name is added beside the default", func(t *testing.T) {
		mine := renamedSummarization{newSummarization(t)}
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Middleware: []agent.Middleware{mine}})
		assert.Equal(t, []string{fsMW, subMW, summMW, patchMW, "CustomSummarization", cacheMW}, a.Middleware())
		// Main-only additions do not reach the general-purpose subagent.
		assert.NotContains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), "CustomSummarization")
	})
}

// Cases 6 and 7 (§1.9–1.10): excluded tools are hidden from the model by a
// _ToolExclusionMiddleware placed last, and still run when called anyway.
func TestExcludedTools(t *testing.T) {
	reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {ExcludedTools: []string{"write_file", "drop_me", "execute"}}})
	m := fakeModel("anthropic", "claude-sonnet-4-6",
		fakes.Calls("", fakes.Call("write_file", map[string]string{"file_path": "/hidden.txt", "content": "still written"})),
		fakes.Reply("done"),
	)
	caller := []tool.Tool{echoTool(t, "keep_me", "Kept."), echoTool(t, "drop_me", "Dropped.")}
	a := newAgent(t, harness.Config{Model: m, Profiles: reg, Tools: caller, Middleware: []agent.Middleware{mw("Caller")}})

	names := a.Middleware()
	assert.Equal(t, toolExMW, names[len(names)-1], "tool exclusion is last, after caller middleware")
	count := 0
	for _, x := range mainMiddleware(a) {
		if te, ok := x.(*middleware.ToolExclusionMiddleware); ok {
			count++
			assert.Equal(t, []string{"drop_me", "execute", "write_file"}, te.Excluded())
		}
	}
	assert.Equal(t, 1, count)
	// The agent still has every tool; only the model's view is filtered.
	assert.Equal(t, caller, a.Config().Tools, "caller tools reach the agent unfiltered")
	assert.Contains(t, toolNames(a.ToolSpecs()), "write_file")

	res := invoke(t, a)
	reqs := m.Requests()
	got := toolNames(reqs[0].Tools)
	assert.Equal(t, []string{"ls", "read_file", "edit_file", "delete", "glob", "grep", "task", "keep_me"}, got)
	require.Contains(t, res.State.Files, "/hidden.txt", "a call to an excluded tool still runs")
	assert.Equal(t, "still written", res.State.Files["/hidden.txt"].Content)

	// The general-purpose subagent shares the main profile, so it hides them too.
	gp := subAgentConfig(t, a, gpName)
	assert.Equal(t, toolExMW, gp.Middleware[len(gp.Middleware)-1].Name())

	t.Run("no exclusions, no middleware", func(t *testing.T) {
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6")})
		assert.NotContains(t, a.Middleware(), toolExMW)
	})
}

// Case 8: profile extra middleware — a list is shared, a factory runs once
// per stack.
func TestProfileExtraMiddleware(t *testing.T) {
	t.Run("list", func(t *testing.T) {
		extra := mw("Extra")
		reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {ExtraMiddleware: []agent.Middleware{extra}}})
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg})
		assert.Equal(t, []string{fsMW, subMW, summMW, patchMW, "Extra", cacheMW}, a.Middleware())
		assert.Contains(t, mainMiddleware(a), agent.Middleware(extra))
		assert.Equal(t, []string{fsMW, summMW, patchMW, "Extra", cacheMW}, mwNames(subAgentConfig(t, a, gpName).Middleware))
	})
	t.Run("factory", func(t *testing.T) {
		calls := 0
		var made []agent.Middleware
		reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {ExtraMiddlewareFactory: func() []agent.Middleware {
			calls++
			m := mw("Fresh")
			made = append(made, m)
			return []agent.Middleware{m}
		}}})
		before := calls
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg})
		assert.GreaterOrEqual(t, calls-before, 2, "called for the general-purpose and the main stack")
		mainFresh := mainMiddleware(a)[4]
		gpFresh := subAgentConfig(t, a, gpName).Middleware[3]
		assert.Equal(t, "Fresh", mainFresh.Name())
		assert.Equal(t, "Fresh", gpFresh.Name())
		assert.NotSame(t, mainFresh, gpFresh, "each stack gets its own instance")
	})
}

// Case 9: todos are not a default; where TodoListMiddleware comes from
// decides which stacks get it.
func TestTodoListPlacement(t *testing.T) {
	spec := harness.SubAgentSpec{Name: "planner", Description: "Plans.", SystemPrompt: "You plan."}
	t.Run("not a default", func(t *testing.T) {
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SubAgents: []harness.SubAgentSpec{spec}})
		assert.NotContains(t, a.Middleware(), todoMW)
		assert.NotContains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), todoMW)
		assert.NotContains(t, mwNames(subAgentConfig(t, a, "planner").Middleware), todoMW)
	})
	t.Run("a caller's stays main-only", func(t *testing.T) {
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SubAgents: []harness.SubAgentSpec{spec},
			Middleware: []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{})}})
		assert.Contains(t, a.Middleware(), todoMW)
		assert.NotContains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), todoMW)
		assert.NotContains(t, mwNames(subAgentConfig(t, a, "planner").Middleware), todoMW)
	})
	t.Run("a profile factory reaches main and general-purpose", func(t *testing.T) {
		reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {ExtraMiddlewareFactory: func() []agent.Middleware {
			return []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{})}
		}}})
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg})
		assert.Contains(t, a.Middleware(), todoMW)
		assert.Contains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), todoMW)
	})
	t.Run("a declarative subagent may opt in for itself", func(t *testing.T) {
		s := spec
		s.Middleware = []agent.Middleware{middleware.NewTodoList(middleware.TodoListConfig{})}
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), SubAgents: []harness.SubAgentSpec{s}})
		assert.NotContains(t, a.Middleware(), todoMW)
		assert.NotContains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), todoMW)
		assert.Equal(t, []string{fsMW, summMW, patchMW, todoMW, cacheMW}, mwNames(subAgentConfig(t, a, "planner").Middleware))
	})
}

// Case 10: prompt caching sits in every stack harness.New builds. (Deep
// Agents also adds Bedrock and Fireworks variants when those Python
// packages import; dageval has no adapters for them.)
func TestPromptCachingInEveryStack(t *testing.T) {
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"),
		SubAgents: []harness.SubAgentSpec{{Name: "w", Description: "Works.", SystemPrompt: "Work."}}})
	as := describe(t, a)
	for _, s := range as.Stacks {
		assert.Contains(t, s.Middleware, cacheMW, s.Name)
	}
	assert.Len(t, as.Stacks, 3)
}

// TestBedrockPromptCachingInEveryStackOfABedrockAgent: an agent that runs
// a model on Bedrock (the main model, or only a subagent's) has Deep
// Agents' Bedrock caching variant right after Anthropic's in every stack,
// as Deep Agents does where langchain-aws is installed; the Bedrock model's
// requests carry the breakpoints.
func TestBedrockPromptCachingInEveryStackOfABedrockAgent(t *testing.T) {
	bedrockMW := middleware.BedrockPromptCachingName
	m := fakeModel("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
	a := newAgent(t, harness.Config{Model: m, Tools: []tool.Tool{echoTool(t, "lookup", "Looks things up.")},
		SubAgents: []harness.SubAgentSpec{{Name: "w", Description: "Works.", SystemPrompt: "Work."}}})
	as := describe(t, a)
	require.Len(t, as.Stacks, 3)
	for _, s := range as.Stacks {
		i := slices.Index(s.Middleware, cacheMW)
		require.GreaterOrEqual(t, i, 0, s.Name)
		require.Less(t, i+1, len(s.Middleware), s.Name)
		assert.Equal(t, bedrockMW, s.Middleware[i+1], "%s: Bedrock's variant follows Anthropic's", s.Name)
	}
	req := firstRequest(t, a, m)
	assert.NotNil(t, req.Tools[len(req.Tools)-1].CacheControl, "Claude on Bedrock gets the breakpoints")

	viaSubagent := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"),
		SubAgents: []harness.SubAgentSpec{{Name: "w", Description: "Works.", SystemPrompt: "Work.", Model: fakeModel("bedrock", "anthropic.claude-haiku-4-5-20251001-v1:0")}}})
	assert.Contains(t, viaSubagent.Middleware(), bedrockMW, "a subagent on Bedrock is enough")

	plain := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6")})
	assert.NotContains(t, plain.Middleware(), bedrockMW, "other agents assemble as before")
}

// Case 12: the middleware Deep Agents owns add nothing to the prompt on
// their own: an empty profile and no caller prompt send an empty system
// prompt, and the subagent list lives in the task tool's description only.
func TestNoPromptFragmentsByDefault(t *testing.T) {
	m := fakeModel("anthropic", "claude-sonnet-4-6")
	a := newAgent(t, harness.Config{Model: m,
		SubAgents: []harness.SubAgentSpec{{Name: "remote", Description: "Remote work.", GraphID: "g"}, {Name: "w", Description: "Works.", SystemPrompt: "Work."}}})
	req := firstRequest(t, a, m)
	assert.Empty(t, req.SystemText())
	assert.Contains(t, toolDescription(t, req.Tools, "task"), "- w: Works.")
	assert.Contains(t, toolDescription(t, req.Tools, "start_async_task"), "remote")
}

// Cases 13–20 (§1.8): excluded middleware.
func TestExcludedMiddleware(t *testing.T) {
	stubType := reflect.TypeFor[*stubMW]()
	summType := reflect.TypeFor[*middleware.SummarizationMiddleware]()
	async := harness.SubAgentSpec{Name: "remote", Description: "Remote.", GraphID: "g"}
	tests := []struct {
		name    string
		spec    profile.HarnessSpec
		cfg     harness.Config
		want    []string // main stack
		wantGP  []string // general-purpose stack, when checked
		wantErr []string
	}{
		{
			name: "type exclusion drops the exact type, keeps others and embedders",
			spec: profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{stubType}},
			cfg:  harness.Config{Middleware: []agent.Middleware{&stubMW{}, &otherMW{}}},
			want: []string{fsMW, subMW, summMW, patchMW, "OtherMW", cacheMW},
		},
		{
			name: "an embedder of an excluded type survives",
			spec: profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{stubType}, ExtraMiddleware: []agent.Middleware{&stubMW{}}},
			cfg:  harness.Config{Middleware: []agent.Middleware{&stubChild{}}},
			want: []string{fsMW, subMW, summMW, patchMW, "StubMW", cacheMW},
		},
		{
			name:   "name exclusion of the built-in summarization",
			spec:   profile.HarnessSpec{ExcludedMiddleware: []string{summMW}},
			want:   []string{fsMW, subMW, patchMW, cacheMW},
			wantGP: []string{fsMW, patchMW, cacheMW},
		},
		{
			name:   "excluding a profile factory's middleware removes it from main and general-purpose",
			spec:   profile.HarnessSpec{ExcludedMiddleware: []string{"Fresh"}, ExtraMiddlewareFactory: func() []agent.Middleware { return []agent.Middleware{mw("Fresh")} }},
			want:   []string{fsMW, subMW, summMW, patchMW, cacheMW},
			wantGP: []string{fsMW, summMW, patchMW, cacheMW},
		},
		{
			name: "excluding AsyncSubAgentMiddleware",
			spec: profile.HarnessSpec{ExcludedMiddleware: []string{asyncMW}},
			cfg:  harness.Config{SubAgents: []harness.SubAgentSpec{async}},
			want: []string{fsMW, subMW, summMW, patchMW, cacheMW},
		},
		{
			name: "caller middleware cannot bring back an excluded name",
			spec: profile.HarnessSpec{ExcludedMiddleware: []string{"Custom"}},
			cfg:  harness.Config{Middleware: []agent.Middleware{mw("Custom")}},
			want: []string{fsMW, subMW, summMW, patchMW, cacheMW},
		},
		{
			name: "caching, patching, skills, memory and human-in-the-loop may all go",
			spec: profile.HarnessSpec{ExcludedMiddleware: []string{cacheMW, patchMW, skillsMW, memoryMW, hitlMW}},
			cfg:  harness.Config{Skills: []string{"/skills/"}, Memory: []string{"/AGENTS.md"}, InterruptOn: middleware.InterruptOn{"ls": {}}},
			want: []string{fsMW, subMW, summMW},
		},
		{
			name: "type exclusion of summarization, caller embedder under the same name survives (case 20)",
			spec: profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{summType}},
			cfg:  harness.Config{Middleware: []agent.Middleware{mySummarization{must(middleware.NewSummarization(middleware.SummarizationOptions{}))}}},
			// As in Deep Agents: the default's slot is gone after the first
			// exclusion pass, so the caller's entry is a new name — right
			// after the core in main, appended in the general-purpose stack.
			want:   []string{fsMW, subMW, patchMW, summMW, cacheMW},
			wantGP: []string{fsMW, patchMW, cacheMW, summMW},
		},
		{
			name:   "type exclusion wins over a caller instance of that exact type, in main and general-purpose (case 20)",
			spec:   profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{summType}},
			cfg:    harness.Config{Middleware: []agent.Middleware{must(middleware.NewSummarization(middleware.SummarizationOptions{}))}},
			want:   []string{fsMW, subMW, patchMW, cacheMW},
			wantGP: []string{fsMW, patchMW, cacheMW},
		},
		{
			name:    "an unknown name matches nothing (case 17)",
			spec:    profile.HarnessSpec{ExcludedMiddleware: []string{"DoesNotExistMiddleware"}},
			wantErr: []string{"matched no middleware", "DoesNotExistMiddleware"},
		},
		{
			name:    "TodoListMiddleware without an opt-in matches nothing (case 17)",
			spec:    profile.HarnessSpec{ExcludedMiddleware: []string{todoMW}},
			wantErr: []string{"matched no middleware", todoMW},
		},
		{
			name:    "a type nobody uses matches nothing (case 17)",
			spec:    profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{stubType}},
			wantErr: []string{"matched no middleware", "stubMW"},
		},
		{
			name:    "AsyncSubAgentMiddleware without async subagents matches nothing",
			spec:    profile.HarnessSpec{ExcludedMiddleware: []string{asyncMW}},
			wantErr: []string{"matched no middleware", asyncMW},
		},
		{
			name:    "one name matching two types in a stack is ambiguous (case 19)",
			spec:    profile.HarnessSpec{ExcludedMiddleware: []string{"StubMW"}, ExtraMiddleware: []agent.Middleware{&stubMW{}, &namedStub{}}},
			wantErr: []string{"matched multiple distinct"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Model = fakeModel("anthropic", "claude-sonnet-4-6")
			cfg.Profiles = registryWith(t, map[string]profile.HarnessSpec{"anthropic": tt.spec})
			a, err := harness.New(cfg)
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, s := range tt.wantErr {
					assert.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.Middleware())
			if tt.wantGP != nil {
				assert.Equal(t, tt.wantGP, mwNames(subAgentConfig(t, a, gpName).Middleware))
			}
			if tt.name == "type exclusion of summarization, caller embedder under the same name survives (case 20)" {
				_, isMine := mainMiddleware(a)[3].(mySummarization)
				assert.True(t, isMine, "the caller's instance is in the main stack")
			}
		})
	}

	t.Run("an exclusion only needs to match in main or general-purpose", func(t *testing.T) {
		// Skills are in both stacks; the general-purpose one alone would do.
		reg := registryWith(t, map[string]profile.HarnessSpec{"anthropic": {ExcludedMiddleware: []string{skillsMW}}})
		a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg, Skills: []string{"/s/"}})
		assert.NotContains(t, a.Middleware(), skillsMW)
		assert.NotContains(t, mwNames(subAgentConfig(t, a, gpName).Middleware), skillsMW)
	})
}

// namedStub is a second type that calls itself StubMW.
type namedStub struct{ agent.Base }

func (*namedStub) Name() string { return "StubMW" }

// Case 16: scaffolding cannot be excluded; malformed names are rejected
// when the profile is built, so harness.New never sees them.
func TestScaffoldingExclusion(t *testing.T) {
	tests := []struct {
		name string
		spec profile.HarnessSpec
		want []string
	}{
		{"FilesystemMiddleware by name", profile.HarnessSpec{ExcludedMiddleware: []string{fsMW}}, []string{"scaffolding", fsMW}},
		{"SubAgentMiddleware by name", profile.HarnessSpec{ExcludedMiddleware: []string{subMW}}, []string{"scaffolding", subMW}},
		{"Filesystem by type", profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{reflect.TypeFor[*middleware.Filesystem]()}}, []string{"scaffolding", "Filesystem"}},
		{"SubAgentMiddleware by type", profile.HarnessSpec{ExcludedMiddlewareTypes: []reflect.Type{reflect.TypeFor[*middleware.SubAgentMiddleware]()}}, []string{"scaffolding", subMW}},
		{"both forms in one error", profile.HarnessSpec{ExcludedMiddleware: []string{subMW}, ExcludedMiddlewareTypes: []reflect.Type{reflect.TypeFor[*middleware.Filesystem]()}}, []string{"scaffolding", subMW, "Filesystem"}},
		{"underscore name", profile.HarnessSpec{ExcludedMiddleware: []string{toolExMW}}, []string{"cannot start with '_'"}},
		{"class path", profile.HarnessSpec{ExcludedMiddleware: []string{"pkg:Thing"}}, []string{"class-path"}},
		{"blank", profile.HarnessSpec{ExcludedMiddleware: []string{"  "}}, []string{"empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := profile.NewHarnessProfile(tt.spec)
			require.Error(t, err)
			for _, s := range tt.want {
				assert.ErrorContains(t, err, s)
			}
		})
	}
}

// Case 14: a provider profile's extra middleware can be excluded by type in
// the model's profile (the lookup merges both).
func TestExclusionAcrossMergedProfiles(t *testing.T) {
	reg := registryWith(t, map[string]profile.HarnessSpec{
		"prov":       {ExtraMiddleware: []agent.Middleware{&stubMW{}, &otherMW{}}},
		"prov:model": {ExcludedMiddlewareTypes: []reflect.Type{reflect.TypeFor[*stubMW]()}},
	})
	a := newAgent(t, harness.Config{Model: fakeModel("prov", "model"), Profiles: reg})
	assert.Equal(t, []string{fsMW, subMW, summMW, patchMW, "OtherMW", cacheMW}, a.Middleware())

	// Re-registering exclusions under one key unions them (case 13).
	reg2 := registryWith(t, map[string]profile.HarnessSpec{"prov": {ExcludedMiddleware: []string{cacheMW}}})
	more, err := profile.NewHarnessProfile(profile.HarnessSpec{ExcludedMiddleware: []string{patchMW}, ExcludedMiddlewareTypes: []reflect.Type{reflect.TypeFor[*middleware.SummarizationMiddleware]()}})
	require.NoError(t, err)
	require.NoError(t, reg2.RegisterHarness("prov", more))
	b := newAgent(t, harness.Config{Model: fakeModel("prov", "model"), Profiles: reg2})
	assert.Equal(t, []string{fsMW, subMW}, b.Middleware())
}

// Case 15 for declarative subagents: their own profile's exclusions apply
// to their own stack, and must match there.
func TestSubagentExclusions(t *testing.T) {
	reg := registryWith(t, map[string]profile.HarnessSpec{
		"anthropic": {},
		"other":     {ExcludedMiddleware: []string{summMW, "Fresh"}, ExtraMiddlewareFactory: func() []agent.Middleware { return []agent.Middleware{mw("Fresh")} }},
		"typo":      {ExcludedMiddleware: []string{"Nope"}},
		"scaff":     {},
	})
	resolve := func(spec string) (llm.ChatModel, error) {
		id, err := llm.ParseSpec(spec)
		if err != nil {
			return nil, err
		}
		return fakeModel(id.Provider, id.Model), nil
	}
	spec := harness.SubAgentSpec{Name: "w", Description: "Works.", SystemPrompt: "Work.", ModelSpec: "other:m"}
	a := newAgent(t, harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg, ResolveModel: resolve, SubAgents: []harness.SubAgentSpec{spec}})
	assert.Equal(t, []string{fsMW, patchMW, cacheMW}, mwNames(subAgentConfig(t, a, "w").Middleware))
	assert.Equal(t, []string{fsMW, subMW, summMW, patchMW, cacheMW}, a.Middleware(), "the subagent's profile does not reach main")

	spec.ModelSpec = "typo:m"
	_, err := harness.New(harness.Config{Model: fakeModel("anthropic", "claude-sonnet-4-6"), Profiles: reg, ResolveModel: resolve, SubAgents: []harness.SubAgentSpec{spec}})
	require.Error(t, err)
	assert.ErrorContains(t, err, `subagent "w"`)
	assert.ErrorContains(t, err, "matched no middleware")
}

// The backend the caller chooses is shared by every stack; execute shows up
// only when it can run commands.
func TestBackendChoosesExecute(t *testing.T) {
	shell, err := backend.NewLocalShell(t.TempDir(), backend.LocalShellOptions{})
	require.NoError(t, err)
	m := fakeModel("anthropic", "claude-sonnet-4-6")
	a := newAgent(t, harness.Config{Model: m, Backend: shell})
	req := firstRequest(t, a, m)
	assert.Equal(t, append(append([]string{}, fsTools...), "execute", "task"), toolNames(req.Tools))
	gp := stackOf(t, describe(t, a), "subagent:"+gpName)
	assert.Contains(t, stackTools(gp), "execute")
}
