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

func click(t *testing.T, p *page, css string) {
	t.Helper()
	require.NoError(t, chromedp.Do(p.ctx, chromedp.Click(chromedp.CSS(css))), css)
}

func TestBrowserHTMLReport(t *testing.T) {
	r := loadFixture(t)
	html := render(t, r, reports.FormatHTML)
	p := openHTML(t, html)

	t.Run("renders with no console errors and no network requests", func(t *testing.T) {
		requests, problems := p.snapshot()
		assert.Empty(t, requests, "the report must load nothing")
		assert.Empty(t, problems, "the report must log no errors")
		assert.Equal(t, "dageval · quickstart", eval[string](t, p, `document.title`))
		assert.Equal(t, 4, eval[int](t, p, `document.querySelectorAll("#matrix td .rate").length`))
	})

	t.Run("summary counts match summary.json", func(t *testing.T) {
		totals := eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll("#totals td[data-field]")].map(td => [td.dataset.field, td.textContent.trim()]))`)
		tot := r.Summary.Totals
		assert.Equal(t, map[string]string{
			"expected": fmt.Sprint(r.Summary.ExpectedCells), "passed": fmt.Sprint(tot.Passed), "failed": fmt.Sprint(tot.Failed),
			"errors": fmt.Sprint(tot.Errors), "missing": fmt.Sprint(tot.Missing),
			"pass_rate": fmt.Sprintf("%.1f%%", 100*tot.PassRate), "mean_score": fmt.Sprintf("%.3f", tot.MeanScore),
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

		// The cells listed agree with the summary too.
		byStatus := eval[map[string]int](t, p, `[...document.querySelectorAll("details.cell")].reduce((m, d) => (m[d.dataset.status] = (m[d.dataset.status] || 0) + 1, m), {})`)
		assert.Equal(t, map[string]int{"pass": tot.Passed, "fail": tot.Failed, "error": tot.Errors}, byStatus)
		assert.Equal(t, tot.Missing, eval[int](t, p, `document.querySelectorAll("#missing li").length`))
	})

	t.Run("a failing cell expands to show its gaps", func(t *testing.T) {
		const id = "cell-budget-report--anthropic-claude-sonnet-4-6--terse--e1"
		gapVisible := `document.getElementById("` + id + `").querySelector(".gap").checkVisibility()`
		assert.False(t, eval[bool](t, p, gapVisible), "cells start folded")
		click(t, p, "#"+id+" > summary")
		assert.True(t, eval[bool](t, p, gapVisible), "clicking the summary shows the gap")
		assert.Equal(t, "The answer lists the expense lines but never states the total the user asked for.",
			eval[string](t, p, `document.getElementById("`+id+`").querySelector(".gap").textContent`))
		assert.Equal(t, `final answer does not contain "$1,234.50"`,
			eval[string](t, p, `document.getElementById("`+id+`").querySelector(".failed-check").textContent`))
		// A picture of the open cell, kept with go test -artifacts.
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

	t.Run("filter shows only failing and errored cells", func(t *testing.T) {
		click(t, p, `[data-filter="failing"]`)
		shown := eval[int](t, p, `[...document.querySelectorAll("details.cell")].filter(d => d.checkVisibility()).length`)
		assert.Equal(t, r.Summary.Totals.Failed+r.Summary.Totals.Errors, shown)
		_, problems := p.snapshot()
		assert.Empty(t, problems, "interaction logged errors")
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
