// Package harness assembles deep agents — model, harness profile, middleware stacks, subagents and system prompt — following the Deep Agents create_deep_agent pipeline, and describes the result as an Assembly.
//
// Choices where Deep Agents leaves room, and why:
//
//   - A declarative subagent without a model of its own takes its profile
//     from the parent model's identity, not from the parent's spec string,
//     as Deep Agents does; for models resolved from a spec the two agree.
//   - Config.Profile (the `--profile` files and an agent file's `profile`)
//     acts like a profile registered for the main model: it shapes every
//     stack that runs on that model — declarative subagents without a model
//     and those naming the main model's provider:model alike, since Deep
//     Agents looks a subagent's profile up by its model — and such a
//     subagent's stack must then match its middleware exclusions.
//   - A caller middleware that takes the name of a default the profile
//     excluded by type does not take the default's slot (it is gone after
//     the first exclusion pass): it lands after the core of the main stack
//     and at the end of the general-purpose stack, as in Deep Agents.
//   - Only Anthropic prompt caching is added; Deep Agents' Bedrock and
//     Fireworks variants exist only when those Python packages are
//     installed, and dageval has no adapters for them.
//   - The Assembly lists stacks in the order the task tool offers them
//     (main, general-purpose, then the caller's subagents as declared) and
//     names the model of every subagent it builds, so a model change shows
//     in `dageval assemble --diff`.
//
// Agent files, the YAML form of a Config, are read by harness/agentfile.
package harness
