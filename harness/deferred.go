package harness

import (
	"context"
	"fmt"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
)

// Deferred is caller middleware that can only be built once the assembly
// knows the stack's model and backend (e.g. a summarization middleware with
// custom triggers named in an agent file). New builds it per stack.
type Deferred struct {
	agent.Base
	name  string
	build func(model llm.ChatModel, b backend.Backend) (agent.Middleware, error)
}

// NewDeferred returns middleware named name that New builds with build.
func NewDeferred(name string, build func(model llm.ChatModel, b backend.Backend) (agent.Middleware, error)) *Deferred {
	return &Deferred{name: name, build: build}
}

// Name implements agent.Middleware.
func (d *Deferred) Name() string { return d.name }

// WrapModelCall fails loudly if a Deferred reaches a running agent unbuilt.
func (d *Deferred) WrapModelCall(context.Context, *agent.ModelRequest, agent.ModelHandler) (*agent.ModelResponse, error) {
	return nil, fmt.Errorf("middleware %s was not built: pass it through harness.New", d.name)
}

// buildDeferred replaces Deferred entries with the middleware they build.
func buildDeferred(mws []agent.Middleware, model llm.ChatModel, b backend.Backend) ([]agent.Middleware, error) {
	out := slices.Clone(mws)
	for i, m := range out {
		if d, ok := m.(*Deferred); ok {
			built, err := d.build(model, b)
			if err != nil {
				return nil, fmt.Errorf("middleware %s: %w", d.name, err)
			}
			out[i] = built
		}
	}
	return out, nil
}
