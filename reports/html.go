package reports

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
)

//go:embed html/report.html.tmpl html/report.css html/report.js
var htmlFS embed.FS

// htmlTemplate is parsed on first use, not at program start: most runs of the
// CLI write no HTML.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
		"pct":       pct,
		"score":     score,
		"usd":       usd,
		"thousands": thousands,
		"join":      strings.Join,
		"firstLine": firstLine,
		"difflines": diffLines,
		"plural":    plural,
		"inc":       func(i int) int { return i + 1 },
		"ci":        func(c [2]float64) string { return ci(c[0], c[1]) },
		"tokens": func(c TokenCount) string {
			return count(c.Input, c.UnknownCalls) + " / " + count(c.Output, c.UnknownCalls)
		},
		"count":    func(n int, c TokenCount) string { return count(n, c.UnknownCalls) },
		"glatency": groupLatency,
		"clatency": cellLatency,
		"first":    firstEvent,
		"gating":   func(cs Checks) Checks { return checksWhere(cs, true) },
		"info":     func(cs Checks) Checks { return checksWhere(cs, false) },
		"infoNotHeld": func(cs Checks) int {
			n := 0
			for _, c := range checksWhere(cs, false) {
				if !c.Passed {
					n++
				}
			}
			return n
		},
	}).ParseFS(htmlFS, "html/report.html.tmpl"))
})

// checksWhere keeps the checks that gate (gating) or the informational ones.
func checksWhere(cs Checks, gating bool) Checks {
	var out Checks
	for _, c := range cs {
		if c.Gating() == gating {
			out = append(out, c)
		}
	}
	return out
}

type htmlPage struct {
	R           *Report
	Headline    string
	MoreReasons []string
	CSS         template.CSS
	JS          template.JS
	Profiles    []string
	Models      []string
	Tags        []string
	Matrix      []htmlMatrixRow
	Groups      []htmlGroup
	Cells       []htmlCell
	CostUnknown bool
	CostNote    string
	// UsageNote explains ≥ and unknown token counts when some call
	// reported no usage; empty otherwise.
	UsageNote string
	PassChart template.HTML
	CostChart template.HTML
	Legend    []htmlLegend
	Cases     htmlCases
	Agents    []htmlAgent
	// Failing counts the cells that did not pass, for the toolbar.
	Failing int
}

type htmlMatrixRow struct {
	Model string
	Cells []*htmlTile // one per profile; nil when the pair was not run
}

// htmlTile is a model × profile in the summary grid.
type htmlTile struct {
	G     *Group
	Class string
}

type htmlGroup struct {
	G     Group
	Total bool
}

type htmlLegend struct {
	N              int
	Class          string
	Model, Profile string
}

// htmlCases is the case × (model, profile) matrix.
type htmlCases struct {
	Heads []htmlHead
	Cols  []htmlCol
	Rows  []htmlCaseRow
}

type htmlHead struct {
	Model string
	Span  int
}

type htmlCol struct{ Model, Profile string }

type htmlCaseRow struct {
	Case  string
	Tags  string
	Score string // mean score of its cells, for sorting
	Cost  string // their summed cost, for sorting
	Cells []htmlMCell
}

// htmlMCell is one case under one model × profile: a pip per epoch.
type htmlMCell struct {
	Model   string
	Profile string
	Ran     bool
	Status  string // the worst of its epochs: error, missing, fail, pass
	Passed  int
	Total   int
	Pips    []htmlPip
}

type htmlPip struct {
	Status string
	ID     string // the cell's id; empty when missing
	Epoch  int
}

// htmlAgent is one distinct thing a model was given; cells share them.
type htmlAgent struct {
	ID     string
	N      int
	Groups []string
	G      *evals.AgentGiven
}

type htmlCell struct {
	C           Cell
	F           *FailingCell
	D           *evals.CellDetail
	Roles       []RoleTotals
	Evaluations []evals.RubricOutcome
	Messages    []htmlMsg
	Orphans     []htmlSub
	Files       []htmlFile
	Tags        string
	Latency     string // model ms, or -1 when unknown, for sorting
	Search      string
	Agent       *htmlAgent
}

