package evals

import (
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
	"github.com/dageval/dageval/rubrics"
)

// SchemaVersion versions results.jsonl, summary.json and cell files. Readers
// refuse other versions rather than misreading them.
const SchemaVersion = 1

// Output file names inside a run's output directory.
const (
	ResultsFile = "results.jsonl" // one CellResult per line, appended as cells finish
	SummaryFile = "summary.json"  // Summary, written at the end
	CellsDir    = "cells"         // one CellDetail per cell: <cell id>.json
)

// Status is the outcome of one cell.
type Status string

// Cell outcomes: pass and fail judge the agent's behaviour; an error means
// the cell could not be judged because its evidence was missing or broken
// (a replay missed, a cassette was unreadable, the provider failed or
// stalled, the grader broke), and CellResult.Cause says which. An errored
// cell counts as a failure in every rate, and makes the run's outcome
// errored unless errors are tolerated.
const (
	StatusPass  Status = "pass"
	StatusFail  Status = "fail"
	StatusError Status = "error"
)

// CellKey identifies a cell of the matrix; two runs of a suite pair cells by it.
type CellKey struct {
	Case    string `json:"case"`
	Model   string `json:"model"`
	Profile string `json:"profile"`
	Epoch   int    `json:"epoch"`
}

// CellResult is one line of results.jsonl.
type CellResult struct {
	CellKey
	// ID names the cell's detail file and cassette (deterministic from the key).
	ID     string   `json:"id"`
	Tags   []string `json:"tags,omitempty"`
	Status Status   `json:"status"`
	// Score is in [0, 1]: the rubric score when the case has a rubric,
	// combined with the checks' scores.
	Score  float64                `json:"score"`
	Rubric *RubricOutcome         `json:"rubric,omitempty"`
	Checks []rubrics.CheckVerdict `json:"checks"`
	Usage  RoleUsage              `json:"usage"`
	// CostUSD prices Usage with the model catalog; CostKnown is false when a
	// model had no price, and then CostUSD counts only what could be priced.
	CostUSD   float64 `json:"cost_usd"`
	CostKnown bool    `json:"cost_known"`
	// Latency is how long the agent waited on its models, recorded when
	// replayed; nil when no model call had a known duration.
	Latency   *Latency `json:"latency,omitempty"`
	Steps     int      `json:"steps"`
	ToolCalls []string `json:"tool_calls"`
	// DurationMS is wall time; the only field that differs between two
	// replays of the same suite.
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	// Warnings are problems that did not decide the cell, such as the
	// unplayed interactions of a case with allow_unused, or what was odd
	// about model answers the adapters still accepted (a stream without a
	// finish reason, each such warning once).
	Warnings []string `json:"warnings,omitempty"`
	// Cause classifies the error of an errored cell (replay_miss,
	// cassette_invalid, provider_error, …); empty for passed and failed cells.
	Cause Cause `json:"cause,omitempty"`
	// Alias is the role the suite gave the cell's model (models: [{model:
	// …, alias: …}]); compare pairs cells by it, so a model swap under the
	// same alias is compared case by case.
	Alias string `json:"alias,omitempty"`
	// RateLimits is what the run's rate limiters did to the cell's model
	// calls, by provider; empty when its calls never waited (always, in
	// replay). WaitMS is wall time, like DurationMS.
	RateLimits []RateLimitCount `json:"rate_limits,omitempty"`
}

// RateLimitCount is what a provider's rate limiter did to a cell's calls,
// or, in a summary, to the run's: the throttling answers (429) it saw and
// the calls that waited for it, with their total wait.
type RateLimitCount struct {
	Provider  string `json:"provider"`
	Throttled int    `json:"throttled,omitempty"`
	Waits     int    `json:"waits,omitempty"`
	WaitMS    int64  `json:"wait_ms,omitempty"`
}

func (c *RateLimitCount) add(o RateLimitCount) {
	c.Throttled += o.Throttled
	c.Waits += o.Waits
	c.WaitMS += o.WaitMS
}

// RubricOutcome is the final verdict of the rubric grader for a cell.
type RubricOutcome struct {
	// Result is satisfied, needs_revision, failed, max_iterations_reached or grader_error.
	Result      string                        `json:"result"`
	Iterations  int                           `json:"iterations"`
	Explanation string                        `json:"explanation,omitempty"`
	Criteria    []middleware.CriterionVerdict `json:"criteria"`
	Score       float64                       `json:"score"`
}

// RoleUsage splits token usage by who spent it: the rubrics record's type,
// so a cell's usage is its record's.
type RoleUsage = rubrics.RoleUsage

// CellDetail is the full record of one cell (cells/<id>.json), for the HTML
// report and for debugging: the transcript with subagent runs, the rubric
// evaluations, the files the agent wrote.
type CellDetail struct {
	SchemaVersion int        `json:"schema_version"`
	Result        CellResult `json:"result"`
	Input         string     `json:"input"`
	// Messages is the main agent's transcript.
	Messages []llm.Message `json:"messages"`
	// Subagents holds the transcript of each subagent run, in start order.
	Subagents []SubagentRun `json:"subagents,omitempty"`
	// Evaluations lists every rubric grading round.
	Evaluations []RubricOutcome `json:"evaluations,omitempty"`
	// Files maps paths the agent wrote or changed to their final content.
	Files map[string]string `json:"files,omitempty"`
	// Cassette is the cassette path relative to the suite file, when replayed or recorded.
	Cassette string `json:"cassette,omitempty"`
	// Agent is what the main agent's model was given: its system prompt
	// and tools as assembled; absent when the agent could not be described.
	Agent *AgentGiven `json:"agent,omitempty"`

	// shared is the description Agent is a copy of, when cells share one.
	shared *sharedGiven
}

