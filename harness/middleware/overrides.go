package middleware

import "github.com/dageval/dageval/harness/agent"

// TextOverrides is the text a harness profile re-words in the built-in
// middleware: tool descriptions by tool name, and the prompt fragment of the
// todo list.
type TextOverrides struct {
	// ToolDescriptions maps tool names to descriptions. For
	// start_async_task, as for task, "{available_agents}" is replaced by the
	// list of subagents.
	ToolDescriptions map[string]string
	// TodoSystemPrompt, when non-nil, replaces TodoListMiddleware's prompt
	// fragment; an empty string appends nothing.
	TodoSystemPrompt *string
}

// Overridable is implemented by the built-in middleware whose tools or
// prompt a harness profile may re-word after the stack is assembled, whatever
// brought the middleware in (a profile's extra middleware, the caller's
// middleware). WithOverrides returns the middleware to use: a fresh copy
// carrying o wherever the middleware's own configuration kept the default
// (text the caller gave the middleware wins), or the middleware itself when
// o changes nothing. The receiver is never changed, so an instance shared by
// several stacks stays as it was.
type Overridable interface {
	agent.Middleware
	WithOverrides(o TextOverrides) agent.Middleware
}

// overrideFor returns the description o gives tool name, unless the
// middleware's own configuration already set one.
func (o TextOverrides) overrideFor(name string, own bool) (string, bool) {
	if own {
		return "", false
	}
	d, ok := o.ToolDescriptions[name]
	return d, ok
}
