package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const page = `<!doctype html>
<html><head><title> The  Go
 Blog </title><style>body{color:red}</style><script>alert("x")</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Go 1.26</h1>
<p>Released   <b>today</b>, see the <a href="/doc/go1.26">release notes</a>.</p>
<ul><li>faster</li><li>smaller</li></ul>
<pre>  x := 1
  y := 2</pre>
<noscript>enable scripts</noscript>
</body></html>`

func TestFetchHTML(t *testing.T) {
	f := newFakeNet(t)
	f.host("go.example.net", "93.184.215.14")
	f.serve(t, "93.184.215.14:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/blog" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}), "go.example.net")
	tl := f.tools(t, Options{})
	out := call(t, tl, Fetch, `{"url": "https://go.example.net/blog#top"}`)
	want := "[Home](https://go.example.net/)\n\n# Go 1.26\n\nReleased today, see the [release notes](https://go.example.net/doc/go1.26).\n\n- faster\n- smaller\n\n  x := 1\n  y := 2"
	if out["content"] != want {
		t.Errorf("content =\n%s\nwant\n%s", out["content"], want)
	}
	for k, v := range map[string]any{
		"url": "https://go.example.net/blog", "final_url": "https://go.example.net/blog",
		"status": 200.0, "status_text": "OK", "content_type": "text/html; charset=utf-8",
		"title": "The Go Blog", "redirects": 0.0, "truncated": false, "body_truncated": false,
		"text_bytes": float64(len(want)), "body_bytes": float64(len(page)),
	} {
		if out[k] != v {
			t.Errorf("%s = %v, want %v", k, out[k], v)
		}
	}
	// One resolution, and the connection went to the address it checked.
	if got := f.looked(); !slices.Equal(got, []string{"go.example.net"}) {
		t.Errorf("lookups = %v, want one of go.example.net", got)
	}
	if got := f.dialed(); !slices.Equal(got, []netip.AddrPort{netip.MustParseAddrPort("93.184.215.14:443")}) {
		t.Errorf("dials = %v, want 93.184.215.14:443", got)
	}

	raw := call(t, tl, Fetch, `{"url": "https://go.example.net/blog", "raw": true}`)
	if raw["content"] != page {
		t.Errorf("raw content = %q, want the page as served", raw["content"])
	}
	missing := call(t, tl, Fetch, `{"url": "https://go.example.net/missing"}`)
	if missing["status"] != 404.0 || missing["status_text"] != "Not Found" {
		t.Errorf("missing page: status %v %v, want 404 Not Found as a result", missing["status"], missing["status_text"])
	}
}

func TestFetchBodies(t *testing.T) {
	latin1 := []byte("caf\xe9 cr\xe8me")
	tests := []struct {
		name, contentType string
		body              []byte
		content           string
		note              string
	}{
		{"plain", "text/plain", []byte("hello\n  world\n"), "hello\n  world\n", ""},
		{"json", "application/json", []byte(`{"a": [1, 2]}`), `{"a": [1, 2]}`, ""},
		{"problem json", "application/problem+json", []byte(`{"title": "x"}`), `{"title": "x"}`, ""},
		{"latin-1 declared", "text/plain; charset=iso-8859-1", latin1, "café crème", ""},
		{"html meta charset", "text/html", []byte("<meta charset=\"windows-1252\"><p>na\xefve</p>"), "naïve", ""},
		{"invalid utf-8", "text/plain; charset=utf-8", []byte("ok \xff\xfe end"), "ok \uFFFD end", ""},
		{"sniffed html", "", []byte("<html><body><p>sniffed</p></body></html>"), "sniffed", ""},
		{"binary", "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00"), "", "the body is image/png (10 bytes read), not text"},
		{"octet stream", "application/octet-stream", []byte{0, 1, 2}, "", "not text"},
	}
	f := newFakeNet(t)
	f.host("files.example.net", "151.101.1.69")
	f.serve(t, "151.101.1.69:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil || i >= len(tests) {
			http.NotFound(w, r)
			return
		}
		if tests[i].contentType == "" {
			w.Header()["Content-Type"] = nil // no sniffing by the server
		} else {
			w.Header().Set("Content-Type", tests[i].contentType)
		}
		w.Write(tests[i].body)
	}))
	tl := f.tools(t, Options{})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := call(t, tl, Fetch, fmt.Sprintf(`{"url": "http://files.example.net/%d"}`, i))
			if out["content"] != tt.content {
				t.Errorf("content = %q, want %q", out["content"], tt.content)
			}
			notes, _ := json.Marshal(out["notes"])
			if tt.note == "" && out["notes"] != nil {
				t.Errorf("notes = %s, want none", notes)
			}
			if tt.note != "" {
				contains(t, "notes", string(notes), tt.note)
			}
		})
	}
}

