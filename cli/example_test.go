package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/dageval/dageval/cli"
	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness"
)

// A team's command is cli.Main with its registrations; here two versions
// of an agent built in Go, diffed as `dageval assemble --diff` diffs agent
// files. The exit code is 1 because they differ.
func ExampleMain() {
	support := func(prompt string) evals.AgentFactory {
		return func(_ context.Context, req evals.AgentRequest) (harness.Config, error) {
			return harness.Config{Name: "support", ModelSpec: "anthropic:claude-sonnet-4-6", SystemPrompt: prompt}, nil
		}
	}
	var out bytes.Buffer
	code := cli.Main([]string{"assemble", "--diff", "--base-agent", "factory:v1", "--head-agent", "factory:v2", "--stack", "main", "--omit-builtin-schemas"},
		cli.WithAgent("v1", support("You answer questions about orders.")),
		cli.WithAgent("v2", support("You answer questions about orders and refunds.")),
		cli.WithStdio(os.Stdin, &out, os.Stderr))
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "-") || strings.HasPrefix(line, "+") {
			fmt.Println(line)
		}
	}
	fmt.Println("exit code", code)
	// Output:
	// --- base/main
	// +++ head/main
	// -  You answer questions about orders.
	// +  You answer questions about orders and refunds.
	// exit code 1
}
