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
//   - Deep Agents adds its Bedrock and Fireworks prompt caching variants to
//     every stack when langchain-aws or langchain-fireworks is installed.
//     Here BedrockPromptCachingMiddleware follows AnthropicPromptCaching in
//     every stack when a model of the agent (the main one or a declarative
//     subagent's) runs on Bedrock, which is when its Python counterpart
//     must be installed, so other agents assemble as before; dageval has
//     no Fireworks adapter, hence no Fireworks variant.
//   - The Claude harness profiles are keyed by anthropic: specs, as in Deep
//     Agents, so the same models on Bedrock or Vertex AI get no suffix
//     unless a profile registers one for their own specs.
//   - The Assembly lists stacks in the order the task tool offers them
//     (main, general-purpose, then the caller's subagents as declared) and
//     names the model of every subagent it builds, so a model change shows
//     in `dageval assemble --diff`.
//
// Agent files, the YAML form of a Config, are read by harness/agentfile.
package harness
