package rubrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
)

// Check kinds, as written in suite files.
const (
	KindFinalAnswer   = "final_answer"
	KindToolCalled    = "tool_called"
	KindToolNotCalled = "tool_not_called"
	KindTrajectory    = "trajectory"
	KindFileExists    = "file_exists"
	KindFileContains  = "file_contains"
	KindMaxSteps      = "max_steps"
	KindMaxTokens     = "max_tokens"
	KindMaxCostUSD    = "max_cost_usd"
	KindNoError       = "no_error"
)

// Kinds lists every check kind in documentation order.
func Kinds() []string {
	return []string{KindFinalAnswer, KindAssistantText, KindToolResult, KindToolCalled, KindToolNotCalled,
		KindTrajectory, KindSameTurn, KindTurns, KindToolCallCount, KindFileExists, KindFileContains,
		KindFileEquals, KindFileExcludes, KindFileAbsent, KindState, KindMaxSteps, KindMaxTokens,
		KindMaxCostUSD, KindNoError, KindNot, KindScript}
}

// Check is a deterministic assertion about a run.
type Check interface {
	// Kind is the check's kind (KindToolCalled, …).
	Kind() string
	// Name identifies the check in results, e.g. "tool_called(get_weather)".
	Name() string
	// Evaluate judges the run. It never fails: problems (an unreadable
	// file, an invalid check built in Go) make a failed result whose detail
	// says so.
	Evaluate(ctx context.Context, rec *Record) CheckVerdict
}

// CheckVerdict is a check's verdict on one run, as results.jsonl records it
// and every report shows it.
type CheckVerdict struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	// Score is partial credit in [0, 1]; 1 when passed unless a threshold
	// below 1 let a partial match pass.
	Score float64 `json:"score"`
	// Detail says what was expected and what happened.
	Detail string `json:"detail,omitempty"`
	// Informational marks the verdict of a check that is reported but never
	// decides anything: it does not fail its cell, count in its score or
	// move the compare gate (gating: false in a suite; Deep Agents'
	// .expect() tier, promptfoo's weight 0). JSON writes it as
	// "gating": false, and leaves it out for the checks that gate.
	Informational bool `json:"-"`
}

// Gating reports whether the verdict decides its cell.
func (v CheckVerdict) Gating() bool { return !v.Informational }

// verdictJSON is CheckVerdict on the wire: gating is written only when false.
type verdictJSON struct {
	Name   string  `json:"name"`
	Passed bool    `json:"passed"`
	Score  float64 `json:"score"`
	Detail string  `json:"detail,omitempty"`
	Gating *bool   `json:"gating,omitempty"`
}

