package rubrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// More check kinds, as written in suite files.
const (
	KindNot           = "not"
	KindAssistantText = "assistant_text"
	KindToolResult    = "tool_result"
	KindState         = "state"
	KindFileEquals    = "file_equals"
	KindFileAbsent    = "file_absent"
	KindFileExcludes  = "file_excludes"
	KindTurns         = "turns"
	KindToolCallCount = "tool_call_count"
	KindSameTurn      = "same_turn"
	KindScript        = "script"
)

// Match modes of the checks that read many texts.
const (
	MatchAny = "any"
	MatchAll = "all"
)

// ToolRef is a tool name a check or a mock names, with the key it is
// written at, so that validation can say where a misspelled name is.
type ToolRef struct {
	Name string
	Key  string
}

// ToolNamer is a check that names tools. Validation compares the names
// with the tools the assembled agent has, since a check of a tool the
// agent lacks (tool_not_called: serach) passes without checking anything.
type ToolNamer interface {
	ToolRefs() []ToolRef
}

// ToolRefsOf returns the tool names a check names ("*" excluded).
func ToolRefsOf(c Check) []ToolRef {
	if n, ok := c.(ToolNamer); ok {
		return n.ToolRefs()
	}
	return nil
}

func (m CallMatcher) refs() []ToolRef {
	var out []ToolRef
	if m.Name != "*" {
		out = append(out, ToolRef{Name: m.Name, Key: m.at})
	}
	if m.Subagent != nil {
		out = append(out, m.Subagent.ToolRefs()...)
	}
	return out
}

func matcherRefs(ms []CallMatcher) []ToolRef {
	var out []ToolRef
	for _, m := range ms {
		out = append(out, m.refs()...)
	}
	return out
}

// ToolRefs implements ToolNamer.
func (c *ToolCalledCheck) ToolRefs() []ToolRef { return c.Call.refs() }

// ToolRefs implements ToolNamer.
func (c *ToolNotCalledCheck) ToolRefs() []ToolRef { return c.Call.refs() }

// ToolRefs implements ToolNamer.
func (c *TrajectoryCheck) ToolRefs() []ToolRef { return matcherRefs(c.Calls) }

// ToolRefs implements ToolNamer.
func (c *SameTurnCheck) ToolRefs() []ToolRef { return matcherRefs(c.Calls) }

// ToolRefs implements ToolNamer.
func (c *ToolResultCheck) ToolRefs() []ToolRef {
	if c.Tool == "" {
		return nil
	}
	return []ToolRef{{Name: c.Tool, Key: c.toolAt}}
}

// ToolRefs implements ToolNamer.
func (c *ToolCallCountCheck) ToolRefs() []ToolRef {
	if c.Tool == "" {
		return nil
	}
	return []ToolRef{{Name: c.Tool, Key: c.toolAt}}
}

// NonGating makes a check informational: its verdict is reported, marked
// gating: false, and never fails its cell, counts in its score or moves
// the compare gate.
func NonGating(c Check) Check {
	if _, ok := c.(nonGating); ok {
		return c
	}
	return nonGating{c}
}

// IsGating reports whether a check decides its cell.
func IsGating(c Check) bool {
	_, ng := c.(nonGating)
	return !ng
}

type nonGating struct{ Check }

func (c nonGating) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	v := c.Check.Evaluate(ctx, rec)
	v.Informational = true
	return v
}

func (c nonGating) ToolRefs() []ToolRef { return ToolRefsOf(c.Check) }

// Unwrap returns the check made informational.
func (c nonGating) Unwrap() Check { return c.Check }

// NotCheck passes when its check fails: promptfoo's not- prefix for any
// check. Its score is one minus the check's.
type NotCheck struct {
	Check Check
}

// Kind implements Check.
func (c *NotCheck) Kind() string { return KindNot }

// Name implements Check.
func (c *NotCheck) Name() string { return "not(" + c.Check.Name() + ")" }

// ToolRefs implements ToolNamer.
func (c *NotCheck) ToolRefs() []ToolRef { return ToolRefsOf(c.Check) }

