// Command record re-records the gocli example's cassettes against its scripted model.
//
// Run it from the repository root after changing the agent, the suite or
// the scripted model:
//
//	go run ./evals/examples/gocli/record
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/dageval/dageval/evals/examples/gocli"
)

func main() {
	suite := flag.String("suite", "evals/examples/gocli/evals/suite.yaml", "the suite to record")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	oc, err := gocli.Record(ctx, *suite, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(2)
	}
	for _, r := range oc.Results {
		if r.Status == "error" {
			fmt.Fprintf(os.Stderr, "record: %s errored: %s\n", r.ID, r.Error)
			os.Exit(1)
		}
	}
	fmt.Fprintf(os.Stderr, "recorded %d cassettes for %s (passed: %v)\n", len(oc.Results), oc.Summary.Suite, oc.Summary.Passed)
}
