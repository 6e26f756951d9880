package recorded

import (
	"context"
	"fmt"
	"net"
	"net/http"
)

// LoopbackOnly makes http.DefaultTransport refuse every connection that
// does not go to a loopback address, so a test that would reach the
// network fails instead. Call it from TestMain.
func LoopbackOnly() {
	t := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{}
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("test tried to reach %s: only loopback connections are allowed in tests", addr)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	http.DefaultTransport = t
}
