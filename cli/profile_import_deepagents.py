# Run by `dageval profile import-deepagents` as `python -c`, with the model
# spec as its one argument. It reads the text an installed Deep Agents package
# sends and prints one JSON object; the Go side checks the version and writes
# the profile. It never builds a model, so it needs no API key or network.
import importlib
import json
import sys


def out(obj, code=0):
    sys.stdout.write(json.dumps(obj, sort_keys=True))
    sys.stdout.flush()
    sys.exit(code)


def fail(kind, message):
    out({"error": kind, "message": message}, 3)


def first_module(*names):
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if not e.name or not (name == e.name or name.startswith(e.name + ".")):
                raise
    return None


model = sys.argv[1]
try:
    import deepagents
except ImportError as e:
    if (e.name or "").split(".")[0] == "deepagents":
        fail("not_installed", str(e))
    fail("import_failed", "importing deepagents failed: %r" % (e,))

result = {"version": str(getattr(deepagents, "__version__", "")), "python": sys.version.split()[0]}
if not result["version"].startswith("0.7."):
    # The Go side names the supported versions; reading further could fail
    # on a layout it does not know.
    out(result)

try:
    from deepagents.backends import StateBackend
    from deepagents.middleware import subagents as sub
    from deepagents.middleware.filesystem import FilesystemMiddleware

    # The file tools as Deep Agents builds them for its default backend.
    fs = FilesystemMiddleware(backend=StateBackend())
    result["tools"] = {t.name: t.description for t in fs.tools}
    # The task template, with {available_agents} left for dageval to fill
    # and the format escapes ({{ }}) resolved as Deep Agents resolves them.
    result["task"] = sub.TASK_TOOL_DESCRIPTION.format(available_agents="{available_agents}")
    gp = getattr(sub, "GENERAL_PURPOSE_SUBAGENT", None) or {}
    result["gp_description"] = getattr(sub, "DEFAULT_GENERAL_PURPOSE_DESCRIPTION", None) or gp.get("description")
    result["gp_prompt"] = getattr(sub, "DEFAULT_SUBAGENT_PROMPT", None) or gp.get("system_prompt")

    hp = first_module("deepagents.profiles.harness.harness_profiles", "deepagents.profiles.harness_profiles")
    profile = hp._get_harness_profile(model) if hp is not None else None
    if profile is not None:
        p = {
            "base_system_prompt": profile.base_system_prompt,
            "system_prompt_suffix": profile.system_prompt_suffix,
            "tool_description_overrides": dict(profile.tool_description_overrides or {}),
            "excluded_tools": sorted(profile.excluded_tools or ()),
            "excluded_middleware": sorted(
                e if isinstance(e, str) else (getattr(e, "serialized_name", None) or e.__name__)
                for e in (profile.excluded_middleware or ())
            ),
            "extra_middleware": [type(m).__name__ for m in profile.materialize_extra_middleware()],
        }
        g = profile.general_purpose_subagent
        if g is not None:
            p["general_purpose_subagent"] = {"enabled": g.enabled, "description": g.description, "system_prompt": g.system_prompt}
        result["profile"] = p
except Exception as e:  # noqa: BLE001 - reported to the user as is
    fail("read_failed", "%s: %s" % (type(e).__name__, e))
out(result)
