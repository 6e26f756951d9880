package evals

import (
	"slices"
	"strings"
	"time"

	"github.com/dageval/dageval/harness/agent"
	"github.com/dageval/dageval/harness/middleware"
)

// Latency is how long a cell's agent waited on its models: the model calls
// of the agent and its subagents, not the rubric grader's. Replayed calls
// report what their cassette recorded (never the replay's own time, which
// says nothing), recorded and live calls what the clock measured; so a
// latency regression shows in a replay without touching the network.
type Latency struct {
	// Calls counts the model calls; Timed those whose duration is known (an
	// imported cassette may have none).
	Calls int `json:"calls"`
	Timed int `json:"timed"`
	// ModelMS sums the durations of the timed calls, in milliseconds.
	ModelMS int64 `json:"model_ms"`
	// FirstEventMS is the mean time to the first event of the timed
	// streamed calls; 0 when no streamed call has one.
	FirstEventMS int64 `json:"first_event_ms,omitempty"`
	// Recorded says every timed duration came from a recording.
	Recorded bool `json:"recorded"`
}

// Known reports whether every model call had a known duration.
func (l *Latency) Known() bool { return l != nil && l.Calls > 0 && l.Timed == l.Calls }

// latencyOf sums the latency of the agent's model calls among a run's
// events; nil when the run made no call with a known duration.
func latencyOf(events []agent.Event) *Latency {
	l := &Latency{Recorded: true}
	var first time.Duration
	streamed := 0
	for _, ev := range events {
		if ev.Type != agent.EventModelEnd || ev.Response == nil || isGraderPath(ev.Agent) {
			continue
		}
		l.Calls++
		lat := ev.Response.Latency
		if lat == nil {
			continue
		}
		l.Timed++
		l.ModelMS += lat.Duration.Milliseconds()
		l.Recorded = l.Recorded && lat.Recorded
		if lat.FirstEvent > 0 {
			first += lat.FirstEvent
			streamed++
		}
	}
	if l.Timed == 0 {
		return nil
	}
	if streamed > 0 {
		l.FirstEventMS = (first / time.Duration(streamed)).Milliseconds()
	}
	return l
}

// warningsOf collects the distinct warnings of a run's model answers.
func warningsOf(events []agent.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Type != agent.EventModelEnd || ev.Response == nil {
			continue
		}
		for _, w := range ev.Response.Warnings {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

func isGraderPath(path string) bool {
	return slices.Contains(strings.Split(path, "/"), middleware.RubricGraderName)
}

// GroupLatency sums up the latency of a group's cells.
type GroupLatency struct {
	// Cells counts the cells whose every model call had a known duration;
	// only they are summed up, so a partly timed cell cannot pull the
	// numbers down.
	Cells int `json:"cells"`
	// MeanMS, P50MS and P95MS are the mean, median and 95th percentile
	// (nearest rank) of those cells' Latency.ModelMS.
	MeanMS int64 `json:"mean_ms"`
	P50MS  int64 `json:"p50_ms"`
	P95MS  int64 `json:"p95_ms"`
	// FirstEventMS is the mean of the cells' FirstEventMS, over the cells
	// that have one.
	FirstEventMS int64 `json:"first_event_ms,omitempty"`
	// Recorded says every summed duration came from a recording.
	Recorded bool `json:"recorded"`
}

// GroupLatencyOf sums up cells' latencies as Summary does; nil when no
// cell's is known.
func GroupLatencyOf(ls []*Latency) *GroupLatency {
	var ms []int64
	var first, firsts int64
	recorded := true
	for _, l := range ls {
		if !l.Known() {
			continue
		}
		ms = append(ms, l.ModelMS)
		recorded = recorded && l.Recorded
		if l.FirstEventMS > 0 {
			first += l.FirstEventMS
			firsts++
		}
	}
	if len(ms) == 0 {
		return nil
	}
	slices.Sort(ms)
	var sum int64
	for _, v := range ms {
		sum += v
	}
	g := &GroupLatency{Cells: len(ms), MeanMS: sum / int64(len(ms)), P50MS: nearestRank(ms, 50), P95MS: nearestRank(ms, 95), Recorded: recorded}
	if firsts > 0 {
		g.FirstEventMS = first / firsts
	}
	return g
}

// nearestRank is the p-th percentile of sorted values by the nearest-rank
// method, which always returns one of the values.
func nearestRank(sorted []int64, p int) int64 {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
