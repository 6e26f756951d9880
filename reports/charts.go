package reports

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The HTML reports' charts are inline SVG written here, so the page needs
// nothing from outside and the same run gives the same bytes: every number
// is formatted with a fixed precision, and colours come from the page's
// stylesheet (classes), so dark mode restyles them.

// num formats an SVG coordinate.
func num(x float64) string {
	s := strconv.FormatFloat(x, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// rateClass buckets a pass rate for colour: hi at or above the threshold
// (or 90% without one), lo below 60% of it, mid between.
func rateClass(rate float64, threshold *float64) string {
	t := 0.9
	if threshold != nil {
		t = *threshold
	}
	switch {
	case rate >= t-1e-9:
		return "r-hi"
	case rate >= 0.6*t:
		return "r-mid"
	}
	return "r-lo"
}

// passRateChart draws each group's pass rate as a bar with its 95%
// interval as a whisker, and the suite's pass-rate threshold as a dashed
// line. Labels sit above their bars so the chart stays readable when a
// phone scales it down.
func passRateChart(groups []Group, threshold *float64) template.HTML {
	const w, left, right, row, top = 480.0, 4.0, 64.0, 40.0, 8.0
	track := w - left - right
	h := top + row*float64(len(groups)) + 22
	x := func(r float64) float64 { return left + track*math.Max(0, math.Min(1, r)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="chart-pass" viewBox="0 0 %s %s" role="img" aria-labelledby="chart-pass-title"><title id="chart-pass-title">Pass rate with its 95%% interval per model × profile</title>`, num(w), num(h))
	for i, g := range groups {
		y := top + row*float64(i)
		m, p := groupLabel(g)
		label := m
		if p != "" {
			label += " · " + p
		}
		fmt.Fprintf(&b, `<g class="bar-row" data-model="%s" data-profile="%s">`, html.EscapeString(g.Model), html.EscapeString(g.Profile))
		fmt.Fprintf(&b, `<text class="label" x="%s" y="%s">%s</text>`, num(left), num(y+10), html.EscapeString(label))
		fmt.Fprintf(&b, `<rect class="track" x="%s" y="%s" width="%s" height="12" rx="3"></rect>`, num(left), num(y+16), num(track))
		fmt.Fprintf(&b, `<rect class="bar %s" x="%s" y="%s" width="%s" height="12" rx="3"><title>%s: %s passed (%d of %d), CI95 %s</title></rect>`,
			rateClass(g.PassRate, threshold), num(left), num(y+16), num(x(g.PassRate)-left), html.EscapeString(label), pct(g.PassRate), g.Passed, g.Expected, ci(g.CI95[0], g.CI95[1]))
		lo, hi := x(g.CI95[0]), x(g.CI95[1])
		fmt.Fprintf(&b, `<path class="whisker" d="M%s %sH%sM%s %sV%sM%s %sV%s"></path>`, num(lo), num(y+22), num(hi), num(lo), num(y+17), num(y+27), num(hi), num(y+17), num(y+27))
		fmt.Fprintf(&b, `<text class="value" x="%s" y="%s">%s</text>`, num(w-right+8), num(y+26), pct(g.PassRate))
		b.WriteString(`</g>`)
	}
	axisY := top + row*float64(len(groups)) + 4
	for _, t := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="%s">%s</text>`, num(x(t)), num(axisY+12), map[float64]string{0: "start", 0.5: "middle", 1: "end"}[t], strconv.Itoa(int(t*100))+"%")
	}
	if threshold != nil {
		tx := x(*threshold)
		fmt.Fprintf(&b, `<path class="threshold" d="M%s %sV%s"><title>threshold: pass rate %s</title></path>`, num(tx), num(top), num(axisY), pct(*threshold))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// costScoreChart places each group by its cost per cell and mean score, a
// numbered dot per group, with the numbers explained in a legend beside
// the chart (labels inside would overlap).
func costScoreChart(groups []Group) template.HTML {
	const w, h, left, right, top, bottom = 480.0, 240.0, 44.0, 16.0, 12.0, 34.0
	maxCost := 0.0
	for _, g := range groups {
		if g.Expected > 0 {
			maxCost = math.Max(maxCost, g.CostUSD/float64(g.Expected))
		}
	}
	if maxCost == 0 {
		maxCost = 1
	}
	maxCost *= 1.15
	px := func(c float64) float64 { return left + (w-left-right)*c/maxCost }
	py := func(s float64) float64 { return top + (h-top-bottom)*(1-math.Max(0, math.Min(1, s))) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="chart-cost" viewBox="0 0 %s %s" role="img" aria-labelledby="chart-cost-title"><title id="chart-cost-title">Mean score against cost per cell, per model × profile</title>`, num(w), num(h))
	fmt.Fprintf(&b, `<path class="axis" d="M%s %sV%sH%s"></path>`, num(left), num(top), num(h-bottom), num(w-right))
	for _, s := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<path class="grid" d="M%s %sH%s"></path><text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, num(left), num(py(s)), num(w-right), num(left-6), num(py(s)+4), strconv.FormatFloat(s, 'f', 1, 64))
	}
	for _, c := range []float64{0, maxCost / 2, maxCost} {
		anchor := "middle"
		if c == 0 {
			anchor = "start"
		} else if c == maxCost {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="%s">$%s</text>`, num(px(c)), num(h-bottom+14), anchor, strconv.FormatFloat(c, 'f', 4, 64))
	}
	fmt.Fprintf(&b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle">cost per cell (USD)</text>`, num((left+w-right)/2), num(h-4))
	fmt.Fprintf(&b, `<text class="axis-label" x="12" y="%s" text-anchor="middle" transform="rotate(-90 12 %s)">mean score</text>`, num((top+h-bottom)/2), num((top+h-bottom)/2))
	var placed [][2]float64
	for i, g := range groups {
		cost := 0.0
		if g.Expected > 0 {
			cost = g.CostUSD / float64(g.Expected)
		}
		cx, cy := px(cost), py(g.MeanScore)
		// Groups at the same point are set side by side, so each number
		// stays readable; the tooltip keeps the exact values.
		for overlaps(placed, cx, cy) {
			cx += 20
		}
		placed = append(placed, [2]float64{cx, cy})
		m, p := groupLabel(g)
		fmt.Fprintf(&b, `<g class="dot g%d" data-model="%s" data-profile="%s"><circle cx="%s" cy="%s" r="9"><title>%s · %s: score %s, %s per cell</title></circle><text x="%s" y="%s" text-anchor="middle">%d</text></g>`,
			i%8, html.EscapeString(g.Model), html.EscapeString(g.Profile), num(cx), num(cy), html.EscapeString(m), html.EscapeString(p), score(g.MeanScore), usd(cost, g.CostKnown), num(cx), num(cy+4), i+1)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// overlaps reports whether a dot at x, y would cover one already placed.
func overlaps(placed [][2]float64, x, y float64) bool {
	for _, p := range placed {
		if math.Abs(p[0]-x) < 18 && math.Abs(p[1]-y) < 18 {
			return true
		}
	}
	return false
}
