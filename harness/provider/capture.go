package provider

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dageval/dageval/harness/llm"
)

// maxErrorBody bounds how much of an error answer is kept for classification.
const maxErrorBody = 64 << 10

// maxOtherFraming bounds a 2xx answer set aside because its framing is not
// the one asked for; such answers are complete model answers, not errors.
const maxOtherFraming = 64 << 20

// Headers through which a recorder tells the adapters how long a recorded
// exchange took (Go duration strings), so that a replayed call reports the
// recorded latency rather than the microseconds the replay took. A cassette
// keeps the duration in go-vcr's own duration field and the time to the
// first event of a stream in FirstEventHeader among the response headers.
const (
	// DurationHeader holds the whole exchange's duration, or "unknown" for
	// a recording that has none (an imported vcrpy cassette).
	DurationHeader = "X-Dageval-Duration"
	// FirstEventHeader holds the time from the request to the first byte
	// of a streamed answer.
	FirstEventHeader = "X-Dageval-First-Event"
)

// ErrOtherFraming is what the SDK call of an attempt fails with when the
// server answered with the other framing than the one asked for: an event
// stream to a plain call, or one JSON document to a streaming call. Some
// servers do that live (compatible servers that ignore "stream"), and a
// replay does it whenever the agent calls a model differently from how it
// was recorded; Capture.OtherFraming gives the answer back for decoding the
// way it was sent.
var ErrOtherFraming = errors.New("provider: the answer's framing differs from the call's")

// AWSEventStream is the Content-Type of Amazon Bedrock's streamed answers:
// AWS's binary event-stream framing, which the SDK turns into server-sent
// events above the wire.
const AWSEventStream = "application/vnd.amazon.eventstream"

// IsEventStream reports whether a Content-Type names a streamed answer: a
// server-sent event stream, or AWS's binary event stream.
func IsEventStream(contentType string) bool {
	ct := strings.ToLower(strings.TrimSpace(contentType))
	return strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, AWSEventStream)
}

// Capture observes the HTTP exchange of one call attempt: it keeps a non-2xx
// answer so that it can be classified from the raw status, headers and body
// whatever the SDK made of it, sets aside a 2xx answer framed otherwise than
// the call asked (see ErrOtherFraming), and times the exchange. Install
// Middleware as a per-call SDK middleware.
type Capture struct {
	// Stream says whether the call asked for an event stream.
	Stream bool

	mu      sync.Mutex
	failure *Failure
	other   *RecordedAnswer
	start   time.Time
	first   time.Time
	header  http.Header // of the 2xx answer
}

// Middleware has the shape of both SDKs' option.Middleware.
func (c *Capture) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	start := time.Now()
	resp, err := next(inMemoryBody(req))
	if err != nil || resp == nil {
		return resp, err
	}
	c.mu.Lock()
	c.start = start
	c.mu.Unlock()
	if resp.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		c.mu.Lock()
		c.failure = &Failure{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: body}
		c.mu.Unlock()
		return resp, nil
	}
	streamed := IsEventStream(resp.Header.Get("Content-Type"))
	c.mu.Lock()
	c.header = resp.Header
	c.mu.Unlock()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && streamed != c.Stream && resp.Header.Get("Content-Type") != "" {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxOtherFraming))
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.other = &RecordedAnswer{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: body}
		c.first = time.Now()
		c.mu.Unlock()
		return nil, ErrOtherFraming
	}
	if streamed {
		resp.Body = &firstRead{ReadCloser: resp.Body, c: c}
	}
	return resp, nil
}

// inMemoryBody gives req the body its GetBody makes, when it has one.
// Both SDKs hand each attempt its body in a wrapper of their own, which
// hides from net/http that the body is in memory: net/http then flushes
// the headers in a write of their own and copies the body through a
// buffer it allocates, so that every request costs two writes to the
// socket, each waking the server. GetBody gives the same bytes as a
// reader net/http knows, and the request goes out in one write when the
// transport's write buffer holds it. Capture's middleware is the first
// the SDK calls, so the body and GetBody are still the SDK's own pair.
func inMemoryBody(req *http.Request) *http.Request {
	if req.GetBody == nil || req.Body == nil || req.Body == http.NoBody || req.ContentLength <= 0 {
		return req
	}
	body, err := req.GetBody()
	if err != nil {
		return req
	}
	_ = req.Body.Close()
	out := *req
	out.Body = body
	return &out
}

// firstRead notes when the first bytes of a streamed body arrive.
type firstRead struct {
	io.ReadCloser
	c    *Capture
	seen bool
}

func (f *firstRead) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 && !f.seen {
		f.seen = true
		now := time.Now()
		f.c.mu.Lock()
		f.c.first = now
		f.c.mu.Unlock()
	}
	return n, err
}

// Failure returns the captured answer, if a non-2xx one arrived.
func (c *Capture) Failure() (Failure, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		return Failure{}, false
	}
	return *c.failure, true
}

// OtherFraming returns the answer set aside when err says the call got the
// other framing than it asked for.
func (c *Capture) OtherFraming(err error) (RecordedAnswer, bool) {
	if !errors.Is(err, ErrOtherFraming) {
		return RecordedAnswer{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.other == nil {
		return RecordedAnswer{}, false
	}
	return *c.other, true
}

// Latency is the attempt's timing, taken when the answer has been read: the
// recorded one when a recorder said (DurationHeader), none when replaying
// without a recorded time, else the clock's.
func (c *Capture) Latency(replay bool) *llm.Latency {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.header.Get(DurationHeader); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil
		}
		l := &llm.Latency{Duration: d, Recorded: true}
		if f, err := time.ParseDuration(c.header.Get(FirstEventHeader)); err == nil && f > 0 {
			l.FirstEvent = f
		}
		return l
	}
	if replay || c.start.IsZero() {
		return nil
	}
	l := &llm.Latency{Duration: time.Since(c.start)}
	if c.Stream && !c.first.IsZero() {
		l.FirstEvent = c.first.Sub(c.start)
	}
	return l
}
