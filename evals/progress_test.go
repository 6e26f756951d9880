package evals

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The terminal status line counts outcomes, names the cell in flight,
// keeps the cells that did not pass on screen and fits the width.
func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(Options{Progress: &b, ProgressBar: true, ProgressWidth: 60}, "quickstart", 3, 0)
	a := CellKey{Case: "paris-weather", Model: "openai:gpt-5", Profile: "terse", Epoch: 1}
	c := CellKey{Case: "two-cities", Model: "openai:gpt-5", Profile: "terse", Epoch: 1}
	p.begin(a)
	p.begin(c)
	p.cell(CellResult{CellKey: a, Status: StatusPass})
	p.cell(CellResult{CellKey: c, Status: StatusFail})
	p.begin(CellKey{Case: "x", Model: "m", Profile: "p", Epoch: 1})
	p.cell(CellResult{CellKey: CellKey{Case: "x", Model: "m", Profile: "p", Epoch: 1}, Status: StatusError, Error: "replay miss\ndiff"})
	p.finish()
	out := b.String()
	frames := strings.Split(out, "\r\x1b[K")
	// The clock is whatever it read; the rest of each frame is fixed.
	clock := regexp.MustCompile(`\] \d+:\d\d  `)
	var fixed []string
	for _, f := range frames {
		fixed = append(fixed, clock.ReplaceAllString(f, "] m:ss  "))
	}
	assert.Contains(t, fixed, "quickstart [0/3] m:ss  ✓ 0  ✗ 0  ! 0  ▸ paris-weather · op…")
	assert.Contains(t, fixed, "quickstart [0/3] m:ss  ✓ 0  ✗ 0  ! 0  ▸ 2 running, paris-w…")
	assert.Contains(t, fixed, "quickstart [1/3] m:ss  ✓ 1  ✗ 0  ! 0  ▸ two-cities · opena…")
	assert.Contains(t, fixed, "quickstart [3/3] m:ss  ✓ 1  ✗ 1  ! 1")
	assert.Contains(t, out, "[2/3] fail  two-cities openai:gpt-5 terse e1 (0.0s)\n", "a failed cell stays above the line")
	assert.Contains(t, out, "[3/3] error x m p e1 (0.0s): replay miss\n")
	assert.True(t, strings.HasSuffix(out, "\r\x1b[K"), "the status line is cleared at the end")
	for _, f := range frames {
		for _, l := range strings.Split(f, "\n") {
			assert.LessOrEqual(t, len([]rune(l)), 60, "%q", l)
		}
	}
}

// Without a terminal each finished cell is one plain line.
func TestProgressPlain(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(Options{Progress: &b}, "quickstart", 2, 0)
	p.begin(CellKey{Case: "a"})
	p.cell(CellResult{CellKey: CellKey{Case: "a", Model: "m", Profile: "p", Epoch: 1}, Status: StatusPass, DurationMS: 1500})
	p.finish()
	assert.Equal(t, "[1/2] pass  a m p e1 (1.5s)\n", b.String())
}
