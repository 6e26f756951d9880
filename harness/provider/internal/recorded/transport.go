package recorded

import (
	"bytes"
	"io"
	"net/http"
)

// Transport answers every request in memory with the given interaction,
// for benchmarks that must measure the adapter, not the network stack.
type Transport struct{ Interaction Interaction }

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	h := t.Interaction.Header.Clone()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	return &http.Response{
		StatusCode: t.Interaction.Status, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader(t.Interaction.Body)), ContentLength: int64(len(t.Interaction.Body)),
	}, nil
}
