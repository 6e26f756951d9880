package evals

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/recorder"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// Outcome is the verdict of a whole run, the one definition that `dageval
// run`, Run(t), compare and every report share: the agent's behaviour was
// judged and passed, judged and fell short, or could not be judged because
// the evidence (an answer, a cassette, a grade) was missing or broken.
type Outcome string

// Run outcomes. An errored run is never a pass: unless errors are
// tolerated, no threshold can be checked on cells nobody could judge.
const (
	OutcomePassed  Outcome = "passed"
	OutcomeFailed  Outcome = "failed"
	OutcomeErrored Outcome = "errored"
)

// ExitCode is the process exit status of a run with this outcome: 0
// passed, 1 failed, 2 errored (the same code as a run that could not be
// carried out at all, such as one with a missing cassette).
func (o Outcome) ExitCode() int {
	switch o {
	case OutcomePassed:
		return 0
	case OutcomeFailed:
		return 1
	}
	return 2
}

// Cause says, machine-readably, why a cell errored: which piece of
// evidence was missing or broken. Failed and passed cells have none.
type Cause string

// Error causes, in the order reports list them.
const (
	// CauseReplayMiss: a request matched no recorded interaction; the
	// agent's requests changed since the cassette was recorded.
	CauseReplayMiss Cause = "replay_miss"
	// CauseCassetteMissing: the cell's cassette does not exist.
	CauseCassetteMissing Cause = "cassette_missing"
	// CauseCassetteInvalid: the cassette is empty, truncated, of another
	// format version or otherwise unreadable.
	CauseCassetteInvalid Cause = "cassette_invalid"
	// CauseCassetteUnplayed: the agent made fewer calls than the cassette
	// recorded; its behaviour changed since the recording.
	CauseCassetteUnplayed Cause = "cassette_unplayed"
	// CauseProviderStall: a model call got no answer in time.
	CauseProviderStall Cause = "provider_stall"
	// CauseProviderError: the model provider answered with an error (or
	// the connection to it failed).
	CauseProviderError Cause = "provider_error"
	// CauseGraderError: the rubric grader failed or never ran.
	CauseGraderError Cause = "grader_error"
	// CauseInterrupt: the agent paused for human input, which a suite run
	// cannot give.
	CauseInterrupt Cause = "agent_interrupt"
	// CauseSetup: the cell's agent, models, grader or tools could not be built.
	CauseSetup Cause = "setup"
	// CauseCassetteWrite: a recorded cassette could not be saved.
	CauseCassetteWrite Cause = "cassette_write"
	// CauseCancelled: the run was cancelled while the cell ran.
	CauseCancelled Cause = "cancelled"
	// CauseAgentError: the agent run failed in a way none of the above
	// explains (a tool's or middleware's error).
	CauseAgentError Cause = "agent_error"
	// CauseMissing: the cell produced no result at all. It is never a
	// cell's own cause, only a summary's count of missing cells.
	CauseMissing Cause = "missing"
	// CauseUnknown: an errored cell written before causes were recorded,
	// whose error says nothing more.
	CauseUnknown Cause = "unknown"
)

// causeOrder ranks causes for reports: the evidence problems users fix by
// re-recording first, then the provider, then the run itself.
var causeOrder = []Cause{
	CauseReplayMiss, CauseCassetteUnplayed, CauseCassetteMissing, CauseCassetteInvalid, CauseCassetteWrite,
	CauseProviderStall, CauseProviderError, CauseGraderError, CauseInterrupt,
	CauseSetup, CauseAgentError, CauseCancelled, CauseUnknown, CauseMissing,
}

// causeText is what each cause means and what to do about it, for the
// headline of a run that errored.
var causeText = map[Cause][2]string{
	CauseReplayMiss:       {"replay miss", "the agent's requests changed since its cassettes were recorded; if the change is intended, re-record with DAGEVAL_RECORD=missing (or --mode record-missing) and commit the cassettes"},
	CauseCassetteMissing:  {"missing cassette", "record it with DAGEVAL_RECORD=missing (or --mode record-missing) and commit it"},
	CauseCassetteInvalid:  {"unreadable cassette", "the cassette is empty, truncated or of another format; `dageval validate` names the file and line; restore it or re-record it with DAGEVAL_RECORD=1"},
	CauseCassetteUnplayed: {"unplayed recording", "the agent made fewer model calls than its cassette recorded, so its behaviour changed; if that is intended, re-record with DAGEVAL_RECORD=1 (or set allow_unused on the case)"},
	CauseCassetteWrite:    {"unsaved cassette", "the recording was not saved (the previous cassette is kept); see the cell's error"},
	CauseProviderStall:    {"provider stall", "a model call got no answer in time; this is the provider's outage, not the agent's behaviour: re-run the cells"},
	CauseProviderError:    {"provider error", "the model provider answered with an error; this is not the agent's behaviour: fix the key or quota, or re-run when the provider answers"},
	CauseGraderError:      {"grader error", "the rubric grader failed, so the cell has no grade; see the cell's error"},
	CauseInterrupt:        {"agent interrupt", "the agent paused for human input (interrupt_on), which a suite run cannot give"},
	CauseSetup:            {"setup error", "the cell's agent, models or tools could not be built; see the cell's error"},
	CauseAgentError:       {"agent error", "the agent run failed outside its model calls (a tool or middleware error); see the cell's error"},
	CauseCancelled:        {"cancelled cell", "the run was cancelled while the cell ran; run it again"},
	CauseMissing:          {"missing result", "the cell produced no result (the run was interrupted); run it again"},
	CauseUnknown:          {"unclassified error", "see the cell's error"},
}

