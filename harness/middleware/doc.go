// Package middleware holds the Deep Agents middleware, one file each: filesystem, permissions, subagents, summarization, patch tool calls, skills, memory, prompt caching, human-in-the-loop, tool exclusion, todo list and rubric.
package middleware
