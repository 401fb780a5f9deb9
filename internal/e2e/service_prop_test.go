package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/internal/service"
)

// propDoc is the OpenAPI document as plain JSON, for the generators.
type propDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
}

// propOp is one operation of the document.
type propOp struct {
	method, path string
	body         map[string]any // the request body's schema, nil without one
	key          bool           // takes Idempotency-Key
}

func propOps(t *testing.T) (propDoc, []propOp) {
	t.Helper()
	var doc propDoc
	if err := json.Unmarshal(service.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var ops []propOp
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Parameters []struct {
					Name string `json:"name"`
				} `json:"parameters"`
				RequestBody struct {
					Content map[string]struct {
						Schema map[string]any `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			o := propOp{method: strings.ToUpper(method), path: path, body: op.RequestBody.Content["application/json"].Schema}
			for _, p := range op.Parameters {
				o.key = o.key || p.Name == "Idempotency-Key"
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].method+ops[i].path < ops[j].method+ops[j].path })
	return doc, ops
}

// propGen generates JSON values from the document's schemas.
type propGen struct {
	doc       propDoc
	workspace string
}

func (g propGen) value(t *rapid.T, s map[string]any, name string) any {
	if ref, ok := s["$ref"].(string); ok {
		return g.value(t, g.doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")], name)
	}
	if alts, ok := s["oneOf"].([]any); ok {
		return g.value(t, alts[rapid.IntRange(0, len(alts)-1).Draw(t, name+".oneOf")].(map[string]any), name)
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if enum, ok := s["enum"].([]any); ok {
		return rapid.SampledFrom(enum).Draw(t, name)
	}
	switch s["type"] {
	case "string":
		switch name {
		case "root":
			return rapid.SampledFrom([]string{g.workspace, g.workspace + "/../..", "/", "relative/dir", "/no/such/dir"}).Draw(t, name)
		case "call_id", "execution_id":
			return rapid.SampledFrom([]string{"w1", "r1", "api-0", "x"}).Draw(t, name)
		}
		min := 0
		if m, ok := s["minLength"].(float64); ok {
			min = int(m)
		}
		return rapid.StringOfN(rapid.RuneFrom([]rune("abc xyz-_é€\n\"\\{}<>0123")), min, 40, -1).Draw(t, name)
	case "integer":
		return rapid.IntRange(-3, 1000).Draw(t, name)
	case "boolean":
		return rapid.Bool().Draw(t, name)
	case "array":
		items, _ := s["items"].(map[string]any)
		var out []any
		for i := range rapid.IntRange(0, 2).Draw(t, name+".len") {
			out = append(out, g.value(t, items, fmt.Sprintf("%s[%d]", name, i)))
		}
		return out
	case "object":
		props, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				required[r.(string)] = true
			}
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := map[string]any{}
		for _, k := range keys {
			if required[k] || rapid.Bool().Draw(t, name+"."+k+"?") {
				out[k] = g.value(t, props[k].(map[string]any), k)
			}
		}
		return out
	}
	return rapid.String().Draw(t, name)
}

// propRoles are the identities a case may send as: a token per role, a
// token no entry names, and none.
var propRoles = []string{"session_client", "approver", "job_operator", "admin", "bogus", "none"}

func propToken(role string) string { return "prop-token-for-" + role }

// TestServiceProperties sends requests generated from the OpenAPI
// document to a live axlrd with a scripted model and a GitHub test
// server: valid ones, and ones with bad types, missing and unknown
// fields, huge and truncated bodies, wrong media types and methods,
// stale ids, for every role. No answer is a 5xx, every answer is one the
// document allows for its request, and a request the document accepts is
// never refused as malformed.
func TestServiceProperties(t *testing.T) {
	gh, repo, e := repairWorld(t, fleetFiles(3), 1, func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "ok"} })
	var tokens []string
	for _, r := range propRoles[:4] {
		tokens = append(tokens, fmt.Sprintf(`{"name": %q, "sha256": %q, "roles": [%q]}`, r+"-id", tokenSHA(propToken(r)), r))
	}
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"},
		"repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() + `", "poll_seconds": 1},
		"service": {"roots": ["` + e.workspace + `"], "tokens": [` + strings.Join(tokens, ",") + `]}}`)
	d := e.start()
	admin := &api{t: t, url: d.info.ServiceURL, token: propToken("admin"), http: &http.Client{Timeout: 30 * time.Second}}
	session := admin.do("POST", "/v1/sessions", map[string]any{}).must(t, 201).str("id")
	job := admin.do("POST", "/v1/jobs", map[string]any{"kind": "repair", "brief": "TestN1 fails"}).must(t, 201).str("job", "id")
	doc, ops := propOps(t)
	gen := propGen{doc: doc, workspace: e.workspace}
	v, err := apiDoc()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	statuses := map[int]int{}
	cases := 0
	client := &http.Client{Timeout: 30 * time.Second}

	check := func(rt *rapid.T) {
		op := rapid.SampledFrom(ops).Draw(rt, "op")
		method := op.method
		if rapid.IntRange(0, 9).Draw(rt, "wrong method?") == 0 {
			method = rapid.SampledFrom([]string{"PUT", "DELETE", "PATCH", "GET", "POST"}).Draw(rt, "method")
		}
		id := rapid.SampledFrom([]string{"6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f", "no-such-job", "%2e%2e", "ABC", strings.Repeat("a", 200)}).Draw(rt, "id")
		if rapid.IntRange(0, 9).Draw(rt, "the right id?") < 6 {
			// Mostly an id of what the path names, so that valid requests
			// reach the workflows.
			id = job
			if strings.HasPrefix(op.path, "/v1/sessions") {
				id = session
			}
		}
		path := strings.ReplaceAll(op.path, "{id}", id)
		if strings.HasSuffix(path, "/events") {
			path += rapid.SampledFrom([]string{"", "?after=0", "?after=abc", "?after=1", "?after=run:5"}).Draw(rt, "cursor")
		}
		var body []byte
		contentType := "application/json"
		if op.body != nil && method == op.method {
			b, _ := json.Marshal(gen.value(rt, op.body, "body"))
			switch rapid.IntRange(0, 14).Draw(rt, "mutation") {
			case 1:
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				m[rapid.SampledFrom([]string{"colour", "Prompt", "extra", "__proto__"}).Draw(rt, "unknown")] = 1
				b, _ = json.Marshal(m)
			case 2:
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				for k := range m {
					m[k] = rapid.SampledFrom([]any{7, true, []any{1}, map[string]any{"a": 1}, nil}).Draw(rt, "wrong type")
					break
				}
				b, _ = json.Marshal(m)
			case 3:
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				for k := range m {
					delete(m, k)
					break
				}
				b, _ = json.Marshal(m)
			case 4:
				b = b[:rapid.IntRange(0, len(b)-1).Draw(rt, "cut")]
			case 5:
				b = []byte(`{"prompt": "` + strings.Repeat("x", service.MaxBody) + `"}`)
			case 6:
				b = []byte(rapid.SampledFrom([]string{`[]`, `null`, `"x"`, `{} {}`, ``, `{"a":`}).Draw(rt, "not an object"))
			case 7:
				contentType = rapid.SampledFrom([]string{"text/plain", "application/xml", "application/json; charset=utf-8", "bogus/"}).Draw(rt, "media type")
			}
			body = b
		}
		req, err := http.NewRequest(method, d.info.ServiceURL+path, bytes.NewReader(body))
		if err != nil {
			return // a path the generator made that no client can send
		}
		if body != nil {
			req.Header.Set("Content-Type", contentType)
		}
		role := "admin"
		if rapid.Bool().Draw(rt, "any role?") {
			role = rapid.SampledFrom(propRoles).Draw(rt, "role")
		}
		if role != "none" {
			req.Header.Set("Authorization", "Bearer "+propToken(role))
		}
		if op.key || rapid.Bool().Draw(rt, "key anyway?") {
			k := "key-" + rapid.StringMatching(`[a-z0-9]{12,20}`).Draw(rt, "key")
			if rapid.IntRange(0, 3).Draw(rt, "a bad key?") == 0 {
				k = rapid.SampledFrom([]string{"", "short", strings.Repeat("k", 129), "with spaces in it!"}).Draw(rt, "bad key")
			}
			if k != "" {
				req.Header.Set("Idempotency-Key", k)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			rt.Fatalf("%s %s: %v", method, path, err)
		}
		var raw []byte
		if resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body.Close() // a stream that opened: its answer is its header
		} else {
			raw, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		mu.Lock()
		statuses[resp.StatusCode]++
		cases++
		mu.Unlock()
		if resp.StatusCode >= 500 {
			rt.Fatalf("%s %s (%s) answered %d: %s", method, path, body, resp.StatusCode, raw)
		}
		documented := slices.ContainsFunc(ops, func(o propOp) bool { return o.method == method && o.path == op.path }) || method == "HEAD"
		if !documented {
			if resp.StatusCode != 405 && resp.StatusCode != 401 {
				rt.Fatalf("%s %s, a method the path does not take, answered %d: %s", method, path, resp.StatusCode, raw)
			}
			return
		}
		sent, _ := http.NewRequest(method, "http://127.0.0.1:7280"+path, bytes.NewReader(body))
		sent.Header = req.Header.Clone()
		check := &http.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(raw)), Request: sent}
		if resp.StatusCode != 200 || raw != nil {
			if ok, errs := v.ValidateHttpResponse(sent, check); !ok {
				rt.Fatalf("%s %s (%s) answered %d, which the document does not allow: %s\n%s", method, path, body, resp.StatusCode, errs[0].Message, raw)
			}
		}
		valid, _ := v.ValidateHttpRequestSync(func() *http.Request {
			r, _ := http.NewRequest(method, "http://127.0.0.1:7280"+path, bytes.NewReader(body))
			r.Header = req.Header.Clone()
			return r
		}())
		var answer struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &answer)
		if valid && req.Header.Get("Authorization") != "" && (answer.Error.Code == service.CodeInvalidJSON || answer.Error.Code == service.CodeUnknownField) {
			rt.Fatalf("%s %s (%s): the document accepts it, the API refused it as %s: %s", method, path, body, answer.Error.Code, raw)
		}
	}
	for range 5 {
		rapid.Check(t, check)
	}
	t.Logf("%d requests; answers by status: %v", cases, statuses)
}
