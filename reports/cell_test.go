package reports_test

import (
	"bytes"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/reports"
)

func TestFindCell(t *testing.T) {
	r := loadFixture(t)
	c, err := r.FindCell("budget-report--anthropic-claude-sonnet-4-6--terse--e2")
	require.NoError(t, err)
	assert.Equal(t, 2, c.Epoch)
	c, err = r.FindCell("research-moons--openai-gpt-5--baseline--e3")
	require.NoError(t, err)
	assert.Equal(t, "error", string(c.Status))
	_, err = r.FindCell("budget-report--anthropic-claude-sonnet-4-6--terse")
	assert.ErrorContains(t, err, "matches 3 cells")
	_, err = r.FindCell("todo-plan--openai-gpt-5--terse--e3")
	assert.ErrorContains(t, err, "is missing")
	_, err = r.FindCell("budget-reprot--openai-gpt-5--terse--e1")
	assert.ErrorContains(t, err, "did you mean budget-report--openai-gpt-5--terse--e1")
}

// One cell as `dageval show` prints it: verdict, rubric, checks, usage,
// and the transcript with the subagent run under its task call.
func TestGoldenCellText(t *testing.T) {
	r := loadFixture(t)
	for _, id := range []string{"budget-report--anthropic-claude-sonnet-4-6--terse--e1", "research-moons--openai-gpt-5--baseline--e3"} {
		c, err := r.FindCell(id)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, reports.WriteCell(&b, r, c, reports.TextOptions{Width: 100}))
		snaps.WithConfig(snaps.Ext(".txt")).MatchStandaloneSnapshot(t, b.String())
	}
}
