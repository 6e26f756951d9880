package backend

import (
	"context"
	"errors"
	"reflect"
)

// Lifecycle is implemented by backends that hold resources for one run (an
// eval cell): a fresh workspace, a container, a remote VM.
type Lifecycle interface {
	// Start prepares the backend. It is called once, before the first
	// operation; operations before it fail with Unavailable.
	Start(ctx context.Context) error
	// Close releases what Start prepared: nothing started in the backend
	// outlives Close, and operations after it fail with Unavailable.
	// Closing twice is harmless.
	Close() error
}

// Sandbox is an Executor whose commands run isolated from the host, for
// the lifetime of one run. Remote sandbox providers plug in here: they
// run a command under a time limit (ExecuteRequest.Timeout, or their
// default), cap its output (ExecuteResult.Truncated), move files in and
// out (Upload, Download, and the other Backend methods), and set up and
// tear down their environment (Start, Close). Bubblewrap is the local one.
type Sandbox interface {
	Executor
	Lifecycle
}

// Start starts b when it has a lifecycle (a Composite starts the backends
// it holds); other backends need nothing. Eval runs call it before each
// cell's agent runs.
func Start(ctx context.Context, b Backend) error {
	if l, ok := b.(Lifecycle); ok {
		return l.Start(ctx)
	}
	return nil
}

// Close closes b when it has a lifecycle. Eval runs call it once a cell is
// judged (its checks may read the backend's files).
func Close(b Backend) error {
	if l, ok := b.(Lifecycle); ok {
		return l.Close()
	}
	return nil
}

// errUnavailable reports an operation on a backend that is not running.
func errUnavailable(what string) error {
	return &Error{Code: Unavailable, Msg: what}
}

// Start implements Lifecycle: it starts the default backend and then each
// route's (a backend mounted twice is started once); if one fails, those
// already started are closed again.
func (c *Composite) Start(ctx context.Context) error {
	var started []Backend
	for _, b := range c.members() {
		if err := Start(ctx, b); err != nil {
			for i := len(started) - 1; i >= 0; i-- {
				_ = Close(started[i])
			}
			return err
		}
		started = append(started, b)
	}
	return nil
}

// Close implements Lifecycle: it closes every backend it holds, routes
// first, and reports all failures.
func (c *Composite) Close() error {
	ms := c.members()
	var errs []error
	for i := len(ms) - 1; i >= 0; i-- {
		errs = append(errs, Close(ms[i]))
	}
	return errors.Join(errs...)
}

// members lists the default backend and the routes' backends, each once.
func (c *Composite) members() []Backend {
	out := []Backend{c.def}
	for _, m := range c.routes {
		seen := false
		for _, b := range out {
			// Only comparable backends can be the same one; comparing
			// others would panic.
			if reflect.TypeOf(b) == reflect.TypeOf(m.b) && reflect.TypeOf(b).Comparable() && b == m.b {
				seen = true
				break
			}
		}
		if !seen {
			out = append(out, m.b)
		}
	}
	return out
}
