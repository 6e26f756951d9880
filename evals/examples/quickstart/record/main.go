// Command record re-records the quickstart suite's cassettes against dageval's scripted local provider.
//
// Run it from the repository root after changing the suite, the agent, the
// profiles or the scripted model:
//
//	go run ./evals/examples/quickstart/record
package main

import (
	"github.com/dageval/dageval/evals/examples/internal/recording"
	"github.com/dageval/dageval/evals/examples/quickstart"
)

func main() { recording.Main("evals/examples/quickstart/suite.yaml", quickstart.Record) }
