// Package service is axlrd's HTTP service API: sessions, turns,
// decisions, jobs and plans as JSON under /v1, and their events as
// resumable Server-Sent Events, on the same client and Updates axlr-tui
// uses. The handlers run no agent loop of their own: a turn is the
// session workflow's execute update, a decision its decide update, a job
// the registry's admission, and the events come from history and the
// workflows' journals, so a client that reconnects, after a drop or an
// axlrd restart, gets every durable event it missed, once, in order.
// Live deltas (the provider's tokens) come from the model-request
// activities of this axlrd (internal/live) and are never durable.
//
// Who may do what: a request carries a bearer token (settings hold only
// its sha256) or a TLS client certificate (verified against
// service.tls.client_ca, mapped by fingerprint); each maps to roles
// (session_client, approver, job_operator, admin). Anything else fails
// closed. /livez and /readyz are on a separate probe listener.
//
// Left to the caller (internal/daemon): when to serve and when to stop.
package service

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/live"
	"github.com/underpass-ai/axlr/internal/settings"
)

// Options configure a Server. Zero values take the defaults on each
// field.
type Options struct {
	// Settings are service's settings (settings.json's "service").
	Settings settings.Service
	// Client reaches the workflows.
	Client *client.Client
	// Live is where this axlrd's model requests publish their deltas.
	Live *live.Broker
	// StateDir holds service/token (the local token, made at the first
	// start, 0600) and service/url (where the API listens), which
	// axlr-tui on this host reads.
	StateDir string
	// Model is the default model of a session that names none
	// (settings' model); empty: a session must name one.
	Model string
	// Ready reports what /readyz checks; nil checks nothing but the
	// process.
	Ready func(context.Context) []Check
	Log   zerolog.Logger
	// Heartbeat is the pause between an event stream's heartbeat
	// comments (default 15 s); StreamBuffer how many events a stream
	// holds for a slow client before it is cut off (default 256).
	Heartbeat    time.Duration
	StreamBuffer int
}

// Check is one readiness check's outcome.
type Check struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Server is the API and its probe listener, bound by New.
type Server struct {
	o      Options
	auth   *authenticator
	api    net.Listener
	probe  net.Listener
	tls    bool
	mux    *http.ServeMux
	feeds  *feeds
	ctx    context.Context
	cancel context.CancelFunc

	defaultsMu sync.Mutex
	// defaults caches each session's creation defaults, which never
	// change, so a turn reads no query for them.
	defaults map[string]sessionDefaults
}

// New binds the API's and the probe's listeners (an "off" one is not
// bound), makes the local token at its first start, and builds the
// routes. A failure names what it was opening.
func New(o Options) (*Server, error) {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.StreamBuffer <= 0 {
		o.StreamBuffer = 256
	}
	s := &Server{o: o, mux: http.NewServeMux(), defaults: map[string]sessionDefaults{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.feeds = newFeeds(s.ctx, o.Client, o.Live, o.Log)
	token, err := localToken(o.StateDir)
	if err != nil {
		return nil, err
	}
	addr := o.Settings.ListenAddress()
	open := o.Settings.LoopbackOpen && settings.Loopback(addr) && o.Settings.TLS.Cert == ""
	s.auth = newAuthenticator(o.Settings, token, open)
	s.routes()
	if addr != "" {
		cfg, err := tlsConfig(o.Settings)
		if err != nil {
			return nil, err
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on service.listen %s: %w (set service.listen to another address, or off)", addr, err)
		}
		if cfg != nil {
			l, s.tls = tls.NewListener(l, cfg), true
		}
		s.api = l
		if err := s.writeURL(); err != nil {
			l.Close()
			return nil, err
		}
	}
	if p := o.Settings.ProbeAddress(); p != "" {
		l, err := net.Listen("tcp", p)
		if err != nil {
			if s.api != nil {
				s.api.Close()
			}
			return nil, fmt.Errorf("listen on service.probe %s: %w (set service.probe to another address, or off)", p, err)
		}
		s.probe = l
	}
	return s, nil
}

// URL is where the API listens ("" when off): http:// or https://.
func (s *Server) URL() string {
	if s.api == nil {
		return ""
	}
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	return scheme + "://" + s.api.Addr().String()
}

// ProbeAddr is the probe listener's address ("" when off).
func (s *Server) ProbeAddr() string {
	if s.probe == nil {
		return ""
	}
	return s.probe.Addr().String()
}

// Handler is the API's handler, for tests.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve serves the API and the probes until ctx ends, then stops them:
// the event streams end at once (a client resumes from its cursor), and
// the other requests get 5 s.
func (s *Server) Serve(ctx context.Context) error {
	errs := make(chan error, 2)
	var servers []*http.Server
	start := func(l net.Listener, h http.Handler) {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return s.ctx }, ErrorLog: nil}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("serve %s: %w", l.Addr(), err)
				return
			}
			errs <- nil
		}()
	}
	if s.api != nil {
		start(s.api, s.mux)
	}
	if s.probe != nil {
		start(s.probe, s.probeHandler())
	}
	if len(servers) == 0 {
		<-ctx.Done()
		return nil
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	s.cancel()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(sctx)
	}
	return err
}

// Close releases the listeners of a Server that never served.
func (s *Server) Close() {
	s.cancel()
	for _, l := range []net.Listener{s.api, s.probe} {
		if l != nil {
			l.Close()
		}
	}
}

// tlsConfig is the API's TLS: its certificate, and the client CA that
// verifies client certificates (required when no token may stand in for
// one); nil without a certificate.
func tlsConfig(set settings.Service) (*tls.Config, error) {
	if set.TLS.Cert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(set.TLS.Cert, set.TLS.Key)
	if err != nil {
		return nil, fmt.Errorf("load service.tls.cert and key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if set.TLS.ClientCA != "" {
		pem, err := os.ReadFile(set.TLS.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("read service.tls.client_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("service.tls.client_ca %s holds no PEM certificate", set.TLS.ClientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if len(set.Tokens) == 0 {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return cfg, nil
}

// Files in the state dir's service directory.
const (
	TokenFile = "token"
	URLFile   = "url"
)

// localToken returns the state dir's token, making it at the first start
// (32 random bytes, hex, mode 0600 in a 0700 directory).
func localToken(stateDir string) (string, error) {
	if stateDir == "" {
		return "", nil
	}
	dir := filepath.Join(stateDir, "service")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make the service's directory: %w", err)
	}
	path := filepath.Join(dir, TokenFile)
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); len(t) >= 32 {
			return t, nil
		}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make the service's local token: %w", err)
	}
	token := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the service's local token: %w", err)
	}
	return token, nil
}

// writeURL records where the API listens, for axlr-tui on this host.
func (s *Server) writeURL() error {
	if s.o.StateDir == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(s.o.StateDir, "service", URLFile), []byte(s.URL()+"\n"), 0o644); err != nil {
		return fmt.Errorf("write the service's url: %w", err)
	}
	return nil
}
