//go:build browser

// The HTML report opened in headless Chromium. Run with
//
//	make test-browser
//
// which installs Debian's chromium when missing; set DAGEVAL_CHROMIUM to use
// another binary. Without the browser build tag this file is not compiled,
// so `make test` passes on machines without a browser.

package reports_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/reports"
)

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("DAGEVAL_CHROMIUM"), "chromium", "chromium-browser"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	// Not a skip: this file only builds under the browser tag, whose
	// target installs the browser, so a missing one is a broken setup.
	t.Fatal("chromium not found: run `make test-browser` (it installs Debian's chromium) or set DAGEVAL_CHROMIUM")
	return ""
}

// page is an HTML report open in the browser, with everything it asked the
// network for and everything it logged as an error.
type page struct {
	ctx      context.Context
	url      string
	mu       sync.Mutex
	requests []string
	problems []string
}

func (p *page) record(list *[]string, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*list = append(*list, s)
}

func (p *page) snapshot() (requests, problems []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...), append([]string(nil), p.problems...)
}

// openHTML writes html to a file and loads it in a fresh headless Chromium.
func openHTML(t *testing.T, html string) *page {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(file, []byte(html), 0o644))
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelA)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(cancelC)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelT)

	p := &page{ctx: ctx, url: "file://" + file}
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if ev.Request.URL != p.url {
				p.record(&p.requests, ev.Request.URL)
			}
		case *runtime.EventExceptionThrown:
			p.record(&p.problems, fmt.Sprintf("exception: %s %s", ev.ExceptionDetails.Text, exceptionDescription(ev.ExceptionDetails)))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				p.record(&p.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				p.record(&p.problems, fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	}))
	// chromedp enables the Log and Network domains itself; console calls
	// and exceptions need Runtime.
	_, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(p.url),
		chromedp.WaitReady(chromedp.CSS("body")),
		// Let late loads and console messages arrive.
		chromedp.Sleep(300*time.Millisecond),
	))
	return p
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func eval[T any](t *testing.T, p *page, js string) T {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js))
	require.NoError(t, err, js)
	return v
}

// waitFor waits until a JavaScript expression is truthy: the page handles
// some events (a details element's toggle) after the click returns.
func waitFor(t *testing.T, p *page, js string) {
	t.Helper()
	_, err := chromedp.Run(p.ctx, chromedp.Poll[bool]("!!("+js+")"))
	require.NoError(t, err, js)
}

func click(t *testing.T, p *page, css string) {
	t.Helper()
	require.NoError(t, chromedp.Do(p.ctx, chromedp.Click(chromedp.CSS(css))), css)
}

// view sets the page's width and colour scheme, as a phone or a desktop in
// dark or light mode shows it.
func view(t *testing.T, p *page, width int64, dark bool) {
	t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	height := int64(1600)
	if width < 600 {
		height = 1400
	}
	require.NoError(t, chromedp.Do(p.ctx, chromedp.EmulateViewport(width, height)))
	_, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	require.NoError(t, err)
	require.Equal(t, dark, eval[bool](t, p, `matchMedia("(prefers-color-scheme: dark)").matches`))
}

// noOverflow checks that nothing makes the page scroll sideways: wide
// tables scroll inside their own box.
func noOverflow(t *testing.T, p *page) {
	t.Helper()
	sw, iw := eval[int](t, p, `document.documentElement.scrollWidth`), eval[int](t, p, `innerWidth`)
	if !assert.LessOrEqual(t, sw, iw, "the page overflows sideways") {
		wide := eval[[]string](t, p, `[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest(".scroll")).slice(0, 8).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`)
		t.Logf("elements past the right edge: %v", wide)
	}
}

// screenshots writes the page at 1400 and 400 pixels, light and dark, for
// review: its first screen (<name>-<width>-<scheme>.png), a screen from
// each of the elements named by at (…-<i>.png), and all of it
// (…-full.png). go test -artifacts keeps them (make test-browser does),
// under the test's output directory.
func screenshots(t *testing.T, p *page, name string, at ...string) {
	t.Helper()
	for _, w := range []int64{1400, 400} {
		for _, dark := range []bool{false, true} {
			view(t, p, w, dark)
			noOverflow(t, p)
			scheme := map[bool]string{false: "light", true: "dark"}[dark]
			eval[bool](t, p, `(scrollTo(0, 0), true)`)
			top, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
			require.NoError(t, err)
			full, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			base := filepath.Join(t.ArtifactDir(), fmt.Sprintf("%s-%d-%s", name, w, scheme))
			require.NoError(t, os.WriteFile(base+".png", top, 0o644))
			for i, css := range at {
				eval[bool](t, p, fmt.Sprintf(`(document.querySelector(%q).scrollIntoView(), true)`, css))
				png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(fmt.Sprintf("%s-%d.png", base, i+1), png, 0o644))
			}
			require.NoError(t, os.WriteFile(base+"-full.png", full, 0o644))
		}
	}
	view(t, p, 1280, false)
}

