package agentfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dageval/dageval/harness"
	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
)

// builtinMiddleware builds the middleware an agent file may name, from its options.
var builtinMiddleware = map[string]func(options map[string]any) (agent.Middleware, error){
	middleware.TodoListName: func(o map[string]any) (agent.Middleware, error) {
		var opts struct {
			SystemPrompt    *string `json:"system_prompt"`
			ToolDescription string  `json:"tool_description"`
		}
		if err := decodeOptions(o, &opts); err != nil {
			return nil, err
		}
		return middleware.NewTodoList(middleware.TodoListConfig{SystemPrompt: opts.SystemPrompt, ToolDescription: opts.ToolDescription}), nil
	},
	middleware.PatchToolCallsName: func(o map[string]any) (agent.Middleware, error) {
		if err := decodeOptions(o, &struct{}{}); err != nil {
			return nil, err
		}
		return middleware.NewPatchToolCalls(), nil
	},
	middleware.AnthropicPromptCachingName: func(o map[string]any) (agent.Middleware, error) {
		var opts struct {
			TTL string `json:"ttl"`
		}
		if err := decodeOptions(o, &opts); err != nil {
			return nil, err
		}
		return middleware.NewAnthropicPromptCaching(middleware.PromptCachingOptions{TTL: opts.TTL})
	},
	middleware.SummarizationName: func(o map[string]any) (agent.Middleware, error) {
		opts, err := summarizationOptions(o)
		if err != nil {
			return nil, err
		}
		return harness.NewDeferredWith(middleware.SummarizationName, func(env harness.DeferredEnv) (agent.Middleware, error) {
			so := opts
			so.Model, so.Backend, so.ContextWindow = env.Model, env.Backend, env.Catalog.ContextWindow
			return middleware.NewSummarization(so)
		}), nil
	},
	middleware.SummarizationToolName: func(o map[string]any) (agent.Middleware, error) {
		// compact_conversation, as Deep Agents' create_summarization_tool_middleware
		// adds it: a summarization of its own that the model runs on demand.
		var opts struct {
			SystemPrompt    string `json:"system_prompt"`
			ToolDescription string `json:"tool_description"`
		}
		if err := decodeOptions(o, &opts); err != nil {
			return nil, err
		}
		return harness.NewDeferredWith(middleware.SummarizationToolName, func(env harness.DeferredEnv) (agent.Middleware, error) {
			s, err := middleware.NewSummarization(middleware.SummarizationOptions{Model: env.Model, Backend: env.Backend, ContextWindow: env.Catalog.ContextWindow})
			if err != nil {
				return nil, err
			}
			return middleware.NewCompactConversation(s, middleware.CompactConversationOptions{SystemPrompt: opts.SystemPrompt, ToolDescription: opts.ToolDescription})
		}), nil
	},
}

// buildMiddleware builds the built-in middleware a declaration at key (such
// as "middleware[0]") names, from its options.
func (af *File) buildMiddleware(key string, d Middleware) (agent.Middleware, error) {
	build, ok := builtinMiddleware[d.Name]
	if !ok {
		known := slices.Sorted(maps.Keys(builtinMiddleware))
		return nil, af.errorf(key+".name", "unknown middleware %q (known: %s)", d.Name, strings.Join(known, ", "))
	}
	m, err := build(d.Options)
	if err != nil {
		return nil, af.errorf(key+".options", "%s: %v", d.Name, err)
	}
	return m, nil
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
