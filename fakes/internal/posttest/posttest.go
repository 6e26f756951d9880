// Package posttest sends the JSON requests the fakes' tests make of a provider endpoint.
package posttest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Result is an answer read to the end.
type Result struct {
	Status int
	Header http.Header
	Body   string
}

// Post sends a JSON POST through c and returns the answer; header is
// name, value pairs.
func Post(t testing.TB, ctx context.Context, c *http.Client, url, body string, header ...string) (Result, error) {
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
		return Result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Result{}, err
	}
	return Result{resp.StatusCode, resp.Header, string(b)}, nil
}

// MustPost is Post that fails the test on a transport error.
func MustPost(t testing.TB, ctx context.Context, c *http.Client, url, body string, header ...string) Result {
	t.Helper()
	r, err := Post(t, ctx, c, url, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// AnthropicHeaders are Anthropic request headers with key.
func AnthropicHeaders(key string) []string {
	return []string{"X-Api-Key", key, "Anthropic-Version", "2023-06-01"}
}

// OpenAIHeaders are OpenAI request headers with key.
func OpenAIHeaders(key string) []string { return []string{"Authorization", "Bearer " + key} }

// GeminiHeaders are Gemini request headers with key.
func GeminiHeaders(key string) []string { return []string{"X-Goog-Api-Key", key} }
