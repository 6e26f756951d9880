package agent_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// todoSetter updates the todo list in every hook, so that each hook's
// update is an event naming its node; failAt makes that hook fail.
type todoSetter struct {
	agent.Base
	name   string
	failAt string
}

func (m *todoSetter) Name() string { return m.name }

func (m *todoSetter) hook(h string) (*agent.Update, error) {
	if h == m.failAt {
		return nil, errors.New("boom")
	}
	return &agent.Update{Todos: []agent.Todo{{Content: m.name + " " + h, Status: "pending"}}}, nil
}

func (m *todoSetter) BeforeAgent(context.Context, *agent.State) (*agent.Update, error) {
	return m.hook("before_agent")
}
func (m *todoSetter) BeforeModel(context.Context, *agent.State) (*agent.Update, error) {
	return m.hook("before_model")
}
func (m *todoSetter) AfterModel(context.Context, *agent.State) (*agent.Update, error) {
	return m.hook("after_model")
}
func (m *todoSetter) AfterAgent(context.Context, *agent.State) (*agent.Update, error) {
	return m.hook("after_agent")
}

// TestHookNodeNames checks the node each hook's update event and error
// names: "<phase>:<middleware>", for middleware of different name lengths
// in each phase (the names are cut from one string per agent).
func TestHookNodeNames(t *testing.T) {
	mws := []agent.Middleware{&todoSetter{name: "A"}, &todoSetter{name: "Longer"}, &todoSetter{name: "Mid"}}
	a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Reply("done")), Middleware: mws})
	require.NoError(t, err)
	var mu sync.Mutex
	var nodes []string
	_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}}, agent.WithEvents(func(ev agent.Event) {
		if ev.Type == agent.EventUpdate && ev.Node != "" {
			mu.Lock()
			nodes = append(nodes, ev.Node)
			mu.Unlock()
		}
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"before_agent:A", "before_agent:Longer", "before_agent:Mid",
		"before_model:A", "before_model:Longer", "before_model:Mid",
		"after_model:Mid", "after_model:Longer", "after_model:A",
		"after_agent:Mid", "after_agent:Longer", "after_agent:A",
	}, nodes)

	for _, h := range []string{"before_agent", "before_model", "after_model", "after_agent"} {
		mws := []agent.Middleware{&todoSetter{name: "A"}, &todoSetter{name: "Longer", failAt: h}, &todoSetter{name: "Mid"}}
		a, err := agent.New(agent.Config{Model: fakes.NewScripted(fakes.Reply("done")), Middleware: mws})
		require.NoError(t, err)
		_, err = a.Invoke(t.Context(), agent.Input{Messages: []llm.Message{llm.User("go")}})
		assert.EqualError(t, err, "agent: "+h+":Longer: boom")
	}
}
