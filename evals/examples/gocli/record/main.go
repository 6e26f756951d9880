// Command record re-records the gocli example's cassettes against its scripted model.
//
// Run it from the repository root after changing the agent, the suite or
// the scripted model:
//
//	go run ./evals/examples/gocli/record
package main

import (
	"github.com/dageval/dageval/evals/examples/gocli"
	"github.com/dageval/dageval/evals/examples/internal/recording"
)

func main() { recording.Main("evals/examples/gocli/evals/suite.yaml", gocli.Record) }
