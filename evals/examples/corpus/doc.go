// Package corpus is an example suite that replays recordings collected from crewAI, LLM, llm-gemini and llm-anthropic through dageval's agent, matched in order only.
package corpus
