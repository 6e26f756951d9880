package recorder

import (
	"context"

	"github.com/dageval/dageval/harness/agent"
)

type laneKey struct{}

// WithLane returns a context whose HTTP requests replay in the named lane.
// Calls in one lane replay in the order they were recorded, independently of
// other lanes, so concurrent callers (parallel subagents, a grader) replay
// deterministically however their calls interleave. An explicit lane takes
// precedence over the agent path.
func WithLane(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, laneKey{}, name)
}

// LaneOf returns the lane of a request context: the name given to WithLane,
// else the running agent's path (agent.AgentPath: "main", or a subagent's own
// path), else "" (the default lane).
func LaneOf(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	if l, ok := ctx.Value(laneKey{}).(string); ok {
		return l
	}
	return agent.Lane(ctx)
}
