package providertest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScriptAnswersInOrder(t *testing.T) {
	s := NewScript(t,
		Reply(http.StatusTooManyRequests, map[string]string{"Retry-After": "1"}, `{"error":"slow"}`),
		SSE("data: a\n\n", "data: b\n\n"),
	)
	tests := []struct {
		status      int
		contentType string
		body        string
	}{
		{http.StatusTooManyRequests, "application/json", `{"error":"slow"}`},
		{http.StatusOK, "text/event-stream", "data: a\n\ndata: b\n\n"},
	}
	for i, want := range tests {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("X-Call", string(rune('0'+i)))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, want.status, resp.StatusCode)
		assert.Equal(t, want.contentType, resp.Header.Get("Content-Type"))
		assert.Equal(t, want.body, string(body))
	}
	assert.Equal(t, 2, s.Count())
	assert.Equal(t, "1", s.Requests()[1].Header.Get("X-Call"))
}

func TestThirds(t *testing.T) {
	assert.Equal(t, []string{"ab"}, Thirds("ab"))
	assert.Equal(t, []string{"é", "ü", "ß"}, Thirds("éüß"), "cuts on rune boundaries")
	assert.Equal(t, "Hello world", strings.Join(Thirds("Hello world"), ""))
}