// Evaluate implements Check.
func (c *NotCheck) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	v := c.Check.Evaluate(ctx, rec)
	if strings.HasPrefix(v.Detail, "invalid check: ") {
		return CheckVerdict{Name: c.Name(), Detail: v.Detail}
	}
	res := CheckVerdict{Name: c.Name(), Passed: !v.Passed, Score: 1 - v.Score}
	if res.Passed {
		res.Detail = "as expected, the negated check fails: " + v.Detail
	} else {
		res.Detail = "the negated check holds: " + v.Detail
	}
	return res
}

// matchTexts applies m to each text: with MatchAll every text must pass
// (and there must be one), with MatchAny one must. The score is the share
// of texts that pass (all), or the best text's (any).
func matchTexts(m *TextMatch, mode string, texts []string, what string) (bool, float64, string) {
	if len(texts) == 0 {
		return false, 0, "there is no " + what
	}
	best, passing := 0.0, 0
	var firstFail string
	bestAt := -1
	for i, t := range texts {
		held, total, failed := m.match(t)
		s := ratio(held, total)
		if held == total {
			passing++
		} else if firstFail == "" {
			firstFail = fmt.Sprintf("%s %d of %d %s %s", what, i+1, len(texts), quoteShort(t), strings.Join(failed, "; "))
		}
		if s > best || bestAt < 0 {
			best, bestAt = s, i
		}
	}
	if mode == MatchAll {
		ok := passing == len(texts)
		if ok {
			return true, 1, fmt.Sprintf("every %s (%d) meets the conditions", what, len(texts))
		}
		return false, ratio(passing, len(texts)), fmt.Sprintf("%d of %d meet the conditions; %s", passing, len(texts), firstFail)
	}
	if passing > 0 {
		return true, 1, fmt.Sprintf("%d of %d meet the conditions", passing, len(texts))
	}
	return false, best, fmt.Sprintf("none of %d meets the conditions; %s", len(texts), firstFail)
}

func checkMode(mode string) error {
	switch mode {
	case "", MatchAny, MatchAll:
		return nil
	}
	return fmt.Errorf("match must be %s or %s, got %q", MatchAny, MatchAll, mode)
}

// AssistantTextCheck applies text conditions to every non-empty text the
// root agent said in the run: with Match any (the default) one must meet
// them, with all every one must.
type AssistantTextCheck struct {
	TextMatch
	Match string `json:"match,omitempty"`
}

// Kind implements Check.
func (c *AssistantTextCheck) Kind() string { return KindAssistantText }

// Name implements Check.
func (c *AssistantTextCheck) Name() string {
	return KindAssistantText + "(" + defaultMode(c.Match) + ")"
}

func defaultMode(m string) string {
	if m == "" {
		return MatchAny
	}
	return m
}

// Validate checks the conditions and the mode.
func (c *AssistantTextCheck) Validate() error {
	if err := c.TextMatch.Validate(); err != nil {
		return errors.New("assistant_text " + err.Error())
	}
	return checkMode(c.Match)
}

// Evaluate implements Check.
func (c *AssistantTextCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	res.Passed, res.Score, res.Detail = matchTexts(&c.TextMatch, defaultMode(c.Match), rec.AssistantTexts(), "assistant text")
	return res
}

// ToolResultCheck applies text conditions to the results of the run's
// tool calls (of Tool only, when set; in the runs Agent scopes, as in
// ToolCalledCheck): with Match any (the default) one must meet them, with
// all every one must.
type ToolResultCheck struct {
	TextMatch
	Tool  string `json:"tool,omitempty"`
	Agent string `json:"agent,omitempty"`
	Match string `json:"match,omitempty"`

	toolAt string
}

// Kind implements Check.
func (c *ToolResultCheck) Kind() string { return KindToolResult }

// Name implements Check.
func (c *ToolResultCheck) Name() string {
	t := c.Tool
	if t == "" {
		t = "*"
	}
	return scopedName(KindToolResult, t+", "+defaultMode(c.Match), c.Agent)
}

// Validate checks the conditions and the mode.
func (c *ToolResultCheck) Validate() error {
	if err := c.TextMatch.Validate(); err != nil {
		return errors.New("tool_result " + err.Error())
	}
	return checkMode(c.Match)
}

// Evaluate implements Check.
func (c *ToolResultCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	calls, _ := scopedCalls(rec, c.Agent)
	var texts []string
	for _, call := range calls {
		if c.Tool == "" || call.Name == c.Tool {
			texts = append(texts, call.Result)
		}
	}
	what := "tool result"
	if c.Tool != "" {
		what = "result of " + c.Tool
	}
	res.Passed, res.Score, res.Detail = matchTexts(&c.TextMatch, defaultMode(c.Match), texts, what)
	return res
}

