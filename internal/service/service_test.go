package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/underpass-ai/axlr/internal/settings"
)

// testServer is a Server with no listener and no client: what these
// tests reach is refused before a handler would call axlrd.
func testServer(t *testing.T, set settings.Service) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	set.Listen, set.Probe = settings.ServiceOff, settings.ServiceOff
	s, err := New(Options{Settings: set, StateDir: dir, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	token, err := os.ReadFile(filepath.Join(dir, "service", TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.TrimSpace(string(token))
}

type answer struct {
	status int
	code   string
	header http.Header
	body   string
}

func call(t *testing.T, h http.Handler, method, path, body string, headers ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var eb errorBody
	_ = json.Unmarshal(rec.Body.Bytes(), &eb)
	return answer{status: rec.Code, code: eb.Error.Code, header: rec.Header(), body: rec.Body.String()}
}

func sha(s string) string { return tokenDigest(s) }

func TestAuthentication(t *testing.T) {
	set := settings.Service{Tokens: []settings.ServiceToken{
		{Name: "ci", SHA256: sha("ci-token-0123456789"), Roles: []string{settings.RoleSessionClient}},
		{Name: "ops", SHA256: sha("ops-token-0123456789"), Roles: []string{settings.RoleJobOperator}},
	}}
	s, local := testServer(t, set)
	h := s.Handler()
	tests := []struct {
		name, method, path, auth string
		status                   int
		code                     string
	}{
		{"no credentials", "POST", "/v1/sessions", "", 401, CodeUnauthenticated},
		{"not a bearer", "POST", "/v1/sessions", "Basic abc", 401, CodeUnauthenticated},
		{"unknown token", "POST", "/v1/sessions", "Bearer nope-nope-nope", 401, CodeUnauthenticated},
		{"a role without the right", "POST", "/v1/sessions/x/decisions", "Bearer ci-token-0123456789", 403, CodeForbidden},
		{"operator on sessions", "POST", "/v1/sessions", "Bearer ops-token-0123456789", 403, CodeForbidden},
		{"the role, then a bad body", "POST", "/v1/sessions", "Bearer ci-token-0123456789", 400, CodeInvalidJSON},
		{"the local token is admin", "POST", "/v1/jobs", "Bearer " + local, 400, CodeInvalidJSON},
		{"unknown path", "GET", "/v2/things", "Bearer " + local, 404, CodeNotFound},
		{"wrong method", "DELETE", "/v1/sessions", "Bearer " + local, 405, CodeMethodNotAllowed},
		{"the document is public", "GET", "/v1/openapi.json", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.auth != "" {
				hdr = []string{"Authorization", tt.auth}
			}
			got := call(t, h, tt.method, tt.path, "", hdr...)
			if got.status != tt.status || got.code != tt.code {
				t.Fatalf("%d %q, want %d %q: %s", got.status, got.code, tt.status, tt.code, got.body)
			}
			if got.header.Get(HeaderRequestID) == "" {
				t.Fatal("no request id")
			}
			if tt.status >= 400 && !strings.Contains(got.body, got.header.Get(HeaderRequestID)) {
				t.Fatalf("the error does not carry the request id: %s", got.body)
			}
			if tt.status == 401 && got.header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
			if tt.status == 405 && got.header.Get("Allow") != "POST" {
				t.Fatalf("Allow %q", got.header.Get("Allow"))
			}
		})
	}
}

func TestLoopbackOpen(t *testing.T) {
	s, _ := testServer(t, settings.Service{LoopbackOpen: true})
	// testServer turns the listener off, so the API is not open: a token
	// is still required.
	if got := call(t, s.Handler(), "POST", "/v1/sessions", ""); got.status != 401 {
		t.Fatalf("off listener with loopback_open: %d", got.status)
	}
	open := newAuthenticator(settings.Service{}, "", true)
	id, err := open.identify(httptest.NewRequest("GET", "/v1/jobs", nil))
	if err != nil || id.Name != "loopback" || !id.Can(settings.RoleApprover) {
		t.Fatalf("open loopback: %+v %v", id, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	s, local := testServer(t, settings.Service{})
	h := s.Handler()
	auth := []string{"Authorization", "Bearer " + local, "Content-Type", "application/json"}
	tests := []struct {
		name, body string
		status     int
		code, says string
	}{
		{"empty", "", 400, CodeInvalidJSON, "empty"},
		{"not an object", `[1]`, 400, CodeInvalidJSON, "not a JSON object"},
		{"null", `null`, 400, CodeInvalidJSON, "not a JSON object"},
		{"truncated", `{"model": "m"`, 400, CodeInvalidJSON, "ends in the middle"},
		{"bad syntax", `{"model": m}`, 400, CodeInvalidJSON, "not valid JSON"},
		{"unknown field", `{"model": "m", "colour": "red"}`, 400, CodeUnknownField, "colour"},
		{"unknown nested field", `{"policy": {"level": "observe", "extra": 1}}`, 400, CodeInvalidArgument, "extra"},
		{"wrong type", `{"model": 3}`, 400, CodeInvalidArgument, "field model"},
		{"trailing data", `{"model": "m"} {}`, 400, CodeInvalidJSON, "more after"},
		{"too large", `{"model": "` + strings.Repeat("x", MaxBody) + `"}`, 413, CodeBodyTooLarge, "1 MiB"},
		{"unknown mode", `{"mode": "party"}`, 400, CodeInvalidArgument, "mode"},
		{"no roots", `{"mode": "normal"}`, 403, CodeRootNotAllowed, "service.roots"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := call(t, h, "POST", "/v1/sessions", tt.body, auth...)
			if got.status != tt.status || got.code != tt.code || !strings.Contains(got.body, tt.says) {
				t.Fatalf("%d %s, want %d %s saying %q: %s", got.status, got.code, tt.status, tt.code, tt.says, got.body)
			}
		})
	}
	if got := call(t, h, "POST", "/v1/sessions", `{}`, "Authorization", "Bearer "+local, "Content-Type", "text/plain"); got.status != 415 {
		t.Fatalf("text/plain: %d %s", got.status, got.body)
	}
}

func TestRoots(t *testing.T) {
	root := t.TempDir()
	inside := filepath.Join(root, "app")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	s, _ := testServer(t, settings.Service{Roots: []string{root}})
	tests := []struct {
		root  string
		ok    bool
		code  string
		equal string
	}{
		{"", true, "", root},
		{inside, true, "", inside},
		{root + "/app/../app", true, "", inside},
		{outside, false, CodeRootNotAllowed, ""},
		{filepath.Join(root, "escape"), false, CodeRootNotAllowed, ""},
		{"relative", false, CodeInvalidArgument, ""},
		{filepath.Join(root, "missing"), false, CodeInvalidArgument, ""},
	}
	for _, tt := range tests {
		got, err := s.allowedRoot(tt.root)
		if tt.ok != (err == nil) || err != nil && err.code != tt.code {
			t.Fatalf("root %q: %q %v", tt.root, got, err)
		}
		if tt.ok {
			want, _ := filepath.EvalSymlinks(tt.equal)
			if got != want {
				t.Fatalf("root %q resolved to %q, want %q", tt.root, got, want)
			}
		}
	}
}

func TestIdempotencyKey(t *testing.T) {
	for key, ok := range map[string]bool{"": false, "short": false, strings.Repeat("k", 16): true,
		strings.Repeat("k", 128): true, strings.Repeat("k", 129): false, "with space inside!!": false} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set(HeaderIdempotencyKey, key)
		_, err := idempotencyKey(r, true)
		if (err == nil) != ok {
			t.Errorf("key %q: %v", key, err)
		}
	}
	if executionID("s", "k1") == executionID("s", "k2") || executionID("s1", "k") == executionID("s2", "k") {
		t.Fatal("executions collide")
	}
}

// TestOpenAPI: the document is valid OpenAPI 3.1, and it describes each
// route the server has, and only those.
func TestOpenAPI(t *testing.T) {
	doc, err := libopenapi.NewDocument(openAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
		}
	}
	var raw struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &raw); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range raw.Paths {
		for m := range ops {
			if m != "parameters" {
				documented = append(documented, strings.ToUpper(m)+" "+path)
			}
		}
	}
	s, _ := testServer(t, settings.Service{})
	served := []string{"GET /v1/openapi.json"}
	for _, rt := range s.table() {
		served = append(served, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("documented %v\nserved %v", documented, served)
	}
}

func TestProbes(t *testing.T) {
	ready := true
	s, err := New(Options{Settings: settings.Service{Listen: settings.ServiceOff, Probe: settings.ServiceOff}, StateDir: t.TempDir(),
		Ready: func(context.Context) []Check {
			return []Check{{Name: "temporal", OK: true}, {Name: "model", OK: ready, Error: map[bool]string{false: "no default model"}[ready]}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.probeHandler()
	if got := call(t, h, "GET", "/livez", ""); got.status != 200 {
		t.Fatalf("/livez: %d", got.status)
	}
	if got := call(t, h, "GET", "/readyz", ""); got.status != 200 || !strings.Contains(got.body, `"status":"ready"`) {
		t.Fatalf("/readyz: %d %s", got.status, got.body)
	}
	ready = false
	if got := call(t, h, "GET", "/readyz", ""); got.status != 503 || !strings.Contains(got.body, "no default model") {
		t.Fatalf("/readyz not ready: %d %s", got.status, got.body)
	}
	if got := call(t, h, "GET", "/v1/jobs", ""); got.status != 404 {
		t.Fatalf("the probe listener served the API: %d", got.status)
	}
}
