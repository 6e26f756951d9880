package evals

import (
	"fmt"
	"io"
	"strings"

	"github.com/schollz/progressbar/v3"
)

// progress reports finished cells: a bar on a terminal, one plain line per
// cell elsewhere (CI logs, files).
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	done  int
	width int
}

func newProgress(o Options, suite string, total int) *progress {
	p := &progress{w: o.Progress, total: total, width: len(fmt.Sprint(total))}
	if o.Progress == nil {
		return p
	}
	if o.ProgressBar {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(o.Progress),
			progressbar.OptionSetDescription(suite),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30),
		)
	}
	return p
}

// cell reports one finished cell; calls are serialised by the caller.
func (p *progress) cell(r CellResult) {
	if p.w == nil {
		return
	}
	p.done++
	if p.bar != nil {
		_ = p.bar.Add(1)
		return
	}
	line := fmt.Sprintf("[%*d/%d] %-5s %s %s %s e%d (%.1fs)", p.width, p.done, p.total, r.Status, r.Case, r.Model, r.Profile, r.Epoch, float64(r.DurationMS)/1000)
	if r.Status == StatusError {
		msg, _, _ := strings.Cut(r.Error, "\n")
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		line += ": " + msg
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
