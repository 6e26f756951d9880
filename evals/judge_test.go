package evals

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/rubrics"
)

// TestJudge scores recorded runs without running an agent.
func TestJudge(t *testing.T) {
	rubric := &rubrics.Rubric{Name: "r", Policy: rubrics.PolicyWeighted, Threshold: 0.7, Criteria: []rubrics.Criterion{
		{Name: "correct", Description: "Right answer.", Weight: 3},
		{Name: "cites", Description: "Names its source.", Weight: 1},
	}}
	require.NoError(t, rubric.Validate())
	grading := func(result middleware.RubricResult, cites bool) []middleware.RubricEvaluation {
		cv := middleware.CriterionVerdict{Name: "cites", Passed: cites}
		if !cites {
			cv.Gap = "no source named"
		}
		return []middleware.RubricEvaluation{{Result: result, Explanation: "graded", Criteria: []middleware.CriterionVerdict{{Name: "correct", Passed: true}, cv}}}
	}
	steps := []rubrics.Check{&rubrics.MaxStepsCheck{Limit: 4}}
	stepsAndNoError := []rubrics.Check{&rubrics.MaxStepsCheck{Limit: 4}, rubrics.NoErrorCheck{}}
	recursion := &agent.RecursionLimitError{Limit: 8}
	costLimit := fmt.Errorf("%w: the run cost $0.60, over limits.max_cost_usd $0.5", errCostLimit)

	tests := []struct {
		name        string
		c           Case
		rec         rubrics.Record
		interrupted bool
		status      Status
		score       float64
		err         string
		rubric      string // the rubric outcome's result; "" for none
		checks      int
	}{
		{name: "checks pass", c: Case{Checks: steps}, rec: rubrics.Record{Steps: 3},
			status: StatusPass, score: 1, checks: 1},
		{name: "a check fails with partial credit", c: Case{Checks: steps}, rec: rubrics.Record{Steps: 8},
			status: StatusFail, score: 0.5, checks: 1},
		{name: "check scores average", c: Case{Checks: stepsAndNoError}, rec: rubrics.Record{Steps: 8},
			status: StatusFail, score: 0.75, checks: 2},
		{name: "no checks and no rubric", c: Case{}, rec: rubrics.Record{},
			status: StatusPass, score: 1},
		{name: "rubric passes", c: Case{Rubric: rubric}, rec: rubrics.Record{RubricEvaluations: grading(middleware.RubricSatisfied, true)},
			status: StatusPass, score: 1, rubric: "satisfied"},
		{name: "rubric passes on weight", c: Case{Rubric: rubric}, rec: rubrics.Record{RubricEvaluations: grading(middleware.RubricMaxIterationsReached, false)},
			status: StatusPass, score: 0.75, rubric: "max_iterations_reached"},
		{name: "rubric failed by the grader", c: Case{Rubric: rubric}, rec: rubrics.Record{RubricEvaluations: grading(middleware.RubricFailed, false)},
			status: StatusFail, score: 0.75, rubric: "failed"},
		{name: "rubric and checks average", c: Case{Rubric: rubric, Checks: steps}, rec: rubrics.Record{Steps: 8, RubricEvaluations: grading(middleware.RubricSatisfied, false)},
			status: StatusFail, score: (0.75 + 0.5) / 2, rubric: "satisfied", checks: 1},
		{name: "grader error", c: Case{Rubric: rubric, Checks: steps}, rec: rubrics.Record{Steps: 3, RubricEvaluations: []middleware.RubricEvaluation{{Result: middleware.RubricGraderError, Explanation: "no valid answer", Criteria: []middleware.CriterionVerdict{}}}},
			status: StatusError, err: "the rubric grader failed: no valid answer", rubric: "grader_error"},
		{name: "no rubric evaluation", c: Case{Rubric: rubric}, rec: rubrics.Record{},
			status: StatusError, err: "the run finished but the rubric grader never ran"},
		{name: "limit hit without a grading", c: Case{Rubric: rubric, Checks: steps}, rec: rubrics.Record{Steps: 3, Err: recursion},
			status: StatusFail, score: 0.5, err: recursion.Error(), checks: 1},
		{name: "limit hit during a grader error", c: Case{Rubric: rubric}, rec: rubrics.Record{Err: costLimit, RubricEvaluations: []middleware.RubricEvaluation{{Result: middleware.RubricGraderError, Criteria: []middleware.CriterionVerdict{}}}},
			status: StatusFail, score: 0, err: costLimit.Error(), rubric: "grader_error"},
		{name: "limit hit without checks or rubric", c: Case{}, rec: rubrics.Record{Err: recursion},
			status: StatusFail, score: 0, err: recursion.Error()},
		{name: "run error", c: Case{Checks: steps}, rec: rubrics.Record{Steps: 3, Err: errors.New("provider: 500")},
			status: StatusError, err: "provider: 500"},
		{name: "interrupted", c: Case{Checks: steps}, rec: rubrics.Record{Steps: 3}, interrupted: true,
			status: StatusError, err: "the agent paused for human input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &cellRun{rec: &tt.rec, steps: tt.rec.Steps, costUSD: 0.01, costKnown: true, interrupted: tt.interrupted}
			res := judge(t.Context(), &tt.c, run)
			assert.Equal(t, tt.status, res.Status)
			assert.InDelta(t, tt.score, res.Score, 1e-9)
			if tt.err == "" {
				assert.Empty(t, res.Error)
			} else {
				assert.Contains(t, res.Error, tt.err)
			}
			if tt.rubric == "" {
				assert.Nil(t, res.Rubric)
			} else if assert.NotNil(t, res.Rubric) {
				assert.Equal(t, tt.rubric, res.Rubric.Result)
			}
			assert.Len(t, res.Checks, tt.checks)
			assert.NotNil(t, res.Checks, "checks are written as [], never null")
			assert.Equal(t, tt.rec.Steps, res.Steps)
			assert.Equal(t, 0.01, res.CostUSD)
		})
	}
}

// TestJudgeKeepsVerdicts shows that the rubric's criterion verdicts and the
// checks' verdicts reach the result as they are.
func TestJudgeKeepsVerdicts(t *testing.T) {
	rubric := &rubrics.Rubric{Criteria: []rubrics.Criterion{{Name: "correct", Description: "Right answer."}, {Name: "cites", Description: "Names its source."}}}
	rec := &rubrics.Record{Steps: 8, RubricEvaluations: []middleware.RubricEvaluation{
		{Iteration: 0, Result: middleware.RubricNeedsRevision, Criteria: []middleware.CriterionVerdict{{Name: "correct", Gap: "wrong city"}}},
		{Iteration: 1, Result: middleware.RubricFailed, Explanation: "still wrong", Criteria: []middleware.CriterionVerdict{{Name: "Correct", Gap: "wrong city"}, {Name: "cites", Passed: true}}},
	}}
	res := judge(t.Context(), &Case{Rubric: rubric, Checks: []rubrics.Check{&rubrics.MaxStepsCheck{Limit: 4}}}, &cellRun{rec: rec, steps: 8, costKnown: true})
	assert.Equal(t, &RubricOutcome{Result: "failed", Iterations: 2, Explanation: "still wrong", Score: 0.5, Criteria: []middleware.CriterionVerdict{
		{Name: "correct", Gap: "wrong city"}, {Name: "cites", Passed: true},
	}}, res.Rubric)
	assert.Equal(t, []rubrics.CheckVerdict{{Name: "max_steps(4)", Score: 0.5, Detail: "expected at most 4 steps; the run took 8"}}, res.Checks)
}
