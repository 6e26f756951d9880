package provider_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
)

// fakeClock is a clock whose sleeps pass at once, for one goroutine.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return ctx.Err()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) total() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t time.Duration
	for _, d := range c.slept {
		t += d
	}
	c.slept = nil
	return t
}

func TestRateLimiterPacesRequestsAndTokens(t *testing.T) {
	clk := newFakeClock()
	ls := provider.NewLimiters(map[string]provider.RateLimit{"p": {RequestsPerMinute: 60, TokensPerMinute: 600}}, provider.LimiterOptions{Now: clk.Now, Sleep: clk.Sleep})
	l := ls.For("p")
	require.Same(t, l, ls.For("p"), "one limiter per provider")
	ctx := context.Background()

	p, err := l.Wait(ctx)
	require.NoError(t, err)
	assert.Zero(t, clk.total(), "a full bucket lets the first call go")
	p.Done(5)
	p, err = l.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Second, clk.total(), "60 requests a minute: one a second")
	// 600 tokens a minute hold 10 a second; a call that used 40 leaves
	// the bucket in debt until it has refilled.
	p.Done(40)
	_, err = l.Wait(ctx)
	require.NoError(t, err)
	assert.Greater(t, clk.total(), 2*time.Second, "a call that overdrew the tokens makes the next one wait for them")
	st := l.Stats()
	assert.Equal(t, 2, st.Waits)
	assert.Equal(t, 0, st.Throttled)
}

func TestRateLimiterShare(t *testing.T) {
	l := provider.RateLimit{RequestsPerMinute: 600, TokensPerMinute: 80000}
	assert.Equal(t, provider.RateLimit{RequestsPerMinute: 150, TokensPerMinute: 20000}, l.Share(4))
	assert.Equal(t, l, l.Share(1))
}

func TestRateLimiterSlowsDownAndRecovers(t *testing.T) {
	clk := newFakeClock()
	var throttles []provider.Throttle
	ls := provider.NewLimiters(map[string]provider.RateLimit{"p": {RequestsPerMinute: 120}}, provider.LimiterOptions{
		Now: clk.Now, Sleep: clk.Sleep, QuietPeriod: time.Minute,
		OnThrottle: func(th provider.Throttle) { throttles = append(throttles, th) },
	})
	l := ls.For("p")
	ctx := context.Background()
	gap := func() time.Duration {
		t.Helper()
		// Drain the bucket, then time one call.
		for range 3 {
			p, err := l.Wait(ctx)
			require.NoError(t, err)
			p.Done(0)
		}
		clk.total()
		p, err := l.Wait(ctx)
		require.NoError(t, err)
		p.Done(0)
		return clk.total()
	}
	assert.Equal(t, 500*time.Millisecond, gap(), "120 a minute")

	// Three calls in flight are throttled together: one pause, one halving.
	var inflight []*provider.Permit
	for range 3 {
		p, err := l.Wait(ctx)
		require.NoError(t, err)
		inflight = append(inflight, p)
	}
	clk.total()
	inflight[0].Throttled(2 * time.Second)
	inflight[1].Throttled(time.Second)
	inflight[2].Throttled(3 * time.Second)
	require.Len(t, throttles, 2, "a later Retry-After extends the pause; an earlier one does not")
	assert.Equal(t, provider.Throttle{Provider: "p", Pause: 3 * time.Second, RetryAfter: true}, throttles[1])
	probe, err := l.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, clk.total(), "every call waits out the pause")
	probe.Done(0)
	assert.Equal(t, time.Second, gap(), "the pace halved once")
	assert.Equal(t, 3, l.Stats().Throttled)

	clk.advance(time.Minute)
	assert.Equal(t, 500*time.Millisecond, gap(), "a quiet minute doubles the pace back")
}

func TestRateLimiterPauseWithoutRetryAfterDoubles(t *testing.T) {
	clk := newFakeClock()
	l := provider.NewLimiters(nil, provider.LimiterOptions{Now: clk.Now, Sleep: clk.Sleep}).For("p")
	ctx := context.Background()
	p, err := l.Wait(ctx)
	require.NoError(t, err)
	var pauses []time.Duration
	for range 3 {
		p.Throttled(0)
		p, err = l.Wait(ctx)
		require.NoError(t, err)
		pauses = append(pauses, clk.total())
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, pauses, "each throttled probe doubles the pause")
	p.Done(0)
	p, err = l.Wait(ctx)
	require.NoError(t, err)
	p.Throttled(0)
	_, err = l.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Second, clk.total(), "an answered probe starts the doubling over")
}