// StateCheck checks one value of the agent's final state, read as the JSON
// document {"todos": […], "values": {…}, "structured_response": …}: values
// holds what middleware keep in state (for example _summarization_event
// once a conversation was summarized). The path must exist; Equals and
// Regex, when set, must hold for its value.
type StateCheck struct {
	PathMatch
}

// Kind implements Check.
func (c *StateCheck) Kind() string { return KindState }

// Name implements Check.
func (c *StateCheck) Name() string { return KindState + "(" + c.Path + ")" }

// StateDocument is the agent's final state as state checks and code
// assertions read it.
func (r *Record) StateDocument() map[string]any {
	doc := map[string]any{"todos": []any{}, "values": map[string]any{}}
	if r.Todos != nil {
		var v any
		raw, _ := json.Marshal(r.Todos)
		_ = json.Unmarshal(raw, &v)
		doc["todos"] = v
	}
	vals := map[string]any{}
	for k, raw := range r.Values {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			vals[k] = v
		}
	}
	doc["values"] = vals
	if len(r.StructuredResponse) > 0 {
		var v any
		if json.Unmarshal(r.StructuredResponse, &v) == nil {
			doc["structured_response"] = v
		}
	}
	return doc
}

// Evaluate implements Check.
func (c *StateCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	m := ArgsMatcher{Paths: []PathMatch{c.PathMatch}}
	if err := m.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	raw, _ := json.Marshal(rec.StateDocument())
	ok, why := m.Match(raw)
	res.Passed, res.Score = ok, boolScore(ok)
	want := strings.TrimPrefix(m.String(), c.Path+" ")
	if ok {
		res.Detail = fmt.Sprintf("expected state %s %s; it is", c.Path, want)
		return res
	}
	segs, _ := parsePath(c.Path)
	var doc any
	_ = json.Unmarshal(raw, &doc)
	if v, found := lookup(doc, segs); found {
		b, _ := json.Marshal(v)
		res.Detail = fmt.Sprintf("expected state %s %s; %s (it is %s)", c.Path, want, why, quoteShort(string(b)))
	} else {
		res.Detail = fmt.Sprintf("expected state %s %s; %s", c.Path, want, why)
	}
	return res
}

// FileEqualsCheck passes when the file holds exactly Content.
type FileEqualsCheck struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Kind implements Check.
func (c *FileEqualsCheck) Kind() string { return KindFileEquals }

// Name implements Check.
func (c *FileEqualsCheck) Name() string { return KindFileEquals + "(" + c.Path + ")" }

// Evaluate implements Check.
func (c *FileEqualsCheck) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	content, err := readFile(ctx, rec, c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Detail = fmt.Sprintf("expected %s to hold %s; it does not exist", c.Path, quoteShort(c.Content))
	case err != nil:
		res.Detail = fmt.Sprintf("expected %s to hold %s; it could not be read: %v", c.Path, quoteShort(c.Content), err)
	case content == c.Content:
		res.Passed, res.Score = true, 1
		res.Detail = fmt.Sprintf("%s holds exactly the expected %d bytes", c.Path, len(content))
	default:
		res.Detail = fmt.Sprintf("expected %s to hold %s; it holds %s", c.Path, quoteShort(c.Content), quoteShort(content))
	}
	return res
}

// FileAbsentCheck passes when the file does not exist after the run.
type FileAbsentCheck struct {
	Path string `json:"path"`
}

// Kind implements Check.
func (c *FileAbsentCheck) Kind() string { return KindFileAbsent }

// Name implements Check.
func (c *FileAbsentCheck) Name() string { return KindFileAbsent + "(" + c.Path + ")" }

// Evaluate implements Check.
func (c *FileAbsentCheck) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	_, err := readFile(ctx, rec, c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Passed, res.Score = true, 1
		res.Detail = fmt.Sprintf("expected %s not to exist; it does not", c.Path)
	case err != nil:
		res.Detail = fmt.Sprintf("expected %s not to exist; it could not be looked for: %v", c.Path, err)
	default:
		res.Detail = fmt.Sprintf("expected %s not to exist; it does", c.Path)
	}
	return res
}

