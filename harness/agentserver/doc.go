// Package agentserver serves agents over the part of the LangGraph Agent Protocol that Deep Agents' async subagents use.
//
// A Server holds graphs (agents, by graph id), threads and runs. Runs
// execute in goroutines on the server's checkpointer; a run that pauses
// on an interrupt finishes with status "success" and leaves its thread
// "interrupted" until a run resumes it with {"command": {"resume": …}}, as
// in langgraph-api. Cancelling a run marks it "interrupted", the status
// LangGraph gives a run stopped by hand. Errors are JSON {"detail": …}:
// 404 for an unknown assistant, thread or run, 409 for a busy thread under
// the reject strategy, a resume with nothing to resume, or a cancel of a
// finished run, and 422 for a body that does not decode.
//
// Ids are deterministic (UUID-shaped, numbered per server) unless
// Options.NewID says otherwise, so that a recorded conversation with a
// served agent replays: the ids reach the calling model as task ids.
package agentserver
