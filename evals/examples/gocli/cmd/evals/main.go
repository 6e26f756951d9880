// Command evals is the team's dageval: every subcommand, with its own agent, tool, middleware, check and model gateway.
package main

import (
	"os"

	"github.com/dageval/dageval/cli"
	"github.com/dageval/dageval/evals/examples/gocli"
)

func main() { os.Exit(cli.Main(os.Args[1:], options...)) }

var options = []cli.Option{
	cli.WithAgent("support", gocli.Agent),
	cli.WithTool("lookup_order", gocli.LookupOrder),
	cli.WithMiddleware("PolicyMiddleware", gocli.NewPolicy),
	cli.WithCheck("mentions_order", gocli.MentionsOrder),
	cli.WithProvider("corp", gocli.Gateway),
}
