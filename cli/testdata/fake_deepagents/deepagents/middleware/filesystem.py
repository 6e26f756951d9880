"""Stand-in FilesystemMiddleware: the attributes and tools the real one has, with placeholder text."""

LIST_FILES_TOOL_DESCRIPTION = "STAND-IN ls: list one directory."
READ_FILE_TOOL_DESCRIPTION = "STAND-IN read_file: read a window of lines.\n\nSecond paragraph with {braces} kept."
WRITE_FILE_TOOL_DESCRIPTION = "STAND-IN write_file: create or replace a file."
EDIT_FILE_TOOL_DESCRIPTION = "STAND-IN edit_file: replace exact text."
DELETE_TOOL_DESCRIPTION = "STAND-IN delete: remove a path."
GLOB_TOOL_DESCRIPTION = "STAND-IN glob: match paths."
GREP_TOOL_DESCRIPTION = "STAND-IN grep: search literal text."
EXECUTE_TOOL_DESCRIPTION = "STAND-IN execute: run a command."


class _Tool:
    def __init__(self, name, description):
        self.name = name
        self.description = description


class FilesystemMiddleware:
    def __init__(self, *, backend=None, custom_tool_descriptions=None):
        d = dict(custom_tool_descriptions or {})
        self.tools = [
            _Tool(n, d.get(n, text))
            for n, text in [
                ("ls", LIST_FILES_TOOL_DESCRIPTION),
                ("read_file", READ_FILE_TOOL_DESCRIPTION),
                ("write_file", WRITE_FILE_TOOL_DESCRIPTION),
                ("edit_file", EDIT_FILE_TOOL_DESCRIPTION),
                ("delete", DELETE_TOOL_DESCRIPTION),
                ("glob", GLOB_TOOL_DESCRIPTION),
                ("grep", GREP_TOOL_DESCRIPTION),
                ("execute", EXECUTE_TOOL_DESCRIPTION),
            ]
        ]