type htmlMsg struct {
	Role     string
	Name     string
	Source   string
	IsError  bool
	Usage    *llm.Usage
	Text     string
	Thinking []string
	Other    []string
	Calls    []htmlCall
}

type htmlCall struct {
	ID, Name, Args string
	Subagents      []htmlSub
}

type htmlSub struct {
	Path     string
	Messages []htmlMsg
}

type htmlFile struct{ Path, Content string }

// statusRank orders statuses from best to worst, for a matrix cell's colour.
var statusRank = map[string]int{"pass": 0, "fail": 1, "missing": 2, "error": 3}

// WriteHTML writes one self-contained HTML page: the verdict; the model ×
// profile summary with charts (pass rate with its interval, cost against
// score); the case × (model, profile) matrix, a pip per epoch, with
// filters by status, model, profile and tag, a search and sorting; then
// every cell with its checks, rubric rounds, latency, what the model was
// given and its transcript (tool calls and results, subagent runs folded
// under the call that started them), files written and usage. It loads
// nothing from the network: styles, script and charts are inline and a
// Content-Security-Policy forbids any other source. The page follows the
// system's dark mode and fits a phone.
func WriteHTML(w io.Writer, r *Run) error {
	rep := Build(r)
	css, err := htmlFS.ReadFile("html/report.css")
	if err != nil {
		return err
	}
	js, err := htmlFS.ReadFile("html/report.js")
	if err != nil {
		return err
	}
	p := htmlPage{R: rep, Headline: rep.headline(), MoreReasons: rep.moreReasons(), CSS: template.CSS(css), JS: template.JS(js), CostUnknown: rep.costUnknown(), CostNote: costFootnote}
	if rep.usageUnknown() {
		p.UsageNote = usageFootnote
	}
	var threshold *float64
	if rep.Thresholds != nil {
		threshold = rep.Thresholds.PassRate
	}
	for i, g := range rep.Groups {
		if !slices.Contains(p.Models, g.Model) {
			p.Models = append(p.Models, g.Model)
		}
		if !slices.Contains(p.Profiles, g.Profile) {
			p.Profiles = append(p.Profiles, g.Profile)
		}
		p.Groups = append(p.Groups, htmlGroup{G: g})
		p.Legend = append(p.Legend, htmlLegend{N: i + 1, Class: fmt.Sprintf("g%d", i%8), Model: g.Model, Profile: g.Profile})
	}
	p.Groups = append(p.Groups, htmlGroup{G: rep.Totals, Total: true})
	p.PassChart = passRateChart(append(append([]Group(nil), rep.Groups...), rep.Totals), threshold)
	p.CostChart = costScoreChart(rep.Groups)
	for _, m := range p.Models {
		row := htmlMatrixRow{Model: m, Cells: make([]*htmlTile, len(p.Profiles))}
		for i := range rep.Groups {
			g := &rep.Groups[i]
			if g.Model == m {
				cls := rateClass(g.PassRate, threshold)
				if g.Errors+g.Missing > 0 {
					cls += " has-error"
				}
				row.Cells[slices.Index(p.Profiles, g.Profile)] = &htmlTile{G: g, Class: cls}
			}
		}
		p.Matrix = append(p.Matrix, row)
	}
	failing := map[string]*FailingCell{}
	for i := range rep.Failing {
		failing[rep.Failing[i].ID] = &rep.Failing[i]
	}
	p.Failing = len(rep.Failing) + len(rep.Missing)
	agents := map[string]*htmlAgent{}
	for _, c := range rep.Cells {
		hc := htmlCell{C: c, F: failing[c.ID], Roles: roleCounts(c.Tokens), Tags: strings.Join(c.Tags, " "), Latency: "-1"}
		if c.Latency != nil {
			hc.Latency = strconv.FormatInt(c.Latency.ModelMS, 10)
		}
		for _, t := range c.Tags {
			if !slices.Contains(p.Tags, t) {
				p.Tags = append(p.Tags, t)
			}
		}
		search := []string{c.Case, c.Model, c.Profile, c.Status, c.Cause, firstLine(c.Error)}
		search = append(search, c.Tags...)
		if f := hc.F; f != nil {
			for _, g := range f.Gaps {
				search = append(search, g.Criterion, g.Gap)
			}
			for _, ch := range f.FailedChecks {
				search = append(search, ch.Name, ch.Detail)
			}
		}
		hc.Search = strings.ToLower(strings.Join(search, " "))
		if d := r.Details[c.ID]; d != nil {
			hc.D = d
			hc.Evaluations = d.Evaluations
			hc.Messages, hc.Orphans = transcript(d)
			for _, path := range slices.Sorted(maps.Keys(d.Files)) {
				hc.Files = append(hc.Files, htmlFile{Path: path, Content: d.Files[path]})
			}
			if d.Agent != nil {
				// Cells given the same prompt and tools share one copy.
				b, _ := json.Marshal(d.Agent)
				key := string(b)
				a, ok := agents[key]
				if !ok {
					a = &htmlAgent{ID: fmt.Sprintf("agent-%d", len(p.Agents)+1), N: len(p.Agents) + 1, G: d.Agent}
					p.Agents = append(p.Agents, *a)
					a = &p.Agents[len(p.Agents)-1]
					agents[key] = a
				}
				if g := c.Model + " · " + c.Profile; !slices.Contains(a.Groups, g) {
					a.Groups = append(a.Groups, g)
				}
				hc.Agent = a
			}
		}
		p.Cells = append(p.Cells, hc)
	}
	// The cells point into p.Agents, which stopped growing above.
	for i := range p.Cells {
		if a := p.Cells[i].Agent; a != nil {
			p.Cells[i].Agent = &p.Agents[a.N-1]
		}
	}
	slices.Sort(p.Tags)
	p.Cases = caseMatrix(rep)
	var buf bytes.Buffer
	if err := htmlTemplate().Execute(&buf, p); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// caseMatrix lays the cells out as cases × (model, profile), cases in the
// order the report lists them, groups in the summary's order.
func caseMatrix(rep *Report) htmlCases {
	var m htmlCases
	col := map[[2]string]int{}
	for _, g := range rep.Groups {
		col[[2]string{g.Model, g.Profile}] = len(m.Cols)
		m.Cols = append(m.Cols, htmlCol{Model: g.Model, Profile: g.Profile})
		if n := len(m.Heads); n > 0 && m.Heads[n-1].Model == g.Model {
			m.Heads[n-1].Span++
		} else {
			m.Heads = append(m.Heads, htmlHead{Model: g.Model, Span: 1})
		}
	}
	rowOf := map[string]int{}
	row := func(kase string) *htmlCaseRow {
		i, ok := rowOf[kase]
		if !ok {
			i = len(m.Rows)
			rowOf[kase] = i
			cells := make([]htmlMCell, len(m.Cols))
			for j, c := range m.Cols {
				cells[j].Model, cells[j].Profile = c.Model, c.Profile
			}
			m.Rows = append(m.Rows, htmlCaseRow{Case: kase, Cells: cells})
		}
		return &m.Rows[i]
	}
	type agg struct {
		score, cost float64
		n           int
	}
	sums := map[string]*agg{}
	add := func(k [2]string, kase, status, id string, epoch int) {
		j, ok := col[k]
		if !ok {
			return
		}
		mc := &row(kase).Cells[j]
		mc.Ran = true
		mc.Total++
		if status == "pass" {
			mc.Passed++
		}
		if mc.Status == "" || statusRank[status] > statusRank[mc.Status] {
			mc.Status = status
		}
		mc.Pips = append(mc.Pips, htmlPip{Status: status, ID: id, Epoch: epoch})
	}
	for _, c := range rep.Cells {
		add([2]string{c.Model, c.Profile}, c.Case, c.Status, c.ID, c.Epoch)
		r := row(c.Case)
		if r.Tags == "" {
			r.Tags = strings.Join(c.Tags, " ")
		}
		a := sums[c.Case]
		if a == nil {
			a = &agg{}
			sums[c.Case] = a
		}
		a.score += c.Score
		a.cost += c.CostUSD
		a.n++
	}
	for _, k := range rep.Missing {
		add([2]string{k.Model, k.Profile}, k.Case, "missing", "", k.Epoch)
	}
	for i := range m.Rows {
		r := &m.Rows[i]
		for j := range r.Cells {
			slices.SortStableFunc(r.Cells[j].Pips, func(a, b htmlPip) int { return a.Epoch - b.Epoch })
		}
		if a := sums[r.Case]; a != nil && a.n > 0 {
			r.Score = strconv.FormatFloat(a.score/float64(a.n), 'f', 4, 64)
			r.Cost = strconv.FormatFloat(a.cost, 'f', 6, 64)
		} else {
			r.Score, r.Cost = "0", "0"
		}
	}
	return m
}

// transcript converts a cell's messages for the template and hangs every
// subagent run under the tool call that started it; runs whose call is not
// in any transcript are returned apart.
func transcript(d *evals.CellDetail) ([]htmlMsg, []htmlSub) {
	byCall := map[string][]int{}
	for i, s := range d.Subagents {
		if s.ToolCallID != "" {
			byCall[s.ToolCallID] = append(byCall[s.ToolCallID], i)
		}
	}
	used := make([]bool, len(d.Subagents))
	var conv func(msgs []llm.Message, depth int) []htmlMsg
	var sub func(i, depth int) htmlSub
	sub = func(i, depth int) htmlSub {
		used[i] = true
		s := d.Subagents[i]
		return htmlSub{Path: s.Path, Messages: conv(s.Messages, depth+1)}
	}
	conv = func(msgs []llm.Message, depth int) []htmlMsg {
		var out []htmlMsg
		for _, m := range msgs {
			hm := htmlMsg{Role: string(m.Role), Name: m.Name, IsError: m.IsError, Usage: m.Usage, Source: m.Metadata[llm.MetaSource]}
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case llm.BlockText:
					text = append(text, b.Text)
				case llm.BlockThinking:
					hm.Thinking = append(hm.Thinking, b.Thinking)
				case llm.BlockRedactedThinking:
					hm.Other = append(hm.Other, "redacted thinking")
				default:
					o := string(b.Type)
					if b.MediaType != "" {
						o += " " + b.MediaType
					}
					hm.Other = append(hm.Other, o)
				}
			}
			hm.Text = strings.Join(text, "\n")
			for _, tc := range m.ToolCalls {
				call := htmlCall{ID: tc.ID, Name: tc.Name, Args: prettyJSON(tc.Args)}
				// Depth bounds recursion should a run name its own call.
				if depth < 8 {
					for _, i := range byCall[tc.ID] {
						if !used[i] {
							call.Subagents = append(call.Subagents, sub(i, depth))
						}
					}
				}
				hm.Calls = append(hm.Calls, call)
			}
			for _, tc := range m.InvalidToolCalls {
				hm.Calls = append(hm.Calls, htmlCall{ID: tc.ID, Name: tc.Name + " (invalid: " + tc.Error + ")", Args: tc.Args})
			}
			out = append(out, hm)
		}
		return out
	}
	msgs := conv(d.Messages, 0)
	var orphans []htmlSub
	for i := range d.Subagents {
		if !used[i] {
			orphans = append(orphans, sub(i, 0))
		}
	}
	return msgs, orphans
}

func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// htmlLine is a line of an error, classed when it belongs to a diff.
type htmlLine struct{ Class, Text string }

// diffLines splits an error into lines and marks those of a unified diff
// (a replay miss carries the request's), so the page colours them.
func diffLines(s string) []htmlLine {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	out := make([]htmlLine, len(lines))
	in := false
	for i, l := range lines {
		out[i].Text = l
		switch {
		case strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ "):
			in, out[i].Class = true, "hunk"
		case in && strings.HasPrefix(l, "@@"):
			out[i].Class = "hunk"
		case in && strings.HasPrefix(l, "+"):
			out[i].Class = "add"
		case in && strings.HasPrefix(l, "-"):
			out[i].Class = "del"
		}
	}
	return out
}
