package middleware

import (
	"fmt"
	"slices"
	"strings"
)

// Tool descriptions. Facts (defaults, formats, limits) follow Deep Agents;
// the wording is ours.

const lsDescription = `Lists the files and subdirectories directly inside a directory; subdirectories end with "/". Use it to look around before reading or editing files. The path must be absolute, e.g. "/" or "/src".`

const readFileDescription = `Reads a file and returns its lines with line numbers.

- file_path must be absolute.
- Without offset and limit you get the first 100 lines. Page through longer files with offset (the 0-based line to start at) and limit (how many lines); a note at the end says which lines you got and the offset to continue from.
- Each line is shown as "<line number>  <text>": the number, two spaces, then the text. The number is not part of the file; leave it out when you copy text into edit_file.
- Lines longer than 5000 characters are split over several rows numbered 12, 12.1, 12.2 and so on.
- When you need several files, read them in parallel.
- An empty file is reported with a system reminder instead of content.
- Images, audio, video and PDF files come back as attachments you can inspect.
- Tool results too large to show inline are saved under /large_tool_results/; read them with this tool.
- Read a file before you edit it.`

const writeFileDescription = `Writes a file: creates it (with any missing parent directories) or replaces its whole content. file_path must be absolute. To change part of an existing file, use edit_file instead.`

const editFileDescription = `Replaces exact text in a file.

- Read the file first, so you copy the text exactly as it is.
- old_string must match the file character for character, including whitespace and indentation, and must not include the line-number gutter that read_file adds.
- old_string must occur exactly once unless replace_all is true; include surrounding lines to make it unique.
- Keep the file's indentation style in new_string.`

const deleteDescription = `Deletes a file, or a directory together with everything in it. Deletion cannot be undone. file_path must be absolute.`

const globDescription = `Lists files whose path matches a glob pattern.

Syntax: "*" matches within one path segment, "**" across directories, "?" one character, "[abc]" one of a set, "{a,b}" either alternative.
- A pattern without "/" matches file names at any depth ("*.py").
- A pattern with "/" matches the path relative to the search directory; a leading "/" anchors it there ("/*.py" is the top level only).
- Names starting with "." match only when the pattern segment starts with "." too, and "**" does not enter dot directories: "*.yml" finds .github/workflows/ci.yml, "**/*.yml" does not.
- path is the directory to search (default "/").`

const grepDescriptionBase = `Searches file contents for a literal string (not a regular expression) and reports where it occurs.

- To look for several alternatives, run one search per alternative.
- path limits the search to a directory or a single file; glob keeps only files matching a glob ("*.py", "src/**/*.ts").
- output_mode: "files_with_matches" (default) lists the files; "content" shows each matching line as "  <line>: <text>" under its file; "count" gives the number of matches per file.
- max_count caps the total number of matches returned.
- Large tool results saved under /large_tool_results/ can be searched too.`

const grepExecuteLine = `
- For regular expressions, run rg (ripgrep) through the execute tool instead.`

const executeDescriptionBase = `Runs a shell command and returns its output and exit status.

- Quote paths that contain spaces.
- Chain dependent commands with "&&"; use ";" only when later commands should run even if earlier ones fail.
- Prefer absolute paths.
- timeout (seconds) raises or lowers the time limit for one command; 0 runs without a limit where the environment allows it.`

func grepDescription(executeVisible bool) string {
	if executeVisible {
		return grepDescriptionBase + grepExecuteLine
	}
	return grepDescriptionBase
}

func executeDescription(grepVisible, globVisible bool) string {
	switch {
	case grepVisible && globVisible:
		return executeDescriptionBase + "\n- To find files or text, use the glob and grep tools rather than find or grep in the shell."
	case grepVisible:
		return executeDescriptionBase + "\n- To search file contents, use the grep tool rather than grep in the shell."
	case globVisible:
		return executeDescriptionBase + "\n- To find files by name, use the glob tool rather than find in the shell."
	}
	return executeDescriptionBase
}

// Argument descriptions used in the tool schemas.
const (
	argAbsPath   = "Absolute path, e.g. /src/main.go."
	argOffset    = "0-based line to start reading at (default 0)."
	argLimit     = "Maximum number of lines to read (default 100)."
	argGrepGlob  = `Glob filter on the files searched (not a regular expression): without "/" it matches file names at any depth, with "/" the path relative to the search directory.`
	argGrepMode  = `"files_with_matches" (default): matching file paths, one per line. "content": matching lines grouped under "<path>:" headers as "  <line>: <text>". "count": "<path>: <matches>" per file.`
	argMaxCount  = "Cap on the total number of matches (default: the agent's configured cap)."
	argTimeout   = "Time limit in seconds for this command; 0 means no limit where supported. Omit for the default."
	argGlobPath  = `Directory to search (default "/").`
	argGrepPath  = `Directory or file to search (default "/").`
	argOldString = "The exact text to replace; must be unique in the file unless replace_all is true."
	argNewString = "The replacement text."
)

