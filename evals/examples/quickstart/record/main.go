// Command record re-records the quickstart suite's cassettes against dageval's scripted local provider.
//
// Run it from the repository root after changing the suite, the agent, the
// profiles or the scripted model:
//
//	go run ./evals/examples/quickstart/record
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/dageval/dageval/evals/examples/quickstart"
)

func main() {
	suite := flag.String("suite", "evals/examples/quickstart/suite.yaml", "the suite to record")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	oc, err := quickstart.Record(ctx, *suite, os.Stderr)
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
