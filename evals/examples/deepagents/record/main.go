// Command record re-records the Deep Agents mirror suite's cassettes against its scripted model.
//
// Run it from the repository root after changing the suite or the scripted
// model:
//
//	go run ./evals/examples/deepagents/record
package main

import (
	"github.com/dageval/dageval/evals/examples/deepagents"
	"github.com/dageval/dageval/evals/examples/internal/recording"
)

func main() { recording.Main("evals/examples/deepagents/suite.yaml", deepagents.Record) }