// Observable tool outputs.
const (
	emptyFileReminder   = "System reminder: File exists but has empty contents"
	noFilesFound        = "No files found"
	globTooManyCalls    = "Error: too many glob calls are already running. Try again later with a more specific pattern or a narrower path."
	globTruncationNote  = "Note: the search stopped early because it ran out of time, so the list above is incomplete. Use a more specific pattern or a narrower path to see the rest."
	grepTruncationNote  = "Note: the search stopped early (it reached max_count or its time limit), so the matches above are incomplete. Narrow the pattern or the path, or raise max_count, to see the rest."
	execNotAvailable    = "Error: Execution not available. This agent's backend cannot run shell commands; use the file tools (ls, read_file, glob, grep) instead."
	deleteNotAvailable  = "Error: deletion is not supported by this agent's backend."
	outputTruncatedLine = "\n[Output was truncated due to size limits]"
)

func noLinesReminder(limit int) string {
	return fmt.Sprintf("System reminder: no lines were read because limit was %d. The file was not inspected and may have content; call read_file again with a limit of 1 or more.", limit)
}

func readTruncationMessage(p string) string {
	return fmt.Sprintf("\n\n[Output was cut to stay within the size limit: this file has very long content. "+
		"Consider reformatting it first, e.g. for JSON run execute(command='jq . %s') to pretty-print it, or use other tools to split long lines.]", p)
}

func globTimeoutMessage(seconds float64) string {
	return fmt.Sprintf("Error: glob timed out after %.1fs. Try a more specific pattern or a narrower path.", seconds)
}

// readNotice is the pagination notice after a window of a file; "" when
// the window reached the end.
func readNotice(start, end, total, next int) string {
	if start == 0 || end == 0 || next == 0 {
		return ""
	}
	n := end - start + 1
	if total == 0 {
		return fmt.Sprintf("\n\n[Read %d %s (lines %d-%d). More lines remain from offset %d.]", n, plural(n, "line"), start, end, next)
	}
	if end >= total {
		return ""
	}
	rem := total - end
	return fmt.Sprintf("\n\n[Read %d %s (lines %d-%d of %d total). %d %s remaining from offset %d.]", n, plural(n, "line"), start, end, total, rem, plural(rem, "line"), next)
}

func clampedOffsetNotice(offset int) string {
	if offset >= 0 {
		return ""
	}
	return fmt.Sprintf("\n\n[Requested offset %d is before the start of the file; read from line 1 instead.]", offset)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func toolResultTooLarge(callID, path string, chars int, preview string) string {
	return fmt.Sprintf("The result of tool call %s was too large to show here (%d characters), so it was saved to %s.\n"+
		"Read it with read_file a page at a time (offset and limit), or search it with grep.\n\n"+
		"Start and end of the result:\n%s", callID, chars, path, preview)
}

func humanMessageTooLarge(path string, chars int, preview string) string {
	return fmt.Sprintf("This message was too large to include in full (%d characters); its full text is saved at %s.\n"+
		"Read it with read_file a page at a time (offset and limit), or search it with grep.\n\n"+
		"Start and end of the message:\n%s", chars, path, preview)
}

func mediaNotAttached(path, kind, mime string) string {
	if path == "" {
		return fmt.Sprintf("[%s content (%s) was not attached because this model does not support it.]", kind, mime)
	}
	return fmt.Sprintf("[read_file: %s was not attached because this model does not support %s content (%s).]", path, kind, mime)
}

// routingSection explains shell paths vs virtual paths for a composite
// backend whose default runs commands.
func routingSection(mapped [][2]string, unmapped []string) string {
	if len(mapped) == 0 && len(unmapped) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Shell paths vs. virtual paths\n\n")
	b.WriteString("The file tools see one virtual tree, but some of its directories are mounts that live elsewhere. " +
		"Shell commands run by execute see the host's real paths instead, so a path that works in read_file or glob may not exist in the shell. " +
		"Before using a mounted path in a command, translate it with the mappings below; mounts without a mapping cannot be reached from the shell at all.")
	if len(mapped) > 0 {
		b.WriteString("\n\nHost path mappings")
		if slices.ContainsFunc(mapped, func(m [2]string) bool { return strings.HasPrefix(m[1], "./") }) {
			b.WriteString(" (a host path starting with ./ is relative to the directory every command starts in)")
		}
		b.WriteString(":")
		for _, m := range mapped {
			fmt.Fprintf(&b, "\n- `%s` -> `%s` (e.g. `%sdir/x.py` -> `%sdir/x.py`)", m[0], m[1], m[0], m[1])
		}
	}
	if len(unmapped) > 0 {
		b.WriteString("\n\nVirtual mounts without a host path mapping (not accessible from the shell):")
		for _, u := range unmapped {
			fmt.Fprintf(&b, "\n- `%s`", u)
		}
	}
	return b.String()
}
