"""Stand-in subagents module: the real module's attribute names, placeholder text."""

DEFAULT_SUBAGENT_PROMPT = "STAND-IN subagent prompt: do the task and answer fully."

DEFAULT_GENERAL_PURPOSE_DESCRIPTION = "STAND-IN general-purpose: broad multi-step work."

TASK_TOOL_DESCRIPTION = """STAND-IN task: hand work to a subagent.

Types:
{available_agents}

A format escape: {{not a placeholder}}."""

GENERAL_PURPOSE_SUBAGENT = {
    "name": "general-purpose",
    "description": DEFAULT_GENERAL_PURPOSE_DESCRIPTION,
    "system_prompt": DEFAULT_SUBAGENT_PROMPT,
}