func TestFetchRefusesNonPublicAddresses(t *testing.T) {
	f := newFakeNet(t)
	f.host("public.example.net", "93.184.215.14")
	f.host("loopback.example.net", "127.0.0.1")
	f.host("mixed.example.net", "93.184.215.14", "10.0.0.7")
	f.host("metadata.example.net", "169.254.169.254")
	f.host("mapped.example.net", "::ffff:192.168.0.1")
	f.host("v6.example.net", "fd00::1")
	f.serve(t, "93.184.215.14:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	// A server on each refused address: a dial that reached one would succeed.
	for _, a := range []string{"127.0.0.1:80", "10.0.0.7:80", "169.254.169.254:80", "192.168.0.1:80", "[fd00::1]:80", "[::1]:80", "127.0.0.1:8080"} {
		f.serve(t, a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("a refused address was reached: %s %s", r.Host, r.URL)
		}))
	}
	tl := f.tools(t, Options{})
	tests := []struct {
		name, url, want string
		network         bool // refused by the dial, not by the argument check
	}{
		{"literal loopback", "http://127.0.0.1/", "127.0.0.1 is a loopback address", false},
		{"literal loopback port", "http://127.0.0.1:8080/", "loopback", false},
		{"literal IPv6 loopback", "http://[::1]/", "loopback", false},
		{"literal mapped", "http://[::ffff:127.0.0.1]/", "IPv4-mapped form of a loopback", false},
		{"literal metadata", "http://169.254.169.254/latest/meta-data/", "link-local", false},
		{"name to loopback", "http://loopback.example.net/", "host loopback.example.net resolves to 127.0.0.1, a loopback address", true},
		{"name to public and private", "http://mixed.example.net/", "resolves to 10.0.0.7, a private address", true},
		{"name to mapped private", "http://mapped.example.net/", "private", true},
		{"name to unique local", "http://v6.example.net/", "private", true},
		{"redirect to literal private", "http://public.example.net/?to=http://10.0.0.7/", "10.0.0.7 is a private address", true},
		{"redirect to name of metadata", "http://public.example.net/?to=http://metadata.example.net/", "169.254.169.254, a link-local address", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"url": tt.url})
			e := callErr(t, tl, Fetch, string(args), CodeForbiddenAddress)
			contains(t, "message", e.Message, tt.want, "only public addresses")
			if !e.Refused() || e.Status() != StatusRejected {
				t.Errorf("Refused %v, Status %s; want a rejected refusal", e.Refused(), e.Status())
			}
			if err := Check(Fetch, args); (err == nil) != tt.network {
				t.Errorf("Check = %v; want an error only for a literal address", err)
			}
		})
	}
	for _, d := range f.dialed() {
		if d != netip.MustParseAddrPort("93.184.215.14:80") {
			t.Errorf("dialed %s; only the public address may be dialed", d)
		}
	}
}

func TestFetchRedirects(t *testing.T) {
	f := newFakeNet(t)
	f.host("hops.example.net", "93.184.215.14")
	f.host("other.example.org", "2606:4700:4700::1111")
	f.serve(t, "93.184.215.14:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &n)
		switch {
		case r.URL.Path == "/scheme":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case r.URL.Path == "/userinfo":
			http.Redirect(w, r, "http://admin:hunter2@other.example.org/", http.StatusFound)
		case r.URL.Path == "/elsewhere":
			http.Redirect(w, r, "http://other.example.org/landed", http.StatusMovedPermanently)
		case n > 0:
			http.Redirect(w, r, fmt.Sprintf("/%d", n-1), http.StatusFound)
		default:
			fmt.Fprint(w, "arrived")
		}
	}))
	f.serve(t, "[2606:4700:4700::1111]:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "landed")
	}))
	tl := f.tools(t, Options{})

	out := call(t, tl, Fetch, `{"url": "http://hops.example.net/5"}`)
	if out["redirects"] != 5.0 || out["content"] != "arrived" || out["final_url"] != "http://hops.example.net/0" {
		t.Errorf("5 redirects: redirects %v, content %v, final_url %v; want 5, arrived, /0", out["redirects"], out["content"], out["final_url"])
	}
	out = call(t, tl, Fetch, `{"url": "http://hops.example.net/elsewhere"}`)
	if out["content"] != "landed" || out["final_url"] != "http://other.example.org/landed" || out["redirects"] != 1.0 {
		t.Errorf("redirect to another host: %v", out)
	}

	e := callErr(t, tl, Fetch, `{"url": "http://hops.example.net/6"}`, CodeTooManyRedirects)
	contains(t, "message", e.Message, "stopped after 5 redirects", "http://hops.example.net/0")
	if e.Refused() || e.Status() != StatusFailed {
		t.Errorf("too many redirects: Refused %v, Status %s; want failed", e.Refused(), e.Status())
	}
	e = callErr(t, tl, Fetch, `{"url": "http://hops.example.net/scheme"}`, CodeForbiddenRedirect)
	contains(t, "message", e.Message, `scheme "file" is not http or https`)
	e = callErr(t, tl, Fetch, `{"url": "http://hops.example.net/userinfo"}`, CodeForbiddenRedirect)
	contains(t, "message", e.Message, "user information")
	if strings.Contains(e.Message, "hunter2") {
		t.Errorf("message %q holds the redirect's password", e.Message)
	}
}

