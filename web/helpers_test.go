package web

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNet is the tests' network: a resolver answering from hosts and a
// dialer that connects a public address to a server on 127.0.0.1 through
// routes. An address without a route fails, so no test reaches the
// internet. It records every lookup and dial.
type fakeNet struct {
	mu      sync.Mutex
	hosts   map[string][]netip.Addr
	routes  map[netip.AddrPort]string
	lookups []string
	dials   []netip.AddrPort
	ca      *testCA
}

func newFakeNet(t *testing.T) *fakeNet {
	return &fakeNet{hosts: map[string][]netip.Addr{}, routes: map[netip.AddrPort]string{}, ca: newTestCA(t)}
}

func (f *fakeNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, host)
	addrs, ok := f.hosts[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

func (f *fakeNet) dial(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
	f.mu.Lock()
	f.dials = append(f.dials, ap)
	target, ok := f.routes[ap]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("test network: no route to %s", ap)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, target)
}

// host makes name resolve to addrs.
func (f *fakeNet) host(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range addrs {
		f.hosts[name] = append(f.hosts[name], netip.MustParseAddr(a))
	}
}

// serve starts h on 127.0.0.1 and routes the public address addr (ip:port)
// to it; with tlsHosts it serves TLS with a certificate of the test CA for
// those names.
func (f *fakeNet) serve(t *testing.T, addr string, h http.Handler, tlsHosts ...string) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	if len(tlsHosts) > 0 {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{f.ca.leaf(t, tlsHosts...)}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[netip.MustParseAddrPort(addr)] = s.Listener.Addr().String()
}

func (f *fakeNet) dialed() []netip.AddrPort {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]netip.AddrPort(nil), f.dials...)
}

func (f *fakeNet) looked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lookups...)
}

// tools returns Tools over the fake network.
func (f *fakeNet) tools(t *testing.T, opts Options) *Tools {
	t.Helper()
	tl, err := newTools(opts, network{resolve: f, dial: f.dial, roots: f.ca.pool})
	if err != nil {
		t.Fatalf("newTools: %v", err)
	}
	return tl
}

// testCA issues server certificates that only the fake network's Tools trust.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "axlr web test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) leaf(t *testing.T, hosts ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hosts[0]},
		DNSNames:     hosts,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// call runs tool with args and decodes its output into a map.
func call(t *testing.T, tl *Tools, tool, args string) map[string]any {
	t.Helper()
	out, err := tl.Call(context.Background(), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s output %s: %v", tool, out, err)
	}
	return m
}

// callErr runs tool with args, expects an *Error with code and returns it.
func callErr(t *testing.T, tl *Tools, tool, args, code string) *Error {
	t.Helper()
	out, err := tl.Call(context.Background(), tool, json.RawMessage(args))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s %s = %s, %v; want an *Error %s", tool, args, out, err, code)
	}
	if e.Code != code {
		t.Fatalf("%s %s: code %s (%s), want %s", tool, args, e.Code, e.Message, code)
	}
	return e
}

func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s = %q; want it to contain %q", what, s, sub)
		}
	}
}
