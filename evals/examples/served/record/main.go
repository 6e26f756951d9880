// Command record re-records the served example's cassettes: the lead
// agent against its scripted model on a local server, the researcher
// served on a loopback port, afresh for each case.
//
// Run it from the repository root after changing the agents, the suite or
// the scripted models:
//
//	go run ./evals/examples/served/record
package main

import (
	"github.com/dageval/dageval/evals/examples/internal/recording"
	"github.com/dageval/dageval/evals/examples/served"
)

func main() { recording.Main("evals/examples/served/suite.yaml", served.Record) }