// AgentGiven is the system prompt, tools and middleware of a cell's main
// agent as assembled (harness.Agent.Describe).
type AgentGiven struct {
	SystemPrompt string      `json:"system_prompt"`
	Tools        []AgentTool `json:"tools"`
	Middleware   []string    `json:"middleware,omitempty"`
}

// AgentTool is a tool the model was offered.
type AgentTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// SubagentRun is one subagent invocation seen inside a cell.
type SubagentRun struct {
	// Path is the agent path, e.g. "main/task:researcher".
	Path       string        `json:"path"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	Messages   []llm.Message `json:"messages"`
}

// Summary is summary.json.
type Summary struct {
	SchemaVersion int    `json:"schema_version"`
	Suite         string `json:"suite"`
	// SuiteDigest fingerprints the suite's cases and matrix, so compare can
	// refuse to pair runs of different suites.
	SuiteDigest string `json:"suite_digest"`
	// CasesDigest fingerprints the suite without its models: two runs with
	// the same CasesDigest ask the same cases of (perhaps) other models,
	// and compare pairs them when told how their models pair (--pair).
	CasesDigest string `json:"cases_digest,omitempty"`
	Mode        string `json:"mode"`
	// ExpectedCells is the size of the matrix; ActualCells how many cells
	// produced a result. A missing cell counts as a failure.
	ExpectedCells int  `json:"expected_cells"`
	ActualCells   int  `json:"actual_cells"`
	Complete      bool `json:"complete"`
	// Missing lists the cells of the matrix that produced no result, in
	// matrix order, so reports can name them instead of only counting them.
	Missing    []CellKey      `json:"missing,omitempty"`
	Groups     []GroupSummary `json:"groups"`
	Totals     GroupSummary   `json:"totals"`
	Thresholds *Thresholds    `json:"thresholds,omitempty"`
	// Passed is the run's verdict: no cell errored or is missing (unless
	// errors are tolerated) and the thresholds hold (without thresholds,
	// every cell passed).
	Passed bool `json:"passed"`
	// Outcome is the verdict's class: passed, failed (the thresholds do not
	// hold) or errored (cells could not be judged; it decides the verdict
	// over any threshold). Empty in summaries written before it existed;
	// use RunOutcome.
	Outcome Outcome `json:"outcome,omitempty"`
	// Causes counts the errored and missing cells by cause, in report order.
	Causes []CauseCount `json:"causes,omitempty"`
	// ErrorsTolerated records that errored cells were allowed to count as
	// failures instead of deciding the verdict (errors: tolerate, or
	// --tolerate-errors).
	ErrorsTolerated bool `json:"errors_tolerated,omitempty"`
	// Reasons explains a failed verdict, one line each; an errored
	// verdict's first line names the cause that decided it.
	Reasons []string `json:"reasons,omitempty"`
	// RateLimits sums up the cells' rate-limit waits and throttling, by
	// provider; empty when no call waited.
	RateLimits []RateLimitCount `json:"rate_limits,omitempty"`
	// Shard is set in the summary of one shard of a run (--shard 2/4),
	// whose cells are only its part of the matrix; `dageval merge` makes
	// the whole run's summary, without it.
	Shard *Shard `json:"shard,omitempty"`
}

// RunOutcome is the summary's outcome, derived from Passed for summaries
// written before Outcome existed.
func (s *Summary) RunOutcome() Outcome {
	switch {
	case s.Outcome != "":
		return s.Outcome
	case s.Passed:
		return OutcomePassed
	}
	return OutcomeFailed
}

// GroupSummary aggregates the cells of one model × profile (or all cells
// for Totals).
type GroupSummary struct {
	Model    string `json:"model,omitempty"`
	Profile  string `json:"profile,omitempty"`
	Expected int    `json:"expected"`
	Cells    int    `json:"cells"`
	Passed   int    `json:"passed"`
	Failed   int    `json:"failed"`
	Errors   int    `json:"errors"`
	Missing  int    `json:"missing"`
	// PassRate is passed / expected; CI95 its Wilson score interval.
	PassRate  float64    `json:"pass_rate"`
	CI95      [2]float64 `json:"ci95"`
	MeanScore float64    `json:"mean_score"`
	// K is the number of epochs; PassAtK is the share of cases with at
	// least one passing epoch, PassHatK (pass^k) the share passing every epoch.
	K         int       `json:"k"`
	PassAtK   float64   `json:"pass_at_k"`
	PassHatK  float64   `json:"pass_hat_k"`
	CostUSD   float64   `json:"cost_usd"`
	CostKnown bool      `json:"cost_known"`
	Tokens    RoleUsage `json:"tokens"`
	// Latency sums up the cells' latency; nil when no cell's is known.
	Latency *GroupLatency `json:"latency,omitempty"`
}

// Thresholds gate a run's exit code.
type Thresholds struct {
	PassRate  *float64 `json:"pass_rate,omitempty" yaml:"pass_rate,omitempty"`
	MeanScore *float64 `json:"mean_score,omitempty" yaml:"mean_score,omitempty"`
	// PassHatK gates consistency across epochs.
	PassHatK *float64 `json:"pass_hat_k,omitempty" yaml:"pass_hat_k,omitempty"`
	// MaxCostUSD caps the whole run's cost.
	MaxCostUSD *float64 `json:"max_cost_usd,omitempty" yaml:"max_cost_usd,omitempty"`
}