// FileExcludesCheck passes when the file does not hold any of the texts; a
// file that does not exist holds none (Deep Agents' file_excludes).
type FileExcludesCheck struct {
	Path string   `json:"path"`
	Text []string `json:"text"`
}

// Kind implements Check.
func (c *FileExcludesCheck) Kind() string { return KindFileExcludes }

// Name implements Check.
func (c *FileExcludesCheck) Name() string { return KindFileExcludes + "(" + c.Path + ")" }

// Evaluate implements Check.
func (c *FileExcludesCheck) Evaluate(ctx context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	content, err := readFile(ctx, rec, c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Passed, res.Score = true, 1
		res.Detail = fmt.Sprintf("%s does not exist, so it holds none of %s", c.Path, quoteList(c.Text))
		return res
	case err != nil:
		res.Detail = fmt.Sprintf("expected %s to hold none of %s; it could not be read: %v", c.Path, quoteList(c.Text), err)
		return res
	}
	var found []string
	for _, t := range c.Text {
		if strings.Contains(content, t) {
			found = append(found, fmt.Sprintf("%q", t))
		}
	}
	res.Score = 1 - ratio(len(found), len(c.Text))
	res.Passed = len(found) == 0
	if res.Passed {
		res.Detail = fmt.Sprintf("%s holds none of %s", c.Path, quoteList(c.Text))
	} else {
		res.Detail = fmt.Sprintf("%s holds %s; its content is %s", c.Path, strings.Join(found, ", "), quoteShort(content))
	}
	return res
}

// Bounds is a count's allowed range: Min ≤ n ≤ Max, with a negative Max
// meaning no upper bound; Min == Max is an exact count (0 included).
type Bounds struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// NoMax is Bounds.Max for a range without an upper bound.
const NoMax = -1

func (b Bounds) holds(n int) bool { return n >= b.Min && (b.Max < 0 || n <= b.Max) }

func (b Bounds) String() string {
	switch {
	case b.Max < 0:
		return fmt.Sprintf("at least %d", b.Min)
	case b.Min == b.Max:
		return fmt.Sprintf("exactly %d", b.Min)
	case b.Min == 0:
		return fmt.Sprintf("at most %d", b.Max)
	}
	return fmt.Sprintf("between %d and %d", b.Min, b.Max)
}

// score is 1 within bounds, else the share of the way: n/min below,
// max/n above (0 when none were allowed).
func (b Bounds) score(n int) float64 {
	switch {
	case b.holds(n):
		return 1
	case n < b.Min:
		return ratio(n, b.Min)
	}
	return float64(b.Max) / float64(n)
}

func (b Bounds) validate() error {
	if b.Min < 0 {
		return errors.New("counts cannot be negative")
	}
	if b.Max >= 0 && b.Max < b.Min {
		return fmt.Errorf("max (%d) is below min (%d)", b.Max, b.Min)
	}
	if b.Min == 0 && b.Max < 0 {
		return errors.New("at least 0 checks nothing: give a count, a min or a max")
	}
	return nil
}

// TurnsCheck bounds the root agent's model turns (its answers) in the run:
// Deep Agents' agent_steps, which counts AI messages. It is not max_steps,
// which also counts tool steps.
type TurnsCheck struct {
	Bounds
}

// Kind implements Check.
func (c *TurnsCheck) Kind() string { return KindTurns }

// Name implements Check.
func (c *TurnsCheck) Name() string { return KindTurns + "(" + c.Bounds.String() + ")" }

// Evaluate implements Check.
func (c *TurnsCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	n := rec.Turns()
	res.Passed, res.Score = c.holds(n), c.score(n)
	res.Detail = fmt.Sprintf("expected %s model turns; the agent took %d", c.Bounds.String(), n)
	return res
}

// ToolCallCountCheck bounds how many tool calls the runs Agent scopes made
// (the root agent's by default: Deep Agents' tool_call_requests), of Tool
// only when set.
type ToolCallCountCheck struct {
	Bounds
	Tool  string `json:"tool,omitempty"`
	Agent string `json:"agent,omitempty"`

	toolAt string
}

// Kind implements Check.
func (c *ToolCallCountCheck) Kind() string { return KindToolCallCount }

// Name implements Check.
func (c *ToolCallCountCheck) Name() string {
	name := KindToolCallCount + "(" + c.Bounds.String()
	if c.Tool != "" {
		name += " " + c.Tool
	}
	if c.Agent != "" && c.Agent != ScopeMain {
		name += " @" + c.Agent
	}
	return name + ")"
}

