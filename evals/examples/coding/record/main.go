// Command record re-records the coding suite's cassettes against its scripted model; the agent's commands run in a bubblewrap sandbox, so bwrap must be installed.
//
// Run it from the repository root after changing the suite, the project or
// the scripted model:
//
//	go run ./evals/examples/coding/record
package main

import (
	"github.com/dageval/dageval/evals/examples/coding"
	"github.com/dageval/dageval/evals/examples/internal/recording"
)

func main() { recording.Main("evals/examples/coding/suite.yaml", coding.Record) }
