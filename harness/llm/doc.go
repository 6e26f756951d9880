// Package llm defines the provider-neutral vocabulary of dageval: messages, content blocks, tool specs, requests, responses, usage and the ChatModel interface.
package llm
