package llmserver_test

import (
	"context"
	"fmt"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/anthropic"
)

// A real provider adapter talks to the local server as it would to
// api.anthropic.com: the server decodes the wire request strictly, answers
// with the scripted model and keeps what it received, credentials redacted.
func ExampleNewServer() {
	srv := llmserver.NewServer(fakes.NewScripted(
		fakes.Calls("Let me look.", fakes.Call("get_weather", map[string]string{"city": "Paris"})),
	), llmserver.WithAPIKey("test-key"))
	defer srv.Close()

	model, err := anthropic.New(provider.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL, APIKey: "test-key"})
	if err != nil {
		panic(err)
	}
	resp, err := model.Generate(context.Background(), &llm.Request{
		Messages: []llm.Message{llm.User("Weather in Paris?")},
		Tools:    []llm.ToolSpec{{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text())
	fmt.Println(resp.Message.ToolCalls[0].Name, string(resp.Message.ToolCalls[0].Args), resp.StopReason)

	served := srv.Requests()[0]
	fmt.Println(served.API, served.Model, served.Status, served.Header.Get("Authorization"))
	// Output:
	// Let me look.
	// get_weather {"city":"Paris"} tool_use
	// anthropic-messages claude-sonnet-4-5 200 REDACTED
}