func visibleCells(t *testing.T, p *page) int {
	return eval[int](t, p, `[...document.querySelectorAll("details.cell")].filter(d => d.checkVisibility()).length`)
}

func selectValue(t *testing.T, p *page, css, value string) {
	t.Helper()
	eval[bool](t, p, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event("change")); return true })()`, css, value))
}

func TestBrowserHTMLReport(t *testing.T) {
	r := loadFixture(t)
	html := render(t, r, reports.FormatHTML)
	p := openHTML(t, html)
	tot := r.Summary.Totals

	t.Run("renders with no console errors and no network requests", func(t *testing.T) {
		requests, problems := p.snapshot()
		assert.Empty(t, requests, "the report must load nothing")
		assert.Empty(t, problems, "the report must log no errors")
		assert.Equal(t, "dageval · quickstart", eval[string](t, p, `document.title`))
		assert.Equal(t, 4, eval[int](t, p, `document.querySelectorAll("#matrix .tile .rate").length`))
		assert.Equal(t, 2, eval[int](t, p, `document.querySelectorAll("svg.chart").length`), "both charts are inline SVG")
		assert.Equal(t, 5, eval[int](t, p, `document.querySelectorAll("#chart-pass .bar").length`), "a bar per group and the total")
	})

	t.Run("summary counts match summary.json", func(t *testing.T) {
		totals := eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("#totals td[data-field]")].map(td => [td.dataset.field, td.textContent.trim()]))`)
		assert.Equal(t, map[string]string{
			"expected": fmt.Sprint(r.Summary.ExpectedCells), "passed": fmt.Sprint(tot.Passed), "failed": fmt.Sprint(tot.Failed),
			"errors": fmt.Sprint(tot.Errors), "missing": fmt.Sprint(tot.Missing),
			"pass_rate": fmt.Sprintf("%.1f%%", 100*tot.PassRate), "mean_score": fmt.Sprintf("%.3f", tot.MeanScore),
			"latency": "2.35s",
		}, totals)

		groups := eval[[]map[string]string](t, p, `[...document.querySelectorAll("#groups tr[data-model]")].map(tr => Object.assign({model: tr.dataset.model, profile: tr.dataset.profile},
			Object.fromEntries([...tr.querySelectorAll("td[data-field]")].map(td => [td.dataset.field, td.textContent.trim()]))))`)
		require.Len(t, groups, len(r.Summary.Groups))
		for i, g := range r.Summary.Groups {
			assert.Equal(t, g.Model, groups[i]["model"])
			assert.Equal(t, g.Profile, groups[i]["profile"])
			assert.Equal(t, fmt.Sprint(g.Passed), groups[i]["passed"], "%s × %s", g.Model, g.Profile)
			assert.Equal(t, fmt.Sprint(g.Failed), groups[i]["failed"])
			assert.Equal(t, fmt.Sprint(g.Errors), groups[i]["errors"])
			assert.Equal(t, fmt.Sprint(g.Missing), groups[i]["missing"])
		}

		// The cells listed and the matrix's pips agree with the summary too.
		byStatus := eval[map[string]int](t, p, `[...document.querySelectorAll("details.cell")].reduce((m, d) => (m[d.dataset.status] = (m[d.dataset.status] || 0) + 1, m), {})`)
		assert.Equal(t, map[string]int{"pass": tot.Passed, "fail": tot.Failed, "error": tot.Errors}, byStatus)
		pips := eval[map[string]int](t, p, `[...document.querySelectorAll("#case-matrix .pip")].reduce((m, d) => (m[d.dataset.status] = (m[d.dataset.status] || 0) + 1, m), {})`)
		assert.Equal(t, map[string]int{"pass": tot.Passed, "fail": tot.Failed, "error": tot.Errors, "missing": tot.Missing}, pips)
		assert.Equal(t, tot.Missing, eval[int](t, p, `document.querySelectorAll("#missing li").length`))
	})

	t.Run("clicking a failing cell in the matrix opens its detail", func(t *testing.T) {
		const id = "cell-budget-report--anthropic-claude-sonnet-4-6--terse--e1"
		gapVisible := `document.getElementById("` + id + `").querySelector(".gap").checkVisibility()`
		assert.False(t, eval[bool](t, p, gapVisible), "cells start folded")
		click(t, p, `#case-matrix a.pip[href="#`+id+`"]`)
		assert.True(t, eval[bool](t, p, `document.getElementById("`+id+`").open`))
		assert.True(t, eval[bool](t, p, gapVisible), "the gap shows")
		assert.Equal(t, "The answer lists the expense lines but never states the total the user asked for.",
			eval[string](t, p, `document.getElementById("`+id+`").querySelector(".gap").textContent`))
		assert.Equal(t, `final answer does not contain "$1,234.50"`,
			eval[string](t, p, `document.getElementById("`+id+`").querySelector(".failed-check").textContent`))
		assert.Greater(t, eval[float64](t, p, `innerHeight - document.getElementById("`+id+`").getBoundingClientRect().top`), 0.0, "scrolled into view")

		// What the model was given opens inside the cell.
		click(t, p, "#"+id+" details.given > summary")
		waitFor(t, p, `document.querySelector("#`+id+` details.given .prompt")`)
		assert.Contains(t, eval[string](t, p, `document.querySelector("#`+id+` details.given .prompt").textContent`), "Be terse")
		assert.Contains(t, eval[string](t, p, `document.querySelector("#`+id+` details.given .tools").textContent`), "edit_file")

		png, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS("#"+id)))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(t.ArtifactDir(), "failing-cell.png"), png, 0o644))

		// The subagent run inside a cell stays folded under its task call
		// until opened.
		const sub = "cell-research-moons--anthropic-claude-sonnet-4-6--baseline--e1"
		subVisible := `document.querySelector("#` + sub + ` details.subagent pre").checkVisibility()`
		click(t, p, "#"+sub+" > summary")
		assert.False(t, eval[bool](t, p, subVisible))
		click(t, p, "#"+sub+" details.subagent > summary")
		assert.True(t, eval[bool](t, p, subVisible))
	})

	t.Run("filters narrow the matrix and the cells", func(t *testing.T) {
		click(t, p, `[data-filter="failing"]`)
		assert.Equal(t, tot.Failed+tot.Errors, visibleCells(t, p))
		rows := eval[[]string](t, p, `[...document.querySelectorAll("#case-matrix tbody tr")].filter(r => r.checkVisibility()).map(r => r.dataset.case)`)
		assert.ElementsMatch(t, []string{"budget-report", "paris-weather", "refactor-config", "research-moons", "todo-plan"}, rows)

		selectValue(t, p, "#f-model", "openai:gpt-5")
		assert.Equal(t, 1+2+3, visibleCells(t, p), "gpt-5's errored and failed cells")
		assert.Equal(t, 2, eval[int](t, p, `[...document.querySelectorAll("#case-matrix thead th[data-model]")].filter(th => th.checkVisibility()).length`), "only gpt-5's columns")

		selectValue(t, p, "#f-tag", "files")
		assert.Equal(t, 3, visibleCells(t, p), "refactor-config's three epochs")

		selectValue(t, p, "#f-tag", "")
		eval[bool](t, p, `(() => { const q = document.querySelector("#f-q"); q.value = "sunny"; q.dispatchEvent(new Event("input")); return true })()`)
		assert.Equal(t, 2, visibleCells(t, p), "the search reads failed checks")

		eval[bool](t, p, `(() => { const q = document.querySelector("#f-q"); q.value = ""; q.dispatchEvent(new Event("input")); return true })()`)
		selectValue(t, p, "#f-model", "")
		click(t, p, `[data-filter="all"]`)
		assert.Equal(t, tot.Passed+tot.Failed+tot.Errors, visibleCells(t, p))

		// A group's tile filters the matrix to it, and again clears it.
		click(t, p, `.tile[data-model="openai:gpt-5"][data-profile="terse"]`)
		assert.Equal(t, 15-1, visibleCells(t, p), "gpt-5 × terse ran 14 of its 15 cells")
		click(t, p, `.tile[data-model="openai:gpt-5"][data-profile="terse"]`)
		assert.Equal(t, tot.Passed+tot.Failed+tot.Errors, visibleCells(t, p))

		selectValue(t, p, "#f-sort", "score")
		first := eval[string](t, p, `[...document.querySelectorAll("details.cell")].find(d => d.checkVisibility()).dataset.score`)
		assert.Equal(t, "0.000", first, "lowest score first")
		selectValue(t, p, "#f-sort", "")

		_, problems := p.snapshot()
		assert.Empty(t, problems, "interaction logged errors")
	})

	t.Run("fits 400 px, light and dark", func(t *testing.T) {
		click(t, p, `[data-filter="failing"]`)
		click(t, p, `[data-expand="open"]`)
		click(t, p, "#cell-budget-report--anthropic-claude-sonnet-4-6--terse--e1 details.given > summary")
		screenshots(t, p, "run", "#cases", "#cell-budget-report--anthropic-claude-sonnet-4-6--terse--e1", "#cell-research-moons--openai-gpt-5--baseline--e3")
		click(t, p, `[data-expand="close"]`)
		click(t, p, `[data-filter="all"]`)
		requests, problems := p.snapshot()
		assert.Empty(t, requests)
		assert.Empty(t, problems)
	})
}

