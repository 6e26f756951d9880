// Package llmserver is a local model provider for tests, in the manner of net/http/httptest: it speaks the Anthropic Messages and OpenAI Chat Completions and Responses APIs and answers with any llm.ChatModel.
package llmserver
