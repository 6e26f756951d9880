// Command dageval assembles deep agents, replays and grades their runs, and gates changes in CI.
package main

import (
	"os"

	"github.com/dageval/dageval/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
