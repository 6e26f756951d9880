package provider

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// RecordedAnswer is an HTTP answer captured earlier, such as the response of
// a cassette interaction. It is also an http.RoundTripper that answers every
// request with that answer, which is how adapters decode a recorded answer
// through the same SDK client and conversion code they use on the wire.
type RecordedAnswer struct {
	StatusCode int
	// Header is the recorded response header; Content-Type says whether
	// Body is JSON or a server-sent event stream.
	Header http.Header
	Body   []byte
}

// Streamed reports whether the answer is an event stream (server-sent
// events, or Bedrock's binary event stream).
func (a RecordedAnswer) Streamed() bool {
	return IsEventStream(a.Header.Get("Content-Type"))
}

// RoundTrip implements http.RoundTripper: it discards the request and
// returns a fresh copy of the answer. The recorded framing headers
// (Content-Length, Transfer-Encoding, Content-Encoding) describe bytes that
// are not the ones served, so they are replaced.
func (a RecordedAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	h := a.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Transfer-Encoding")
	h.Del("Content-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(a.Body)))
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	status := a.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(a.Body)),
		ContentLength: int64(len(a.Body)),
		Request:       req,
	}, nil
}

// DecodeConfig is the configuration adapters use to decode a recorded
// answer: replay mode (no key, no retries), an unreachable base URL and an
// HTTP client that serves only the answer, so decoding can never reach a
// network or read the environment.
func DecodeConfig(kind string, a RecordedAnswer) Config {
	base := "https://recorded.invalid"
	if kind == KindOpenAI || kind == KindOpenAICompatible {
		base += "/v1"
	}
	return Config{
		Provider:   kind,
		Model:      "recorded",
		Kind:       kind,
		BaseURL:    base,
		HTTPClient: &http.Client{Transport: a},
		Replay:     true,
		Retry:      RetryPolicy{MaxAttempts: 1},
		Timeout:    -1,
		Getenv:     func(string) string { return "" },
	}
}
