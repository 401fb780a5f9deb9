package settings

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Service configures axlrd's HTTP service API (internal/service).
type Service struct {
	// Listen is the API's address, host:port (default DefaultServiceListen);
	// "off" runs no API. An address other than loopback needs TLS and
	// client authentication.
	Listen string `json:"listen,omitempty"`
	// Probe is the address of /livez and /readyz, host:port (default
	// DefaultServiceProbe); "off" runs none.
	Probe string `json:"probe,omitempty"`
	// LoopbackOpen lets a request on a loopback listener without TLS in
	// without a token, with every role (default false: a token, such as
	// the state dir's service/token, is required everywhere).
	LoopbackOpen bool `json:"loopback_open,omitempty"`
	// Roots are the directories a session or a plan the API starts may
	// work in (absolute paths); a request's root must be one of them or
	// inside one. Default: none, so the API opens no workspace until
	// they are named.
	Roots []string `json:"roots,omitempty"`
	// Tokens map bearer tokens, by their sha256, to roles.
	Tokens []ServiceToken `json:"tokens,omitempty"`
	// Clients map TLS client certificates, by the sha256 of their DER,
	// to roles; TLS.ClientCA verifies them first.
	Clients []ServiceClient `json:"clients,omitempty"`
	// TLS serves the API over TLS.
	TLS ServiceTLS `json:"tls,omitzero"`
	// HeartbeatSeconds is the pause between an event stream's heartbeat
	// comments, 1 to 300 (0: 15): under a proxy's idle timeout.
	HeartbeatSeconds int `json:"heartbeat_seconds,omitempty"`
}

// ServiceToken is a bearer token's identity: its name, the hex sha256 of
// the token (never the token itself) and its roles.
type ServiceToken struct {
	Name   string   `json:"name"`
	SHA256 string   `json:"sha256"`
	Roles  []string `json:"roles"`
}

// ServiceClient is a client certificate's identity: its name, the hex
// sha256 of its DER encoding (openssl x509 -noout -fingerprint -sha256,
// colons allowed) and its roles.
type ServiceClient struct {
	Name        string   `json:"name"`
	Fingerprint string   `json:"fingerprint"`
	Roles       []string `json:"roles"`
}

// ServiceTLS holds the API's certificate and key files and the CA that
// client certificates must chain to.
type ServiceTLS struct {
	Cert     string `json:"cert,omitempty"`
	Key      string `json:"key,omitempty"`
	ClientCA string `json:"client_ca,omitempty"`
}

// Defaults of the service.
const (
	DefaultServiceListen = "127.0.0.1:7280"
	DefaultServiceProbe  = "127.0.0.1:7281"
	// ServiceOff turns a listener off.
	ServiceOff = "off"
)

// The roles of the service API.
const (
	RoleSessionClient = "session_client"
	RoleApprover      = "approver"
	RoleJobOperator   = "job_operator"
	RoleAdmin         = "admin"
)

// Roles are the service's roles.
var Roles = []string{RoleSessionClient, RoleApprover, RoleJobOperator, RoleAdmin}

// DefaultHeartbeatSeconds is service.heartbeat_seconds when settings
// name none; MaxHeartbeatSeconds bounds it.
const (
	DefaultHeartbeatSeconds = 15
	MaxHeartbeatSeconds     = 300
)

// Heartbeat returns service.heartbeat_seconds as a duration.
func (s Service) Heartbeat() time.Duration {
	return time.Duration(cmp.Or(s.HeartbeatSeconds, DefaultHeartbeatSeconds)) * time.Second
}

// ListenAddress returns service.listen with its default; "" when off.
func (s Service) ListenAddress() string { return serviceAddress(s.Listen, DefaultServiceListen) }

// ProbeAddress returns service.probe with its default; "" when off.
func (s Service) ProbeAddress() string { return serviceAddress(s.Probe, DefaultServiceProbe) }

