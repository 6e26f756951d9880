package reports

import (
	"bytes"
	"embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/aymanbagabas/go-udiff"

	"github.com/dageval/dageval/evals"
)

//go:embed html/compare.html.tmpl html/compare.js
var compareFS embed.FS

// compareTemplate is parsed on first use, not at program start: most runs of the
// CLI write no HTML.
var compareTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("compare.html.tmpl").Funcs(template.FuncMap{
		"pct":       pct,
		"pp":        ppDelta,
		"ppAbs":     ppAbs,
		"ciPP":      ciPP,
		"signed":    signed,
		"score":     score,
		"pvalue":    pvalue,
		"outcome":   outcomeLabel,
		"model":     modelName,
		"difflines": diffLines,
		"frac":      passFrac,
		"join":      strings.Join,
		"usd":       usd,
		"thousands": thousands,
		"usdDelta":  usdDelta,
		"signedInt": signedInt,
		"latDelta": func(d *int64) string {
			if d == nil {
				return "unknown"
			}
			if *d < 0 {
				return "-" + millis(-*d)
			}
			return "+" + millis(*d)
		},
		"deltaClass": func(d float64) string {
			switch {
			case d < -1e-12:
				return "down"
			case d > 1e-12:
				return "up"
			}
			return "same"
		},
	}).ParseFS(compareFS, "html/compare.html.tmpl"))
})

// compareShown caps the changed cases whose transcripts the page embeds:
// past that, the JSON output and `dageval show` have them.
const compareShown = 40

type cmpPage struct {
	C          *Comparison
	CSS        template.CSS
	JS         template.JS
	Class      string // passed, failed or errored: the verdict's colour
	CostLine   string
	Chart      template.HTML
	Cols       []htmlCol
	Heads      []htmlHead
	Rows       []cmpRow
	Changed    int
	Sections   []cmpSection
	HasDetails bool
	MDE        string
}

type cmpRow struct {
	Case    string
	Changed bool
	Cells   []cmpCell
}

// cmpCell is a case under one model × profile: base epochs, then head's.
type cmpCell struct {
	Ran        bool
	Class      string // regress, improve, flaky, changed or same
	Base, Head []htmlPip
	Anchor     string // the change's entry below, when it has one
}

type cmpSection struct {
	ID, Title, Note string
	Open            bool
	Items           []cmpItem
	More            int
}

type cmpItem struct {
	Anchor string
	CC     CaseChange
	Flaky  string
	Epochs []cmpEpoch
}

// cmpEpoch is one paired epoch of a changed case, with both transcripts
// and their diff when the runs kept them.
type cmpEpoch struct {
	Epoch int
	// Open unfolds the diff of a case's first changed epoch.
	Open               bool
	BaseID, HeadID     string
	BaseStatus         string
	HeadStatus         string
	BaseReason         string
	HeadReason         string
	BaseText, HeadText string
	Diff               []htmlLine
}

