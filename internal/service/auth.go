package service

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"

	"github.com/underpass-ai/axlr/internal/settings"
)

// Identity is who a request comes from: a token's or a client
// certificate's name from the settings, "local" for the state dir's own
// token, "loopback" under service.loopback_open. Decisions record Name.
type Identity struct {
	Name  string
	Roles []string
}

// Can reports whether the identity holds one of roles (admin holds all).
func (id Identity) Can(roles ...string) bool {
	if slices.Contains(id.Roles, settings.RoleAdmin) {
		return true
	}
	for _, r := range roles {
		if slices.Contains(id.Roles, r) {
			return true
		}
	}
	return false
}

// LocalName is the identity of the state dir's token.
const LocalName = "local"

// authenticator maps a request's credentials to an identity.
type authenticator struct {
	// tokens by the hex sha256 of the token.
	tokens map[string]Identity
	// clients by the hex sha256 of the certificate's DER.
	clients map[string]Identity
	// open: the listener is loopback without TLS and
	// service.loopback_open lets a request without a token in.
	open bool
}

func newAuthenticator(set settings.Service, localToken string, open bool) *authenticator {
	a := &authenticator{tokens: map[string]Identity{}, clients: map[string]Identity{}, open: open}
	for _, t := range set.Tokens {
		a.tokens[strings.ToLower(t.SHA256)] = Identity{Name: t.Name, Roles: t.Roles}
	}
	for _, c := range set.Clients {
		a.clients[settings.NormalFingerprint(c.Fingerprint)] = Identity{Name: c.Name, Roles: c.Roles}
	}
	if localToken != "" {
		a.tokens[tokenDigest(localToken)] = Identity{Name: LocalName, Roles: []string{settings.RoleAdmin}}
	}
	return a
}

// tokenDigest is the hex sha256 of a token, as settings hold it.
func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// identify returns the request's identity: its client certificate's (the
// TLS handshake verified it against service.tls.client_ca), else its
// bearer token's, else loopback's when the listener is open. Credentials
// that name no identity fail closed.
func (a *authenticator) identify(r *http.Request) (Identity, *apiError) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		sum := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
		fp := hex.EncodeToString(sum[:])
		if id, ok := a.clients[fp]; ok {
			return id, nil
		}
		if r.Header.Get("Authorization") == "" {
			return Identity{}, errorf(http.StatusUnauthorized, CodeUnauthenticated, "client certificate sha256 %s is in no entry of service.clients", fp)
		}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		token = strings.TrimSpace(token)
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			return Identity{}, errorf(http.StatusUnauthorized, CodeUnauthenticated, "Authorization: want \"Bearer <token>\"")
		}
		want := tokenDigest(token)
		for digest, id := range a.tokens {
			if subtle.ConstantTimeCompare([]byte(digest), []byte(want)) == 1 {
				return id, nil
			}
		}
		return Identity{}, errorf(http.StatusUnauthorized, CodeUnauthenticated, "the bearer token is in no entry of service.tokens")
	}
	if a.open {
		return Identity{Name: "loopback", Roles: []string{settings.RoleAdmin}}, nil
	}
	return Identity{}, errorf(http.StatusUnauthorized, CodeUnauthenticated,
		"send Authorization: Bearer <token> (a token of service.tokens, or the one axlrd keeps in its state dir's service/token) or a client certificate")
}