// MarshalJSON writes the verdict, with "gating": false for an informational one.
func (v CheckVerdict) MarshalJSON() ([]byte, error) {
	w := verdictJSON{Name: v.Name, Passed: v.Passed, Score: v.Score, Detail: v.Detail}
	if v.Informational {
		f := false
		w.Gating = &f
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a verdict; a missing gating means the check gates.
func (v *CheckVerdict) UnmarshalJSON(data []byte) error {
	var w verdictJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*v = CheckVerdict{Name: w.Name, Passed: w.Passed, Score: w.Score, Detail: w.Detail, Informational: w.Gating != nil && !*w.Gating}
	return nil
}

// EvaluateAll runs the checks in order.
func EvaluateAll(ctx context.Context, checks []Check, rec *Record) []CheckVerdict {
	out := make([]CheckVerdict, len(checks))
	for i, c := range checks {
		out[i] = c.Evaluate(ctx, rec)
	}
	return out
}

func boolScore(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// Answer sources: which text a final_answer check reads.
const (
	// FromLastText is the last non-empty assistant text (the default): an
	// agent whose closing message is empty, or only calls a tool, is judged
	// on what it last said.
	FromLastText = "last_text"
	// FromLastMessage is the text of the last assistant message even when
	// it is empty, Deep Agents' trajectory.answer.
	FromLastMessage = "last_message"
)

// FinalAnswerCheck checks the final answer (Record.FinalAnswer, or
// Record.LastMessage with From: last_message). Each condition that is set
// must hold; the score is the share that hold.
type FinalAnswerCheck struct {
	TextMatch
	// From chooses the answer: FromLastText ("" too) or FromLastMessage.
	From string `json:"from,omitempty"`
}

// Kind implements Check.
func (c *FinalAnswerCheck) Kind() string { return KindFinalAnswer }

// Name implements Check.
func (c *FinalAnswerCheck) Name() string { return KindFinalAnswer }

// Validate checks that at least one condition is set and that the regular
// expression and schema compile.
func (c *FinalAnswerCheck) Validate() error {
	if err := c.TextMatch.Validate(); err != nil {
		return errors.New("final_answer " + err.Error())
	}
	switch c.From {
	case "", FromLastText, FromLastMessage:
	default:
		return fmt.Errorf("from must be %s or %s, got %q", FromLastText, FromLastMessage, c.From)
	}
	return nil
}

// Evaluate implements Check.
func (c *FinalAnswerCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	answer, what := rec.FinalAnswer(), "the final answer"
	if c.From == FromLastMessage {
		answer, what = rec.LastMessage(), "the last assistant message"
	}
	held, total, failed := c.match(answer)
	res.Score = ratio(held, total)
	res.Passed = held == total
	if res.Passed {
		res.Detail = fmt.Sprintf("all %d conditions hold for %s %s", total, what, quoteShort(answer))
	} else {
		res.Detail = fmt.Sprintf("%d of %d conditions hold; %s %s %s", held, total, what, quoteShort(answer), strings.Join(failed, "; "))
	}
	return res
}

// stripFence removes one Markdown code fence around s, if present.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return t
	}
	inner := t[3 : len(t)-3]
	if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[\"") {
		inner = inner[nl+1:]
	}
	return strings.TrimSpace(inner)
}

// quoteShort quotes text for a detail, cutting it to 200 characters.
func quoteShort(s string) string {
	if s == "" {
		return "(empty)"
	}
	r := []rune(s)
	if len(r) > 200 {
		return strconv.Quote(string(r[:200])) + "…"
	}
	return strconv.Quote(s)
}

// ToolCalledCheck passes when a matching call was made between Min and Max times.
type ToolCalledCheck struct {
	Call CallMatcher `json:"call"`
	// Agent scopes the calls: "" or "all" for every run, "main" for the root
	// agent, a subagent type or an agent path for that subagent's runs.
	Agent string `json:"agent,omitempty"`
	// Min is the fewest matching calls (1 when 0); Max the most (no limit when 0).
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
	// Turn, when set, counts only calls requested in that model turn of
	// their run (1 is the first answer): Deep Agents' tool_call(step=…).
	Turn int `json:"turn,omitempty"`
}

// Kind implements Check.
func (c *ToolCalledCheck) Kind() string { return KindToolCalled }

// Name implements Check.
func (c *ToolCalledCheck) Name() string {
	name := c.Call.Name
	if c.Turn > 0 {
		name = fmt.Sprintf("%s, turn %d", name, c.Turn)
	}
	return scopedName(KindToolCalled, name, c.Agent)
}

func scopedName(kind, tool, scope string) string {
	if scope == "" || scope == ScopeAll {
		return kind + "(" + tool + ")"
	}
	return kind + "(" + tool + " @" + scope + ")"
}

// Validate checks the matcher and the bounds.
func (c *ToolCalledCheck) Validate() error {
	if err := c.Call.Validate(); err != nil {
		return err
	}
	if c.Min < 0 || c.Max < 0 {
		return errors.New("min and max cannot be negative")
	}
	if c.Max > 0 && c.Max < c.min() {
		return fmt.Errorf("max (%d) is below min (%d)", c.Max, c.min())
	}
	if c.Turn < 0 {
		return errors.New("turn cannot be negative")
	}
	return nil
}

func (c *ToolCalledCheck) min() int {
	if c.Min == 0 {
		return 1
	}
	return c.Min
}

// scopedCalls returns the calls of the runs a scope names, with the path of
// the run each came from.
func scopedCalls(rec *Record, scope string) ([]ToolCall, []string) {
	var runs []*Trajectory
	switch scope {
	case "", ScopeAll:
		runs = rec.Runs
	case ScopeMain:
		runs = []*Trajectory{rec.Trajectory}
	default:
		runs = selectRuns(rec, scope)
	}
	var calls []ToolCall
	var paths []string
	for _, r := range runs {
		if r == nil {
			continue
		}
		for _, c := range r.Calls {
			calls = append(calls, c)
			paths = append(paths, r.Agent)
		}
	}
	return calls, paths
}

func scopeText(scope string) string {
	switch scope {
	case "", ScopeAll:
		return "in any agent"
	case ScopeMain:
		return "by the main agent"
	}
	return "in " + scope
}

// Evaluate implements Check.
func (c *ToolCalledCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	calls, _ := scopedCalls(rec, c.Agent)
	var matching, sameName []ToolCall
	for _, call := range calls {
		if c.Turn > 0 && call.Turn != c.Turn {
			if call.Name == c.Call.Name {
				sameName = append(sameName, call)
			}
			continue
		}
		if c.Call.Match(call) {
			matching = append(matching, call)
		} else if c.Call.Name == "*" || call.Name == c.Call.Name {
			sameName = append(sameName, call)
		}
	}
	n := len(matching)
	want := fmt.Sprintf("at least %d", c.min())
	if c.Max > 0 {
		want = fmt.Sprintf("between %d and %d", c.min(), c.Max)
		if c.Max == c.min() {
			want = fmt.Sprintf("exactly %d", c.Max)
		}
	}
	res.Passed = n >= c.min() && (c.Max == 0 || n <= c.Max)
	switch {
	case res.Passed:
		res.Score = 1
	case n < c.min():
		res.Score = ratio(n, c.min())
	default:
		res.Score = ratio(c.Max, n)
	}
	inTurn := ""
	if c.Turn > 0 {
		inTurn = fmt.Sprintf(" in turn %d", c.Turn)
	}
	res.Detail = fmt.Sprintf("expected %s call(s) of %s%s %s; found %d", want, c.Call.String(), inTurn, scopeText(c.Agent), n)
	if !res.Passed {
		if len(sameName) > 0 {
			res.Detail += fmt.Sprintf("; non-matching calls of %s: %s", c.Call.Name, turnCallsText(limitCalls(sameName, 5)))
		} else if n == 0 {
			res.Detail += "; tools called: " + namesText(calls)
		}
	}
	return res
}

// turnCallsText renders calls with the turn each was requested in.
func turnCallsText(cs []ToolCall) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = callText(c)
		if c.Turn > 0 {
			out[i] += fmt.Sprintf(" (turn %d)", c.Turn)
		}
	}
	return strings.Join(out, ", ")
}

