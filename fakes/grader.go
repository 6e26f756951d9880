package fakes

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

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

// ParseGraderRequest recognises a grading request (one that asks for a
// GraderResponse, as a tool or as the response format) and takes its
// payload apart; false means req is not one.
func ParseGraderRequest(req *llm.Request) (GraderRequest, bool) {
	payload, ok := graderPayload(req)
	if !ok {
		return GraderRequest{}, false
	}
	return parseGraderPayload(payload)
}

// graderPayload returns the text of req's last user message that holds a
// transcript tag, and false when req does not ask for a verdict.
func graderPayload(req *llm.Request) (string, bool) {
	if !asksForVerdict(req) {
		return "", false
	}
	var payload string
	for _, m := range req.Messages {
		if m.Role != llm.RoleUser {
			continue
		}
		if t := m.Text(); strings.Contains(t, "<transcript-") {
			payload = t
		}
	}
	return payload, true
}

// parseGraderPayload is ParseGraderRequest on a request that asks for a
// verdict, whose grading message is payload.
func parseGraderPayload(payload string) (GraderRequest, bool) {
	rubric, ok := taggedSection(payload, "<rubric-", "\n</rubric-")
	if !ok {
		return GraderRequest{}, false
	}
	transcript, ok := taggedSection(payload, "<transcript-", "\n</transcript-")
	if !ok {
		return GraderRequest{}, false
	}
	g := GraderRequest{Rubric: rubric, Transcript: transcript, Criteria: criterionNames(rubric)}
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

// taggedSection returns the text of the first section of s that opens
// with open, one or more lowercase hex digits (the nonce), ">" and a
// newline, and ends before the first closing after it. It is the first
// match of the pattern (?s)<name-[0-9a-f]+>\n(.*?)\n</name-, found by
// scanning: the regexp's backtracking was most of the time a local
// server serving a RuleModel with a Grader spent in grading requests.
func taggedSection(s, open, closing string) (string, bool) {
	for i := 0; ; {
		k := strings.Index(s[i:], open)
		if k < 0 {
			return "", false
		}
		i += k + len(open)
		h := i
		for h < len(s) && isLowerHex(s[h]) {
			h++
		}
		if h == i || !strings.HasPrefix(s[h:], ">\n") {
			continue
		}
		body := s[h+2:]
		end := strings.Index(body, closing)
		if end < 0 {
			return "", false // a later opening has no closing after it either
		}
		return body[:end], true
	}
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// criterionNames returns the names of the rubric's "- name: description"
// and "- name (weight w): description" lines, trimmed, in order: the
// matches of (?m)^- ([^:(\n]+?)(?: \(weight [^)]*\))?: found one after
// the other, where a match may run past its line (the weight's text may
// hold newlines) and the next one starts on a later line.
func criterionNames(rubric string) []string {
	var names []string
	for p := 0; p < len(rubric); {
		name, end, ok := criterionAt(rubric[p:])
		if ok {
			names = append(names, strings.TrimSpace(name))
			p += end // a match ends with ": ", never at a line's start
		}
		nl := strings.IndexByte(rubric[p:], '\n')
		if nl < 0 {
			break
		}
		p += nl + 1
	}
	return names
}

// criterionAt matches a criterion line at the start of line: its name
// (untrimmed) and the length of the match. The name holds no ':', '(' or
// newline, so it ends at the first of them: right before a ": " after it,
// or before a " (weight …): " whose '(' it is.
func criterionAt(line string) (name string, end int, ok bool) {
	rest, ok := strings.CutPrefix(line, "- ")
	if !ok {
		return "", 0, false
	}
	q := strings.IndexAny(rest, ":(\n")
	if q < 0 {
		return "", 0, false
	}
	switch rest[q] {
	case ':':
		if q >= 1 && strings.HasPrefix(rest[q:], ": ") {
			return rest[:q], 2 + q + 2, true
		}
	case '(':
		const weight = " (weight "
		if q >= 2 && strings.HasPrefix(rest[q-1:], weight) {
			after := rest[q-1+len(weight):]
			if r := strings.IndexByte(after, ')'); r >= 0 && strings.HasPrefix(after[r+1:], ": ") {
				return rest[:q-1], len(line) - len(after) + r + 3, true
			}
		}
	}
	return "", 0, false
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
	// When has parsed the request Reply answers (RuleModel calls them one
	// after the other), and parsing is most of the rule's work, so When
	// hands its parse to Reply: Reply takes it when its own request's
	// payload is the same text, which parses the same, and takes it once,
	// so no two judges share one request's slices.
	var handoff atomic.Pointer[parsedGrading]
	return Rule{
		Name: "grader",
		When: func(req *llm.Request) bool {
			payload, ok := graderPayload(req)
			if !ok {
				return false
			}
			g, ok := parseGraderPayload(payload)
			if ok {
				handoff.Store(&parsedGrading{payload: payload, g: g})
			}
			return ok
		},
		Reply: func(req *llm.Request) (*llm.Response, error) {
			var g GraderRequest
			if payload, ok := graderPayload(req); ok {
				if p := handoff.Load(); p != nil && p.payload == payload && handoff.CompareAndSwap(p, nil) {
					g = p.g
				} else {
					g, _ = parseGraderPayload(payload)
				}
			}
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

// parsedGrading is a grading request's payload and what it parses to.
type parsedGrading struct {
	payload string
	g       GraderRequest
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