func (c *ToolCallCountCheck) scope() string {
	if c.Agent == "" {
		return ScopeMain
	}
	return c.Agent
}

// Evaluate implements Check.
func (c *ToolCallCountCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	calls, _ := scopedCalls(rec, c.scope())
	n := 0
	for _, call := range calls {
		if c.Tool == "" || call.Name == c.Tool {
			n++
		}
	}
	what := "tool calls"
	if c.Tool != "" {
		what = "calls of " + c.Tool
	}
	res.Passed, res.Score = c.holds(n), c.score(n)
	res.Detail = fmt.Sprintf("expected %s %s %s; found %d: %s", c.Bounds.String(), what, scopeText(c.scope()), n, namesText(calls))
	return res
}

// SameTurnCheck passes when one model turn of the run requested calls
// matching every matcher, each a different call: calls made in parallel.
// Turn, when set, pins that turn (1 is the first model answer).
type SameTurnCheck struct {
	Calls []CallMatcher `json:"calls"`
	Turn  int           `json:"turn,omitempty"`
	Agent string        `json:"agent,omitempty"`
}

// Kind implements Check.
func (c *SameTurnCheck) Kind() string { return KindSameTurn }

// Name implements Check.
func (c *SameTurnCheck) Name() string {
	name := KindSameTurn
	if c.Turn > 0 {
		name = fmt.Sprintf("%s(turn %d)", name, c.Turn)
	}
	if c.Agent != "" && c.Agent != ScopeMain {
		name += " @" + c.Agent
	}
	return name
}

// Validate checks the matchers.
func (c *SameTurnCheck) Validate() error {
	if len(c.Calls) < 2 {
		return errors.New("same_turn needs at least two calls")
	}
	for i, m := range c.Calls {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("calls[%d]: %w", i, err)
		}
	}
	if c.Turn < 0 {
		return errors.New("turn cannot be negative")
	}
	return nil
}

// Evaluate implements Check.
func (c *SameTurnCheck) Evaluate(_ context.Context, rec *Record) CheckVerdict {
	res := CheckVerdict{Name: c.Name()}
	if err := c.Validate(); err != nil {
		res.Detail = "invalid check: " + err.Error()
		return res
	}
	scope := c.Agent
	if scope == "" {
		scope = ScopeMain
	}
	calls, paths := scopedCalls(rec, scope)
	type turnKey struct {
		path string
		turn int
	}
	var order []turnKey
	byTurn := map[turnKey][]ToolCall{}
	for i, call := range calls {
		k := turnKey{paths[i], call.Turn}
		if _, seen := byTurn[k]; !seen {
			order = append(order, k)
		}
		byTurn[k] = append(byTurn[k], call)
	}
	best, bestAt := 0, -1
	for i, k := range order {
		if c.Turn > 0 && k.turn != c.Turn {
			continue
		}
		m, _, _ := maxMatching(len(c.Calls), len(byTurn[k]), matchTable(c.Calls, byTurn[k]))
		if m > best || bestAt < 0 {
			best, bestAt = m, i
		}
		if m == len(c.Calls) {
			res.Passed, res.Score = true, 1
			res.Detail = fmt.Sprintf("turn %d requested [%s] together: %s", k.turn, matchersText(c.Calls), callsText(byTurn[k]))
			return res
		}
	}
	res.Score = ratio(best, len(c.Calls))
	where := "no turn"
	if c.Turn > 0 {
		where = fmt.Sprintf("turn %d", c.Turn)
	}
	var turns []string
	for _, k := range order {
		turns = append(turns, fmt.Sprintf("turn %d: %s", k.turn, callsText(byTurn[k])))
	}
	if len(turns) == 0 {
		turns = []string{"no tool calls"}
	}
	res.Detail = fmt.Sprintf("expected one turn to request [%s] together; %s did (best: %d of %d); %s",
		matchersText(c.Calls), where, best, len(c.Calls), strings.Join(limitStrings(turns, 6), "; "))
	return res
}

func limitStrings(ss []string, n int) []string {
	if len(ss) <= n {
		return ss
	}
	return append(slices.Clone(ss[:n]), fmt.Sprintf("and %d more", len(ss)-n))
}
