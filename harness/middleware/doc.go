// Package middleware holds the Deep Agents middleware, one file each: filesystem, permissions, subagents, summarization, patch tool calls, skills, memory, prompt caching, human-in-the-loop, tool exclusion, todo list and rubric.
//
// # Filesystem and permissions
//
// Filesystem (named FilesystemMiddleware) follows the Deep Agents contract
// for its tools, outputs and limits, with these deliberate differences:
//
//   - Not implemented: frame sampling of videos in read_file (a video is
//     returned as one video block, as Deep Agents does without its video
//     extra) and capture-at-source offload of execute output on remote
//     sandboxes (large execute output is offloaded after the fact, like any
//     other tool result). Hence there are no synthetic media messages to
//     reorder either.
//   - An offloaded user message is saved as conversation_history/<message
//     id>.md rather than under a random name, so a replayed run writes the
//     same file.
//   - Permission globs match dot-files: "/secrets/**" covers
//     "/secrets/.env" and "/cfg/*" covers "/cfg/.npmrc". Deep Agents'
//     matcher probably lets such files slip past; for an access rule that
//     is the wrong way to fail. File-tool globs keep the Deep Agents rule
//     that wildcards skip dot-names.
//   - The shell-path routing section gives a mount that lies inside the
//     local shell's working directory relative to it ("./app/") instead of
//     as an absolute host path: commands start there, and the prompt (and so
//     every snapshot and assembly diff of it) is the same on every machine.
//   - Options use 0 for "the default" and NoLimit to switch a limit off,
//     where Deep Agents uses None.
//   - Media blocks the model cannot take are replaced only when
//     FilesystemOptions.MediaSupport says so; model capability profiles live
//     above this package.
//
// # Tool schemas
//
// The built-in tools' JSON Schemas have the shapes Deep Agents sends, because
// providers treat the shapes differently (OpenAI marks a tool strict only
// when every object is closed; some validators reject a type list): an
// optional argument is anyOf [{type: T}, {type: null}] with default null, as
// Pydantic writes Optional[T], and the task and async subagent tools leave
// additionalProperties unset, as their Pydantic models do. write_todos and
// compact_conversation stay closed: their schemas are dageval's own
// (write_todos is written by hand to show the status enum; LangChain derives
// its own from a TypedDict) and a closed object is what their arguments are.
// Typed tools (harness/tool) get their schemas from Go structs and are not
// Deep Agents' tools.
package middleware
