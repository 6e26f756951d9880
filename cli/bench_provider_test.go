package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dageval/dageval/fakes/llmserver"
)

// BenchmarkProviderServe is the provider's side of BenchmarkRunSuiteCLI
// alone: the 800 requests one run sends (recorded once, in order) served
// by the handler straight from memory, without the network and the
// client that share the machine with it there, which makes the server's
// cost per run measurable on its own. Like the provider process, one
// server serves every iteration.
func BenchmarkProviderServe(b *testing.B) {
	rec := llmserver.NewServer(benchEvalModel())
	dir := b.TempDir()
	suite, getenv := writeBenchSuite(b, dir, rec.URL)
	out := filepath.Join(dir, "out")
	code := Main(append([]string{"run", suite, "--out", out}, benchArgs...), WithContext(context.Background()), WithStdio(strings.NewReader(""), io.Discard, io.Discard), WithGetenv(getenv))
	rec.Close()
	if code != 0 {
		b.Fatalf("dageval run exited %d", code)
	}
	checkBenchRun(b, out)
	served := rec.Requests()

	srv := llmserver.NewUnstartedServer(benchEvalModel())
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		for _, s := range served {
			r := httptest.NewRequest(http.MethodPost, s.Path, bytes.NewReader(s.Body))
			r.Header = s.Header.Clone()
			r.Header.Set("Authorization", "Bearer test-key")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", s.Path, w.Code, w.Body)
			}
		}
	}
	// The machine is shared: CPU time says more than the wall time.
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

// processCPU is the CPU time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