// Label is the cause in words, singular ("replay miss").
func (c Cause) Label() string {
	if t, ok := causeText[c]; ok {
		return t[0]
	}
	return strings.ReplaceAll(string(c), "_", " ")
}

// Hint says what to do about cells errored for this cause.
func (c Cause) Hint() string { return causeText[c][1] }

// pluralLabel is the label for n cells ("replay misses").
func (c Cause) pluralLabel(n int) string {
	l := c.Label()
	if n == 1 {
		return l
	}
	if strings.HasSuffix(l, "s") {
		return l + "es"
	}
	return l + "s"
}

// CauseCount is how many cells errored for one cause.
type CauseCount struct {
	Cause Cause `json:"cause"`
	Cells int   `json:"cells"`
}

// causeError marks an error with the cause the runner knows from where it
// happened (building the grader, saving the cassette); the error's own
// type wins when it says more (a replay miss while building is still a
// replay miss).
type causeError struct {
	cause Cause
	err   error
}

func (e *causeError) Error() string { return e.err.Error() }
func (e *causeError) Unwrap() error { return e.err }

func withCause(c Cause, err error) error { return &causeError{cause: c, err: err} }

// errProviderStall marks a run whose time limit fired while a model call
// had been waiting for most of it: the provider stalled, the agent did not
// run out of time.
var errProviderStall = errors.New("provider stall")

// CauseOf classifies the error of an errored cell. It is the one place
// that knows the error types of the cassette and provider layers.
func CauseOf(err error) Cause {
	var miss *recorder.MissError
	var unplayed *recorder.UnplayedError
	var notSaved *recorder.NotSavedError
	var parse *cassette.ParseError
	var ce *causeError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &miss), errors.Is(err, recorder.ErrInteractionNotFound):
		return CauseReplayMiss
	case errors.Is(err, recorder.ErrCassetteNotFound):
		return CauseCassetteMissing
	case errors.As(err, &parse):
		return CauseCassetteInvalid
	case errors.As(err, &unplayed):
		return CauseCassetteUnplayed
	case errors.Is(err, errProviderStall), errors.Is(err, provider.ErrStalled), errors.Is(err, llm.ErrTimeout):
		return CauseProviderStall
	case llm.KindOf(err) != "":
		return CauseProviderError
	case errors.As(err, &notSaved):
		return CauseCassetteWrite
	case errors.As(err, &ce):
		return ce.cause
	case errors.Is(err, context.Canceled):
		return CauseCancelled
	}
	return CauseAgentError
}

// summarizeCauses counts the errored cells of a run by cause, in report
// order, with the missing cells last.
func summarizeCauses(results []*CellResult, missing int) []CauseCount {
	n := map[Cause]int{}
	for _, r := range results {
		if r != nil && r.Status == StatusError {
			n[cellCause(r)]++
		}
	}
	n[CauseMissing] += missing
	var out []CauseCount
	for _, c := range causeOrder {
		if n[c] > 0 {
			out = append(out, CauseCount{Cause: c, Cells: n[c]})
		}
	}
	return out
}

// erroredReason is the sentence that leads a verdict decided by errored
// cells: how many, why, and what to do, e.g. "3 cells errored: replay
// misses — the agent's requests changed … re-record with DAGEVAL_RECORD=missing".
func erroredReason(causes []CauseCount) string {
	total := 0
	for _, c := range causes {
		total += c.Cells
	}
	if total == 0 {
		return ""
	}
	head := plural(total, "cell errored", "cells errored")
	if len(causes) == 1 {
		c := causes[0]
		return fmt.Sprintf("%s: %s — %s", head, c.Cause.pluralLabel(c.Cells), c.Cause.Hint())
	}
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = fmt.Sprintf("%d %s", c.Cells, c.Cause.pluralLabel(c.Cells))
	}
	return fmt.Sprintf("%s (%s), so the run cannot be judged", head, strings.Join(parts, ", "))
}

// causeReasons is one line per cause with its hint, for a run with
// several causes.
func causeReasons(causes []CauseCount) []string {
	out := make([]string, 0, len(causes))
	for _, c := range causes {
		out = append(out, fmt.Sprintf("%s: %s", plural(c.Cells, c.Cause.Label(), c.Cause.pluralLabel(c.Cells)), c.Cause.Hint()))
	}
	return out
}

// CauseOfCell is an errored cell's cause; for cells written before causes
// were recorded it is read from the error's wording, which for the
// cassette layer's errors has not changed.
func CauseOfCell(r CellResult) Cause { return cellCause(&r) }

func cellCause(r *CellResult) Cause {
	switch {
	case r.Cause != "":
		return r.Cause
	case strings.Contains(r.Error, "replay miss"):
		return CauseReplayMiss
	case strings.Contains(r.Error, "cassette not found"):
		return CauseCassetteMissing
	}
	return CauseUnknown
}

// FillOutcome gives a summary written before Outcome existed (by an older
// dageval) its outcome, causes and reasons from its cells, by the rules
// Summarize applies: errored or missing cells make it errored. A summary
// that has an outcome is left as it is.
func (s *Summary) FillOutcome(results []CellResult) {
	if s.Outcome != "" {
		return
	}
	ptrs := make([]*CellResult, len(results))
	for i := range results {
		ptrs[i] = &results[i]
	}
	s.Causes = summarizeCauses(ptrs, len(s.Missing))
	if len(s.Causes) == 0 {
		s.Outcome = s.RunOutcome()
		return
	}
	s.Outcome, s.Passed = OutcomeErrored, false
	reasons := []string{erroredReason(s.Causes)}
	if len(s.Causes) > 1 {
		reasons = append(reasons, causeReasons(s.Causes)...)
	}
	s.Reasons = append(reasons, s.Reasons...)
}
