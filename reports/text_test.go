package reports_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/reports"
)

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// tableLine matches the lines of a table: borders, rules and rows, boxed
// or plain (two spaces between columns).
func tableLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "|") || strings.HasPrefix(l, "+") || strings.HasPrefix(l, "---") ||
			strings.HasPrefix(l, "model ") || strings.HasPrefix(l, "anthropic:") || strings.HasPrefix(l, "openai:") || strings.HasPrefix(l, "total ") {
			out = append(out, l)
		}
	}
	return out
}

func textAt(t *testing.T, r *reports.Run, o reports.TextOptions) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, reports.Build(r).WriteTextWith(&b, o))
	return b.String()
}

// Every table fits the terminal it is printed in, whatever its width; what
// is left out is named.
func TestTextTablesFitTheWidth(t *testing.T) {
	r := loadFixture(t)
	for _, width := range []int{60, 80, 100, 119, 120, 140} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			out := textAt(t, r, reports.TextOptions{Width: width})
			lines := tableLines(out)
			require.NotEmpty(t, lines)
			for _, l := range lines {
				assert.LessOrEqual(t, len([]rune(l)), width, "%q", l)
			}
			compact := width < reports.CompactWidth
			assert.Equal(t, compact, !strings.Contains(out, "Latency per cell"), "the per-cell latency table is for wide terminals")
			assert.Equal(t, !compact, strings.Contains(out, "+---"), "wide tables are boxed, compact ones plain")
			if width < 143 {
				assert.Contains(t, out, fmt.Sprintf("(not shown at %d columns: ", width))
			}
			// Prose wraps too.
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "  - ") || strings.HasPrefix(l, "ERRORED") {
					assert.LessOrEqual(t, len([]rune(l)), width, "%q", l)
				}
			}
		})
	}
	assert.Equal(t, render(t, r, reports.FormatTable), textAt(t, r, reports.TextOptions{}), "no width is the wide layout, uncut")
}

// The compact layout as a 100-column terminal shows it.
func TestGoldenCompactText(t *testing.T) {
	out := textAt(t, runQuickstart(t), reports.TextOptions{Width: 100})
	snaps.WithConfig(snaps.Ext(".txt")).MatchStandaloneSnapshot(t, out)
}

func TestTextColour(t *testing.T) {
	r := loadFixture(t)
	plain := textAt(t, r, reports.TextOptions{Width: 100})
	col := textAt(t, r, reports.TextOptions{Width: 100, Color: true})
	assert.NotContains(t, plain, "\x1b[")
	assert.Contains(t, col, "\x1b[31mFAIL\x1b[0m")
	assert.Contains(t, col, "\x1b[33mERROR\x1b[0m")
	assert.Equal(t, plain, ansi.ReplaceAllString(col, ""), "colour changes no character and no width")
}

// Sixteen replay misses are one problem: one entry naming the cells, the
// first diff, and what to do; not sixteen diffs.
func TestRepeatedErrorsAreGrouped(t *testing.T) {
	r := makeRun(t, 8, 2, func(k evals.CellKey) (evals.Status, float64) {
		if k.Model == "openai:gpt-5" {
			return evals.StatusError, 0
		}
		return evals.StatusPass, 1
	})
	for i := range r.Results {
		if r.Results[i].Status == evals.StatusError {
			r.Results[i].Cause = evals.CauseReplayMiss
			r.Results[i].Error = fmt.Sprintf("fakes: replay miss in cassettes/%s.yaml\n--- recorded\n+++ request\n@@ -1 +1 @@\n-a\n+b", r.Results[i].ID)
		}
	}
	out := textAt(t, r, reports.TextOptions{})
	assert.Equal(t, 1, strings.Count(out, "--- recorded"), out)
	assert.Contains(t, out, "ERROR  32 cells: replay misses (replay_miss); the first one's error is below")
	assert.Contains(t, out, "case-01 · openai:gpt-5 · baseline · epochs 1, 2")
	assert.Contains(t, out, "… and 8 more")
	assert.Contains(t, out, "to fix: the agent's requests changed")

	var md bytes.Buffer
	require.NoError(t, reports.Build(r).WriteMarkdown(&md))
	assert.Equal(t, 1, strings.Count(md.String(), "--- recorded"))
	assert.Contains(t, md.String(), "```diff\nfakes: replay miss")
	assert.Contains(t, md.String(), "<details open><summary>Failing cells (32)")
}
