package evals

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/dageval/dageval/fakes/recorder"
)

// Run runs the suite file at path under go test: one subtest per cell,
// named <suite>/<case>/<model>/<profile>/e<epoch>, in replay mode unless
// WithMode says otherwise, so the suite runs offline from its cassettes.
// A failing cell fails its subtest with its rubric gaps and failed checks,
// an errored cell with its error; with GateOnThresholds failing cells are
// only logged and the test fails when the suite's verdict does. `go test
// -run` selects cells by subtest name; the summary then covers the cells
// that ran. Problems with the suite itself (invalid file, missing
// cassettes) fail the test at once. It returns the run's result for further
// assertions.
func Run(t *testing.T, path string, opts ...Option) *RunResult {
	t.Helper()
	o := Options{Mode: recorder.ModeReplay}
	for _, opt := range opts {
		opt(&o)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := s.start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	sem := make(chan struct{}, ss.conc)
	t.Run(s.Name, func(t *testing.T) {
		for i, c := range ss.cells {
			name := c.CaseDef.ID + "/" + strings.ReplaceAll(c.Model, "/", "_") + "/" + c.Profile + "/e" + strconv.Itoa(c.Epoch)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				res, detail, _ := ss.runCell(t.Context(), c)
				<-sem
				// A write error is the run's, reported once below.
				_ = ss.record(i, res, detail)
				if res.Status == StatusPass {
					return
				}
				msg := describeFailure(res)
				if o.gate {
					t.Log(msg)
				} else {
					t.Error(msg)
				}
			})
		}
	})
	ss.keepFinished()
	rr, err := ss.conclude()
	if err != nil {
		t.Error(err)
	}
	if o.gate && !rr.Summary.Passed {
		t.Errorf("suite %s does not pass: %s", s.Name, strings.Join(rr.Summary.Reasons, "; "))
	}
	return rr
}

// describeFailure says why a cell did not pass: its error, the rubric's
// failing criteria with their gaps, the failed checks with their details.
func describeFailure(r CellResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cell %s %s %s e%d: %s (score %.2f)", r.Case, r.Model, r.Profile, r.Epoch, r.Status, r.Score)
	if r.Error != "" {
		fmt.Fprintf(&b, "\n  error: %s", r.Error)
	}
	if rb := r.Rubric; rb != nil {
		fmt.Fprintf(&b, "\n  rubric: %s after %d grading(s)", rb.Result, rb.Iterations)
		for _, c := range rb.Criteria {
			if !c.Passed {
				fmt.Fprintf(&b, "\n    - %s: %s", c.Name, c.Gap)
			}
		}
	}
	for _, c := range r.Checks {
		if !c.Passed {
			fmt.Fprintf(&b, "\n  check %s: %s", c.Name, c.Detail)
		}
	}
	return b.String()
}
