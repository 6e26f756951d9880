package evals_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dageval/dageval/evals"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/harness/llm"
)

// A live run over the default transport leaves no connection open behind
// it: a test binary that runs many suites (evals.Run in go test) would
// otherwise keep each run's idle connections, and their goroutines and
// buffers, for the transport's idle timeout.
func TestLiveRunClosesItsConnections(t *testing.T) {
	m := &convModel{convs: map[string][]llm.Message{"a": {say("one")}, "b": {say("two")}, "c": {say("three")}}}
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	opened := 0
	ts := httptest.NewUnstartedServer(llmserver.NewUnstartedServer(m))
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch st {
		case http.StateNew:
			open[c] = true
			opened++
		case http.StateClosed, http.StateHijacked:
			delete(open, c)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	suite := liveHeader(ts.URL) + "models: [local:m]\nagent: {system_prompt: You answer.}\nconcurrency: 3\ncases: [{id: a, input: a}, {id: b, input: b}, {id: c, input: c}]\n"
	path := writeSuite(t, map[string]string{"suite.yaml": suite})
	for range 2 {
		oc := runSuite(t, path, evals.Options{})
		for _, r := range oc.Results {
			assert.Equal(t, evals.StatusPass, r.Status, r.Error)
		}
	}
	mu.Lock()
	assert.Positive(t, opened, "the runs reached the server")
	mu.Unlock()
	// The server notices a close when it reads the end of the connection.
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(open) == 0
	}, 10*time.Second, 5*time.Millisecond, "connections left open after the runs")
}
