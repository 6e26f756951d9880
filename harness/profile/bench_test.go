package profile_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/profile"
)

// The assembly resolves a profile and filters its stacks on every
// harness.New, whose budget is 20 µs for a default agent.

func BenchmarkHarnessLookupMerged(b *testing.B) {
	r := isolated()
	if err := r.RegisterHarness("prov", profile.MustHarnessProfile(profile.HarnessSpec{SystemPromptSuffix: ptr("p"), ExcludedTools: []string{"execute"}})); err != nil {
		b.Fatal(err)
	}
	if err := r.RegisterHarness("prov:model", profile.MustHarnessProfile(profile.HarnessSpec{BaseSystemPrompt: ptr("m"), ExcludedTools: []string{"grep"}})); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if p, err := r.Harness("prov:model"); err != nil || p == nil {
			b.Fatal(p, err)
		}
	}
}

func BenchmarkHarnessForModelBuiltin(b *testing.B) {
	r := profile.NewRegistry(profile.WithPlugins())
	model := fakes.NewScripted().WithIdentity("anthropic", "claude-sonnet-4-6")
	b.ReportAllocs()
	for b.Loop() {
		if p, err := r.HarnessForModel(model, ""); err != nil || p.Describe().SystemPromptSuffix == nil {
			b.Fatal(p, err)
		}
	}
}

func BenchmarkExclusionFilter(b *testing.B) {
	p := profile.MustHarnessProfile(profile.HarnessSpec{
		ExcludedMiddleware:      []string{"SummarizationMiddleware", "OtherMW"},
		ExcludedMiddlewareTypes: []reflect.Type{typeOf[*StubMW]()},
	})
	stack := []agent.Middleware{&FilesystemMiddleware{}, &SubAgentMiddleware{}, &summarizationImpl{}, &OtherMW{}, &StubMW{},
		namedMW("PatchToolCallsMiddleware"), namedMW("AnthropicPromptCachingMiddleware"), namedMW("MemoryMiddleware")}
	b.ReportAllocs()
	for b.Loop() {
		m := p.NewExclusionMatcher()
		out, err := m.Filter(stack)
		if err != nil || len(out) != 5 {
			b.Fatal(out, err)
		}
		if err := m.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseConfigFile(b *testing.B) {
	data, err := os.ReadFile("testdata/deepagents_profile.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := profile.ParseConfig("p.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyProvider(b *testing.B) {
	r := profile.NewRegistry(profile.WithPlugins())
	caller := map[string]any{"temperature": 0.2}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ApplyProvider("openai:gpt-5", caller); err != nil {
			b.Fatal(err)
		}
	}
}