func limitCalls(cs []ToolCall, n int) []ToolCall {
	if len(cs) <= n {
		return cs
	}
	return cs[:n]
}

func namesText(cs []ToolCall) string {
	if len(cs) == 0 {
		return "(none)"
	}
	seen := map[string]bool{}
	var names []string
	for _, c := range cs {
		if !seen[c.Name] {
			seen[c.Name] = true
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

// ToolNotCalledCheck passes when no matching call was made.
type ToolNotCalledCheck struct {
	Call CallMatcher `json:"call"`
	// Agent scopes the calls as in ToolCalledCheck.
	Agent string `json:"agent,omitempty"`
}

// Kind implements Check.
func (c *ToolNotCalledCheck) Kind() string { return KindToolNotCalled }

// Name implements Check.
func (c *ToolNotCalledCheck) Name() string {
	return scopedName(KindToolNotCalled, c.Call.Name, c.Agent)
}

// Evaluate implements Check.
func (c *ToolNotCalledCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Call.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	calls, paths := scopedCalls(rec, c.Agent)
	var bad []string
	for i, call := range calls {
		if c.Call.Match(call) {
			bad = append(bad, callText(call)+" in "+paths[i])
		}
	}
	res.Passed = len(bad) == 0
	res.Score = boolScore(res.Passed)
	if res.Passed {
		res.Detail = fmt.Sprintf("expected no call of %s %s; none was made", c.Call.String(), scopeText(c.Agent))
	} else {
		if len(bad) > 5 {
			bad = append(bad[:5], fmt.Sprintf("and %d more", len(bad)-5))
		}
		res.Detail = fmt.Sprintf("expected no call of %s %s; found %s", c.Call.String(), scopeText(c.Agent), strings.Join(bad, ", "))
	}
	return res
}

// FileExistsCheck passes when the file exists after the run.
type FileExistsCheck struct {
	Path string `json:"path"`
}

// Kind implements Check.
func (c *FileExistsCheck) Kind() string { return KindFileExists }

// Name implements Check.
func (c *FileExistsCheck) Name() string { return KindFileExists + "(" + c.Path + ")" }

// Evaluate implements Check.
func (c *FileExistsCheck) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	_, err := readFile(ctx, rec, c.Path)
	switch {
	case err == nil:
		res.Passed, res.Score = true, 1
		res.Detail = fmt.Sprintf("expected %s to exist; it does", c.Path)
	case errors.Is(err, fs.ErrNotExist):
		res.Detail = fmt.Sprintf("expected %s to exist; it does not", c.Path)
	default:
		res.Detail = fmt.Sprintf("expected %s to exist; it could not be read: %v", c.Path, err)
	}
	return res
}

func readFile(ctx context.Context, rec *Record, path string) (string, error) {
	if rec.Files == nil {
		return "", errors.New("the run's files are not available")
	}
	return rec.Files.ReadFile(ctx, path)
}

// FileContainsCheck passes when the file exists and holds every text and
// matches the regular expression.
type FileContainsCheck struct {
	Path  string   `json:"path"`
	Text  []string `json:"text,omitempty"`
	Regex string   `json:"regex,omitempty"`
}

// Kind implements Check.
func (c *FileContainsCheck) Kind() string { return KindFileContains }

// Name implements Check.
func (c *FileContainsCheck) Name() string { return KindFileContains + "(" + c.Path + ")" }

// Validate checks that there is something to look for.
func (c *FileContainsCheck) Validate() error {
	if strings.TrimSpace(c.Path) == "" {
		return errors.New("path is empty")
	}
	if len(c.Text) == 0 && c.Regex == "" {
		return errors.New("file_contains needs text or regex")
	}
	if c.Regex != "" {
		if _, err := regexp.Compile(c.Regex); err != nil {
			return fmt.Errorf("regex: %v", err)
		}
	}
	return nil
}

// Evaluate implements Check.
func (c *FileContainsCheck) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	content, err := readFile(ctx, rec, c.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			res.Detail = fmt.Sprintf("expected %s to exist and contain the text; it does not exist", c.Path)
		} else {
			res.Detail = fmt.Sprintf("expected %s to contain the text; it could not be read: %v", c.Path, err)
		}
		return res
	}
	total, held := 0, 0
	var failed []string
	for _, t := range c.Text {
		total++
		if strings.Contains(content, t) {
			held++
		} else {
			failed = append(failed, fmt.Sprintf("%q is missing", t))
		}
	}
	if c.Regex != "" {
		total++
		if regexp.MustCompile(c.Regex).MatchString(content) {
			held++
		} else {
			failed = append(failed, fmt.Sprintf("nothing matches /%s/", c.Regex))
		}
	}
	res.Score = ratio(held, total)
	res.Passed = held == total
	if res.Passed {
		res.Detail = fmt.Sprintf("%s holds all %d expected pieces", c.Path, total)
	} else {
		res.Detail = fmt.Sprintf("%s: %s; its content is %s", c.Path, strings.Join(failed, "; "), quoteShort(content))
	}
	return res
}