// TestFetchSendsNoCredentials: no cookie set by a hop comes back, no
// Authorization is invented, no hop learns the previous URL, and the proxy
// of the environment is not used.
func TestFetchSendsNoCredentials(t *testing.T) {
	f := newFakeNet(t)
	f.host("login.example.net", "93.184.215.14")
	f.host("cdn.example.org", "151.101.1.69")
	f.host("proxy.example.com", "104.16.0.1")
	t.Setenv("HTTP_PROXY", "http://proxy.example.com:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.example.com:3128")
	t.Setenv("http_proxy", "http://proxy.example.com:3128")
	f.serve(t, "104.16.0.1:3128", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the environment's proxy was used for %s", r.URL)
	}))
	var mu sync.Mutex
	var seen []http.Header
	record := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Clone())
	}
	f.serve(t, "93.184.215.14:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cr3t", Path: "/"})
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, "/again", http.StatusFound)
		case "/again":
			http.Redirect(w, r, "http://cdn.example.org/file", http.StatusFound)
		}
	}))
	f.serve(t, "151.101.1.69:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		fmt.Fprint(w, "file")
	}))
	tl := f.tools(t, Options{UserAgent: "axlr-test/1"})
	out := call(t, tl, Fetch, `{"url": "http://login.example.net/start"}`)
	if out["content"] != "file" || out["redirects"] != 2.0 {
		t.Fatalf("content %v after %v redirects; want file after 2", out["content"], out["redirects"])
	}
	callErr(t, tl, Fetch, `{"url": "http://user:pass@login.example.net/start"}`, CodeInvalidArguments)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("%d requests reached the servers, want 3", len(seen))
	}
	for i, h := range seen {
		for _, name := range []string{"Cookie", "Authorization", "Proxy-Authorization", "Referer"} {
			if v := h.Get(name); v != "" {
				t.Errorf("request %d carried %s: %s", i, name, v)
			}
		}
		if h.Get("User-Agent") != "axlr-test/1" {
			t.Errorf("request %d User-Agent = %q, want axlr-test/1", i, h.Get("User-Agent"))
		}
	}
}

