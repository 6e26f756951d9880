package llmserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"
)

// loopback is a started server: an http.Server on a loopback port. It
// stands in for net/http/httptest.Server so that the programs that link
// this package (the CLI decodes cassettes with DecodeRequest) do not link
// a test-only package.
type loopback struct {
	srv    *http.Server
	url    string
	cert   *x509.Certificate
	client *http.Client
}

// listenLoopback serves h on 127.0.0.1 (or [::1] where IPv4 is missing),
// over TLS with a fresh self-signed certificate when tlsOn.
func listenLoopback(h http.Handler, tlsOn bool) *loopback {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if ln, err = net.Listen("tcp6", "[::1]:0"); err != nil {
			panic(fmt.Sprintf("llmserver: failed to listen on a port: %v", err))
		}
	}
	lb := &loopback{srv: &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}}
	tr := &http.Transport{}
	scheme := "http"
	if tlsOn {
		pair, leaf, err := selfSigned()
		if err != nil {
			ln.Close()
			panic(fmt.Sprintf("llmserver: failed to make a certificate: %v", err))
		}
		lb.cert = leaf
		lb.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}}
		ln = tls.NewListener(ln, lb.srv.TLSConfig)
		pool := x509.NewCertPool()
		pool.AddCert(leaf)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		scheme = "https"
	}
	lb.url = scheme + "://" + ln.Addr().String()
	lb.client = &http.Client{Transport: tr}
	go lb.srv.Serve(ln) //nolint:errcheck // Serve ends with ErrServerClosed at Close.
	return lb
}

// close stops accepting, waits for requests in flight (as httptest's Close
// does) and drops the client's idle connections.
func (lb *loopback) close() {
	lb.srv.SetKeepAlivesEnabled(false)
	_ = lb.srv.Shutdown(context.Background())
	if tr, ok := lb.client.Transport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}

// selfSigned makes a certificate for the loopback addresses and
// example.com, the names httptest's certificate covers.
func selfSigned() (tls.Certificate, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{Organization: []string{"dageval llmserver"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost", "example.com"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf, nil
}
