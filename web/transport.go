package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// Transport limits besides Options.
const (
	maxRedirects   = 5
	maxHeaderBytes = 64 << 10
	dialTimeout    = 10 * time.Second
)

// resolver resolves a host name to addresses; *net.Resolver is the
// production one.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// dialFunc connects to one address that has passed the checks.
type dialFunc func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)

// network is what the transport connects through. New always uses
// systemNetwork; tests substitute a resolver and a dialer that reach servers
// on 127.0.0.1 under public addresses, and their own certificate roots. The
// checks of pin run either way.
type network struct {
	resolve resolver
	dial    dialFunc
	roots   *x509.CertPool // nil: the system's roots
}

// systemNetwork is the production network: the system's resolver, and a
// dialer that checks the socket's address once more before it connects.
func systemNetwork() network {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: controlAddr}
	return network{
		resolve: &net.Resolver{},
		dial: func(ctx context.Context, nw string, ap netip.AddrPort) (net.Conn, error) {
			return d.DialContext(ctx, nw, ap.String())
		},
	}
}

// controlAddr is the production dialer's last check, on the address the
// socket is about to connect to.
func controlAddr(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connect to %s: not an IP address and port", address)
	}
	return checkAddr(ap.Addr().String(), ap.Addr())
}

// resolveError reports a host name that did not resolve.
type resolveError struct {
	host string
	err  error
}

func (e *resolveError) Error() string {
	msg := e.err.Error()
	var de *net.DNSError
	if errors.As(e.err, &de) {
		msg = de.Err
	}
	return fmt.Sprintf("cannot resolve host %s: %s", e.host, msg)
}

func (e *resolveError) Unwrap() error { return e.err }

// pin resolves host once and checks every address it resolves to; it
// refuses the host when any of them is not public. A literal address is
// checked without resolution.
func (n network) pin(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if err := checkAddr(host, a); err != nil {
			return nil, err
		}
		return []netip.Addr{a.Unmap()}, nil
	}
	addrs, err := n.resolve.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &resolveError{host: host, err: err}
	}
	if len(addrs) == 0 {
		return nil, &resolveError{host: host, err: errors.New("no addresses")}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		if err := checkAddr(host, a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// dialContext is the transport's only way out: it pins the host of
// hostport and dials the checked addresses in order until one connects.
func (n network) dialContext(ctx context.Context, nw, hostport string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", hostport, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: port %q is not a number from 0 to 65535", hostport, portText)
	}
	addrs, err := n.pin(ctx, host)
	if err != nil {
		return nil, err
	}
	var first error
	for _, a := range addrs {
		c, err := n.dial(ctx, nw, netip.AddrPortFrom(a, uint16(port)))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// transport sends every connection through dialContext, with no proxy.
func (n network) transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            n.dialContext,
		TLSClientConfig:        &tls.Config{RootCAs: n.roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    dialTimeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		MaxIdleConns:           8,
		IdleConnTimeout:        30 * time.Second,
	}
}

// redirectError reports a redirect web_fetch does not follow.
type redirectError struct {
	tooMany  bool
	location string // redacted of user information
	reason   string
}

func (e *redirectError) Error() string {
	if e.tooMany {
		return fmt.Sprintf("stopped after %d redirects, the limit; the next one pointed to %s", maxRedirects, e.location)
	}
	return fmt.Sprintf("refused the redirect to %s: %s", e.location, e.reason)
}

// followRedirect is web_fetch's redirect policy: at most maxRedirects hops,
// each to an http or https URL without user information. The dial of each
// hop checks its address. The Referer net/http adds is removed, so that no
// hop learns the URL of the one before.
func followRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return &redirectError{tooMany: true, location: req.URL.Redacted()}
	}
	if p := urlProblem(req.URL); p != "" {
		return &redirectError{location: req.URL.Redacted(), reason: p}
	}
	req.Header.Del("Referer")
	return nil
}

// refuseRedirect is the search services' redirect policy: the redirect
// response is the answer, so their API key never travels to another
// location.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// urlProblem says why u cannot be fetched, or "" when it can.
func urlProblem(u *url.URL) string {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme %q is not http or https", u.Scheme)
	case u.User != nil:
		return "it carries user information (user:password@); the web tools send no credentials"
	case u.Hostname() == "":
		return "it names no host"
	}
	return ""
}

// redirects counts the redirects that led to resp.
func redirects(resp *http.Response) int {
	n := 0
	for r := resp.Request.Response; r != nil; r = r.Request.Response {
		n++
	}
	return n
}
