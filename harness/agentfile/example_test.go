package agentfile_test

import (
	"context"
	"fmt"
	"log"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agentfile"
)

// Parse reads an agent file; Config turns it into the harness.Config that
// harness.New assembles. Assembling resolves the model spec but never calls
// the model, so describing the agent needs no API key.
func ExampleParse() {
	af, err := agentfile.Parse("agent.yaml", []byte(`
name: researcher
model: anthropic:claude-sonnet-4-6
system_prompt: |
  You research questions and cite your sources.
tools:
  - name: web_search
    description: Searches the web.
    parameters:
      type: object
      properties:
        query: {type: string}
      required: [query]
middleware:
  - name: TodoListMiddleware
profile:
  excluded_tools: [delete]
`))
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := af.Config(agentfile.Options{})
	if err != nil {
		log.Fatal(err)
	}
	a, err := harness.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	as, err := a.Describe(context.Background(), harness.DescribeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	main := as.Stacks[0]
	fmt.Println(cfg.Name, cfg.ModelSpec)
	fmt.Println(main.Middleware)
	var tools []string
	for _, t := range main.Tools {
		tools = append(tools, t.Name)
	}
	fmt.Println(tools)

	// Problems are reported at their file, line, column and key.
	_, err = agentfile.Parse("agent.yaml", []byte("middleware:\n  - name: Bogus\n"))
	fmt.Println(err)
	// Output:
	// researcher anthropic:claude-sonnet-4-6
	// [FilesystemMiddleware SubAgentMiddleware SummarizationMiddleware PatchToolCallsMiddleware TodoListMiddleware AnthropicPromptCachingMiddleware _ToolExclusionMiddleware]
	// [ls read_file write_file edit_file glob grep task write_todos web_search]
	// agent.yaml:2:5: middleware[0].name: unknown middleware "Bogus" (built in: AnthropicPromptCachingMiddleware, FilesystemMiddleware, HumanInTheLoopMiddleware, MemoryMiddleware, PatchToolCallsMiddleware, RubricMiddleware, SkillsMiddleware, SummarizationMiddleware, SummarizationToolMiddleware, TodoListMiddleware; none is registered)
}
