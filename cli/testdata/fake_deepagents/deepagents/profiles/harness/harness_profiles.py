"""Stand-in harness profile registry: the real lookup function, placeholder profiles."""

from dataclasses import dataclass, field
from typing import Optional

from langchain.agents.middleware import TodoListMiddleware


@dataclass(frozen=True)
class GeneralPurposeSubagentProfile:
    enabled: Optional[bool] = None
    description: Optional[str] = None
    system_prompt: Optional[str] = None


@dataclass(frozen=True)
class HarnessProfile:
    base_system_prompt: Optional[str] = None
    system_prompt_suffix: Optional[str] = None
    tool_description_overrides: dict = field(default_factory=dict)
    excluded_tools: frozenset = frozenset()
    excluded_middleware: frozenset = frozenset()
    extra_middleware: tuple = ()
    general_purpose_subagent: Optional[GeneralPurposeSubagentProfile] = None

    def materialize_extra_middleware(self):
        return list(self.extra_middleware)


_HARNESS_PROFILES = {
    "anthropic:claude-sonnet-4-6": HarnessProfile(system_prompt_suffix="STAND-IN Sonnet suffix.\n\nSecond line."),
    "openai:gpt-5.1-codex": HarnessProfile(
        system_prompt_suffix="STAND-IN Codex suffix.",
        extra_middleware=(TodoListMiddleware(system_prompt="STAND-IN Codex todo prompt."),),
    ),
    "openai:stand-in-custom": HarnessProfile(
        base_system_prompt="STAND-IN base.",
        tool_description_overrides={"ls": "STAND-IN profile ls.", "write_todos": "STAND-IN override Deep Agents ignores."},
        excluded_tools=frozenset({"delete"}),
        general_purpose_subagent=GeneralPurposeSubagentProfile(description="STAND-IN profile GP."),
    ),
}


def _get_harness_profile(spec):
    provider, sep, _ = spec.partition(":")
    exact = _HARNESS_PROFILES.get(spec)
    if exact is not None:
        return exact
    return _HARNESS_PROFILES.get(provider) if sep else None
