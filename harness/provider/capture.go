package provider

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// maxErrorBody bounds how much of an error answer is kept for classification.
const maxErrorBody = 64 << 10

// Capture keeps the last non-2xx answer of one call so that it can be
// classified from the raw status, headers and body, whatever the SDK made
// of it. Install Middleware as a per-call SDK middleware.
type Capture struct {
	mu      sync.Mutex
	failure *Failure
}

// Middleware has the shape of both SDKs' option.Middleware.
func (c *Capture) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || resp == nil || resp.StatusCode < 400 {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	c.failure = &Failure{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: body}
	c.mu.Unlock()
	return resp, nil
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
