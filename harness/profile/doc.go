// Package profile holds the harness and provider profiles that shape a deep agent per model or provider, the registry that looks them up, the built-in profiles, and the YAML/JSON profile config.
//
// Choices where this port differs from Deep Agents, and why:
//
//   - Built-ins: the OpenAI provider profile (Responses API on), the Claude
//     Opus 4.7 / Sonnet 4.6 / Haiku 4.5 profiles and the GPT-5.x Codex
//     profiles. The nvidia and openrouter provider profiles and the Nemotron 3
//     Ultra harness profiles are not ported: dageval has no adapters for
//     those providers, and Nemotron's profile is mostly middleware for that
//     model family.
//   - Plugins (Go's stand-in for entry points) register with RegisterPlugin
//     from init functions and run in name order, so bootstrap is
//     deterministic. A failing plugin is logged and its registrations are
//     discarded, rather than left half done.
//   - A chained pre-init check or options factory that fails returns a
//     wrapped error saying which side failed instead of logging it; logging
//     is the caller's decision.
//   - Lookups return an error only when the registry's bootstrap fails; a
//     malformed spec or a miss is a nil profile, as in Deep Agents.
//   - Type exclusions name Go types (reflect.TypeFor[*X]()). A type counts as
//     scaffolding when its name or the Name() of its zero value is
//     FilesystemMiddleware or SubAgentMiddleware. A type exclusion can be
//     written to a profile config only if the type implements
//     SerializedNamer, mirroring Deep Agents' serialized_name alias.
//   - tool_description_overrides reach every tool a built-in middleware
//     adds (write_todos, compact_conversation and the async subagent tools
//     too, where Deep Agents reaches the file tools, task and the caller's
//     tools only), and todo_system_prompt, a key Deep Agents lacks, re-words
//     the todo list: so every text Deep Agents sends can be carried in a
//     profile (dageval profile import-deepagents writes one). Text a caller
//     gave a middleware itself still wins.
//   - In profile files, each scaffolding entry is reported at its own line;
//     NewHarnessProfile reports all of them in one error, as Deep Agents does.
//     A value YAML reads as a number or boolean is not a string unless
//     quoted, matching Deep Agents' type checks; duplicate list entries
//     collapse, as the lists are sets.
package profile
