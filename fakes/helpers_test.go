package fakes_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// noEnv is a getenv that sees an empty environment, so tests do not depend
// on CI or DAGEVAL_RECORD being set around them.
func noEnv(string) string { return "" }

// env returns a getenv over the given pairs.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

type result struct {
	status int
	header http.Header
	body   string
}

// post sends a JSON POST through c and returns the answer.
func post(t *testing.T, ctx context.Context, c *http.Client, url, body string, header ...string) (result, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, err
	}
	return result{resp.StatusCode, resp.Header, string(b)}, nil
}

// mustPost is post that fails the test on a transport error.
func mustPost(t *testing.T, ctx context.Context, c *http.Client, url, body string, header ...string) result {
	t.Helper()
	r, err := post(t, ctx, c, url, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// countingTransport counts the requests that would have left the process
// and refuses them, to prove that replay never goes to the network.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, io.ErrUnexpectedEOF
}

// Anthropic and OpenAI request headers with a key.
func anthropicHeaders(key string) []string {
	return []string{"X-Api-Key", key, "Anthropic-Version", "2023-06-01"}
}

func openAIHeaders(key string) []string { return []string{"Authorization", "Bearer " + key} }

// newTestServer serves h on loopback until the test ends and returns its URL.
func newTestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}