// MaxStepsCheck passes when the root agent took at most Limit steps.
type MaxStepsCheck struct {
	Limit int `json:"limit"`
}

// Kind implements Check.
func (c *MaxStepsCheck) Kind() string { return KindMaxSteps }

// Name implements Check.
func (c *MaxStepsCheck) Name() string { return fmt.Sprintf("%s(%d)", KindMaxSteps, c.Limit) }

// Evaluate implements Check.
func (c *MaxStepsCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	return budget(c.Name(), float64(rec.Steps), float64(c.Limit),
		fmt.Sprintf("expected at most %d steps; the run took %d", c.Limit, rec.Steps))
}

// MaxTokensCheck passes when the agent and its subagents used at most Limit
// tokens (input, output and cache traffic; the grader's are not counted). A
// run some of whose calls reported no usage fails unless the reported
// tokens alone exceed the limit, as an unknown cost fails MaxCostCheck.
type MaxTokensCheck struct {
	Limit int `json:"limit"`
}

// Kind implements Check.
func (c *MaxTokensCheck) Kind() string { return KindMaxTokens }

// Name implements Check.
func (c *MaxTokensCheck) Name() string { return fmt.Sprintf("%s(%d)", KindMaxTokens, c.Limit) }

// Evaluate implements Check.
func (c *MaxTokensCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	agentTokens, subTokens := rec.Usage.Agent.Total(), rec.Usage.Subagents.Total()
	used := agentTokens + subTokens
	if unknown := rec.Usage.Agent.UnknownCalls + rec.Usage.Subagents.UnknownCalls; unknown > 0 && used <= c.Limit {
		// As with an unknown cost: a budget that cannot be checked is not met.
		return CheckVerdict{Name: c.Name(),
			Detail: fmt.Sprintf("expected at most %d tokens; the run's usage is unknown: %d model calls reported none, the others %d tokens", c.Limit, unknown, used)}
	}
	return budget(c.Name(), float64(used), float64(c.Limit),
		fmt.Sprintf("expected at most %d tokens; the run used %d (agent %d, subagents %d)", c.Limit, used, agentTokens, subTokens))
}

