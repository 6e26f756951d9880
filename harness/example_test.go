package harness_test

import (
	"context"
	"fmt"
	"log"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// New assembles a deep agent around a model. Here a scripted model stands in
// for Claude, so the example needs no network and no API key: it writes a
// file with the filesystem tools every deep agent gets, then answers.
func ExampleNew() {
	model := fakes.NewScripted(
		fakes.Calls("", fakes.Call("write_file", map[string]string{"file_path": "/notes/paris.md", "content": "Capital of France."})),
		fakes.Reply("Paris. I noted it in /notes/paris.md."),
	).WithIdentity("anthropic", "claude-sonnet-4-6")

	a, err := harness.New(harness.Config{
		Model:        model,
		SystemPrompt: "You answer geography questions and keep notes.",
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("What is the capital of France?")}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	fmt.Println(res.State.Files["/notes/paris.md"].Content)
	fmt.Println(a.Middleware())
	// Output:
	// Paris. I noted it in /notes/paris.md.
	// Capital of France.
	// [FilesystemMiddleware SubAgentMiddleware SummarizationMiddleware PatchToolCallsMiddleware AnthropicPromptCachingMiddleware]
}
