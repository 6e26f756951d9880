// Command dageval assembles deep agents, replays and grades their runs, and gates changes in CI.
package main

import (
	"os"

	"github.com/dageval/dageval/cli"
	_ "github.com/dageval/dageval/internal/gcpercent/atstart" // before the SDKs' init functions allocate
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
