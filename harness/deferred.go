package harness

import (
	"context"
	"fmt"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/catalog"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/profile"
)

// Deferred is caller middleware that can only be built once the assembly
// knows the stack's model and backend (e.g. a summarization middleware with
// custom triggers named in an agent file). New builds it per stack.
type Deferred struct {
	agent.Base
	name  string
	build func(env DeferredEnv) (agent.Middleware, error)
}

// DeferredEnv is what the assembly knows when it builds a Deferred for a
// stack: the stack's model, backend and harness profile, the model facts
// of the assembly (Config.Catalog, or the default catalog), and how it
// resolves model specs (Config.ResolveModel, or the built-in providers), so
// that a middleware naming a model of its own (a grader, a summariser)
// reaches it the way the agent's models are reached.
type DeferredEnv struct {
	Model   llm.ChatModel
	Backend backend.Backend
	Catalog *catalog.Catalog
	Profile *profile.HarnessProfile
	Resolve func(spec string) (llm.ChatModel, error)
}

// NewDeferred returns middleware named name that New builds with build.
func NewDeferred(name string, build func(model llm.ChatModel, b backend.Backend) (agent.Middleware, error)) *Deferred {
	return &Deferred{name: name, build: func(env DeferredEnv) (agent.Middleware, error) { return build(env.Model, env.Backend) }}
}

// NewDeferredWith is NewDeferred for middleware that also needs the model
// facts, such as summarization triggering at a share of the context window.
func NewDeferredWith(name string, build func(env DeferredEnv) (agent.Middleware, error)) *Deferred {
	return &Deferred{name: name, build: build}
}

// Name implements agent.Middleware.
func (d *Deferred) Name() string { return d.name }

// WrapModelCall fails loudly if a Deferred reaches a running agent unbuilt.
func (d *Deferred) WrapModelCall(context.Context, *agent.ModelRequest, agent.ModelHandler) (*agent.ModelResponse, error) {
	return nil, fmt.Errorf("middleware %s was not built: pass it through harness.New", d.name)
}

// buildDeferred replaces Deferred entries with the middleware they build.
func buildDeferred(mws []agent.Middleware, env DeferredEnv) ([]agent.Middleware, error) {
	out := slices.Clone(mws)
	for i, m := range out {
		if d, ok := m.(*Deferred); ok {
			built, err := d.build(env)
			if err != nil {
				return nil, fmt.Errorf("middleware %s: %w", d.name, err)
			}
			out[i] = built
		}
	}
	return out, nil
}
