// Package harness assembles deep agents — model, harness profile, middleware stacks, subagents and system prompt — following the Deep Agents create_deep_agent pipeline, and describes the result as an Assembly.
package harness
