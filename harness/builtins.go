package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/backend"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/middleware"
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

// builtinMiddleware builds the middleware an agent file may name, from its options.
var builtinMiddleware = map[string]func(options map[string]any) (agent.Middleware, error){
	"TodoListMiddleware": func(o map[string]any) (agent.Middleware, error) {
		var opts struct {
			SystemPrompt    *string `json:"system_prompt"`
			ToolDescription string  `json:"tool_description"`
		}
		if err := decodeOptions(o, &opts); err != nil {
			return nil, err
		}
		return middleware.NewTodoList(middleware.TodoListConfig{SystemPrompt: opts.SystemPrompt, ToolDescription: opts.ToolDescription}), nil
	},
	"PatchToolCallsMiddleware": func(o map[string]any) (agent.Middleware, error) {
		if err := decodeOptions(o, &struct{}{}); err != nil {
			return nil, err
		}
		return middleware.NewPatchToolCalls(), nil
	},
	"AnthropicPromptCachingMiddleware": func(o map[string]any) (agent.Middleware, error) {
		var opts struct {
			TTL string `json:"ttl"`
		}
		if err := decodeOptions(o, &opts); err != nil {
			return nil, err
		}
		return middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{TTL: opts.TTL})
	},
	"SummarizationMiddleware": func(o map[string]any) (agent.Middleware, error) {
		opts, err := summarizationOptions(o)
		if err != nil {
			return nil, err
		}
		return NewDeferred("SummarizationMiddleware", func(m llm.ChatModel, b backend.Backend) (agent.Middleware, error) {
			so := opts
			so.Model, so.Backend, so.ContextWindow = m, b, contextWindow
			return middleware.NewSummarization(so)
		}), nil
	},
}

func builtinNames() []string {
	return sortedKeys(builtinMiddleware)
}

// summarizationOptions reads {trigger, keep, summary_prompt} where trigger
// is one threshold or a list of them (any may fire) and a threshold is
// {fraction|tokens|messages}.
func summarizationOptions(o map[string]any) (middleware.SummarizationOptions, error) {
	var raw struct {
		Trigger       json.RawMessage       `json:"trigger"`
		Keep          *middleware.Threshold `json:"keep"`
		SummaryPrompt string                `json:"summary_prompt"`
	}
	if err := decodeOptions(o, &raw); err != nil {
		return middleware.SummarizationOptions{}, err
	}
	var opts middleware.SummarizationOptions
	if len(raw.Trigger) > 0 {
		if raw.Trigger[0] == '[' {
			if err := strictJSON(raw.Trigger, &opts.Trigger); err != nil {
				return opts, fmt.Errorf("trigger: %w", err)
			}
		} else {
			var t middleware.Threshold
			if err := strictJSON(raw.Trigger, &t); err != nil {
				return opts, fmt.Errorf("trigger: %w", err)
			}
			opts.Trigger = []middleware.Threshold{t}
		}
	}
	if raw.Keep != nil {
		opts.Keep = *raw.Keep
	}
	opts.SummaryPrompt = raw.SummaryPrompt
	return opts, nil
}

func decodeOptions(o map[string]any, v any) error {
	if o == nil {
		o = map[string]any{}
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return strictJSON(raw, v)
}

func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	return nil
}
