package reports

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/rubrics"
)

// ReportSchema names the JSON report format; it changes only when a field
// changes meaning or goes away, and the schema file with the same version
// (schema/report.v1.json) describes it.
const ReportSchema = "dageval.report/v1"

const reportSchemaPrefix = "dageval.report/"

// Report is the JSON report: the summary, every cell without its transcript,
// and what the run's verdict rests on. Wall-clock durations are left out so
// that two replays of a suite give byte-identical reports.
type Report struct {
	Schema string `json:"schema"`
	// ResultsSchemaVersion is the evals.SchemaVersion of the files the
	// report was made from.
	ResultsSchemaVersion int             `json:"results_schema_version"`
	Suite                string          `json:"suite"`
	SuiteDigest          string          `json:"suite_digest"`
	CasesDigest          string          `json:"cases_digest,omitempty"`
	Mode                 string          `json:"mode"`
	Verdict              RunVerdict      `json:"verdict"`
	ExpectedCells        int             `json:"expected_cells"`
	ActualCells          int             `json:"actual_cells"`
	Complete             bool            `json:"complete"`
	Thresholds           *Thresholds     `json:"thresholds,omitempty"`
	Groups               []Group         `json:"groups"`
	Totals               Group           `json:"totals"`
	Missing              []evals.CellKey `json:"missing"`
	Cells                []Cell          `json:"cells"`
	Failing              []FailingCell   `json:"failing"`
	CellsIncluded        bool            `json:"cells_included"`
	Roles                []RoleTotals    `json:"roles"`
	// Informational lists the informational checks (gating: false) that did
	// not hold, in every cell, passing ones included: shown apart, since
	// they decide nothing.
	Informational []InformationalCheck `json:"informational"`
}

// InformationalCheck is an informational check that did not hold in a cell.
type InformationalCheck struct {
	evals.CellKey
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Score  float64 `json:"score"`
	Detail string  `json:"detail"`
}

// RunVerdict is the run's own verdict: errored when cells could not be
// judged (unless errors were tolerated), else its thresholds (or every
// cell passing).
type RunVerdict struct {
	Passed bool `json:"passed"`
	// Outcome is passed, failed or errored (evals.Outcome).
	Outcome string `json:"outcome"`
	// Causes counts the errored and missing cells by cause.
	Causes []evals.CauseCount `json:"causes"`
	// ErrorsTolerated: errored cells counted as failures instead of
	// deciding the verdict.
	ErrorsTolerated bool     `json:"errors_tolerated"`
	Reasons         []string `json:"reasons"`
}

// Thresholds are the suite's thresholds; absent ones are null.
type Thresholds struct {
	PassRate   *float64 `json:"pass_rate"`
	MeanScore  *float64 `json:"mean_score"`
	PassHatK   *float64 `json:"pass_hat_k"`
	MaxCostUSD *float64 `json:"max_cost_usd"`
}

// Group aggregates a model × profile (Model and Profile empty for totals).
type Group struct {
	Model     string     `json:"model"`
	Profile   string     `json:"profile"`
	Expected  int        `json:"expected"`
	Cells     int        `json:"cells"`
	Passed    int        `json:"passed"`
	Failed    int        `json:"failed"`
	Errors    int        `json:"errors"`
	Missing   int        `json:"missing"`
	PassRate  float64    `json:"pass_rate"`
	CI95      [2]float64 `json:"ci95"`
	MeanScore float64    `json:"mean_score"`
	K         int        `json:"k"`
	PassAtK   float64    `json:"pass_at_k"`
	PassHatK  float64    `json:"pass_hat_k"`
	CostUSD   float64    `json:"cost_usd"`
	CostKnown bool       `json:"cost_known"`
	Tokens    Tokens     `json:"tokens"`
	// Latency sums up the cells' model latency; null when no cell's is known.
	Latency *GroupLatency `json:"latency"`
}

// Latency is how long a cell's agent waited on its models (see
// evals.Latency): recorded durations when replayed.
type Latency struct {
	Calls        int   `json:"calls"`
	Timed        int   `json:"timed"`
	ModelMS      int64 `json:"model_ms"`
	FirstEventMS int64 `json:"first_event_ms"`
	Recorded     bool  `json:"recorded"`
}

