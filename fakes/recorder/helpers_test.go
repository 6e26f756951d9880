package recorder_test

import (
	"io"
	"net/http"
	"sync/atomic"
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

// countingTransport counts the requests that would have left the process
// and refuses them, to prove that replay never goes to the network.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, io.ErrUnexpectedEOF
}

// thirdParty holds the pydantic-ai recordings and their imports.
const thirdParty = "../../cassettes/thirdparty/pydantic-ai"
