// Package provider resolves model specs such as "anthropic:claude-sonnet-4-6" or "ollama:llama3:8b" into chat models through named provider entries, and holds the configuration, retry policy and error classification that every provider adapter shares.
package provider