// WriteHTML writes the comparison as one self-contained page: the policy
// and verdict first, base and head side by side (pass rate, score, cost,
// tokens, model time), a chart of each group's pass rate moving from base
// to head, the case × (model, profile) matrix with flips in red and green
// and a "changed only" filter, then each new failure, new pass and flaky
// case with its reason, both transcripts and their diff (when the runs
// were loaded with their cells' details), and the assembled-agent diff.
// Like the run report it loads nothing and gives the same bytes for the
// same runs.
func (c *Comparison) WriteHTML(w io.Writer) error {
	css, err := htmlFS.ReadFile("html/report.css")
	if err != nil {
		return err
	}
	js, err := compareFS.ReadFile("html/compare.js")
	if err != nil {
		return err
	}
	p := cmpPage{C: c, CSS: template.CSS(css), JS: template.JS(js), CostLine: c.costLine(), MDE: c.mdeSentence()}
	switch c.Verdict.ExitCode {
	case 0:
		p.Class = "passed"
		if c.icon() == "❔" {
			p.Class = "errored"
		}
	case 1:
		p.Class = "failed"
	default:
		p.Class = "errored"
	}
	p.Chart = dumbbellChart(append(append([]Effect(nil), c.Groups...), c.Overall))
	p.buildMatrix(c)
	p.buildSections(c)
	var buf bytes.Buffer
	if err := compareTemplate().Execute(&buf, p); err != nil {
		return fmt.Errorf("compare html: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// buildMatrix lays the pairs out as cases × (model, profile), each cell the
// base epochs' pips then the head's.
func (p *cmpPage) buildMatrix(c *Comparison) {
	col := map[[2]string]int{}
	for _, e := range c.Groups {
		col[[2]string{e.Model, e.Profile}] = len(p.Cols)
		p.Cols = append(p.Cols, htmlCol{Model: modelName(e.Model, e.HeadModel), Profile: e.Profile})
		name := modelName(e.Model, e.HeadModel)
		if n := len(p.Heads); n > 0 && p.Heads[n-1].Model == name {
			p.Heads[n-1].Span++
		} else {
			p.Heads = append(p.Heads, htmlHead{Model: name, Span: 1})
		}
	}
	anchors := map[pairKey]string{}
	kinds := map[pairKey]string{}
	for i, list := range [][]CaseChange{c.NewFailures, c.NewPasses, c.Flaky} {
		kind := []string{"regress", "improve", "flaky"}[i]
		for j, cc := range list {
			k := pairKey{cc.Model, cc.Profile, cc.Case}
			kinds[k] = kind
			if j < compareShown {
				anchors[k] = changeAnchor(kind, cc)
			}
		}
	}
	rowOf := map[string]int{}
	for _, pr := range c.pairs {
		j, ok := col[[2]string{pr.key.Model, pr.key.Profile}]
		if !ok {
			continue
		}
		i, ok := rowOf[pr.key.Case]
		if !ok {
			i = len(p.Rows)
			rowOf[pr.key.Case] = i
			p.Rows = append(p.Rows, cmpRow{Case: pr.key.Case, Cells: make([]cmpCell, len(p.Cols))})
		}
		cell := &p.Rows[i].Cells[j]
		cell.Ran = true
		cell.Base = append(cell.Base, htmlPip{Status: string(pr.base.Status), ID: pr.base.ID, Epoch: pr.key.Epoch})
		cell.Head = append(cell.Head, htmlPip{Status: string(pr.head.Status), ID: pr.head.ID, Epoch: pr.key.Epoch})
		k := pairKey{pr.key.Model, pr.key.Profile, pr.key.Case}
		cell.Class, cell.Anchor = kinds[k], anchors[k]
		switch {
		case cell.Class != "" && cell.Class != "same":
		case pr.base.Status != pr.head.Status || math.Abs(pr.head.Score-pr.base.Score) > scoreEps:
			// A flip or a score change that is not a stable flip.
			cell.Class = "changed"
		default:
			cell.Class = "same"
		}
	}
	for i := range p.Rows {
		for _, cell := range p.Rows[i].Cells {
			if cell.Ran && cell.Class != "same" {
				p.Rows[i].Changed = true
			}
		}
		if p.Rows[i].Changed {
			p.Changed++
		}
	}
}

func changeAnchor(kind string, cc CaseChange) string {
	return "chg-" + kind + "-" + cellID(evals.CellKey{Case: cc.Case, Model: cc.Model, Profile: cc.Profile})
}

// buildSections lists the changed cases with, per epoch whose outcome
// changed, both transcripts and their diff.
func (p *cmpPage) buildSections(c *Comparison) {
	byKey := map[pairKey][]pair{}
	for _, pr := range c.pairs {
		k := pairKey{pr.key.Model, pr.key.Profile, pr.key.Case}
		byKey[k] = append(byKey[k], pr)
	}
	details := func(r *Run, id string) *evals.CellDetail {
		if r == nil {
			return nil
		}
		return r.Details[id]
	}
	add := func(id, title, note, kind string, open bool, list []CaseChange) {
		s := cmpSection{ID: id, Title: title, Note: note, Open: open}
		for i, cc := range list {
			if i == compareShown {
				s.More = len(list) - i
				break
			}
			it := cmpItem{Anchor: changeAnchor(kind, cc), CC: cc}
			if kind == "flaky" {
				it.Flaky = "both"
				switch {
				case cc.BaseFlaky && !cc.HeadFlaky:
					it.Flaky = "base"
				case cc.HeadFlaky && !cc.BaseFlaky:
					it.Flaky = "head"
				}
			}
			for _, pr := range byKey[pairKey{cc.Model, cc.Profile, cc.Case}] {
				if pr.base.Status == pr.head.Status {
					continue
				}
				ep := cmpEpoch{Epoch: pr.key.Epoch, BaseID: pr.base.ID, HeadID: pr.head.ID, BaseStatus: string(pr.base.Status), HeadStatus: string(pr.head.Status)}
				if pr.base.Status != evals.StatusPass {
					ep.BaseReason = reasonOf(pr.base)
				}
				if pr.head.Status != evals.StatusPass {
					ep.HeadReason = reasonOf(pr.head)
				}
				// The case's reason is said once, above its epochs.
				if ep.HeadReason == cc.Reason {
					ep.HeadReason = ""
				}
				if ep.BaseReason == cc.Reason {
					ep.BaseReason = ""
				}
				ep.Open = len(it.Epochs) == 0
				bd, hd := details(c.base, pr.base.ID), details(c.head, pr.head.ID)
				if bd != nil && hd != nil {
					p.HasDetails = true
					ep.BaseText, ep.HeadText = TranscriptText(bd), TranscriptText(hd)
					ep.Diff = diffLines(udiff.Unified("base "+pr.base.ID, "head "+pr.head.ID, ep.BaseText, ep.HeadText))
				}
				it.Epochs = append(it.Epochs, ep)
			}
			s.Items = append(s.Items, it)
		}
		if len(s.Items) > 0 {
			p.Sections = append(p.Sections, s)
		}
	}
	add("new-failures", "New failures", "passed every epoch in base, failed every epoch in head", "regress", true, c.NewFailures)
	add("new-passes", "New passes", "failed every epoch in base, passed every epoch in head", "improve", false, c.NewPasses)
	add("flaky", "Flaky cases", "pass^k < pass@k: some epochs passed and some failed, so their flips are listed apart", "flaky", false, c.Flaky)
}

// dumbbellChart draws each group's pass rate moving from base (hollow) to
// head (filled), the line between red for a drop and green for a gain.
func dumbbellChart(es []Effect) template.HTML {
	const w, left, right, row, top = 480.0, 8.0, 8.0, 40.0, 8.0
	track := w - left - right
	h := top + row*float64(len(es)) + 22
	x := func(r float64) float64 { return left + track*math.Max(0, math.Min(1, r)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="chart-flip" viewBox="0 0 %s %s" role="img" aria-labelledby="chart-flip-title"><title id="chart-flip-title">Pass rate per model × profile, base (hollow) to head (filled)</title>`, num(w), num(h))
	for i, e := range es {
		y := top + row*float64(i)
		label := "overall"
		if e.Model != "" {
			label = modelName(e.Model, e.HeadModel) + " · " + e.Profile
		}
		cls := "same"
		switch {
		case e.PassDelta < -1e-12:
			cls = "down"
		case e.PassDelta > 1e-12:
			cls = "up"
		}
		fmt.Fprintf(&b, `<g class="flip %s">`, cls)
		fmt.Fprintf(&b, `<text class="label" x="%s" y="%s">%s</text>`, num(left), num(y+10), html.EscapeString(label))
		fmt.Fprintf(&b, `<path class="track-line" d="M%s %sH%s"></path>`, num(left), num(y+24), num(left+track))
		bx, hx := x(e.BasePassRate), x(e.HeadPassRate)
		fmt.Fprintf(&b, `<path class="move" d="M%s %sH%s"></path>`, num(bx), num(y+24), num(hx))
		fmt.Fprintf(&b, `<circle class="base" cx="%s" cy="%s" r="6"><title>base %s</title></circle>`, num(bx), num(y+24), pct(e.BasePassRate))
		fmt.Fprintf(&b, `<circle class="head" cx="%s" cy="%s" r="6"><title>head %s</title></circle>`, num(hx), num(y+24), pct(e.HeadPassRate))
		fmt.Fprintf(&b, `<text class="value" x="%s" y="%s" text-anchor="end">%s → %s</text>`, num(w-right), num(y+10), pct(e.BasePassRate), pct(e.HeadPassRate))
		b.WriteString(`</g>`)
	}
	axisY := top + row*float64(len(es)) + 4
	for _, t := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="%s">%s</text>`, num(x(t)), num(axisY+12), map[float64]string{0: "start", 0.5: "middle", 1: "end"}[t], strconv.Itoa(int(t*100))+"%")
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
