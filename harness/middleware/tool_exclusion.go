package middleware

import (
	"context"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
)

// ToolExclusionMiddleware hides tools from the model by name. It only changes
// what the model is offered: a call the model makes to a hidden tool anyway
// still runs, because exclusion is about visibility, not permission. The
// assembly places it last so that no later middleware can re-add a hidden tool.
type ToolExclusionMiddleware struct {
	agent.Base
	excluded map[string]bool
	names    []string
}

// NewToolExclusion returns a middleware hiding the named tools. With no names
// it passes every request through untouched.
func NewToolExclusion(names ...string) *ToolExclusionMiddleware {
	m := &ToolExclusionMiddleware{excluded: make(map[string]bool, len(names))}
	for _, n := range names {
		if !m.excluded[n] {
			m.excluded[n] = true
			m.names = append(m.names, n)
		}
	}
	slices.Sort(m.names)
	return m
}

// Name implements agent.Middleware.
func (m *ToolExclusionMiddleware) Name() string { return ToolExclusionName }

// Excluded returns the hidden tool names, sorted.
func (m *ToolExclusionMiddleware) Excluded() []string { return slices.Clone(m.names) }

// WrapModelCall implements agent.Middleware. The caller's request and its
// tool slice are never modified; a filtered copy goes to next.
func (m *ToolExclusionMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	if len(m.excluded) == 0 || !slices.ContainsFunc(req.Tools, m.hidden) {
		return next(ctx, req)
	}
	kept := make([]llm.ToolSpec, 0, len(req.Tools))
	for _, t := range req.Tools {
		if !m.hidden(t) {
			kept = append(kept, t)
		}
	}
	c := req.Clone()
	c.Tools = kept
	return next(ctx, c)
}

func (m *ToolExclusionMiddleware) hidden(t llm.ToolSpec) bool { return m.excluded[t.Name] }
