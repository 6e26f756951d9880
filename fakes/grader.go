package fakes

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
)

// GraderRequest is a RubricMiddleware grading request taken apart: the
// rubric and the transcript it grades, without the nonce tags that wrap
// them, so a scripted grader can judge the transcript without copying the
// middleware's payload format.
type GraderRequest struct {
	// Rubric and Transcript are the texts inside the payload's tags.
	Rubric     string
	Transcript string
	// Criteria are the names of the rubric's "- name: description" lines,
	// the form rubrics.Rubric.Render writes, in order.
	Criteria []string
	// Entries are the transcript's lines (see middleware.RenderTranscript).
	Entries []middleware.TranscriptEntry
	// Answer is the text of the transcript's last assistant entry: the
	// answer being graded; "" when that entry is a tool call.
	Answer string
}

// Called reports whether the transcript shows a call of the named tool:
// a tool_call entry, not text that mentions one.
func (g GraderRequest) Called(tool string) bool {
	for _, e := range g.Entries {
		if e.ToolCall != nil && e.ToolCall.Name == tool {
			return true
		}
	}
	return false
}

var (
	graderRubric     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<rubric-[0-9a-f]+>\n(.*?)\n</rubric-`) })
	graderTranscript = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<transcript-[0-9a-f]+>\n(.*?)\n</transcript-`) })
	criterionLine    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^- ([^:(\n]+?)(?: \(weight [^)]*\))?: `) })
)

// ParseGraderRequest recognises a grading request (one that asks for a
// GraderResponse, as a tool or as the response format) and takes its
// payload apart; false means req is not one.
func ParseGraderRequest(req *llm.Request) (GraderRequest, bool) {
	if !asksForVerdict(req) {
		return GraderRequest{}, false
	}
	var payload string
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser && strings.Contains(m.Text(), "<transcript-") {
			payload = m.Text()
		}
	}
	rb, tb := graderRubric().FindStringSubmatch(payload), graderTranscript().FindStringSubmatch(payload)
	if rb == nil || tb == nil {
		return GraderRequest{}, false
	}
	g := GraderRequest{Rubric: rb[1], Transcript: tb[1]}
	for _, m := range criterionLine().FindAllStringSubmatch(g.Rubric, -1) {
		g.Criteria = append(g.Criteria, strings.TrimSpace(m[1]))
	}
	entries, err := middleware.ParseTranscript(g.Transcript)
	if err != nil {
		return GraderRequest{}, false
	}
	g.Entries = entries
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Role == string(llm.RoleAssistant) {
			if e.Text != nil {
				g.Answer = *e.Text
			}
			break
		}
	}
	return g, true
}

func asksForVerdict(req *llm.Request) bool {
	if rf := req.ResponseFormat; rf != nil && rf.Name == middleware.GraderResponseName {
		return true
	}
	for _, t := range req.Tools {
		if t.Name == middleware.GraderResponseName {
			return true
		}
	}
	return false
}

// IsGraderRequest matches RubricMiddleware grading requests, for a Rule's When.
func IsGraderRequest(req *llm.Request) bool {
	_, ok := ParseGraderRequest(req)
	return ok
}

// Pass is a passing criterion verdict.
func Pass(criterion string) middleware.CriterionVerdict {
	return middleware.CriterionVerdict{Name: criterion, Passed: true}
}

// Gap is a failing criterion verdict with what is missing.
func Gap(criterion, gap string) middleware.CriterionVerdict {
	return middleware.CriterionVerdict{Name: criterion, Gap: gap}
}

// Grader is a Rule that answers every grading request with the given
// criterion verdicts; the rubric's criteria not listed pass. The result is
// satisfied when every criterion passes and needs_revision otherwise, so the
// agent is sent back until the grader's iterations run out. Put it first in
// a RuleModel that also plays the agent:
//
//	model := fakes.NewRuleModel(fakes.Grader(fakes.Gap("cites-source", "no source")), agentRule)
func Grader(verdicts ...middleware.CriterionVerdict) Rule {
	return GraderFunc(func(g GraderRequest) middleware.GraderResponse {
		return VerdictFor(g.Criteria, verdicts...)
	})
}

// GraderFunc is a Rule that answers grading requests with judge's verdict,
// in the form the request asks for: a GraderResponse tool call, or the JSON
// text of a response-format answer.
func GraderFunc(judge func(GraderRequest) middleware.GraderResponse) Rule {
	return Rule{
		Name: "grader",
		When: IsGraderRequest,
		Reply: func(req *llm.Request) (*llm.Response, error) {
			g, _ := ParseGraderRequest(req)
			v := judge(g)
			if v.Criteria == nil {
				v.Criteria = []middleware.CriterionVerdict{}
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("fakes: grader verdict: %w", err)
			}
			if rf := req.ResponseFormat; rf != nil && rf.Name == middleware.GraderResponseName {
				return &llm.Response{Message: llm.Assistant(string(raw))}, nil
			}
			return &llm.Response{Message: llm.Assistant("", CallID("", middleware.GraderResponseName, json.RawMessage(raw)))}, nil
		},
	}
}

// VerdictFor builds the verdict on criteria (in their order) from the given
// verdicts, passing the criteria they do not name; verdicts on names not
// among criteria are kept at the end. The result is satisfied when all pass,
// needs_revision otherwise.
func VerdictFor(criteria []string, verdicts ...middleware.CriterionVerdict) middleware.GraderResponse {
	byName := map[string]middleware.CriterionVerdict{}
	for _, v := range verdicts {
		byName[strings.ToLower(v.Name)] = v
	}
	out := middleware.GraderResponse{Result: middleware.RubricSatisfied, Explanation: "Every criterion is met."}
	used := map[string]bool{}
	add := func(v middleware.CriterionVerdict) {
		out.Criteria = append(out.Criteria, v)
		if !v.Passed {
			out.Result = middleware.RubricNeedsRevision
		}
	}
	for _, c := range criteria {
		k := strings.ToLower(c)
		if v, ok := byName[k]; ok {
			used[k] = true
			v.Name = c
			add(v)
			continue
		}
		add(Pass(c))
	}
	for _, v := range verdicts {
		if !used[strings.ToLower(v.Name)] {
			add(v)
		}
	}
	if out.Result == middleware.RubricNeedsRevision {
		failing := 0
		for _, v := range out.Criteria {
			if !v.Passed {
				failing++
			}
		}
		out.Explanation = fmt.Sprintf("%d criterion(s) not met yet.", failing)
	}
	return out
}
