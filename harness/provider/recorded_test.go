package provider_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/harness/provider"
)

func TestRecordedAnswerServesFreshCopies(t *testing.T) {
	a := provider.RecordedAnswer{StatusCode: 429, Header: http.Header{
		"Content-Type": {"text/event-stream; charset=utf-8"}, "Content-Length": {"9999"},
		"Transfer-Encoding": {"chunked"}, "Content-Encoding": {"gzip"}, "Retry-After": {"3"},
	}, Body: []byte("data: {}\n\n")}
	assert.True(t, a.Streamed())
	c := &http.Client{Transport: a}
	for range 2 {
		resp, err := c.Post("https://recorded.invalid/v1/messages", "application/json", strings.NewReader(`{"model":"x"}`))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 429, resp.StatusCode)
		assert.Equal(t, "429 Too Many Requests", resp.Status)
		assert.Equal(t, "data: {}\n\n", string(body))
		assert.Equal(t, "10", resp.Header.Get("Content-Length"))
		assert.Empty(t, resp.Header.Get("Transfer-Encoding"))
		assert.Empty(t, resp.Header.Get("Content-Encoding"))
		assert.Equal(t, "3", resp.Header.Get("Retry-After"))
		resp.Header.Set("Retry-After", "changed")
	}
	assert.Equal(t, "3", a.Header.Get("Retry-After"), "the recorded header is never modified")
	assert.Equal(t, "9999", a.Header.Get("Content-Length"))

	plain := provider.RecordedAnswer{Body: []byte(`{}`)}
	assert.False(t, plain.Streamed())
	resp, err := plain.RoundTrip(&http.Request{Method: http.MethodPost})
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode, "a zero status is 200")
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
}

func TestDecodeConfigIsOffline(t *testing.T) {
	for _, kind := range provider.Kinds() {
		c := provider.DecodeConfig(kind, provider.RecordedAnswer{})
		require.NoError(t, c.Validate(), kind)
		assert.True(t, c.Replay, kind)
		h, _, err := c.Credentials()
		require.NoError(t, err, kind)
		assert.Empty(t, h, "no key is sent: %s", kind)
		assert.Contains(t, c.BaseURL, ".invalid", kind)
		_, ok := c.HTTPClient.Transport.(provider.RecordedAnswer)
		assert.True(t, ok, kind)
	}
}
