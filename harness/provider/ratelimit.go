package provider

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// Rate limiter defaults, used when a LimiterOptions field is zero.
const (
	// DefaultQuietPeriod is how long a slowed-down limiter must go without
	// a throttling answer before it doubles its pace again.
	DefaultQuietPeriod = 30 * time.Second
	// DefaultThrottlePause is the first pause after a 429 that carries no
	// Retry-After; it doubles while the throttling goes on.
	DefaultThrottlePause = time.Second
	// MaxThrottlePause caps that doubling.
	MaxThrottlePause = 30 * time.Second
	// DefaultMaxThrottled is how many throttling answers one call may get
	// before it fails: each pauses the whole provider, so a call that
	// still gets one after so many pauses meets a quota, not a burst.
	DefaultMaxThrottled = 8
	// minPaceFactor is the slowest a limiter gets: 1/16 of its allowance.
	minPaceFactor = 1.0 / 16
)

// RateLimit is what one process may send a provider: requests and tokens
// (input plus output) per minute; zero leaves that kind unlimited.
type RateLimit struct {
	RequestsPerMinute float64
	TokensPerMinute   float64
}

// Share is l divided among n processes that call the same provider, as
// the n shards of a run do, so that together they keep to l.
func (l RateLimit) Share(n int) RateLimit {
	if n <= 1 {
		return l
	}
	return RateLimit{RequestsPerMinute: l.RequestsPerMinute / float64(n), TokensPerMinute: l.TokensPerMinute / float64(n)}
}

// Throttle describes a throttling answer that paused a provider, for
// progress output.
type Throttle struct {
	Provider string
	// Pause is how long every call to the provider waits; RetryAfter says
	// the provider asked for it.
	Pause      time.Duration
	RetryAfter bool
}

