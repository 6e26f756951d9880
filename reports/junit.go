package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dageval/dageval/evals"
)

// JUnit XML, in the shape CI systems (GitHub test reporters, GitLab,
// Jenkins) read: first a "verdict" <testsuite> whose one <testcase> is the
// run's own verdict, headline included (a <failure> when the thresholds do
// not hold, an <error> typed by the deciding cause when cells errored), so
// a CI viewer shows why the run failed and not only which cells did; then
// one <testsuite> per model × profile and one <testcase> per cell. A failed
// cell is a <failure>, an errored or missing cell an <error> typed by its
// cause, since neither could be judged.
//
// A run that passed although some cells did not (its thresholds hold, or
// errors were tolerated) writes those cells as <skipped>, with the reason
// the cell did not pass and why the run passed anyway in the message and
// the cell's status in its properties. The choice: a test reporter colours
// the check by its failures, and a red check on a run that dageval and its
// exit code call passed tells the reviewer something false about the gate;
// skipped keeps every failing cell listed, with its reason, without
// claiming the run failed.
//
// Times are model latency, recorded when replayed (so two replays give
// the same bytes): a testcase's time is its cell's when every model call
// was timed, a testsuite's and the document's the sum over such cells, and
// each is left out when no cell's time is known; wall time would make
// replays differ. Class names keep letters, digits, "-" and "_" of the
// model and profile ("dageval.openai_gpt-4_1.terse"), since viewers split
// them at dots and some choke on other characters; the exact names are in
// the properties.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitProblem   `xml:"failure,omitempty"`
	Error      *junitProblem   `xml:"error,omitempty"`
	Skipped    *junitProblem   `xml:"skipped,omitempty"`
	SystemOut  *junitText      `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// seconds formats milliseconds as JUnit's seconds.
func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// junitText keeps multi-line output readable in the file.
type junitText struct {
	Text string `xml:",cdata"`
}

func f6(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// tokenProps lists token counts as properties; with skipZero, roles that
// spent nothing are left out to keep per-cell properties short.
func tokenProps(prefix string, t Tokens, skipZero bool) []junitProperty {
	var ps []junitProperty
	for _, rc := range roleCounts(t) {
		c := rc.Tokens
		if skipZero && c.total() == 0 {
			continue
		}
		ps = append(ps,
			junitProperty{prefix + rc.Role + ".input_tokens", strconv.Itoa(c.Input)},
			junitProperty{prefix + rc.Role + ".output_tokens", strconv.Itoa(c.Output)},
			junitProperty{prefix + rc.Role + ".cache_read_tokens", strconv.Itoa(c.CacheRead)},
			junitProperty{prefix + rc.Role + ".cache_write_tokens", strconv.Itoa(c.CacheWrite)},
		)
		if c.UnknownCalls > 0 {
			ps = append(ps, junitProperty{prefix + rc.Role + ".unknown_usage_calls", strconv.Itoa(c.UnknownCalls)})
		}
	}
	return ps
}

// latencyProps lists a cell's latency as properties; none when unknown.
func latencyProps(l *Latency) []junitProperty {
	if l == nil {
		return nil
	}
	ps := []junitProperty{{"latency.model_ms", strconv.FormatInt(l.ModelMS, 10)}, {"latency.calls_timed", strconv.Itoa(l.Timed)}, {"latency.calls", strconv.Itoa(l.Calls)}}
	if l.FirstEventMS > 0 {
		ps = append(ps, junitProperty{"latency.first_event_ms", strconv.FormatInt(l.FirstEventMS, 10)})
	}
	return append(ps, junitProperty{"latency.recorded", strconv.FormatBool(l.Recorded)})
}

// groupLatencyProps lists a group's latency as properties; none when unknown.
func groupLatencyProps(l *GroupLatency) []junitProperty {
	if l == nil {
		return nil
	}
	ps := []junitProperty{{"latency.cells_timed", strconv.Itoa(l.Cells)}, {"latency.mean_ms", strconv.FormatInt(l.MeanMS, 10)},
		{"latency.p50_ms", strconv.FormatInt(l.P50MS, 10)}, {"latency.p95_ms", strconv.FormatInt(l.P95MS, 10)}}
	if l.FirstEventMS > 0 {
		ps = append(ps, junitProperty{"latency.first_event_ms", strconv.FormatInt(l.FirstEventMS, 10)})
	}
	return append(ps, junitProperty{"latency.recorded", strconv.FormatBool(l.Recorded)})
}

// WriteJUnit writes the report as JUnit XML.
func (rep *Report) WriteJUnit(w io.Writer) error {
	doc := junitSuites{Name: "dageval " + rep.Suite}
	failing := map[string]FailingCell{}
	for _, f := range rep.Failing {
		failing[f.ID] = f
	}
	missing := map[[2]string][]evals.CellKey{}
	for _, m := range rep.Missing {
		k := [2]string{m.Model, m.Profile}
		missing[k] = append(missing[k], m)
	}
	doc.Suites = append(doc.Suites, rep.junitVerdict())
	doc.Tests, doc.Failures, doc.Errors = 1, doc.Suites[0].Failures, doc.Suites[0].Errors
	// passedAnyway: the run passed, so its failing cells are skipped (see above).
	passedAnyway := rep.Verdict.Passed
	var docMS int64
	docTimed := false
	for _, g := range rep.Groups {
		s := junitSuite{Name: g.Model + " × " + g.Profile}
		s.Properties = append([]junitProperty{
			{"model", g.Model}, {"profile", g.Profile},
			{"pass_rate", f6(g.PassRate)}, {"ci95_low", f6(g.CI95[0])}, {"ci95_high", f6(g.CI95[1])},
			{"mean_score", f6(g.MeanScore)}, {"k", strconv.Itoa(g.K)},
			{"pass_at_k", f6(g.PassAtK)}, {"pass_hat_k", f6(g.PassHatK)},
			{"cost_usd", f6(g.CostUSD)}, {"cost_known", strconv.FormatBool(g.CostKnown)},
		}, tokenProps("tokens.", g.Tokens, false)...)
		s.Properties = append(s.Properties, groupLatencyProps(g.Latency)...)
		classname := junitClass(g.Model, g.Profile)
		var suiteMS int64
		suiteTimed := false
		for _, c := range rep.Cells {
			if c.Model != g.Model || c.Profile != g.Profile {
				continue
			}
			tc := junitCase{Name: fmt.Sprintf("%s [epoch %d]", c.Case, c.Epoch), Classname: classname}
			tc.Properties = append([]junitProperty{
				{"id", c.ID}, {"status", c.Status}, {"score", f6(c.Score)}, {"steps", strconv.Itoa(c.Steps)},
				{"cost_usd", f6(c.CostUSD)}, {"cost_known", strconv.FormatBool(c.CostKnown)},
			}, tokenProps("tokens.", c.Tokens, true)...)
			tc.Properties = append(tc.Properties, latencyProps(c.Latency)...)
			if l := c.Latency; l.Known() {
				tc.Time = seconds(l.ModelMS)
				suiteMS += l.ModelMS
				suiteTimed = true
			}
			info := 0
			for _, ch := range c.Checks {
				if !ch.Gating() && !ch.Passed {
					info++
				}
			}
			if info > 0 {
				tc.Properties = append(tc.Properties, junitProperty{"informational_not_held", strconv.Itoa(info)})
			}
			tc.SystemOut = &junitText{cellSystemOut(c)}
			if f, bad := failing[c.ID]; bad {
				p := &junitProblem{Type: f.Status, Message: failureMessage(f), Text: failureText(f)}
				if f.Cause != "" {
					p.Type = f.Cause
				}
				switch {
				case passedAnyway:
					// JUnit's <skipped> has a message only; the status is a property.
					p.Message, p.Type = rep.passedAnyway(f)+": "+p.Message, ""
					tc.Skipped = p
					s.Skipped++
				case c.Status == "error":
					tc.Error = p
					s.Errors++
				default:
					tc.Failure = p
					s.Failures++
				}
			}
			s.Cases = append(s.Cases, tc)
		}
		for _, m := range missing[[2]string{g.Model, g.Profile}] {
			tc := junitCase{Name: fmt.Sprintf("%s [epoch %d]", m.Case, m.Epoch), Classname: classname}
			p := &junitProblem{Type: string(evals.CauseMissing), Message: "no result: the cell did not run to completion", Text: "A missing cell cannot be judged."}
			if passedAnyway {
				p.Message, p.Type = "missing (tolerated; the run passed): "+p.Message, ""
				tc.Skipped = p
				s.Skipped++
			} else {
				tc.Error = p
				s.Errors++
			}
			s.Cases = append(s.Cases, tc)
		}
		if suiteTimed {
			s.Time = seconds(suiteMS)
			docMS += suiteMS
			docTimed = true
		}
		s.Tests = len(s.Cases)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	if docTimed {
		doc.Time = seconds(docMS)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitVerdict is the suite holding the run's verdict as one test case.
func (rep *Report) junitVerdict() junitSuite {
	s := junitSuite{Name: "verdict", Tests: 1, Properties: []junitProperty{{"outcome", rep.Verdict.Outcome}}}
	for _, c := range rep.Verdict.Causes {
		s.Properties = append(s.Properties, junitProperty{"errored." + string(c.Cause), strconv.Itoa(c.Cells)})
	}
	tc := junitCase{Name: "suite " + rep.Suite, Classname: "dageval.verdict", Properties: s.Properties}
	text := rep.headline() + "\n"
	for _, r := range rep.moreReasons() {
		text += "- " + r + "\n"
	}
	switch {
	case rep.Verdict.Outcome == string(evals.OutcomeErrored):
		typ := string(evals.CauseUnknown)
		if len(rep.Verdict.Causes) > 0 {
			typ = string(rep.Verdict.Causes[0].Cause)
		}
		tc.Error = &junitProblem{Type: typ, Message: rep.headline(), Text: text}
		s.Errors = 1
	case !rep.Verdict.Passed:
		tc.Failure = &junitProblem{Type: "thresholds", Message: rep.headline(), Text: text}
		s.Failures = 1
	default:
		if n := len(rep.Failing) + len(rep.Missing); n > 0 {
			text += fmt.Sprintf("%s did not pass, but the run did, so they are reported as skipped, each with its reason.\n", plural(n, "cell", "cells"))
		}
		tc.SystemOut = &junitText{text}
	}
	s.Cases = []junitCase{tc}
	return s
}

// passedAnyway says why a cell that did not pass is skipped: the run passed
// by its thresholds, or its errors were tolerated.
func (rep *Report) passedAnyway(f FailingCell) string {
	if f.Status == string(evals.StatusError) {
		return "errored (tolerated; the run passed)"
	}
	if rep.Thresholds != nil {
		return "failed within the suite's thresholds (the run passed)"
	}
	return "failed (the run passed)"
}

// junitClass makes a dotted class name, which CI viewers group by and
// split at its dots: dageval, the model, the profile.
func junitClass(model, profile string) string {
	return "dageval." + classPart(model) + "." + classPart(profile)
}

// classPart keeps letters, digits, "-" and "_", and writes "_" for the rest.
func classPart(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

func failureMessage(f FailingCell) string {
	if f.Error != "" {
		return firstLine(f.Error)
	}
	var parts []string
	if n := len(f.Gaps); n > 0 {
		parts = append(parts, fmt.Sprintf("rubric %s: %s", f.RubricResult, plural(n, "criterion not met", "criteria not met")))
	}
	if n := len(f.FailedChecks); n > 0 {
		parts = append(parts, plural(n, "check failed", "checks failed"))
	}
	if len(parts) == 0 {
		return "failed with score " + score(f.Score)
	}
	return strings.Join(parts, "; ")
}

func failureText(f FailingCell) string {
	var b strings.Builder
	if f.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", f.Error)
	}
	for _, g := range f.Gaps {
		fmt.Fprintf(&b, "rubric criterion %s: %s\n", g.Criterion, g.Gap)
	}
	for _, c := range f.FailedChecks {
		fmt.Fprintf(&b, "check %s: %s\n", c.Name, c.Detail)
	}
	return b.String()
}

func cellSystemOut(c Cell) string {
	var b strings.Builder
	fmt.Fprintf(&b, "score %s, %d steps, cost %s\n", score(c.Score), c.Steps, usd(c.CostUSD, c.CostKnown))
	if len(c.ToolCalls) > 0 {
		fmt.Fprintf(&b, "tool calls: %s\n", strings.Join(c.ToolCalls, ", "))
	}
	for _, rc := range roleCounts(c.Tokens) {
		t := rc.Tokens
		switch {
		case t.UnknownCalls > 0:
			fmt.Fprintf(&b, "tokens %s: %s in, %s out, %s cache read, %s cache write (%s reported no usage)\n", rc.Role,
				count(t.Input, t.UnknownCalls), count(t.Output, t.UnknownCalls), count(t.CacheRead, t.UnknownCalls), count(t.CacheWrite, t.UnknownCalls),
				plural(t.UnknownCalls, "call", "calls"))
		case t.total() > 0:
			fmt.Fprintf(&b, "tokens %s: %d in, %d out, %d cache read, %d cache write\n", rc.Role, t.Input, t.Output, t.CacheRead, t.CacheWrite)
		}
	}
	if l := c.Latency; l != nil {
		fmt.Fprintf(&b, "latency: %s model time over %d of %d calls, first event %s\n", cellLatency(l), l.Timed, l.Calls, firstEvent(l.FirstEventMS))
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	for _, ch := range c.Checks {
		if !ch.Gating() {
			mark := "held"
			if !ch.Passed {
				mark = "did not hold"
			}
			fmt.Fprintf(&b, "informational check (not gating) %s %s: %s\n", ch.Name, mark, ch.Detail)
		}
	}
	return b.String()
}
