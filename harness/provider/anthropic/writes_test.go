package anthropic_test

import (
	"net/http"
	"testing"

	"github.com/dageval/dageval/harness/llm"
	"github.com/dageval/dageval/harness/provider"
	"github.com/dageval/dageval/harness/provider/internal/providertest"
)

// TestARequestGoesOutInOneWrite: the SDK wraps each attempt's body so
// that net/http cannot tell it is in memory, and would send the headers
// and the body in writes of their own, waking the server twice per call.
func TestARequestGoesOutInOneWrite(t *testing.T) {
	providertest.OneWritePerRequest(t, okMessage, func(url string, client *http.Client) llm.ChatModel {
		var h harness
		return h.model(t, url, func(c *provider.Config) { c.HTTPClient = client })
	})
}
