// Package agent runs the model→tools loop with middleware hooks, checkpoints, interrupts and streaming events, following LangChain create_agent semantics.
package agent
