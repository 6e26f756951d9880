package harness_test

import (
	"testing"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/harness/profile"
	"github.com/dageval/dageval/harness/tool"
)

// The Deep Agents benchmarks time graph construction only, with a fake
// model: create_deep_agent(model=fake) and a full-featured agent. Goals:
// default ≤ 20 µs, full ≤ 100 µs (Deep Agents JS: 1.43 ms and 2.63 ms).

func BenchmarkNewDefault(b *testing.B) {
	model := fakes.NewScripted().WithIdentity("anthropic", "claude-sonnet-4-6")
	reg := profile.NewRegistry(profile.WithPlugins())
	if _, err := harness.New(harness.Config{Model: model, Profiles: reg}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := harness.New(harness.Config{Model: model, Profiles: reg}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewFull(b *testing.B) {
	model := fakes.NewScripted().WithIdentity("anthropic", "claude-sonnet-4-6")
	reg := profile.NewRegistry(profile.WithPlugins())
	tools := []tool.Tool{echoTool(b, "web_search", "Search the web."), echoTool(b, "fetch_url", "Fetch a page."), echoTool(b, "publish", "Publish a report.")}
	cfg := harness.Config{
		Name:         "researcher",
		Model:        model,
		Profiles:     reg,
		SystemPrompt: "You are a research assistant. Cite every source you use.",
		Tools:        tools,
		SubAgents: []harness.SubAgentSpec{
			{Name: "fact-checker", Description: "Checks one claim.", SystemPrompt: "Check the claim against two sources."},
			{Name: "writer", Description: "Writes the report.", SystemPrompt: "Write a one-page report.", Tools: tools[2:]},
			{Name: "critic", Description: "Reviews a draft.", SystemPrompt: "Review the draft for unsupported claims.", Skills: []string{"/skills/review/"}},
		},
		Skills:      []string{"/skills/user/", "/skills/project/"},
		Memory:      []string{"/memory/AGENTS.md"},
		InterruptOn: middleware.InterruptOn{"publish": {}, "write_file": {AllowedDecisions: []middleware.DecisionType{middleware.DecisionApprove, middleware.DecisionReject}}},
	}
	if _, err := harness.New(cfg); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := harness.New(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewFromSpec adds resolving "anthropic:claude-sonnet-4-6" to a
// model (no key is needed until the first call).
func BenchmarkNewFromSpec(b *testing.B) {
	reg := profile.NewRegistry(profile.WithPlugins())
	cfg := harness.Config{ModelSpec: harness.DefaultModelSpec, Profiles: reg}
	if _, err := harness.New(cfg); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := harness.New(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