// Known reports whether every model call of the cell had a known duration.
func (l *Latency) Known() bool { return l != nil && l.Calls > 0 && l.Timed == l.Calls }

// GroupLatency sums up the latency of a group's fully timed cells (see
// evals.GroupLatency).
type GroupLatency struct {
	Cells        int   `json:"cells"`
	MeanMS       int64 `json:"mean_ms"`
	P50MS        int64 `json:"p50_ms"`
	P95MS        int64 `json:"p95_ms"`
	FirstEventMS int64 `json:"first_event_ms"`
	Recorded     bool  `json:"recorded"`
}

// Tokens is token usage per role and in total.
type Tokens struct {
	Agent     TokenCount `json:"agent"`
	Subagents TokenCount `json:"subagents"`
	Grader    TokenCount `json:"grader"`
	Total     TokenCount `json:"total"`
}

// TokenCount is one role's token usage. UnknownCalls counts the model calls
// that reported no usage: with it above 0 the counts are a lower bound (or
// unknown when 0), never a measured zero.
type TokenCount struct {
	Input        int `json:"input"`
	Output       int `json:"output"`
	CacheRead    int `json:"cache_read"`
	CacheWrite   int `json:"cache_write"`
	UnknownCalls int `json:"unknown_calls"`
}

// RoleTotals is the run's token usage of one role, over all cells.
type RoleTotals struct {
	Role   string     `json:"role"`
	Tokens TokenCount `json:"tokens"`
}

// Cell is one cell's result, without transcript or duration.
type Cell struct {
	evals.CellKey
	ID        string   `json:"id"`
	Tags      []string `json:"tags"`
	Status    string   `json:"status"`
	Score     float64  `json:"score"`
	Rubric    *Rubric  `json:"rubric"`
	Checks    Checks   `json:"checks"`
	Tokens    Tokens   `json:"tokens"`
	CostUSD   float64  `json:"cost_usd"`
	CostKnown bool     `json:"cost_known"`
	// Latency is the cell's model latency; null when no call had a known duration.
	Latency   *Latency `json:"latency"`
	Steps     int      `json:"steps"`
	ToolCalls []string `json:"tool_calls"`
	Error     string   `json:"error"`
	// Cause classifies an errored cell's error (evals.Cause); absent otherwise.
	Cause string `json:"cause,omitempty"`
	// Alias is the role of the cell's model in the suite, when it has one.
	Alias string `json:"alias,omitempty"`
	// Warnings say what was odd about model answers that were still accepted.
	Warnings []string `json:"warnings"`
}

// Rubric is a cell's final rubric verdict.
type Rubric struct {
	Result      string   `json:"result"`
	Iterations  int      `json:"iterations"`
	Explanation string   `json:"explanation"`
	Score       float64  `json:"score"`
	Criteria    Criteria `json:"criteria"`
}

// Criteria are rubric criterion verdicts as the JSON report holds them:
// report.v1 writes every field, an empty gap included, where results.jsonl
// leaves an empty gap out.
type Criteria []middleware.CriterionVerdict

// MarshalJSON writes the criteria in the report.v1 shape.
func (cs Criteria) MarshalJSON() ([]byte, error) {
	type criterion struct {
		Name   string `json:"name"`
		Passed bool   `json:"passed"`
		Gap    string `json:"gap"`
	}
	return marshalAs(cs, func(c middleware.CriterionVerdict) criterion { return criterion(c) })
}

// Checks are check verdicts as the JSON report holds them: report.v1
// writes every field, an empty detail included, where results.jsonl leaves
// an empty detail out.
type Checks []rubrics.CheckVerdict

// MarshalJSON writes the checks in the report.v1 shape.
func (cs Checks) MarshalJSON() ([]byte, error) {
	type check struct {
		Name   string  `json:"name"`
		Passed bool    `json:"passed"`
		Score  float64 `json:"score"`
		Detail string  `json:"detail"`
		Gating bool    `json:"gating"`
	}
	return marshalAs(cs, func(c rubrics.CheckVerdict) check {
		return check{Name: c.Name, Passed: c.Passed, Score: c.Score, Detail: c.Detail, Gating: c.Gating()}
	})
}

