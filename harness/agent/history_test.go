package agent_test

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// stateLog keeps every state the run saves, and a deep copy of its
// messages as they were when it was saved.
type stateLog struct {
	agent.MemoryCheckpointer
	states []*agent.State
	seen   [][]llm.Message
}

func (s *stateLog) Put(ctx context.Context, thread string, cp *agent.Checkpoint) error {
	s.states = append(s.states, cp.State)
	c := make([]llm.Message, len(cp.State.Messages))
	for i, m := range cp.State.Messages {
		c[i] = m.Clone()
	}
	s.seen = append(s.seen, c)
	return s.MemoryCheckpointer.Put(ctx, thread, cp)
}

// grabber is a middleware that, before every model call, appends to the
// Messages it is handed (as code building a new list might) and, at the
// third call, replaces the first message by id.
type grabber struct {
	agent.Base
	calls int
}

func (*grabber) Name() string { return "grabber" }

func (g *grabber) BeforeModel(_ context.Context, s *agent.State) (*agent.Update, error) {
	g.calls++
	_ = append(s.Messages, llm.User("scribbled into spare capacity"))
	if g.calls == 3 {
		replaced := s.Messages[0]
		replaced.Content = []llm.Block{llm.TextBlock("replaced")}
		return &agent.Update{Messages: []llm.Message{replaced}}, nil
	}
	return nil, nil
}

// The states of a run share their messages' backing array, each capped at
// its length, so a step appends instead of copying the history; no state
// ever sees a message change, not when middleware append to what they are
// handed and not when a message is replaced.
func TestStatesShareTheirHistory(t *testing.T) {
	log := &stateLog{MemoryCheckpointer: *agent.NewMemoryCheckpointer()}
	a, err := agent.New(agent.Config{Model: loopModel{}, Tools: stateFileTools(), Middleware: []agent.Middleware{&grabber{}}, Checkpointer: log})
	require.NoError(t, err)
	res, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("write then read")}}, agent.WithThread("t"))
	require.NoError(t, err)
	require.Equal(t, 5, res.Steps)

	shared := 0
	for i, s := range log.states {
		assert.Equal(t, len(s.Messages), cap(s.Messages), "state %d has spare capacity others could write into", i)
		assert.Equal(t, log.seen[i], s.Messages, "state %d changed after it was saved", i)
		if i > 0 && len(s.Messages) > len(log.states[i-1].Messages) && unsafe.SliceData(s.Messages) == unsafe.SliceData(log.states[i-1].Messages) {
			shared++
		}
		for _, m := range s.Messages {
			assert.NotEqual(t, "scribbled into spare capacity", m.Text())
		}
	}
	assert.Positive(t, shared, "no state extended its predecessor's array")
	assert.Equal(t, "replaced", res.State.Messages[0].Text())
	assert.Equal(t, "write then read", log.states[0].Messages[0].Text(), "the replacement reached an earlier state")
}

type memoKey struct{}

type counter struct{ n int }

// memoUser counts its model calls in the run's memo.
type memoUser struct {
	agent.Base
	seen []int
}

func (*memoUser) Name() string { return "memo" }

func (m *memoUser) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	c := agent.RunMemo(ctx, memoKey{}, func() *counter { return &counter{} })
	c.n++
	m.seen = append(m.seen, c.n)
	return next(ctx, req)
}

// RunMemo keeps a value for the model calls of one invocation; the next
// invocation starts afresh, and outside a run nothing is kept.
func TestRunMemo(t *testing.T) {
	mw := &memoUser{}
	a, err := agent.New(agent.Config{Model: loopModel{}, Tools: stateFileTools(), Middleware: []agent.Middleware{mw}})
	require.NoError(t, err)
	for range 2 {
		_, err := a.Invoke(context.Background(), agent.Input{Messages: []llm.Message{llm.User("write then read")}})
		require.NoError(t, err)
	}
	assert.Equal(t, []int{1, 2, 3, 1, 2, 3}, mw.seen)
	outside := agent.RunMemo(context.Background(), memoKey{}, func() *counter { return &counter{n: 7} })
	outside.n++
	assert.Equal(t, 7, agent.RunMemo(context.Background(), memoKey{}, func() *counter { return &counter{n: 7} }).n)
}