// After a pause one call probes; the others go only once it has an answer.
func TestRateLimiterProbeGoesFirst(t *testing.T) {
	l := provider.NewLimiters(nil, provider.LimiterOptions{}).For("p")
	ctx := context.Background()
	p, err := l.Wait(ctx)
	require.NoError(t, err)
	p.Throttled(10 * time.Millisecond)
	probe, err := l.Wait(ctx)
	require.NoError(t, err)

	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			p, err := l.Wait(ctx)
			if err == nil {
				note("waiter")
				p.Done(0)
			}
		})
	}
	// Not a timing assertion: the waiters get time to go too early, and
	// the order shows whether they did.
	time.Sleep(30 * time.Millisecond)
	note("probe answered")
	probe.Done(0)
	wg.Wait()
	assert.Equal(t, []string{"probe answered", "waiter", "waiter", "waiter"}, order)
}

// A throttled call through Do is paused by the limiter, not by its own
// retry budget: with one attempt allowed it still gets its answer, and
// the wait is counted for the caller.
func TestDoWaitsForTheLimiterOnThrottling(t *testing.T) {
	clk := newFakeClock()
	ls := provider.NewLimiters(nil, provider.LimiterOptions{Now: clk.Now, Sleep: clk.Sleep})
	c := provider.Config{Provider: "p", Limiters: ls, Retry: provider.RetryPolicy{MaxAttempts: 1}}
	var calls atomic.Int32
	waits := &provider.RateWaits{}
	ctx := provider.WithRateWaits(context.Background(), waits)
	resp, err := provider.Do(ctx, c, func(ctx context.Context) (*llm.Response, error) {
		if calls.Add(1) <= 2 {
			return nil, &llm.Error{Kind: llm.ErrRateLimit, StatusCode: 429, RetryAfter: 2 * time.Second}
		}
		return &llm.Response{Usage: llm.Usage{InputTokens: 10}}, nil
	})
	require.NoError(t, err)
	assert.NotNil(t, resp)
	assert.EqualValues(t, 3, calls.Load())
	assert.Equal(t, 4*time.Second, clk.total())
	assert.Equal(t, map[string]provider.RateStats{"p": {Throttled: 2, Waits: 2, Wait: 4 * time.Second}}, waits.Stats())

	// A quota (Retry-After beyond MaxRetryAfter) fails at once.
	_, err = provider.Do(ctx, c, func(ctx context.Context) (*llm.Response, error) {
		return nil, &llm.Error{Kind: llm.ErrRateLimit, StatusCode: 429, RetryAfter: time.Hour}
	})
	assert.True(t, llm.IsRateLimit(err))

	// A call that keeps being throttled fails after MaxThrottled pauses.
	calls.Store(0)
	_, err = provider.Do(ctx, c, func(ctx context.Context) (*llm.Response, error) {
		calls.Add(1)
		return nil, &llm.Error{Kind: llm.ErrRateLimit, StatusCode: 429}
	})
	assert.True(t, llm.IsRateLimit(err))
	assert.EqualValues(t, provider.DefaultMaxThrottled+1, calls.Load())

	// Replays are never paced.
	c.Replay = true
	_, err = provider.Do(ctx, c, func(ctx context.Context) (*llm.Response, error) {
		return nil, &llm.Error{Kind: llm.ErrRateLimit, StatusCode: 429}
	})
	assert.True(t, llm.IsRateLimit(err))
}

// A stream's probe succeeds at its first chunk; a stream its reader stops
// releases its permit, so nobody waits on it.
func TestDoStreamEndsItsPermit(t *testing.T) {
	l := provider.NewLimiters(nil, provider.LimiterOptions{})
	c := provider.Config{Provider: "p", Limiters: l}
	ctx := context.Background()
	p, err := l.For("p").Wait(ctx)
	require.NoError(t, err)
	p.Throttled(time.Millisecond)
	for c2, err := range streamOf(ctx, c) {
		require.NoError(t, err)
		_ = c2
		break // stop after the first chunk
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, err := range streamOf(ctx, c) {
			require.NoError(t, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a stream waits on a permit nobody ended")
	}
	_, err = l.For("p").Wait(ctx)
	assert.NoError(t, err)
}

func streamOf(ctx context.Context, c provider.Config) func(func(llm.Chunk, error) bool) {
	return func(yield func(llm.Chunk, error) bool) {
		provider.DoStream(ctx, c, yield, func(ctx context.Context, emit func(llm.Chunk) bool) (*llm.Response, error) {
			for range 2 {
				if !emit(llm.Chunk{}) {
					return nil, errors.New("stopped")
				}
			}
			return &llm.Response{}, nil
		})
	}
}
