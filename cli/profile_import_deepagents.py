# Run by `dageval profile import-deepagents` as `python -c`, with the model
# spec as its one argument. It reads the text an installed Deep Agents package
# sends and prints one JSON object; the Go side checks the version and writes
# the profile. It never builds a model, so it needs no API key or network.
import importlib
import inspect
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


def default_prompt(cls):
    """The system prompt a middleware class appends when built with its defaults, or None."""
    try:
        p = inspect.signature(cls.__init__).parameters.get("system_prompt")
    except (TypeError, ValueError):
        return None
    if p is None or p.default is inspect.Parameter.empty or not isinstance(p.default, str):
        return None
    return p.default or None


def tool_texts(mw):
    return {t.name: t.description for t in (getattr(mw, "tools", None) or ())}


# A stand-in async subagent whose line in start_async_task's description
# marks where Deep Agents lists the async subagents.
SENTINEL = {"name": "dageval-sentinel", "description": "dageval-sentinel-description", "graph_id": "g", "url": "http://127.0.0.1:9"}
SENTINEL_LINE = "- dageval-sentinel: dageval-sentinel-description"

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

    notes = []
    for cls, what in ((FilesystemMiddleware, "FilesystemMiddleware"), (getattr(sub, "SubAgentMiddleware", None), "SubAgentMiddleware")):
        if cls is not None and default_prompt(cls) is not None:
            notes.append("%s appends a system prompt by default in this deepagents; dageval sends none, so the assembled prompt lacks it" % what)

    hp = first_module("deepagents.profiles.harness.harness_profiles", "deepagents.profiles.harness_profiles")
    profile = hp._get_harness_profile(model) if hp is not None else None
    extra = list(profile.materialize_extra_middleware()) if profile is not None else []

    # write_todos and the todo prompt: those of a TodoListMiddleware the
    # model's profile adds (the instance Deep Agents runs), else LangChain's
    # defaults, which a TodoListMiddleware() added by hand sends.
    todo_mw = next((m for m in extra if type(m).__name__ == "TodoListMiddleware"), None)
    source = "the profile's TodoListMiddleware"
    if todo_mw is None:
        todo_mod = first_module("langchain.agents.middleware.todo")
        cls = getattr(todo_mod, "TodoListMiddleware", None) if todo_mod is not None else None
        todo_mw = cls() if cls is not None else None
        source = "langchain.agents.middleware.todo"
    if todo_mw is not None:
        d = tool_texts(todo_mw).get("write_todos", getattr(todo_mw, "tool_description", None))
        sp = getattr(todo_mw, "system_prompt", None)
        result["todo"] = {"description": d, "system_prompt": sp if isinstance(sp, str) else None, "source": source}
        if d is None or not isinstance(sp, str):
            notes.append("%s lacks %s: dageval keeps its own" % (source, "the write_todos description" if d is None else "a string system_prompt"))
    else:
        notes.append("no TodoListMiddleware to read (langchain.agents.middleware.todo is missing): write_todos and the todo prompt keep dageval's text")

    # The async subagent tools, built as Deep Agents builds them; building
    # them opens no connection.
    asub = first_module("deepagents.middleware.async_subagents")
    cls = getattr(asub, "AsyncSubAgentMiddleware", None) if asub is not None else None
    if cls is None:
        notes.append("this deepagents has no deepagents.middleware.async_subagents.AsyncSubAgentMiddleware: the async subagent tools keep dageval's descriptions")
    else:
        texts = tool_texts(cls(async_subagents=[dict(SENTINEL)]))
        start = texts.get("start_async_task")
        if start is not None:
            if SENTINEL_LINE in start:
                texts["start_async_task"] = start.replace(SENTINEL_LINE, "{available_agents}")
            else:
                del texts["start_async_task"]
                notes.append("start_async_task's description does not list the async subagents where the import looks for them: it keeps dageval's")
        result["async_tools"] = texts
        if default_prompt(cls) is not None:
            notes.append("AsyncSubAgentMiddleware appends a system prompt by default in this deepagents; dageval sends none, so an agent with async subagents lacks it")
    result["notes"] = notes

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
            "extra_middleware": [type(m).__name__ for m in extra],
        }
        g = profile.general_purpose_subagent
        if g is not None:
            p["general_purpose_subagent"] = {"enabled": g.enabled, "description": g.description, "system_prompt": g.system_prompt}
        result["profile"] = p
except Exception as e:  # noqa: BLE001 - reported to the user as is
    fail("read_failed", "%s: %s" % (type(e).__name__, e))
out(result)
