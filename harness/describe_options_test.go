package harness_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/tool"
)

// weatherAgent is a team's one-tool agent: its own typed tool and prompt,
// everything else the deep-agent defaults.
func weatherAgent(t *testing.T) *harness.Agent {
	t.Helper()
	type args struct {
		City string `json:"city" jsonschema:"the city to look up"`
	}
	weather, err := tool.New("get_weather", "Returns the current weather for a city.", func(_ context.Context, a args) (string, error) {
		return "sunny in " + a.City, nil
	})
	require.NoError(t, err)
	a, err := harness.New(harness.Config{
		Model:        fakeModel("anthropic", "claude-sonnet-4-6"),
		SystemPrompt: "You answer weather questions with get_weather.",
		Tools:        []tool.Tool{weather},
	})
	require.NoError(t, err)
	return a
}

func TestDescribeOptionsKeepSnapshotsToTheTeamsAgent(t *testing.T) {
	a := weatherAgent(t)
	full, err := a.Describe(t.Context(), harness.DescribeOptions{})
	require.NoError(t, err)
	short, err := a.Describe(t.Context(), harness.DescribeOptions{Stacks: []string{"main"}, OmitBuiltinToolSchemas: true})
	require.NoError(t, err)

	require.Len(t, short.Stacks, 1)
	main := short.Stacks[0]
	assert.Equal(t, "main", main.Name)
	assert.Equal(t, stackOf(t, full, "main").Middleware, main.Middleware, "middleware order is kept")
	for _, ts := range main.Tools {
		if ts.Name == "get_weather" {
			assert.False(t, ts.SchemaOmitted, "the team's tool keeps its schema")
			assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string","description":"the city to look up"}},"required":["city"],"additionalProperties":false}`, string(ts.Parameters))
			continue
		}
		assert.True(t, ts.SchemaOmitted, ts.Name)
		assert.Empty(t, ts.Description, ts.Name)
	}
	text := short.Text()
	assert.Contains(t, text, "  - read_file (built-in, schema omitted)\n")
	assert.Contains(t, text, "tool get_weather:\n")
	assert.NotContains(t, text, "tool read_file:")
	fullLines, shortLines := strings.Count(full.Text(), "\n"), strings.Count(text, "\n")
	assert.Less(t, shortLines*4, fullLines, "the short description is a fraction of the full one (%d of %d lines)", shortLines, fullLines)
	snaps.MatchSnapshot(t, text)
}

func TestDescribeOptionsUnknownStack(t *testing.T) {
	_, err := weatherAgent(t).Describe(t.Context(), harness.DescribeOptions{Stacks: []string{"subagent:researcher"}})
	require.ErrorContains(t, err, `no stack "subagent:researcher" (stacks: main, subagent:general-purpose)`)
}