func TestFetchLimits(t *testing.T) {
	f := newFakeNet(t)
	f.host("big.example.net", "93.184.215.14")
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	arrived := make(chan struct{}, 1)
	f.serve(t, "93.184.215.14:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			fmt.Fprint(w, strings.Repeat("0123456789", 1000)) // 10000 bytes
		case "/runes":
			fmt.Fprint(w, strings.Repeat("é", 10)) // 20 bytes
		case "/slow":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-block:
			case <-r.Context().Done():
			}
		case "/hang":
			select {
			case arrived <- struct{}{}:
			default:
			}
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}
	}))
	tl := f.tools(t, Options{MaxBytes: 4096, Timeout: 300 * time.Millisecond})

	out := call(t, tl, Fetch, `{"url": "http://big.example.net/big", "max_bytes": 1000}`)
	if out["body_truncated"] != true || out["body_bytes"] != 4096.0 || out["text_bytes"] != 4096.0 {
		t.Errorf("body_truncated %v, body_bytes %v, text_bytes %v; want true, 4096, 4096", out["body_truncated"], out["body_bytes"], out["text_bytes"])
	}
	if out["truncated"] != true || out["next_offset_bytes"] != 1000.0 || len(out["content"].(string)) != 1000 {
		t.Errorf("truncated %v, next_offset_bytes %v, %d bytes; want true, 1000, 1000", out["truncated"], out["next_offset_bytes"], len(out["content"].(string)))
	}
	notes, _ := json.Marshal(out["notes"])
	contains(t, "notes", string(notes), "cut at the 4096-byte read limit", "call again with offset_bytes 1000")

	last := call(t, tl, Fetch, `{"url": "http://big.example.net/big", "offset_bytes": 4000, "max_bytes": 1000}`)
	if last["truncated"] != false || last["content"] != strings.Repeat("0123456789", 10)[:96] || last["next_offset_bytes"] != nil {
		t.Errorf("last page: truncated %v, content %q, next %v", last["truncated"], last["content"], last["next_offset_bytes"])
	}
	// Offsets and cuts fall on character boundaries.
	mid := call(t, tl, Fetch, `{"url": "http://big.example.net/runes", "offset_bytes": 3, "max_bytes": 5}`)
	if mid["content"] != "éé" || mid["offset_bytes"] != 2.0 || mid["next_offset_bytes"] != 6.0 {
		t.Errorf("runes: content %q, offset %v, next %v; want éé from 2, next 6", mid["content"], mid["offset_bytes"], mid["next_offset_bytes"])
	}
	e := callErr(t, tl, Fetch, `{"url": "http://big.example.net/runes", "offset_bytes": 21}`, CodeInvalidArguments)
	contains(t, "message", e.Message, "past the end of the text (20 bytes)")

	for _, path := range []string{"/hang", "/slow"} {
		e = callErr(t, tl, Fetch, `{"url": "http://big.example.net`+path+`"}`, CodeTimeout)
		contains(t, "message", e.Message, "did not finish within 300ms, the time limit")
		if e.Status() != StatusTimedOut {
			t.Errorf("%s: Status %s, want timed_out", path, e.Status())
		}
	}

	for len(arrived) > 0 {
		<-arrived
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived // the request is in the server: cancel it there
		cancel()
	}()
	_, err := tl.Call(ctx, Fetch, json.RawMessage(`{"url": "http://big.example.net/hang"}`))
	if e, ok := err.(*Error); !ok || e.Code != CodeCancelled || e.Status() != StatusCancelled {
		t.Errorf("cancelled call: %v, want code cancelled", err)
	}
	cancel()
	_, err = tl.Call(ctx, Fetch, json.RawMessage(`{"url": "http://big.example.net/big"}`))
	if e, ok := err.(*Error); !ok || e.Code != CodeCancelled {
		t.Errorf("call on a done context: %v, want code cancelled", err)
	}
}

func TestFetchNetworkErrors(t *testing.T) {
	f := newFakeNet(t)
	f.host("down.example.net", "93.184.215.14")
	f.host("wrongcert.example.net", "151.101.1.69")
	f.serve(t, "151.101.1.69:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a server with a certificate for another name was trusted")
	}), "someone-else.example.net")
	tl := f.tools(t, Options{})
	tests := []struct{ url, want string }{
		{"http://nowhere.example.net/", "cannot resolve host nowhere.example.net: no such host"},
		{"http://down.example.net/", "no route to 93.184.215.14:80"},
		{"https://wrongcert.example.net/", "certificate"},
	}
	for _, tt := range tests {
		e := callErr(t, tl, Fetch, `{"url": "`+tt.url+`"}`, CodeNetworkError)
		contains(t, "message", e.Message, "GET "+tt.url+": ", tt.want)
		if e.Refused() || e.Status() != StatusFailed {
			t.Errorf("%s: Refused %v, Status %s; want failed", tt.url, e.Refused(), e.Status())
		}
		if strings.Count(e.Message, tt.url) != 1 {
			t.Errorf("message %q repeats the URL", e.Message)
		}
	}
}

// TestNewRefusesLocalServer: the production Tools, over the system's
// resolver, refuse a server on this machine by name and by address.
func TestNewRefusesLocalServer(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the local server was reached: %s", r.URL)
	}))
	defer s.Close()
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	tl, err := New(Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://localhost:" + port + "/", s.URL + "/", "http://[::ffff:127.0.0.1]:" + port + "/"} {
		e := callErr(t, tl, Fetch, `{"url": "`+u+`"}`, CodeForbiddenAddress)
		contains(t, "message", e.Message, "loopback")
	}
}