func TestBrowserComparison(t *testing.T) {
	base, head := profileChange(t)
	c, err := reports.Compare(base, head, reports.CompareOptions{Seed: 1, AgentDiff: "--- base\n+++ head\n@@ tools @@\n   convert_currency\n-  get_weather\n"})
	require.NoError(t, err)
	p := openHTML(t, renderComparison(t, c, reports.FormatHTML))

	t.Run("renders with no console errors and no network requests", func(t *testing.T) {
		requests, problems := p.snapshot()
		assert.Empty(t, requests)
		assert.Empty(t, problems)
		assert.Equal(t, "regression", eval[string](t, p, `document.getElementById("verdict").dataset.outcome`))
		assert.Equal(t, "-18.8 pp", eval[string](t, p, `document.getElementById("d-pass").textContent`))
		assert.Equal(t, "down", eval[string](t, p, `document.getElementById("d-pass").className`))
	})

	t.Run("a new failure opens with its reason and both transcripts", func(t *testing.T) {
		sel := `#cmp-cases tr[data-case="paris-weather"] td.regress a.flipcell`
		require.Equal(t, 2, eval[int](t, p, `document.querySelectorAll(`+fmt.Sprintf("%q", sel)+`).length`), "red on both models' terse")
		click(t, p, sel)
		id := eval[string](t, p, `location.hash.slice(1)`)
		require.True(t, strings.HasPrefix(id, "chg-regress-paris-weather--"), id)
		assert.True(t, eval[bool](t, p, `document.getElementById("`+id+`").checkVisibility()`))
		assert.Contains(t, eval[string](t, p, `document.querySelector("#`+id+` .why").textContent`), "uses-live-data")
		assert.Contains(t, eval[string](t, p, `document.querySelector("#`+id+` .diff pre").textContent`), "get_weather", "the diff shows the call that went away")
		assert.Equal(t, 3, eval[int](t, p, `document.querySelector("#`+id+` .epoch").querySelectorAll("details.tview").length`), "base, head and their diff")
	})

	t.Run("changed only hides the cases that did not change", func(t *testing.T) {
		all := eval[int](t, p, `[...document.querySelectorAll("#cmp-cases tbody tr")].filter(r => r.checkVisibility()).length`)
		click(t, p, "#changed-only")
		changed := eval[int](t, p, `[...document.querySelectorAll("#cmp-cases tbody tr")].filter(r => r.checkVisibility()).length`)
		assert.Equal(t, 7, all)
		assert.Equal(t, 3, changed, "paris-weather, two-cities and packing-list")
		_, problems := p.snapshot()
		assert.Empty(t, problems)
	})

	t.Run("fits 400 px, light and dark", func(t *testing.T) {
		screenshots(t, p, "compare", "#matrix", "#changes")
		requests, problems := p.snapshot()
		assert.Empty(t, requests)
		assert.Empty(t, problems)
	})
}

// The checks above can fail: a report that reaches for the network is caught.
func TestBrowserCatchesNetworkUse(t *testing.T) {
	html := render(t, loadFixture(t), reports.FormatHTML)
	html = strings.Replace(html, "<h2>Summary</h2>", `<h2>Summary</h2><img src="http://127.0.0.1:9/pixel.png" alt="">`, 1)
	p := openHTML(t, html)
	requests, problems := p.snapshot()
	assert.NotEmpty(t, append(requests, problems...), "an external image must show up as a request or a blocked load")
	assert.Contains(t, requests, "http://127.0.0.1:9/pixel.png")
	// The page's Content-Security-Policy blocks the load, and says so.
	assert.Contains(t, strings.Join(problems, "\n"), "Content Security Policy")
}

func exceptionDescription(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}
