"""Stand-in async subagent middleware: the real module's names and tool-building shape, placeholder text."""

ASYNC_TASK_TOOL_DESCRIPTION = """STAND-IN start_async_task: run a remote task.

Remote types:
{available_agents}

A format escape: {{kept braces}}."""


class _Tool:
    def __init__(self, name, description):
        self.name = name
        self.description = description


class AsyncSubAgentMiddleware:
    def __init__(self, *, async_subagents, system_prompt=None):
        if not async_subagents:
            raise ValueError("At least one async subagent must be specified")
        agents = "\n".join("- %s: %s" % (a["name"], a["description"]) for a in async_subagents)
        self.tools = [
            _Tool("start_async_task", ASYNC_TASK_TOOL_DESCRIPTION.format(available_agents=agents)),
            _Tool("check_async_task", "STAND-IN check_async_task: status and result."),
            _Tool("update_async_task", "STAND-IN update_async_task: new instructions."),
            _Tool("cancel_async_task", "STAND-IN cancel_async_task: stop it."),
            _Tool("list_async_tasks", "STAND-IN list_async_tasks: every task."),
        ]
        self.system_prompt = system_prompt
