package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	mu         sync.Mutex
	violations []string
)

// Loopback reports whether a dial address ("host:port" or a bare host) names
// this machine: localhost or a loopback IP. Names are not resolved, so a test
// cannot reach the network through DNS either.
func Loopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// DialContext dials like net.Dialer but refuses, and records, any address
// that is not loopback.
func DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if !Loopback(addr) {
		msg := fmt.Sprintf("netguard: a test dialed %s %s; tests may only reach loopback", network, addr)
		mu.Lock()
		violations = append(violations, msg)
		mu.Unlock()
		return nil, fmt.Errorf("%s", msg)
	}
	d := net.Dialer{Timeout: 30 * time.Second}
	return d.DialContext(ctx, network, addr)
}

// Transport returns an http.Transport whose dials go through DialContext.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = DialContext
	t.Proxy = nil // a proxy from the environment would hide the real destination
	return t
}

// Violations returns the refused dials so far.
func Violations() []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), violations...)
}

// Main installs the guard as http.DefaultTransport, runs the tests and fails
// the run when any test tried to leave the machine. Call it from TestMain.
func Main(m *testing.M) {
	Install()
	os.Exit(Code(m.Run()))
}

// Install makes http.DefaultTransport refuse, and record, dials outside
// loopback. A TestMain that has more to do after m.Run (such as cleaning
// snapshots) calls Install before it and Code after it instead of Main.
func Install() {
	if _, ok := http.DefaultTransport.(*http.Transport); ok {
		http.DefaultTransport = Transport()
	}
}

// Code is the exit code of a run whose tests returned code: it prints the
// refused dials and turns success into failure when there were any.
func Code(code int) int {
	if v := Violations(); len(v) > 0 {
		for _, s := range v {
			fmt.Fprintln(os.Stderr, s)
		}
		if code == 0 {
			code = 1
		}
	}
	return code
}
