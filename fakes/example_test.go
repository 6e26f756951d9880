package fakes_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/llm"
)

// A scripted model plays its steps in order, one per call, and keeps every
// request it was sent for the test to inspect.
func ExampleNewScripted() {
	m := fakes.NewScripted(
		fakes.Calls("Let me look.", fakes.Call("get_weather", map[string]string{"city": "Paris"})),
		fakes.Reply("Sunny, 21C."),
	)
	ctx := context.Background()
	req := &llm.Request{Messages: []llm.Message{llm.User("Weather in Paris?")}}

	first, _ := m.Generate(ctx, req)
	fmt.Println(first.Message.Text(), first.Message.ToolCalls[0].Name, string(first.Message.ToolCalls[0].Args), first.StopReason)
	second, _ := m.Generate(ctx, req)
	fmt.Println(second.Message.Text(), second.StopReason)

	_, err := m.Generate(ctx, req)
	fmt.Println(errors.Is(err, fakes.ErrExhausted), m.CallCount(), m.Requests()[0].Messages[0].Text())
	// Output:
	// Let me look. get_weather {"city":"Paris"} tool_use
	// Sunny, 21C. end_turn
	// true 3 Weather in Paris?
}
