package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// ErrStalled is wrapped by the timeout error of an attempt that the
// provider left silent for the whole per-attempt timeout (Config.Timeout):
// no response headers, or a response body that stopped arriving. Callers
// tell it from a provider's own timeout answer (HTTP 408 or 504) with
// errors.Is.
var ErrStalled = errors.New("provider stalled")

// StallError is the cause of an attempt cancelled by its timeout. It
// matches ErrStalled and context.DeadlineExceeded.
type StallError struct {
	// Timeout is the silence that ended the attempt.
	Timeout time.Duration
	// Began reports whether the answer had started arriving (a stream that
	// stopped) rather than never coming.
	Began bool
}

func (e *StallError) Error() string {
	if e.Began {
		return fmt.Sprintf("the answer stopped arriving: nothing for %s", e.Timeout)
	}
	return fmt.Sprintf("no answer within %s", e.Timeout)
}

// Is matches ErrStalled.
func (e *StallError) Is(target error) bool { return target == ErrStalled }

// Unwrap is context.DeadlineExceeded: a stall is a deadline that passed.
func (e *StallError) Unwrap() error { return context.DeadlineExceeded }

// watchdog ends an attempt that sees no progress for d. Progress is what
// arrives from the provider (response headers, body bytes), so a long
// stream that keeps sending is never cut while a silent one is.
type watchdog struct {
	d      time.Duration
	timer  *time.Timer
	began  atomic.Bool
	cancel context.CancelCauseFunc
}

type watchdogKey struct{}

func startWatchdog(ctx context.Context, d time.Duration) (context.Context, func()) {
	actx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{d: d, cancel: cancel}
	w.timer = time.AfterFunc(d, func() { cancel(&StallError{Timeout: d, Began: w.began.Load()}) })
	return context.WithValue(actx, watchdogKey{}, w), func() {
		w.timer.Stop()
		cancel(context.Canceled)
	}
}

// progress restarts the silence timer of the attempt ctx belongs to.
func progress(ctx context.Context) {
	if w, ok := ctx.Value(watchdogKey{}).(*watchdog); ok {
		w.began.Store(true)
		w.timer.Reset(w.d)
	}
}

// stallOf returns the stall that ended the attempt of ctx, if one did.
func stallOf(ctx context.Context) (*StallError, bool) {
	var se *StallError
	ok := errors.As(context.Cause(ctx), &se)
	return se, ok
}

// WatchProgress wraps a transport so that what a provider sends (the
// response headers and every read of the body that returns bytes) counts as
// progress against the per-attempt timeout of the request's attempt.
// Config.Client installs it; a recorder that reads whole answers before
// handing them on installs it under itself too, so that a long recorded
// stream is judged by its own silences, not by its total length.
func WatchProgress(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if _, ok := next.(progressTransport); ok {
		return next
	}
	return progressTransport{next: next}
}

type progressTransport struct{ next http.RoundTripper }

func (t progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	ctx := req.Context()
	if _, ok := ctx.Value(watchdogKey{}).(*watchdog); !ok {
		return resp, nil
	}
	progress(ctx)
	if resp.Body != nil {
		resp.Body = &progressBody{ReadCloser: resp.Body, ctx: ctx}
	}
	return resp, nil
}

type progressBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		progress(b.ctx)
	}
	return n, err
}
