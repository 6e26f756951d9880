// Package served evaluates an agent served over the LangGraph Agent Protocol through the async subagent tools of another agent, with the scripted models its cassettes were recorded against.
package served
