package evals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dageval/dageval/fakes/recorder"
)

// Run runs the suite file at path under go test: one subtest per cell,
// named <suite>/<case>/<model>/<profile>/e<epoch> (see SubtestName), in
// the mode WithMode names, else the one DAGEVAL_RECORD asks for
// (DAGEVAL_RECORD=1 go test re-records, =missing records what is missing),
// else the suite's mode, replay by default, so the suite runs offline from
// its cassettes; CI=true forces replay. A failing cell fails its subtest
// with a report that starts at the case in the suite (or dataset) file —
// "suite.yaml:12: case paris-weather: …" — with its rubric gaps and failed
// checks, an errored cell with its error and cause; with GateOnThresholds
// failing cells are only reported and the test fails when the suite's
// verdict does, which an errored cell always makes it unless
// TolerateErrors is given. `go test -run` selects cells by subtest name;
// the summary then covers the cells that ran. Problems with the suite
// itself (invalid file, missing cassettes) fail the test at once, all of
// them.
//
// The run's files (results.jsonl, summary.json, cells/) go to the
// directory of WithOutDir, or else to <DAGEVAL_TEST_OUT or the system's
// temporary directory>/dageval-test/<TestName>-<suite hash>, emptied when
// the run starts and kept after it, so that `dageval report DIR` shows the
// last run of the test; a failing test logs the directory. It returns the
// run's result for further assertions.
//
// T is *testing.T, inferred at the call (evals.Run(t, path)); Run names it
// through TestingT so that programs linking evals do not link package
// testing.
func Run[T TestingT[T]](t T, path string, opts ...Option) *RunResult {
	t.Helper()
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	s, err := o.reg.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if o.OutDir == "" {
		o.OutDir = testOutDir(t, path, o.Getenv)
	}
	ss, err := s.start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if ss.mode != recorder.ModeReplay {
		t.Logf("suite %s: mode %s (%s)", s.Name, ss.mode, ss.modeReason)
	}
	sem := make(chan struct{}, ss.conc)
	t.Run(SubtestName(s.Name), func(t T) {
		for i, c := range ss.cells {
			name := c.CaseDef.ID + "/" + SubtestName(c.Model) + "/" + SubtestName(c.Profile) + "/e" + strconv.Itoa(c.Epoch)
			t.Run(name, func(t T) {
				t.Parallel()
				sem <- struct{}{}
				res, detail, _ := ss.runCell(t.Context(), c)
				<-sem
				// A write error is the run's, reported once below.
				_ = ss.record(i, res, detail)
				for _, w := range res.Warnings {
					t.Log("warning: " + w)
				}
				if res.Status == StatusPass {
					return
				}
				// Written without go test's file:line, which would be
				// this file's: the place that matters is the case's.
				fmt.Fprintln(t.Output(), describeFailure(c.CaseDef, res))
				if !o.gate {
					t.Fail()
				}
			})
		}
	})
	ss.keepFinished()
	rr, err := ss.conclude()
	if err != nil {
		t.Error(err)
	}
	switch {
	case !o.gate || rr.Summary.Passed:
	case rr.Summary.Outcome == OutcomeErrored:
		t.Errorf("suite %s cannot be judged: %s", s.Name, strings.Join(rr.Summary.Reasons, "; "))
	default:
		t.Errorf("suite %s does not pass: %s", s.Name, strings.Join(rr.Summary.Reasons, "; "))
	}
	if t.Failed() {
		t.Logf("the run's files are in %s (dageval report %s)", o.OutDir, o.OutDir)
	}
	return rr
}

// TestingT is what Run uses of *testing.T, whose Run method runs a
// subtest with a T of its own type.
type TestingT[T any] interface {
	Helper()
	Name() string
	Context() context.Context
	Run(name string, f func(T)) bool
	Parallel()
	Output() io.Writer
	Log(args ...any)
	Logf(format string, args ...any)
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fail()
	Failed() bool
}

// SubtestName is a suite name, model spec or profile name as a level of
// Run's subtest names: '/' becomes '_' so that each stays one level of the
// name (a model such as ollama:library/qwen3 would otherwise split in two).
// go test itself then turns spaces into '_'.
func SubtestName(s string) string { return strings.ReplaceAll(s, "/", "_") }

// testOutDir is where Run writes when no directory is given: one directory
// per test and suite, the same on every run of the test.
func testOutDir(t interface{ Name() string }, suitePath string, getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	root := getenv("DAGEVAL_TEST_OUT")
	if root == "" {
		root = os.TempDir()
	}
	abs, err := filepath.Abs(suitePath)
	if err != nil {
		abs = suitePath
	}
	sum := sha256.Sum256([]byte(abs))
	name := unsafeID().ReplaceAllString(t.Name(), "_") + "-" + hex.EncodeToString(sum[:4])
	return filepath.Join(root, "dageval-test", name)
}

// WithRegistry loads the suite with a registry's Go checks, tools and
// agent factories (see Registry).
func WithRegistry(r *Registry) Option { return func(o *Options) { o.reg = r } }

// describeFailure says why a cell did not pass: its error, the rubric's
// failing criteria with their gaps, the failed checks with their details.
func describeFailure(c *Case, r CellResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: case %s: %s %s e%d: %s (score %.2f)", c.Source, r.Case, r.Model, r.Profile, r.Epoch, r.Status, r.Score)
	if r.Cause != "" {
		fmt.Fprintf(&b, "\n  cause: %s (%s)", r.Cause, r.Cause.Hint())
	}
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
