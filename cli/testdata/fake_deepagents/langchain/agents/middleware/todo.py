"""Stand-in todo middleware: the real module's attribute names, placeholder text."""

WRITE_TODOS_TOOL_DESCRIPTION = "STAND-IN write_todos: keep a plan.\n\nSecond paragraph with {braces} kept."

WRITE_TODOS_SYSTEM_PROMPT = "## STAND-IN todo prompt\n\nPlan long work with write_todos."


class _Tool:
    def __init__(self, name, description):
        self.name = name
        self.description = description


class TodoListMiddleware:
    def __init__(self, *, system_prompt=WRITE_TODOS_SYSTEM_PROMPT, tool_description=WRITE_TODOS_TOOL_DESCRIPTION):
        self.system_prompt = system_prompt
        self.tool_description = tool_description
        self.tools = [_Tool("write_todos", tool_description)]