// MaxCostCheck passes when the run cost at most LimitUSD. An unknown cost fails.
type MaxCostCheck struct {
	LimitUSD float64 `json:"limit_usd"`
}

// Kind implements Check.
func (c *MaxCostCheck) Kind() string { return KindMaxCostUSD }

// Name implements Check.
func (c *MaxCostCheck) Name() string {
	return KindMaxCostUSD + "(" + strconv.FormatFloat(c.LimitUSD, 'f', -1, 64) + ")"
}

// Evaluate implements Check.
func (c *MaxCostCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	limit := strconv.FormatFloat(c.LimitUSD, 'f', -1, 64)
	if rec.CostUSD == nil {
		return CheckVerdict{Name: c.Name(),
			Detail: fmt.Sprintf("expected at most $%s; the run's cost is unknown (no price for its model)", limit)}
	}
	return budget(c.Name(), *rec.CostUSD, c.LimitUSD,
		fmt.Sprintf("expected at most $%s; the run cost $%s", limit, strconv.FormatFloat(*rec.CostUSD, 'f', 6, 64)))
}

// budget passes when used ≤ limit; over budget, the score is limit/used.
func budget(name string, used, limit float64, detail string) CheckVerdict {
	res := CheckVerdict{Name: name, Detail: detail}
	res.Passed = used <= limit
	switch {
	case res.Passed:
		res.Score = 1
	case used > 0:
		res.Score = limit / used
	}
	return res
}

// NoErrorCheck passes when the run finished without an error.
type NoErrorCheck struct{}

// Kind implements Check.
func (NoErrorCheck) Kind() string { return KindNoError }

// Name implements Check.
func (NoErrorCheck) Name() string { return KindNoError }

// Evaluate implements Check.
func (NoErrorCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: KindNoError}
	if rec.Err == nil {
		res.Passed, res.Score = true, 1
		res.Detail = "expected the run to finish without an error; it did"
		return res
	}
	res.Detail = "expected the run to finish without an error; it failed: " + rec.Err.Error()
	return res
}