// LimiterOptions tune the rate limiters of a Limiters. The zero value
// works.
type LimiterOptions struct {
	// QuietPeriod is how long a slowed-down limiter waits, without being
	// throttled, before it doubles its pace (DefaultQuietPeriod when zero).
	QuietPeriod time.Duration
	// MaxThrottled is how many throttling answers one call may get before
	// it fails with the last one (DefaultMaxThrottled when zero).
	MaxThrottled int
	// OnThrottle is told when a throttling answer pauses a provider
	// (called without locks held, possibly from several goroutines).
	OnThrottle func(Throttle)
	// Now and Sleep replace the clock in tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// RateStats counts what a limiter did: the throttling answers it saw, and
// the calls that had to wait for it and how long they waited in all.
type RateStats struct {
	Throttled int
	Waits     int
	Wait      time.Duration
}

func (s *RateStats) add(o RateStats) {
	s.Throttled += o.Throttled
	s.Waits += o.Waits
	s.Wait += o.Wait
}

// Limiters hands out one RateLimiter per provider entry, made on first
// use, so that every model of a run that calls a provider — each cell's,
// the grader's, the subagents' — shares that provider's limiter.
type Limiters struct {
	limits map[string]RateLimit
	opts   LimiterOptions

	mu sync.Mutex
	m  map[string]*RateLimiter
}

// NewLimiters returns limiters with the given allowance per provider
// entry name; a provider without one is still paused as a whole when it
// throttles, but otherwise unpaced.
func NewLimiters(limits map[string]RateLimit, opts LimiterOptions) *Limiters {
	if opts.QuietPeriod <= 0 {
		opts.QuietPeriod = DefaultQuietPeriod
	}
	if opts.MaxThrottled <= 0 {
		opts.MaxThrottled = DefaultMaxThrottled
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	return &Limiters{limits: maps.Clone(limits), opts: opts, m: map[string]*RateLimiter{}}
}

func (ls *Limiters) maxThrottled() int {
	if ls.opts.MaxThrottled <= 0 {
		return DefaultMaxThrottled
	}
	return ls.opts.MaxThrottled
}

// For returns the limiter of a provider entry; nil for nil Limiters.
func (ls *Limiters) For(provider string) *RateLimiter {
	if ls == nil {
		return nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		// The zero Limiters works too, with the default options.
		ls.opts, ls.m = NewLimiters(nil, ls.opts).opts, map[string]*RateLimiter{}
	}
	l, ok := ls.m[provider]
	if !ok {
		l = newRateLimiter(provider, ls.limits[provider], ls.opts)
		ls.m[provider] = l
	}
	return l
}

// Stats returns each used limiter's counts, by provider entry name.
func (ls *Limiters) Stats() map[string]RateStats {
	out := map[string]RateStats{}
	if ls == nil {
		return out
	}
	ls.mu.Lock()
	all := slices.Collect(maps.Values(ls.m))
	ls.mu.Unlock()
	for _, l := range all {
		out[l.name] = l.Stats()
	}
	return out
}

// RateLimiter paces the calls of one provider across a process: two token
// buckets (requests and tokens per minute, each holding a second's worth)
// scaled by an adaptive factor. A throttling answer (429) pauses every
// call for its Retry-After (or a doubling pause), halves the factor, and
// after the pause lets one call go first as a probe, the others following
// when it succeeds; each quiet period without throttling doubles the
// factor back towards the full allowance. Tokens are charged when a call
// ends, with the running mean of earlier calls charged up front so that
// calls in flight together cannot overdraw the bucket.
type RateLimiter struct {
	name  string
	limit RateLimit
	opts  LimiterOptions

	mu          sync.Mutex
	factor      float64
	adjusted    time.Time // when factor last changed
	refilled    time.Time
	reqLevel    float64
	tokLevel    float64
	tokMean     float64
	tokCalls    int
	pausedUntil time.Time
	pause       time.Duration // the last pause without Retry-After, doubled while throttling goes on
	halfOpen    bool          // after a pause: one probe goes first
	probing     chan struct{} // closed when the probe in flight ends; nil when none is
	stats       RateStats
}

func newRateLimiter(name string, limit RateLimit, opts LimiterOptions) *RateLimiter {
	l := &RateLimiter{name: name, limit: limit, opts: opts, factor: 1, refilled: opts.Now()}
	l.reqLevel, l.tokLevel = l.capacity(l.limit.RequestsPerMinute), l.capacity(l.limit.TokensPerMinute)
	return l
}

// Stats returns the limiter's counts so far.
func (l *RateLimiter) Stats() RateStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// capacity is a second's worth of a per-minute allowance at the current
// pace, and at least one request.
func (l *RateLimiter) capacity(perMinute float64) float64 {
	return max(1, perMinute*l.factor/60)
}

// refill brings the buckets and the pace up to now; l.mu is held.
func (l *RateLimiter) refill(now time.Time) {
	for l.factor < 1 && now.Sub(l.adjusted) >= l.opts.QuietPeriod {
		l.factor = min(1, l.factor*2)
		l.adjusted = l.adjusted.Add(l.opts.QuietPeriod)
	}
	dt := now.Sub(l.refilled).Seconds()
	if dt <= 0 {
		return
	}
	l.refilled = now
	if r := l.limit.RequestsPerMinute; r > 0 {
		l.reqLevel = min(l.capacity(r), l.reqLevel+dt*r*l.factor/60)
	}
	if r := l.limit.TokensPerMinute; r > 0 {
		l.tokLevel = min(l.capacity(r), l.tokLevel+dt*r*l.factor/60)
	}
}

// Permit is one attempt's leave to call the provider. End it with Done
// when the provider answered, Throttled when it answered 429, or Release
// when the attempt failed otherwise. A nil Permit (no limiter) does nothing.
type Permit struct {
	l     *RateLimiter
	waits *RateWaits
	probe bool
	est   float64
	ended bool
}

// Wait blocks until an attempt may go and returns its permit: while the
// provider is paused, while a probe is deciding whether the pause is
// over, and while a bucket is empty. The wait counts in the limiter's
// stats and in the RateWaits of ctx (see WithRateWaits).
func (l *RateLimiter) Wait(ctx context.Context) (*Permit, error) {
	if l == nil {
		return nil, nil
	}
	waits := RateWaitsFrom(ctx)
	start := l.opts.Now()
	waited := false
	for {
		l.mu.Lock()
		now := l.opts.Now()
		l.refill(now)
		var d time.Duration
		var probe chan struct{}
		switch {
		case now.Before(l.pausedUntil):
			d = l.pausedUntil.Sub(now)
		case l.halfOpen && l.probing != nil:
			probe = l.probing
		case l.limit.RequestsPerMinute > 0 && l.reqLevel < 1:
			d = perMinuteWait(1-l.reqLevel, l.limit.RequestsPerMinute*l.factor)
		case l.limit.TokensPerMinute > 0 && l.tokLevel <= 0:
			d = perMinuteWait(1-l.tokLevel, l.limit.TokensPerMinute*l.factor)
		default:
			p := &Permit{l: l, waits: waits}
			if l.limit.RequestsPerMinute > 0 {
				l.reqLevel--
			}
			if l.limit.TokensPerMinute > 0 {
				p.est = l.tokMean
				l.tokLevel -= p.est
			}
			if l.halfOpen {
				p.probe = true
				l.probing = make(chan struct{})
			}
			var w RateStats
			if waited {
				w = RateStats{Waits: 1, Wait: now.Sub(start)}
				l.stats.add(w)
			}
			l.mu.Unlock()
			waits.add(l.name, w)
			return p, nil
		}
		l.mu.Unlock()
		waited = true
		if probe != nil {
			select {
			case <-probe:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		if err := l.opts.Sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// perMinuteWait is how long a bucket refilling at perMinute takes to gain need.
func perMinuteWait(need, perMinute float64) time.Duration {
	return max(time.Millisecond, time.Duration(need/perMinute*float64(time.Minute)))
}

// endProbe lets the calls waiting on a probe go on; l.mu is held.
func (l *RateLimiter) endProbe(p *Permit) {
	if p.probe && l.probing != nil {
		close(l.probing)
		l.probing = nil
	}
}

// Answered tells the limiter the provider began answering (a stream's
// first event): a probe's success ends the pause for every call at once,
// without waiting for the whole answer.
func (p *Permit) Answered() {
	if p == nil || p.ended || !p.probe {
		return
	}
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.halfOpen, l.pause = false, 0
	l.endProbe(p)
	p.probe = false
}

// Done ends an attempt the provider answered, charging the tokens it used.
// A probe that succeeds ends the pause for every call.
func (p *Permit) Done(tokens int) {
	if p == nil || p.ended {
		return
	}
	p.Answered()
	p.ended = true
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit.TokensPerMinute > 0 {
		l.tokLevel -= float64(tokens) - p.est
	}
	// The mean over the last 20 calls or so: recent enough to follow a
	// run whose conversations grow, steady enough not to jump per call.
	l.tokCalls++
	l.tokMean += (float64(tokens) - l.tokMean) / float64(min(l.tokCalls, 20))
}

// Release ends an attempt that failed for a reason other than throttling;
// a probe's turn passes to the next call.
func (p *Permit) Release() {
	if p == nil || p.ended {
		return
	}
	p.ended = true
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	p.l.endProbe(p)
}

// Throttled ends an attempt the provider throttled: every call to the
// provider pauses for retryAfter (or, without one, a pause that doubles
// while the throttling goes on), the pace halves, and after the pause one
// call probes before the others follow.
func (p *Permit) Throttled(retryAfter time.Duration) {
	if p == nil || p.ended {
		return
	}
	p.ended = true
	l := p.l
	l.mu.Lock()
	now := l.opts.Now()
	l.refill(now)
	// Calls in flight when the provider began throttling get their 429s
	// while the pause they caused is on: they extend it when they ask for
	// longer, but halve the pace and double the pause only once.
	wasPaused := now.Before(l.pausedUntil)
	pause := retryAfter
	if pause <= 0 {
		switch {
		case l.pause == 0:
			l.pause = DefaultThrottlePause
		case !wasPaused:
			l.pause = min(2*l.pause, MaxThrottlePause)
		}
		pause = l.pause
	}
	extended := false
	if until := now.Add(pause); until.After(l.pausedUntil) {
		l.pausedUntil, extended = until, true
	}
	if !wasPaused {
		l.factor = max(minPaceFactor, l.factor/2)
		l.adjusted = now
	}
	l.halfOpen = true
	l.stats.Throttled++
	l.endProbe(p)
	l.mu.Unlock()
	p.waits.add(l.name, RateStats{Throttled: 1})
	if extended && l.opts.OnThrottle != nil {
		l.opts.OnThrottle(Throttle{Provider: l.name, Pause: pause, RetryAfter: retryAfter > 0})
	}
}

// RateWaits collects the rate-limit waits and throttling answers one
// caller's calls met, by provider entry name: an eval cell's own share of
// its run's limiters, for its result.
type RateWaits struct {
	mu sync.Mutex
	m  map[string]RateStats
}

type rateWaitsKey struct{}

// WithRateWaits returns a context whose calls count their rate-limit
// waits into w.
func WithRateWaits(ctx context.Context, w *RateWaits) context.Context {
	return context.WithValue(ctx, rateWaitsKey{}, w)
}

// RateWaitsFrom returns the RateWaits of ctx, or nil.
func RateWaitsFrom(ctx context.Context) *RateWaits {
	w, _ := ctx.Value(rateWaitsKey{}).(*RateWaits)
	return w
}

func (w *RateWaits) add(provider string, s RateStats) {
	if w == nil || s == (RateStats{}) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]RateStats{}
	}
	cur := w.m[provider]
	cur.add(s)
	w.m[provider] = cur
}

// Stats returns the counts so far, by provider entry name.
func (w *RateWaits) Stats() map[string]RateStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.m)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
