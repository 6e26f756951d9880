package agent

import (
	"context"
	"slices"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// Middleware shapes an agent run through hooks. Embed Base and override the
// hooks you need.
//
// Order follows LangChain: BeforeAgent and BeforeModel run in stack order;
// AfterModel and AfterAgent in reverse stack order; WrapModelCall and
// WrapToolCall nest so that the first middleware is the outermost wrapper (it
// sees the request first and the response last).
type Middleware interface {
	// Name identifies the middleware in a stack; names are unique per stack.
	Name() string
	// Tools are contributed to the agent, in order, ahead of the caller's tools.
	Tools() []tool.Tool
	// StateKeys declares the extension keys the middleware keeps in State.Values.
	StateKeys() []StateKey

	// BeforeAgent runs once per invocation, before the first model call.
	BeforeAgent(ctx context.Context, s *State) (*Update, error)
	// BeforeModel runs before every model call.
	BeforeModel(ctx context.Context, s *State) (*Update, error)
	// WrapModelCall surrounds the model call; call next to continue.
	WrapModelCall(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error)
	// AfterModel runs after every model call.
	AfterModel(ctx context.Context, s *State) (*Update, error)
	// WrapToolCall surrounds each tool execution; call next to continue.
	WrapToolCall(ctx context.Context, req *ToolRequest, next ToolHandler) (*ToolResponse, error)
	// AfterAgent runs when the agent would finish; JumpModel sends it back to the model.
	AfterAgent(ctx context.Context, s *State) (*Update, error)
}

// ModelHandler performs (the rest of) a model call.
type ModelHandler func(ctx context.Context, req *ModelRequest) (*ModelResponse, error)

// ToolHandler performs (the rest of) a tool call.
type ToolHandler func(ctx context.Context, req *ToolRequest) (*ToolResponse, error)

// ModelRequest is one model call as middleware see it. Middleware change a
// request by passing a modified copy to next; they never modify the slices of
// the request they were given.
type ModelRequest struct {
	llm.Request
	// Model is the model that will be called.
	Model llm.ChatModel
	// State is the state before the call (read-only).
	State *State
}

// Clone returns a shallow copy whose slices can be replaced freely.
func (r *ModelRequest) Clone() *ModelRequest {
	c := *r
	return &c
}

// AppendSystem returns a copy of the request whose system prompt has text
// appended as a new block, separated by a blank line when the prompt already
// has blocks. Empty text leaves the request unchanged.
func (r *ModelRequest) AppendSystem(text string) *ModelRequest {
	if text == "" {
		return r
	}
	c := r.Clone()
	c.System = AppendSystemText(r.System, text)
	return c
}

// AppendSystemText returns blocks plus one text block holding text, prefixed
// with a blank line when blocks is not empty. blocks is not modified.
func AppendSystemText(blocks []llm.Block, text string) []llm.Block {
	if len(blocks) > 0 {
		text = "\n\n" + text
	}
	out := make([]llm.Block, len(blocks), len(blocks)+1)
	copy(out, blocks)
	return append(out, llm.TextBlock(text))
}

// ToolNames lists the names of the request's tools.
func (r *ModelRequest) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// HasTool reports whether a tool of that name is visible to the model.
func (r *ModelRequest) HasTool(name string) bool {
	return slices.ContainsFunc(r.Tools, func(t llm.ToolSpec) bool { return t.Name == name })
}

// ModelResponse is the result of a model call plus an optional state update
// that the wrapper wants applied with it.
type ModelResponse struct {
	Response *llm.Response
	Update   *Update
}

// ToolRequest is one tool execution as middleware see it.
type ToolRequest struct {
	Call llm.ToolCall
	// Tool is nil when the model called a tool the agent does not have.
	Tool  tool.Tool
	State *State
}

// ToolResponse is the tool message produced for a call, plus state changes
// the tool made.
type ToolResponse struct {
	Message llm.Message `json:"message"`
	Update  *Update     `json:"update,omitempty"`
}

// Base implements every Middleware hook as a no-op. Embed it and override.
type Base struct{}

// Tools implements Middleware.
func (Base) Tools() []tool.Tool { return nil }

// StateKeys implements Middleware.
func (Base) StateKeys() []StateKey { return nil }

// BeforeAgent implements Middleware.
func (Base) BeforeAgent(context.Context, *State) (*Update, error) { return nil, nil }

// BeforeModel implements Middleware.
func (Base) BeforeModel(context.Context, *State) (*Update, error) { return nil, nil }

// WrapModelCall implements Middleware.
func (Base) WrapModelCall(ctx context.Context, req *ModelRequest, next ModelHandler) (*ModelResponse, error) {
	return next(ctx, req)
}

// AfterModel implements Middleware.
func (Base) AfterModel(context.Context, *State) (*Update, error) { return nil, nil }

// WrapToolCall implements Middleware.
func (Base) WrapToolCall(ctx context.Context, req *ToolRequest, next ToolHandler) (*ToolResponse, error) {
	return next(ctx, req)
}

// AfterAgent implements Middleware.
func (Base) AfterAgent(context.Context, *State) (*Update, error) { return nil, nil }
