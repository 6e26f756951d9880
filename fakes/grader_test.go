package fakes_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/rubrics"
)

var twoCriteria = &rubrics.Rubric{Criteria: []rubrics.Criterion{
	{Name: "cites-source", Description: "names the document it relies on"},
	{Name: "answers", Description: "answers the question"},
}}

// gradedRun runs an agent whose answers are scripted under a
// RubricMiddleware graded by grader, and returns its evaluations.
func gradedRun(t *testing.T, grader llm.ChatModel, strategy agent.Strategy, answers ...string) []middleware.RubricEvaluation {
	t.Helper()
	var steps []fakes.Step
	for _, a := range answers {
		steps = append(steps, fakes.Reply(a))
	}
	rm, err := middleware.NewRubricMiddleware(middleware.RubricOptions{Model: grader, MaxIterations: len(answers), Strategy: strategy})
	require.NoError(t, err)
	var evals []middleware.RubricEvaluation
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(steps...), Middleware: []agent.Middleware{rm}})
	require.NoError(t, err)
	in := twoCriteria.Apply(agent.Input{Messages: []llm.Message{llm.User("What is the refund window?")}})
	_, err = a.Invoke(t.Context(), in, agent.WithEvents(func(ev agent.Event) {
		if ev.Type == agent.EventCustom && ev.Name == middleware.RubricEvaluationEndEvent {
			var e middleware.RubricEvaluation
			require.NoError(t, json.Unmarshal(ev.Payload, &e))
			evals = append(evals, e)
		}
	}))
	require.NoError(t, err)
	return evals
}

func TestGraderAnswersWithGivenVerdicts(t *testing.T) {
	for _, strategy := range []agent.Strategy{agent.StrategyTool, agent.StrategyProvider} {
		t.Run(string(strategy), func(t *testing.T) {
			grader := fakes.NewRuleModel(fakes.Grader(fakes.Gap("Cites-Source", "no document is named")))
			evals := gradedRun(t, grader, strategy, "30 days.", "30 days, per the policy.")
			require.Len(t, evals, 2)
			assert.Equal(t, middleware.RubricNeedsRevision, evals[0].Result)
			assert.Equal(t, middleware.RubricMaxIterationsReached, evals[1].Result)
			assert.Equal(t, []middleware.CriterionVerdict{fakes.Gap("cites-source", "no document is named"), fakes.Pass("answers")}, evals[0].Criteria)
		})
	}
}

func TestGraderFuncSeesTheTranscript(t *testing.T) {
	var seen []fakes.GraderRequest
	grader := fakes.NewRuleModel(fakes.GraderFunc(func(g fakes.GraderRequest) middleware.GraderResponse {
		seen = append(seen, g)
		if strings.Contains(g.Answer, "docs/") {
			return fakes.VerdictFor(g.Criteria)
		}
		return fakes.VerdictFor(g.Criteria, fakes.Gap("cites-source", "cite the document"))
	}))
	evals := gradedRun(t, grader, "", "30 days.", "30 days (docs/refunds.md).")
	require.Len(t, evals, 2)
	assert.Equal(t, middleware.RubricNeedsRevision, evals[0].Result)
	assert.Equal(t, middleware.RubricSatisfied, evals[1].Result)
	require.Len(t, seen, 2)
	assert.Equal(t, []string{"cites-source", "answers"}, seen[0].Criteria)
	assert.Equal(t, "30 days.", seen[0].Answer)
	assert.Contains(t, seen[0].Rubric, "To pass, every criterion must be met.")
	assert.False(t, seen[0].Called("search_docs"))
}

func TestParseGraderRequestIgnoresOtherRequests(t *testing.T) {
	_, ok := fakes.ParseGraderRequest(&llm.Request{Messages: []llm.Message{llm.User("<transcript-00>\nx\n</transcript-00>")}})
	assert.False(t, ok, "no GraderResponse tool or format: not a grading request")
}
