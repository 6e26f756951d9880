package harness_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/tool"
)

// Middleware names as they appear in stacks.
const (
	fsMW     = "FilesystemMiddleware"
	subMW    = "SubAgentMiddleware"
	summMW   = middleware.SummarizationName
	patchMW  = middleware.PatchToolCallsName
	asyncMW  = "AsyncSubAgentMiddleware"
	cacheMW  = middleware.AnthropicPromptCachingName
	skillsMW = middleware.SkillsName
	memoryMW = middleware.MemoryName
	hitlMW   = middleware.HumanInTheLoopName
	toolExMW = middleware.ToolExclusionName
	todoMW   = middleware.TodoListName
	gpName   = harness.GeneralPurposeName
)

// Tool names the filesystem middleware offers on a State backend.
var fsTools = []string{"ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep"}

// emptyRegistry is a profile registry without built-ins or plugins, so a
// test sees only the profiles it registers.
func emptyRegistry() *profile.Registry {
	return profile.NewRegistry(profile.WithBuiltins(nil), profile.WithPlugins())
}

// registryWith returns an empty registry holding the given profiles.
func registryWith(t *testing.T, profiles map[string]profile.HarnessSpec) *profile.Registry {
	t.Helper()
	r := emptyRegistry()
	for key, spec := range profiles {
		p, err := profile.NewHarnessProfile(spec)
		require.NoError(t, err)
		require.NoError(t, r.RegisterHarness(key, p))
	}
	return r
}

func ptr[T any](v T) *T { return &v }

// fakeModel is a scripted model that answers "hello!" a few times and
// claims to be the given provider's model.
func fakeModel(provider, model string, steps ...fakes.Step) *fakes.Scripted {
	if len(steps) == 0 {
		steps = []fakes.Step{fakes.Reply("hello!"), fakes.Reply("hello!"), fakes.Reply("hello!")}
	}
	return fakes.NewScripted(steps...).WithIdentity(provider, model)
}

// newAgent assembles cfg with an empty registry unless cfg names one.
func newAgent(t *testing.T, cfg harness.Config) *harness.Agent {
	t.Helper()
	if cfg.Profiles == nil {
		cfg.Profiles = emptyRegistry()
	}
	a, err := harness.New(cfg)
	require.NoError(t, err)
	return a
}

// invoke runs the agent once on "hi".
func invoke(t *testing.T, a interface {
	Invoke(context.Context, agent.Input, ...agent.Option) (*agent.Result, error)
}, opts ...agent.Option) *agent.Result {
	t.Helper()
	res, err := a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("hi")}}, opts...)
	require.NoError(t, err)
	return res
}

// firstRequest runs the agent once and returns the first request its model got.
func firstRequest(t *testing.T, a *harness.Agent, m *fakes.Scripted) *llm.Request {
	t.Helper()
	invoke(t, a)
	reqs := m.Requests()
	require.NotEmpty(t, reqs)
	return &reqs[0]
}

func toolNames(specs []llm.ToolSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

func toolDescription(t *testing.T, specs []llm.ToolSpec, name string) string {
	t.Helper()
	for _, s := range specs {
		if s.Name == name {
			return s.Description
		}
	}
	t.Fatalf("no tool %q among %v", name, toolNames(specs))
	return ""
}

func describe(t *testing.T, a *harness.Agent) *harness.Assembly {
	t.Helper()
	as, err := a.Describe(t.Context(), harness.DescribeOptions{})
	require.NoError(t, err)
	return as
}

// stackOf returns the named stack of an assembly ("main", "subagent:x").
func stackOf(t *testing.T, as *harness.Assembly, name string) harness.Stack {
	t.Helper()
	for _, s := range as.Stacks {
		if s.Name == name {
			return s
		}
	}
	names := make([]string, len(as.Stacks))
	for i, s := range as.Stacks {
		names[i] = s.Name
	}
	t.Fatalf("no stack %q among %v", name, names)
	return harness.Stack{}
}

func stackTools(s harness.Stack) []string {
	out := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = t.Name
	}
	return out
}

// mainMiddleware returns the main stack's middleware instances.
func mainMiddleware(a *harness.Agent) []agent.Middleware { return a.Config().Middleware }

// subAgents returns the subagents the main stack's task tool can launch.
func subAgents(t *testing.T, a *harness.Agent) []middleware.SubAgent {
	t.Helper()
	for _, m := range mainMiddleware(a) {
		if s, ok := m.(*middleware.SubAgentMiddleware); ok {
			return s.SubAgents()
		}
	}
	t.Fatalf("the main stack has no SubAgentMiddleware: %v", a.Middleware())
	return nil
}

// subAgentConfig returns the agent configuration of an inline subagent.
func subAgentConfig(t *testing.T, a *harness.Agent, name string) agent.Config {
	t.Helper()
	for _, s := range subAgents(t, a) {
		if s.Name == name {
			ag, ok := s.Runner.(*agent.Agent)
			require.True(t, ok, "subagent %s is a %T", name, s.Runner)
			return ag.Config()
		}
	}
	t.Fatalf("no subagent %q", name)
	return agent.Config{}
}

func mwNames(mws []agent.Middleware) []string {
	out := make([]string, len(mws))
	for i, m := range mws {
		out[i] = m.Name()
	}
	return out
}

// named is a middleware that does nothing but carry a name.
type named struct {
	agent.Base
	name string
}

func (m *named) Name() string { return m.name }

func mw(name string) *named { return &named{name: name} }

// stubMW and otherMW are distinct types for type-based exclusions;
// stubChild embeds stubMW and so keeps its name but not its type.
type stubMW struct{ agent.Base }

func (*stubMW) Name() string { return "StubMW" }

type otherMW struct{ agent.Base }

func (*otherMW) Name() string { return "OtherMW" }

type stubChild struct{ stubMW }

// echoTool is a caller tool that answers with its argument.
func echoTool(t testing.TB, name, description string) tool.Tool {
	t.Helper()
	type args struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	tl, err := tool.New(name, description, func(_ context.Context, a args) (string, error) { return name + ": " + a.Text, nil })
	require.NoError(t, err)
	return tl
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func inputOf(text string) agent.Input { return agent.Input{Messages: []llm.Message{llm.User(text)}} }
