// Package llmserver is a local model provider for tests, in the manner of net/http/httptest: it speaks the Anthropic Messages, OpenAI Chat Completions and Responses, and Gemini generateContent APIs, and Claude on Bedrock and Vertex AI and Azure OpenAI's deployments, and answers with any llm.ChatModel.
package llmserver
