package evals_test

import (
	"context"
	"fmt"

	"github.com/dageval/dageval/evals"
)

// A suite runs offline from its cassettes. Under go test, evals.Run(t,
// "suite.yaml") runs the same cells as subtests and fails the ones that do
// not pass; Suite.Run is the same run for any other program.
func ExampleSuite_Run() {
	suite, err := evals.Load("examples/quickstart/suite.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	rr, err := suite.Run(context.Background(), evals.Options{Filter: "case=paris-weather profile=terse", Epochs: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, res := range rr.Results {
		fmt.Printf("%s %s × %s: %s, score %.2f, rubric %s, %d checks\n", res.Case, res.Model, res.Profile, res.Status, res.Score, res.Rubric.Result, len(res.Checks))
	}
	fmt.Printf("mode %s, pass rate %.0f%%, verdict passed: %t\n", rr.Mode, 100*rr.Summary.Totals.PassRate, rr.Summary.Passed)
	// Output:
	// paris-weather anthropic:claude-sonnet-4-6 × terse: pass, score 1.00, rubric satisfied, 5 checks
	// paris-weather openai:gpt-5 × terse: pass, score 1.00, rubric satisfied, 5 checks
	// mode replay, pass rate 100%, verdict passed: true
}
