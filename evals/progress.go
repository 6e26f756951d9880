package evals

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dageval/dageval/harness/provider"
)

// progress reports a run as it goes: on a terminal (Options.ProgressBar)
// one status line redrawn in place, with the elapsed time ticking between
// cells, the pass, fail and error counts, and the cells in flight, and a
// line kept above it for each cell that did not pass; elsewhere (CI logs,
// files) one plain line per finished cell. Either way, a pause of the run's
// rate limiters gets a line of its own as it happens.
type progress struct {
	w     io.Writer
	live  bool
	suite string
	width int // of the terminal; 0 when unknown
	total int
	pad   int

	mu       sync.Mutex
	done     int
	counts   map[Status]int
	inFlight []CellKey
	start    time.Time
	stop     chan struct{}
	stopped  sync.WaitGroup
	drawn    bool
	// paused notes the last pause of a rate limiter, shown on the status
	// line until the next cell finishes.
	paused string
}

// tick is how often the status line redraws while no cell finishes.
const tick = 250 * time.Millisecond

// newProgress counts total cells, done of which a resumed run has already.
func newProgress(o Options, suite string, total, done int) *progress {
	p := &progress{w: o.Progress, live: o.ProgressBar, suite: suite, width: o.ProgressWidth, total: total, done: done, pad: len(fmt.Sprint(total)), counts: map[Status]int{}}
	if p.w == nil || !p.live {
		return p
	}
	p.start = time.Now()
	p.stop = make(chan struct{})
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// resumed says what a resumed run found and has left to do.
func (p *progress) resumed(r resumed, todo int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("resuming: %d of %d cells finished earlier; running %d", r.Finished, p.total, todo)
	if r.Retried > 0 {
		line += fmt.Sprintf(" (%d errored cells again)", r.Retried)
	}
	if r.NoDetail > 0 {
		line += fmt.Sprintf(" (%d whose cell files were missing or damaged)", r.NoDetail)
	}
	if r.Garbled > 0 {
		line += fmt.Sprintf(" (%d garbled lines in the journal)", r.Garbled)
	}
	p.clear()
	fmt.Fprintln(p.w, line)
}

// throttled reports a pause of every call to a provider, once per pause
// however many cells it holds up; rate limiters call it from any goroutine.
func (p *progress) throttled(t provider.Throttle) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pause := t.Pause.Round(time.Millisecond)
	why := "throttled"
	if t.RetryAfter {
		why = "asked to retry after " + pause.String()
	}
	p.clear()
	fmt.Fprintf(p.w, "rate limit: %s %s; every call to %s pauses for %s\n", t.Provider, why, t.Provider, pause)
	if p.live {
		p.paused = fmt.Sprintf("%s paused %s", t.Provider, pause)
		p.draw()
	}
}

// begin reports a cell starting; workers call it concurrently.
func (p *progress) begin(k CellKey) {
	if p.w == nil || !p.live {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight = append(p.inFlight, k)
	p.draw()
}

// cell reports one finished cell; calls are serialised by the caller.
func (p *progress) cell(r CellResult) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.counts[r.Status]++
	p.paused = ""
	if !p.live {
		fmt.Fprintln(p.w, p.finishedLine(r, 0))
		return
	}
	for i, k := range p.inFlight {
		if k == r.CellKey {
			p.inFlight = append(p.inFlight[:i], p.inFlight[i+1:]...)
			break
		}
	}
	if r.Status != StatusPass {
		// Cells that did not pass stay on screen above the status line.
		p.clear()
		fmt.Fprintln(p.w, p.finishedLine(r, p.width))
	}
	p.draw()
}

// finishedLine is the line for a finished cell, cut to width (0: whole).
func (p *progress) finishedLine(r CellResult, width int) string {
	line := fmt.Sprintf("[%*d/%d] %-5s %s %s %s e%d (%.1fs", p.pad, p.done, p.total, r.Status, r.Case, r.Model, r.Profile, r.Epoch, float64(r.DurationMS)/1000)
	var waited int64
	for _, rl := range r.RateLimits {
		waited += rl.WaitMS
	}
	if waited > 0 {
		line += fmt.Sprintf(", %.1fs waiting for rate limits", float64(waited)/1000)
	}
	line += ")"
	if r.Status == StatusError {
		msg, _, _ := strings.Cut(r.Error, "\n")
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		line += ": " + msg
	}
	return cut(line, width)
}

// draw rewrites the status line; the caller holds p.mu.
func (p *progress) draw() {
	el := time.Since(p.start).Truncate(time.Second)
	s := fmt.Sprintf("%s [%*d/%d] %d:%02d  ✓ %d  ✗ %d  ! %d", p.suite, p.pad, p.done, p.total, int(el.Minutes()), int(el.Seconds())%60,
		p.counts[StatusPass], p.counts[StatusFail], p.counts[StatusError])
	if p.paused != "" {
		s += "  ⏸ " + p.paused
	}
	if n := len(p.inFlight); n > 0 {
		// The count first: the cell's name is what the width cuts.
		k := p.inFlight[0]
		s += "  ▸ "
		if n > 1 {
			s += fmt.Sprintf("%d running, ", n)
		}
		s += fmt.Sprintf("%s · %s · %s · e%d", k.Case, k.Model, k.Profile, k.Epoch)
	}
	// One column short of the width: a line that fills the terminal
	// exactly wraps on some, and \r would then redraw the wrong line.
	fmt.Fprint(p.w, "\r\x1b[K"+cut(s, p.width-1))
	p.drawn = true
}

// clear erases the status line; the caller holds p.mu.
func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *progress) finish() {
	if p.w == nil || !p.live {
		return
	}
	close(p.stop)
	p.stopped.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

// cut shortens s to width runes with an ellipsis; width ≤ 0 keeps it whole.
func cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:max(width-1, 0)]) + "…"
}
