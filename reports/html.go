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
	"strings"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
)

//go:embed html/report.html.tmpl html/report.css html/report.js
var htmlFS embed.FS

var htmlTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"pct":       pct,
	"score":     score,
	"usd":       usd,
	"thousands": thousands,
	"join":      strings.Join,
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
	Matrix      []htmlMatrixRow
	Groups      []htmlGroup
	Cells       []htmlCell
	CostUnknown bool
	CostNote    string
	// UsageNote explains ≥ and unknown token counts when some call
	// reported no usage; empty otherwise.
	UsageNote string
}

type htmlMatrixRow struct {
	Model string
	Cells []*Group // one per profile; nil when the pair was not run
}

type htmlGroup struct {
	G     Group
	Total bool
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

// WriteHTML writes one self-contained HTML page: the summary matrix, then
// every cell with its transcript (tool calls and results, subagent runs
// folded under the call that started them), rubric verdicts with gaps,
// checks, files written and usage. It loads nothing from the network: the
// styles and script are inline and a Content-Security-Policy forbids any
// other source.
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
	var models []string
	for _, g := range rep.Groups {
		if !slices.Contains(models, g.Model) {
			models = append(models, g.Model)
		}
		if !slices.Contains(p.Profiles, g.Profile) {
			p.Profiles = append(p.Profiles, g.Profile)
		}
		p.Groups = append(p.Groups, htmlGroup{G: g})
	}
	p.Groups = append(p.Groups, htmlGroup{G: rep.Totals, Total: true})
	for _, m := range models {
		row := htmlMatrixRow{Model: m, Cells: make([]*Group, len(p.Profiles))}
		for i := range rep.Groups {
			g := &rep.Groups[i]
			if g.Model == m {
				row.Cells[slices.Index(p.Profiles, g.Profile)] = g
			}
		}
		p.Matrix = append(p.Matrix, row)
	}
	failing := map[string]*FailingCell{}
	for i := range rep.Failing {
		failing[rep.Failing[i].ID] = &rep.Failing[i]
	}
	for _, c := range rep.Cells {
		hc := htmlCell{C: c, F: failing[c.ID], Roles: roleCounts(c.Tokens)}
		if d := r.Details[c.ID]; d != nil {
			hc.D = d
			hc.Evaluations = d.Evaluations
			hc.Messages, hc.Orphans = transcript(d)
			for _, path := range slices.Sorted(maps.Keys(d.Files)) {
				hc.Files = append(hc.Files, htmlFile{Path: path, Content: d.Files[path]})
			}
		}
		p.Cells = append(p.Cells, hc)
	}
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
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
