package middleware

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/tool"
)

// WriteTodosTool is the name of the tool TodoListMiddleware contributes.
const WriteTodosTool = "write_todos"

// defaultTodoSystemPrompt is the fragment TodoListMiddleware appends to the
// system prompt of every model call.
const defaultTodoSystemPrompt = "## `write_todos`\n\n" +
	"You have a `write_todos` tool for planning and tracking work that takes many steps. " +
	"Use it to break a larger objective into concrete steps and to let the user follow your progress. " +
	"For a request you can finish in a few simple steps, skip the list and just do the work.\n\n" +
	"- Every call replaces the whole list, so send all the items you want to keep.\n" +
	"- Mark a step in_progress when you start it and completed as soon as it is done; do not save completions up for later.\n" +
	"- Revise the list as you learn: add steps that turn up and remove the ones that no longer matter.\n" +
	"- Call `write_todos` at most once per turn, never several times in parallel."

// defaultTodoToolDescription is the description of the write_todos tool.
const defaultTodoToolDescription = "Replace your todo list for the current task. " +
	"Use it for work with three or more distinct steps, when the user hands you several tasks, or when the user asks for a plan; " +
	"skip it for trivial or purely conversational requests.\n\n" +
	"Each item has a content (a short, specific, actionable step) and a status: " +
	"pending (not started), in_progress (being worked on now) or completed (fully done).\n\n" +
	"Guidelines:\n" +
	"- Send the complete list every time; items you leave out are dropped.\n" +
	"- Mark the first step in_progress as soon as you write the list, and keep at least one step in_progress until everything is completed.\n" +
	"- Mark a step completed right after finishing it, and only if it is really finished: " +
	"when you hit an error or a blocker, keep it in_progress and add a step describing what must be resolved.\n" +
	"- Do not rewrite steps that are already completed."

// TodoListConfig configures TodoListMiddleware. The zero value uses the
// default prompt fragment and tool description.
type TodoListConfig struct {
	// SystemPrompt replaces the default prompt fragment when non-nil; an empty
	// string appends nothing.
	SystemPrompt *string
	// ToolDescription replaces the default tool description when non-empty.
	ToolDescription string
}

// TodoListMiddleware gives the agent a todo list it maintains with the
// write_todos tool. The list lives in agent.State.Todos; each call replaces
// it whole. Several write_todos calls in one model turn are rejected, because
// running them in parallel would leave the final list to chance.
type TodoListMiddleware struct {
	agent.Base
	cfg    TodoListConfig
	prompt string
	tool   tool.Tool
}

// NewTodoList returns a todo-list middleware. Every call returns a fresh
// instance, which is what a profile's extra-middleware factory wants.
func NewTodoList(cfg TodoListConfig) *TodoListMiddleware {
	prompt := defaultTodoSystemPrompt
	if cfg.SystemPrompt != nil {
		prompt = *cfg.SystemPrompt
	}
	desc := defaultTodoToolDescription
	if cfg.ToolDescription != "" {
		desc = cfg.ToolDescription
	}
	return &TodoListMiddleware{cfg: cfg, prompt: prompt, tool: newWriteTodos(desc)}
}

// WithOverrides implements Overridable: a profile's write_todos description
// and todo prompt apply where the config kept the defaults.
func (m *TodoListMiddleware) WithOverrides(o TextOverrides) agent.Middleware {
	cfg, changed := m.cfg, false
	if d, ok := o.overrideFor(WriteTodosTool, cfg.ToolDescription != ""); ok && d != "" {
		cfg.ToolDescription, changed = d, true
	}
	if o.TodoSystemPrompt != nil && cfg.SystemPrompt == nil {
		p := *o.TodoSystemPrompt
		cfg.SystemPrompt, changed = &p, true
	}
	if !changed {
		return m
	}
	return NewTodoList(cfg)
}

// Name implements agent.Middleware.
func (m *TodoListMiddleware) Name() string { return TodoListName }

// Tools implements agent.Middleware.
func (m *TodoListMiddleware) Tools() []tool.Tool { return []tool.Tool{m.tool} }

// WrapModelCall implements agent.Middleware: it appends the prompt fragment.
func (m *TodoListMiddleware) WrapModelCall(ctx context.Context, req *agent.ModelRequest, next agent.ModelHandler) (*agent.ModelResponse, error) {
	return next(ctx, req.AppendSystem(m.prompt))
}

// AfterModel implements agent.Middleware: when the model called write_todos
// more than once in its last message, every one of those calls is answered
// with an error and none runs, so the model sends a single complete list.
func (m *TodoListMiddleware) AfterModel(_ context.Context, s *agent.State) (*agent.Update, error) {
	idx := -1
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == llm.RoleAssistant {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, nil
	}
	answered := map[string]bool{}
	for _, msg := range s.Messages[idx+1:] {
		if msg.Role == llm.RoleTool {
			answered[msg.ToolCallID] = true
		}
	}
	var calls []llm.ToolCall
	for _, c := range s.Messages[idx].ToolCalls {
		if c.Name == WriteTodosTool && !answered[c.ID] {
			calls = append(calls, c)
		}
	}
	if len(calls) < 2 {
		return nil, nil
	}
	u := &agent.Update{}
	for _, c := range calls {
		u.Messages = append(u.Messages, llm.Message{
			Role:       llm.RoleTool,
			Name:       WriteTodosTool,
			ToolCallID: c.ID,
			IsError:    true,
			Content: []llm.Block{llm.TextBlock(fmt.Sprintf(
				"Error: write_todos was called %d times in one turn; none of these calls was applied. "+
					"Call it once with the complete list.", len(calls)))},
		})
	}
	return u, nil
}

// writeTodosSchema is written by hand so the model sees the status enum.
const writeTodosSchema = `{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The complete, updated todo list.",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "minLength": 1, "description": "What the step is about."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"], "description": "Where the step stands."}
        },
        "required": ["content", "status"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}`

type writeTodosArgs struct {
	Todos []agent.Todo `json:"todos"`
}

// writeTodosParsed is parsed when a call is first validated, not at program
// start or when an agent is assembled (tool.BuiltinSchema).
var writeTodosParsed = tool.BuiltinSchema(json.RawMessage(writeTodosSchema))

func newWriteTodos(description string) tool.Tool {
	schema := writeTodosParsed
	return &tool.Func{
		ToolSpec: llm.ToolSpec{Name: WriteTodosTool, Description: description, Parameters: schema.JSON()},
		Fn: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			if err := schema.Validate(raw); err != nil {
				return tool.InvalidArgs(WriteTodosTool, err), nil
			}
			var args writeTodosArgs
			if err := json.Unmarshal(raw, &args); err != nil {
				return tool.InvalidArgs(WriteTodosTool, err), nil
			}
			todos := make([]agent.Todo, 0, len(args.Todos))
			for i, t := range args.Todos {
				if strings.TrimSpace(t.Content) == "" {
					return tool.InvalidArgs(WriteTodosTool, fmt.Errorf("todos[%d].content is blank", i)), nil
				}
				todos = append(todos, agent.Todo{Content: t.Content, Status: t.Status})
			}
			if err := agent.UpdateState(ctx, &agent.Update{Todos: todos}); err != nil {
				return tool.Result{}, err
			}
			out, err := json.Marshal(todos)
			if err != nil {
				return tool.Result{}, err
			}
			return tool.Text("Updated todo list to " + string(out)), nil
		},
	}
}
