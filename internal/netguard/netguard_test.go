package netguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:80", true},
		{"127.5.6.7:443", true},
		{"[::1]:8080", true},
		{"localhost:1234", true},
		{"api.localhost:1", true},
		{"api.anthropic.com:443", false},
		{"10.0.0.1:80", false},
		{"[2001:db8::1]:443", false},
		{"0.0.0.0:80", false},
		{"example.com", false},
	}
	for _, tt := range tests {
		if got := Loopback(tt.addr); got != tt.want {
			t.Errorf("Loopback(%q) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestTransportRefusesRemoteAndAllowsLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	c := &http.Client{Transport: Transport()}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatalf("loopback request failed: %v", err)
	}
	resp.Body.Close()

	before := len(Violations())
	_, err = DialContext(context.Background(), "tcp", net.JoinHostPort("192.0.2.1", "443"))
	if err == nil || !strings.Contains(err.Error(), "only reach loopback") {
		t.Fatalf("remote dial: err = %v", err)
	}
	v := Violations()
	if len(v) != before+1 {
		t.Fatalf("violation not recorded: %v", v)
	}
	// This deliberate violation must not fail the package's run.
	mu.Lock()
	violations = violations[:before]
	mu.Unlock()
}

func TestCodeFailsARunWithViolations(t *testing.T) {
	before := len(Violations())
	if got := Code(0); got != 0 {
		t.Fatalf("Code(0) without violations = %d", got)
	}
	_, _ = DialContext(context.Background(), "tcp", "192.0.2.1:443")
	defer func() {
		mu.Lock()
		violations = violations[:before]
		mu.Unlock()
	}()
	if got := Code(0); got != 1 {
		t.Errorf("Code(0) with a violation = %d, want 1", got)
	}
	if got := Code(3); got != 3 {
		t.Errorf("Code(3) with a violation = %d, want 3 (a failure code is kept)", got)
	}
}

func TestInstallGuardsTheDefaultTransport(t *testing.T) {
	saved := http.DefaultTransport
	before := len(Violations())
	defer func() {
		http.DefaultTransport = saved
		mu.Lock()
		violations = violations[:before]
		mu.Unlock()
	}()
	http.DefaultTransport = http.DefaultTransport.(*http.Transport).Clone()
	Install()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://192.0.2.1:9/", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = http.DefaultClient.Do(req)
	if err == nil || !strings.Contains(err.Error(), "only reach loopback") {
		t.Fatalf("request through the default transport: err = %v", err)
	}
}
