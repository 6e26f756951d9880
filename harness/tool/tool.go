package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dageval/dageval/harness/llm"
)

// Tool is something the model can call.
type Tool interface {
	// Spec is the tool as the model sees it: name, description, JSON Schema.
	Spec() llm.ToolSpec
	// Call runs the tool. A returned error becomes an error tool message the
	// model can read; it does not stop the agent.
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool call produced.
type Result struct {
	// Content is shown to the model; usually one text block.
	Content []llm.Block
	// IsError marks a result that reports a failure to the model.
	IsError bool
	// Artifact is data kept beside the message but not shown to the model
	// (for example an exit code).
	Artifact json.RawMessage
}

// Text is a successful result holding text.
func Text(s string) Result { return Result{Content: []llm.Block{llm.TextBlock(s)}} }

// Errorf is an error result whose text is formatted like fmt.Sprintf.
func Errorf(format string, args ...any) Result {
	return Result{Content: []llm.Block{llm.TextBlock(fmt.Sprintf(format, args...))}, IsError: true}
}

// Text returns the joined text blocks of the result.
func (r Result) Text() string { return llm.BlocksText(r.Content) }

// Func is a Tool made of a spec and a function. The function receives the raw
// JSON arguments; wrap it with Validated to enforce the spec's schema.
type Func struct {
	ToolSpec llm.ToolSpec
	Fn       func(ctx context.Context, args json.RawMessage) (Result, error)
}

// Spec implements Tool.
func (f *Func) Spec() llm.ToolSpec { return f.ToolSpec }

// Call implements Tool.
func (f *Func) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	return f.Fn(ctx, args)
}

// WithDescription returns a copy of t that reports description instead of its
// own. The original tool is never modified.
func WithDescription(t Tool, description string) Tool {
	if t.Spec().Description == description {
		return t
	}
	return &described{Tool: t, description: description}
}

type described struct {
	Tool
	description string
}

func (d *described) Spec() llm.ToolSpec {
	s := d.Tool.Spec()
	s.Description = d.description
	return s
}

// Unwrap returns the tool that was given a new description.
func (d *described) Unwrap() Tool { return d.Tool }

// Name returns the tool's name.
func Name(t Tool) string { return t.Spec().Name }
