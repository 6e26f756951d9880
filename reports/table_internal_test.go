package reports

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fit chooses the columns and caps the cut ones; tablewriter truncates
// what is wider than a cap with an ellipsis, and the table stays within
// the width, boxed or plain, coloured or not.
func TestTextTableCutsWithinTheWidth(t *testing.T) {
	for _, plain := range []bool{false, true} {
		for _, paint := range []bool{false, true} {
			tab := &textTable{plain: plain, cols: []textColumn{
				{header: "model", cut: true}, {header: "n", right: true}, {header: "extra", prio: 1},
			}, rows: [][]string{{"anthropic:claude-sonnet-4-6", "8", "x"}, {"openai:gpt-5", "7", "y"}}, footer: []string{"total", "15", ""}}
			if paint {
				tab.paint = func(r, c int, s string) string { return palette(true).paint(ansiBold, s) }
			}
			var b strings.Builder
			dropped, err := tab.render(&b, 24)
			require.NoError(t, err)
			assert.Equal(t, []string{"extra"}, dropped)
			out := b.String()
			assert.Contains(t, out, "anthropic:cla")
			assert.Contains(t, out, "…")
			assert.Contains(t, out, "openai:gpt-5")
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				assert.LessOrEqual(t, textWidth(l), 24, "%q", l)
				assert.Equal(t, strings.TrimRight(l, " "), l, "no trailing spaces")
			}
		}
	}
}