// marshalAs encodes s with each element converted to its wire shape.
func marshalAs[S ~[]E, E, W any](s S, wire func(E) W) ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	out := make([]W, len(s))
	for i, e := range s {
		out[i] = wire(e)
	}
	return json.Marshal(out)
}

// FailingCell says why a cell did not pass, in one place: the rubric gaps,
// the failed checks, the error.
type FailingCell struct {
	evals.CellKey
	ID           string  `json:"id"`
	Status       string  `json:"status"`
	Score        float64 `json:"score"`
	RubricResult string  `json:"rubric_result"`
	Gaps         []Gap   `json:"gaps"`
	FailedChecks Checks  `json:"failed_checks"`
	Error        string  `json:"error"`
	Cause        string  `json:"cause,omitempty"`
}

// Gap is a failed rubric criterion and what was missing.
type Gap struct {
	Criterion string `json:"criterion"`
	Gap       string `json:"gap"`
}

// Build turns a loaded run into a Report. It is the one place the text,
// markdown, JSON and JUnit renderers get their numbers from.
func Build(r *Run) *Report {
	s := r.Summary
	s.FillOutcome(r.Results)
	rep := &Report{
		Schema:               ReportSchema,
		ResultsSchemaVersion: s.SchemaVersion,
		Suite:                s.Suite,
		SuiteDigest:          s.SuiteDigest,
		CasesDigest:          s.CasesDigest,
		Mode:                 s.Mode,
		Verdict: RunVerdict{Passed: s.Passed, Outcome: string(s.RunOutcome()), Causes: nonNil(s.Causes),
			ErrorsTolerated: s.ErrorsTolerated, Reasons: nonNil(s.Reasons)},
		ExpectedCells: s.ExpectedCells,
		ActualCells:   s.ActualCells,
		Complete:      s.Complete,
		Totals:        groupOf(s.Totals),
		Groups:        []Group{},
		Missing:       []evals.CellKey{},
		Cells:         []Cell{},
		Failing:       []FailingCell{},
		CellsIncluded: r.HasResults,
		Informational: []InformationalCheck{},
	}
	if t := s.Thresholds; t != nil {
		rep.Thresholds = &Thresholds{PassRate: t.PassRate, MeanScore: t.MeanScore, PassHatK: t.PassHatK, MaxCostUSD: t.MaxCostUSD}
	}
	for _, g := range s.Groups {
		rep.Groups = append(rep.Groups, groupOf(g))
	}
	for _, k := range s.Missing {
		rep.Missing = append(rep.Missing, k)
	}
	for _, c := range r.sortedResults() {
		cell := cellOf(c)
		rep.Cells = append(rep.Cells, cell)
		if c.Status != evals.StatusPass {
			rep.Failing = append(rep.Failing, failingOf(cell))
		}
		for _, ch := range c.Checks {
			if !ch.Gating() && !ch.Passed {
				rep.Informational = append(rep.Informational, InformationalCheck{CellKey: c.CellKey, ID: c.ID, Name: ch.Name, Score: ch.Score, Detail: ch.Detail})
			}
		}
	}
	t := s.Totals.Tokens
	rep.Roles = []RoleTotals{{"agent", countOf(t.Agent)}, {"subagents", countOf(t.Subagents)}, {"grader", countOf(t.Grader)}, {"total", countOf(t.Total())}}
	return rep
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func countOf(u llm.Usage) TokenCount {
	return TokenCount{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens, UnknownCalls: u.UnknownCalls}
}

func latencyOf(l *evals.Latency) *Latency {
	if l == nil {
		return nil
	}
	return &Latency{Calls: l.Calls, Timed: l.Timed, ModelMS: l.ModelMS, FirstEventMS: l.FirstEventMS, Recorded: l.Recorded}
}

func latencyBack(l *Latency) *evals.Latency {
	if l == nil {
		return nil
	}
	return &evals.Latency{Calls: l.Calls, Timed: l.Timed, ModelMS: l.ModelMS, FirstEventMS: l.FirstEventMS, Recorded: l.Recorded}
}

func groupLatencyOf(l *evals.GroupLatency) *GroupLatency {
	if l == nil {
		return nil
	}
	return &GroupLatency{Cells: l.Cells, MeanMS: l.MeanMS, P50MS: l.P50MS, P95MS: l.P95MS, FirstEventMS: l.FirstEventMS, Recorded: l.Recorded}
}

func groupLatencyBack(l *GroupLatency) *evals.GroupLatency {
	if l == nil {
		return nil
	}
	return &evals.GroupLatency{Cells: l.Cells, MeanMS: l.MeanMS, P50MS: l.P50MS, P95MS: l.P95MS, FirstEventMS: l.FirstEventMS, Recorded: l.Recorded}
}

func tokensOf(u evals.RoleUsage) Tokens {
	return Tokens{Agent: countOf(u.Agent), Subagents: countOf(u.Subagents), Grader: countOf(u.Grader), Total: countOf(u.Total())}
}

func groupOf(g evals.GroupSummary) Group {
	return Group{
		Model: g.Model, Profile: g.Profile, Expected: g.Expected, Cells: g.Cells,
		Passed: g.Passed, Failed: g.Failed, Errors: g.Errors, Missing: g.Missing,
		PassRate: g.PassRate, CI95: g.CI95, MeanScore: g.MeanScore, K: g.K,
		PassAtK: g.PassAtK, PassHatK: g.PassHatK, CostUSD: g.CostUSD, CostKnown: g.CostKnown,
		Tokens: tokensOf(g.Tokens), Latency: groupLatencyOf(g.Latency),
	}
}

func cellOf(c evals.CellResult) Cell {
	rc := Cell{
		CellKey: c.CellKey, ID: c.ID, Tags: nonNil(c.Tags), Status: string(c.Status), Score: c.Score,
		Checks: append(Checks{}, c.Checks...), Tokens: tokensOf(c.Usage), CostUSD: c.CostUSD, CostKnown: c.CostKnown,
		Latency: latencyOf(c.Latency), Steps: c.Steps, ToolCalls: nonNil(c.ToolCalls), Error: c.Error, Alias: c.Alias, Warnings: nonNil(c.Warnings),
	}
	if c.Status == evals.StatusError {
		rc.Cause = string(evals.CauseOfCell(c))
	}
	if ru := c.Rubric; ru != nil {
		rc.Rubric = &Rubric{Result: ru.Result, Iterations: ru.Iterations, Explanation: ru.Explanation, Score: ru.Score, Criteria: append(Criteria{}, ru.Criteria...)}
	}
	return rc
}

func failingOf(c Cell) FailingCell {
	f := FailingCell{CellKey: c.CellKey, ID: c.ID, Status: c.Status, Score: c.Score, Gaps: []Gap{}, FailedChecks: Checks{}, Error: c.Error, Cause: c.Cause}
	if c.Rubric != nil {
		f.RubricResult = c.Rubric.Result
		for _, cr := range c.Rubric.Criteria {
			if !cr.Passed {
				f.Gaps = append(f.Gaps, Gap{Criterion: cr.Name, Gap: cr.Gap})
			}
		}
	}
	for _, ch := range c.Checks {
		if !ch.Passed && ch.Gating() {
			f.FailedChecks = append(f.FailedChecks, ch)
		}
	}
	return f
}

// JSON renders the report as indented JSON with a trailing newline.
func (rep *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// loadReport reads a JSON report back into a Run, so that a single report
// file can serve as compare's baseline.
func loadReport(path string, data []byte) (*Run, error) {
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, jsonError(path, data, err)
	}
	if rep.Schema != ReportSchema {
		return nil, &Error{File: path, Field: "schema", Err: fmt.Errorf("%w %q: this dageval reads %q", ErrSchemaVersion, rep.Schema, ReportSchema)}
	}
	if rep.ResultsSchemaVersion != evals.SchemaVersion {
		return nil, &Error{File: path, Field: "results_schema_version", Err: fmt.Errorf("%w %d: this dageval reads version %d", ErrSchemaVersion, rep.ResultsSchemaVersion, evals.SchemaVersion)}
	}
	if !rep.CellsIncluded {
		return nil, &Error{File: path, Field: "cells_included", Err: errors.New("the report was made from a summary alone and has no cells to pair")}
	}
	r := &Run{Source: path, HasResults: true, Details: map[string]*evals.CellDetail{}}
	s := &r.Summary
	s.SchemaVersion, s.Suite, s.SuiteDigest, s.CasesDigest, s.Mode = rep.ResultsSchemaVersion, rep.Suite, rep.SuiteDigest, rep.CasesDigest, rep.Mode
	s.ExpectedCells, s.ActualCells, s.Complete = rep.ExpectedCells, rep.ActualCells, rep.Complete
	s.Passed, s.Reasons = rep.Verdict.Passed, rep.Verdict.Reasons
	s.Outcome, s.Causes, s.ErrorsTolerated = evals.Outcome(rep.Verdict.Outcome), rep.Verdict.Causes, rep.Verdict.ErrorsTolerated
	if t := rep.Thresholds; t != nil {
		s.Thresholds = &evals.Thresholds{PassRate: t.PassRate, MeanScore: t.MeanScore, PassHatK: t.PassHatK, MaxCostUSD: t.MaxCostUSD}
	}
	for _, g := range rep.Groups {
		s.Groups = append(s.Groups, groupBack(g))
	}
	s.Totals = groupBack(rep.Totals)
	for _, k := range rep.Missing {
		s.Missing = append(s.Missing, evals.CellKey(k))
	}
	seen := map[evals.CellKey]bool{}
	for i, c := range rep.Cells {
		cr := cellBack(c)
		if field, err := checkCell(&cr); err != nil {
			return nil, &Error{File: path, Field: fmt.Sprintf("cells[%d].%s", i, field), Err: err}
		}
		if seen[cr.CellKey] {
			return nil, &Error{File: path, Field: fmt.Sprintf("cells[%d]", i), Err: fmt.Errorf("cell %s appears twice", keyString(cr.CellKey))}
		}
		seen[cr.CellKey] = true
		r.Results = append(r.Results, cr)
	}
	if err := checkGroups(path, r); err != nil {
		e := err.(*Error)
		e.Line, e.Field = 0, "cells"
		return nil, e
	}
	if len(r.Results) != s.ActualCells {
		return nil, &Error{File: path, Field: "cells", Err: fmt.Errorf("%d cells, but actual_cells is %d", len(r.Results), s.ActualCells)}
	}
	return r, nil
}

func usageBack(t TokenCount) llm.Usage {
	return llm.Usage{InputTokens: t.Input, OutputTokens: t.Output, CacheReadTokens: t.CacheRead, CacheWriteTokens: t.CacheWrite, UnknownCalls: t.UnknownCalls}
}

func roleUsageBack(t Tokens) evals.RoleUsage {
	return evals.RoleUsage{Agent: usageBack(t.Agent), Subagents: usageBack(t.Subagents), Grader: usageBack(t.Grader)}
}

func groupBack(g Group) evals.GroupSummary {
	return evals.GroupSummary{
		Model: g.Model, Profile: g.Profile, Expected: g.Expected, Cells: g.Cells,
		Passed: g.Passed, Failed: g.Failed, Errors: g.Errors, Missing: g.Missing,
		PassRate: g.PassRate, CI95: g.CI95, MeanScore: g.MeanScore, K: g.K,
		PassAtK: g.PassAtK, PassHatK: g.PassHatK, CostUSD: g.CostUSD, CostKnown: g.CostKnown,
		Tokens: roleUsageBack(g.Tokens), Latency: groupLatencyBack(g.Latency),
	}
}

func cellBack(c Cell) evals.CellResult {
	cr := evals.CellResult{
		CellKey: evals.CellKey(c.CellKey), ID: c.ID, Tags: c.Tags, Status: evals.Status(c.Status), Score: c.Score,
		Usage: roleUsageBack(c.Tokens), CostUSD: c.CostUSD, CostKnown: c.CostKnown, Latency: latencyBack(c.Latency), Steps: c.Steps,
		ToolCalls: c.ToolCalls, Error: c.Error, Cause: evals.Cause(c.Cause), Alias: c.Alias,
	}
	if len(c.Warnings) > 0 {
		cr.Warnings = c.Warnings
	}
	if c.Rubric != nil {
		ro := &evals.RubricOutcome{Result: c.Rubric.Result, Iterations: c.Rubric.Iterations, Explanation: c.Rubric.Explanation, Score: c.Rubric.Score}
		ro.Criteria = append([]middleware.CriterionVerdict(nil), c.Rubric.Criteria...)
		cr.Rubric = ro
	}
	cr.Checks = append([]rubrics.CheckVerdict(nil), c.Checks...)
	return cr
}