func serviceAddress(v, dflt string) string {
	if strings.EqualFold(v, ServiceOff) {
		return ""
	}
	return cmp.Or(v, dflt)
}

// Loopback reports whether a listen address is on loopback: 127.0.0.0/8,
// ::1 or localhost.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// NormalFingerprint is a certificate fingerprint as the service compares
// it: lowercase hex without colons.
func NormalFingerprint(f string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(f), ":", ""))
}

func (s Service) validate() error {
	for _, a := range []struct{ key, addr string }{{"service.listen", s.ListenAddress()}, {"service.probe", s.ProbeAddress()}} {
		if a.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.addr); err != nil || port == "" {
			return fmt.Errorf("%s %q: want host:port, such as %s, or off", a.key, a.addr, DefaultServiceListen)
		}
	}
	if err := inRange("service.heartbeat_seconds", s.HeartbeatSeconds, MaxHeartbeatSeconds, DefaultHeartbeatSeconds); err != nil {
		return err
	}
	if (s.TLS.Cert == "") != (s.TLS.Key == "") {
		return errors.New("service.tls: cert and key go together: name both files, or neither")
	}
	for _, f := range []struct{ key, path string }{{"service.tls.cert", s.TLS.Cert}, {"service.tls.key", s.TLS.Key}, {"service.tls.client_ca", s.TLS.ClientCA}} {
		if f.path != "" && !filepath.IsAbs(f.path) {
			return fmt.Errorf("%s %q must be an absolute path", f.key, f.path)
		}
	}
	if s.TLS.ClientCA != "" && s.TLS.Cert == "" {
		return errors.New("service.tls.client_ca needs service.tls.cert and key: client certificates are checked only over TLS")
	}
	if len(s.Clients) > 0 && s.TLS.ClientCA == "" {
		return errors.New("service.clients needs service.tls.client_ca: a client certificate is trusted only once it chains to it")
	}
	for _, r := range s.Roots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("service.roots holds %q: each entry is an absolute path", r)
		}
	}
	names := map[string]bool{}
	for i, t := range s.Tokens {
		key := fmt.Sprintf("service.tokens[%d]", i)
		if err := identity(key, t.Name, t.Roles, names); err != nil {
			return err
		}
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != 32 {
			return fmt.Errorf("%s.sha256: want the 64 hex digits of the token's sha256 (printf %%s TOKEN | sha256sum), never the token itself", key)
		}
	}
	for i, c := range s.Clients {
		key := fmt.Sprintf("service.clients[%d]", i)
		if err := identity(key, c.Name, c.Roles, names); err != nil {
			return err
		}
		if b, err := hex.DecodeString(NormalFingerprint(c.Fingerprint)); err != nil || len(b) != 32 {
			return fmt.Errorf("%s.fingerprint: want the sha256 of the certificate's DER, 64 hex digits (openssl x509 -noout -fingerprint -sha256)", key)
		}
	}
	if addr := s.ListenAddress(); addr != "" && !Loopback(addr) {
		if s.TLS.Cert == "" {
			return fmt.Errorf("service.listen %s is not loopback: it needs service.tls.cert and key", addr)
		}
		if len(s.Tokens) == 0 && len(s.Clients) == 0 {
			return fmt.Errorf("service.listen %s is not loopback: it needs service.tokens or service.clients to authenticate callers", addr)
		}
	}
	return nil
}

// identity checks a token's or a client's name and roles.
func identity(key, name string, roles []string, names map[string]bool) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%s.name is empty: each identity is named, and decisions record the name", key)
	}
	if names[name] {
		return fmt.Errorf("%s.name %q is taken by another token or client", key, name)
	}
	names[name] = true
	if len(roles) == 0 {
		return fmt.Errorf("%s.roles is empty: use %s", key, strings.Join(Roles, ", "))
	}
	for _, r := range roles {
		if !slices.Contains(Roles, r) {
			return fmt.Errorf("%s.roles holds %q: use %s", key, r, strings.Join(Roles, ", "))
		}
	}
	return nil
}
