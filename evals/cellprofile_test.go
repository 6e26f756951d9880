package evals_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/harness/llm"
)

// requestLog answers like its model and keeps every request, keyed by the
// conversation's first user message.
type requestLog struct {
	llm.ChatModel
	mu   sync.Mutex
	reqs map[string][]llm.Request
}

func (l *requestLog) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	l.mu.Lock()
	if l.reqs == nil {
		l.reqs = map[string][]llm.Request{}
	}
	first := ""
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			first = m.Text()
			break
		}
	}
	l.reqs[first] = append(l.reqs[first], *req)
	l.mu.Unlock()
	return l.ChatModel.Generate(ctx, req)
}

// A cell's profile is the profile of the model under test, so it reaches a
// subagent that names that model exactly as it reaches one without a model
// (issue 16: Deep Agents looks a subagent's profile up by its model).
func TestCellProfileReachesSubagentNamingTheCellModel(t *testing.T) {
	m := &requestLog{ChatModel: &convModel{convs: map[string][]llm.Message{
		"go":       {say("", call("task", `{"description":"check it","subagent_type":"checker"}`)), say("done")},
		"check it": {say("checked")},
	}}}
	srv := server(t, m)
	suite := liveHeader(srv.URL) + `models: [local:m]
agent:
  subagents:
    - {name: checker, description: Checks., system_prompt: You check., model: local:m}
profiles:
  - name: suffixed
    profile: {system_prompt_suffix: SUFFIX, excluded_tools: [grep]}
cases: [{id: c, input: go}]
`
	oc := runSuite(t, writeSuite(t, map[string]string{"suite.yaml": suite}), evals.Options{})
	require.Equal(t, evals.StatusPass, oc.Results[0].Status, oc.Results[0].Error)
	sub := m.reqs["check it"]
	require.Len(t, sub, 1, "the subagent ran once")
	assert.Equal(t, "You check.\n\nSUFFIX", sub[0].SystemText())
	var tools []string
	for _, s := range sub[0].Tools {
		tools = append(tools, s.Name)
	}
	assert.False(t, slices.Contains(tools, "grep"), "the profile's excluded tool is hidden from the subagent: %v", tools)
	assert.Contains(t, m.reqs["go"][0].SystemText(), "SUFFIX")
}
