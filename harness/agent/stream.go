package agent

import (
	"context"
	"iter"
)

// Stream runs the agent like Invoke and yields its events as they happen,
// ending with an EventDone event that carries the result. Stopping the
// iteration cancels the run.
func (a *Agent) Stream(ctx context.Context, in Input, opts ...Option) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		emit := func(ev Event) {
			if stopped {
				return
			}
			if !yield(ev, nil) {
				stopped = true
				cancel()
			}
		}
		res, err := a.Invoke(ctx, in, append(opts, WithEvents(emit))...)
		if stopped {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		yield(Event{Type: EventDone, Agent: a.name, Step: res.Steps, Result: res}, nil)
	}
}
