package agent

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
)

type namedMiddleware struct {
	Base
	name string
}

func (m namedMiddleware) Name() string { return m.name }

// stubModel is never called: the test only builds agents.
type stubModel struct{}

func (stubModel) Generate(context.Context, *llm.Request) (*llm.Response, error) { return nil, nil }

// TestAgentsOfOneStackShareTheirNodeNames: an eval run builds the same
// stacks in every cell, whose agents share one set of hook node names,
// while a stack of other names gets its own.
func TestAgentsOfOneStackShareTheirNodeNames(t *testing.T) {
	build := func(names ...string) *Agent {
		var mws []Middleware
		for _, n := range names {
			mws = append(mws, namedMiddleware{name: n})
		}
		a, err := New(Config{Model: stubModel{}, Middleware: mws})
		require.NoError(t, err)
		return a
	}
	a, b := build("ab", "c"), build("ab", "c")
	assert.Equal(t, []string{"before_model:ab", "before_model:c"}, a.hookNodes(PhaseBeforeModel))
	assert.Same(t, unsafe.StringData(a.nodes[0][0]), unsafe.StringData(b.nodes[0][0]), "two agents of one stack named their hooks twice")
	for _, c := range []*Agent{build("a", "bc"), build("abc"), build("ab", "c", "d")} {
		assert.NotSame(t, unsafe.StringData(a.nodes[0][0]), unsafe.StringData(c.nodes[0][0]))
	}
	assert.Equal(t, []string{"after_agent:a", "after_agent:bc"}, build("a", "bc").hookNodes(PhaseAfterAgent))
	assert.Equal(t, []string{"before_agent:abc"}, build("abc").hookNodes(PhaseBeforeAgent))
	assert.Equal(t, []string{"after_model:ab", "after_model:c", "after_model:d"}, build("ab", "c", "d").hookNodes(PhaseAfterModel))
}
