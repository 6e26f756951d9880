package provider

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/dageval/dageval/harness/llm"
)

// Retry defaults, used when a RetryPolicy field is zero.
const (
	DefaultMaxAttempts    = 3
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 30 * time.Second
	DefaultMaxRetryAfter  = 2 * time.Minute
)

// RetryPolicy decides whether and when a failed call is repeated. Only
// retryable failures (llm.ErrorKind.Retryable: rate limit, overloaded, 5xx,
// timeout, connection) are repeated, never during replay, and never once a
// stream has delivered its first chunk. The zero value uses the defaults.
type RetryPolicy struct {
	// MaxAttempts counts the first call too; 1 disables retries.
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt; it doubles per
	// attempt up to MaxBackoff. A server's retry-after replaces it.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxRetryAfter is the longest server-requested wait that is honoured;
	// a longer one ends the call with the error instead of stalling the run.
	MaxRetryAfter time.Duration
	// Jitter randomises each computed backoff by up to this fraction (0..1)
	// downwards, so parallel runs do not retry in lockstep. Server-requested
	// waits are never shortened.
	Jitter float64
	// Sleep waits for d or until ctx ends; nil uses a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) maxAttempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// Backoff is the computed wait after the given failed attempt (1-based),
// before jitter.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	d, limit := p.InitialBackoff, p.MaxBackoff
	if d <= 0 {
		d = DefaultInitialBackoff
	}
	if limit <= 0 {
		limit = DefaultMaxBackoff
	}
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

func (p RetryPolicy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retrier runs the attempts of one call. Adapters use Do for plain calls and
// a Retrier directly for streams, whose attempt must outlive the function
// that opened it.
type Retrier struct {
	c       Config
	attempt int
	stop    func()
	actx    context.Context
	// permit is the current attempt's leave from the provider's rate
	// limiter (nil without one); throttled counts the attempts it saw
	// throttled, which the limiter's pause handles instead of the retry
	// budget.
	permit    *Permit
	throttled int
}

// NewRetrier starts the bookkeeping for one call made with c.
func (c Config) NewRetrier() *Retrier { return &Retrier{c: c} }

// Attempt is the number of the current attempt, from 1.
func (r *Retrier) Attempt() int { return r.attempt }

// Begin starts an attempt and returns its context, which the per-attempt
// timeout cancels once the provider has been silent that long (see
// Config.Timeout). Call End if the attempt fails, Done when it succeeds.
func (r *Retrier) Begin(ctx context.Context) context.Context {
	r.Done()
	r.attempt++
	if d := r.c.AttemptTimeout(); d > 0 {
		r.actx, r.stop = startWatchdog(ctx, d)
	} else {
		var cancel context.CancelFunc
		r.actx, cancel = context.WithCancel(ctx)
		r.stop = cancel
	}
	return r.actx
}

// Done releases the current attempt's context.
func (r *Retrier) Done() {
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
}

// limiter is the rate limiter of c's provider; nil when calls are not
// paced (no Limiters, or a replay, which reaches no provider).
func (c Config) limiter() *RateLimiter {
	if c.Limiters == nil || c.Replay {
		return nil
	}
	return c.Limiters.For(c.name())
}

// Acquire waits, before an attempt, until the provider's rate limiter
// lets it go (at once without one). It fails only when ctx ends.
func (r *Retrier) Acquire(ctx context.Context) error {
	r.permit.Release()
	p, err := r.c.limiter().Wait(ctx)
	r.permit = p
	return err
}

// Answered tells the rate limiter that the provider began answering the
// current attempt: a probe after a pause then lets the other calls go.
func (r *Retrier) Answered() { r.permit.Answered() }

// Succeeded ends the current attempt as answered, charging the tokens it
// used to the provider's rate limiter.
func (r *Retrier) Succeeded(u llm.Usage) {
	r.permit.Done(u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens)
}

// release ends a permit no outcome ended (a stream its reader stopped).
func (r *Retrier) release() { r.permit.Release() }

// End finishes a failed attempt. It reports whether to try again (in which
// case it has already waited) and the error to report otherwise: the
// caller's cancellation as ctx.Err(), a stalled attempt as an llm timeout
// error wrapping a *StallError (errors.Is ErrStalled).
// canRetry false (a stream that already yielded) forbids another attempt.
func (r *Retrier) End(ctx context.Context, err error, canRetry bool) (bool, error) {
	var stall *StallError
	stalled := false
	if r.actx != nil {
		stall, stalled = stallOf(r.actx)
	}
	r.Done()
	if cerr := ctx.Err(); cerr != nil {
		r.permit.Release()
		return false, cerr
	}
	p := r.c.Retry
	if stalled {
		err = &llm.Error{Kind: llm.ErrTimeout, Provider: r.c.name(),
			Message: fmt.Sprintf("%s (the per-attempt provider timeout; attempt %d of %d)", stall, r.attempt, p.maxAttempts()), Err: stall}
	}
	e, ok := llm.AsError(err)
	if ok && e.Kind == llm.ErrRateLimit && r.permit != nil {
		return r.throttle(ctx, e, err, canRetry)
	}
	r.permit.Release()
	if !canRetry || r.c.Replay || !ok || !e.Retryable() || r.attempt-r.throttled >= p.maxAttempts() {
		return false, err
	}
	wait := e.RetryAfter
	if wait > 0 {
		if wait > p.maxRetryAfter() {
			return false, err
		}
	} else {
		wait = p.Backoff(r.attempt)
		if p.Jitter > 0 {
			wait -= time.Duration(float64(wait) * min(p.Jitter, 1) * rand.Float64())
		}
	}
	if l := r.c.Logger; l != nil {
		l.LogAttrs(ctx, slog.LevelWarn, "model call failed; retrying",
			slog.String("provider", r.c.Provider), slog.String("model", r.c.Model),
			slog.Int("attempt", r.attempt), slog.Int("max_attempts", p.maxAttempts()),
			slog.String("kind", string(e.Kind)), slog.Int("status", e.StatusCode),
			slog.String("request_id", e.RequestID), slog.Duration("wait", wait),
			slog.String("error", r.c.Scrub(e.Error())))
	}
	if serr := p.sleep(ctx, wait); serr != nil {
		if cerr := ctx.Err(); cerr != nil {
			return false, cerr
		}
		return false, err
	}
	return true, err
}

func (p RetryPolicy) maxRetryAfter() time.Duration {
	if p.MaxRetryAfter <= 0 {
		return DefaultMaxRetryAfter
	}
	return p.MaxRetryAfter
}

// throttle ends an attempt the provider throttled while a rate limiter
// paces it: the limiter pauses every call to the provider (the next
// Acquire waits), so the call is tried again without spending its retry
// budget, up to the limiters' MaxThrottled times. A Retry-After beyond
// MaxRetryAfter is a quota, not a burst: the call fails at once, and the
// others pause only MaxRetryAfter before they find out for themselves.
func (r *Retrier) throttle(ctx context.Context, e *llm.Error, err error, canRetry bool) (bool, error) {
	limit := r.c.Retry.maxRetryAfter()
	if e.RetryAfter > limit {
		r.permit.Throttled(limit)
		return false, err
	}
	r.permit.Throttled(e.RetryAfter)
	r.throttled++
	if !canRetry || r.throttled > r.c.Limiters.maxThrottled() {
		return false, err
	}
	if l := r.c.Logger; l != nil {
		l.LogAttrs(ctx, slog.LevelWarn, "model call throttled; every call to the provider pauses",
			slog.String("provider", r.c.Provider), slog.String("model", r.c.Model),
			slog.Int("throttled", r.throttled), slog.Duration("retry_after", e.RetryAfter),
			slog.String("request_id", e.RequestID), slog.String("error", r.c.Scrub(e.Error())))
	}
	return true, err
}

// Do runs call under c's timeout and retry policy. call receives the
// attempt's context and must return an *llm.Error for failures it can
// classify; unclassified errors are returned without retrying.
func Do[T any](ctx context.Context, c Config, call func(ctx context.Context) (T, error)) (T, error) {
	r := c.NewRetrier()
	defer r.release()
	for {
		if err := r.Acquire(ctx); err != nil {
			var zero T
			return zero, err
		}
		v, err := call(r.Begin(ctx))
		if err == nil {
			r.Done()
			var u llm.Usage
			if resp, ok := any(v).(*llm.Response); ok && resp != nil {
				u = resp.Usage
			}
			r.Succeeded(u)
			return v, nil
		}
		again, err := r.End(ctx, err, true)
		if !again {
			var zero T
			return zero, err
		}
	}
}

// DoStream runs a streaming call under c's timeout and retry policy,
// handing yield every chunk an attempt emits and then a final chunk that
// holds the whole response. A failure before the first chunk is retried;
// after it the error ends the stream, and so does yield returning false.
// attempt must return at once when emit returns false.
func DoStream(ctx context.Context, c Config, yield func(llm.Chunk, error) bool, attempt func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error)) {
	r := c.NewRetrier()
	defer r.Done()
	defer r.release()
	for {
		if err := r.Acquire(ctx); err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		actx := r.Begin(ctx)
		yielded, stopped := false, false
		resp, err := attempt(actx, func(ch llm.Chunk) bool {
			if !yielded {
				r.Answered()
			}
			yielded = true
			stopped = !yield(ch, nil)
			return !stopped
		})
		if stopped {
			return
		}
		if err == nil {
			r.Done()
			var u llm.Usage
			if resp != nil {
				u = resp.Usage
			}
			r.Succeeded(u)
			yield(llm.Chunk{Response: resp}, nil)
			return
		}
		again, err := r.End(ctx, err, !yielded)
		if !again {
			yield(llm.Chunk{}, err)
			return
		}
	}
}
