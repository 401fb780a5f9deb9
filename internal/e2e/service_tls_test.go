package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is a certificate authority for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate for a server (with 127.0.0.1) or a
// client.
func (ca *testCA) issue(t *testing.T, name string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// fingerprint is a certificate's sha256, as service.clients name it.
func fingerprint(c tls.Certificate) string {
	sum := sha256.Sum256(c.Certificate[0])
	return hex.EncodeToString(sum[:])
}

// writePair writes a certificate and its key as PEM files in dir.
func writePair(t *testing.T, dir, name string, c tls.Certificate) (string, string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestServiceTLS serves the API over TLS with client certificates only:
// a certificate of another CA, none at all, one the settings do not map
// and one without the route's role are refused; the mapped one with its
// role gets in.
func TestServiceTLS(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1")
	dir := t.TempDir()
	ca, other := newCA(t, "axlr test CA"), newCA(t, "another CA")
	serverCert, serverKey := writePair(t, dir, "server", ca.issue(t, "axlrd", true))
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	bot, stranger, forged := ca.issue(t, "bot", false), ca.issue(t, "stranger", false), other.issue(t, "bot", false)
	e.writeSettings(serviceSettings(e.workspace, fmt.Sprintf(`, "tls": {"cert": %q, "key": %q, "client_ca": %q},
		"clients": [{"name": "bot", "fingerprint": %q, "roles": ["job_operator"]}]`, serverCert, serverKey, caFile, fingerprint(bot))))
	d := e.start()
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	get := func(method, path string, certs ...tls.Certificate) (int, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		req, _ := http.NewRequest(method, d.info.ServiceURL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get("GET", "/v1/jobs", bot); err != nil || code != 200 {
		t.Fatalf("the mapped certificate: %d %v", code, err)
	}
	if code, err := get("POST", "/v1/sessions", bot); err != nil || code != 403 {
		t.Fatalf("the mapped certificate without the role: %d %v", code, err)
	}
	if code, err := get("GET", "/v1/jobs", stranger); err != nil || code != 401 {
		t.Fatalf("a certificate no client names: %d %v", code, err)
	}
	if code, err := get("GET", "/v1/jobs", forged); err == nil {
		t.Fatalf("a certificate of another CA got %d", code)
	}
	if code, err := get("GET", "/v1/jobs"); err == nil {
		t.Fatalf("no certificate got %d", code)
	}
}
