package web

import (
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/underpass-ai/axlr/redact"
)

// Public addresses the fake network gives the search services.
const (
	duckDuckGoAddr = "52.142.124.215"
	braveAddr      = "2a02:e980:1::1"
	braveKey       = "BSAq7dZr3fKx9mTn2LpVw8yHcE4uJ0sG"
)

// searchService serves a search API on the fake network under its real
// name and port 443, with a certificate for that name; it records the
// requests.
type searchService struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *searchService) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func serveSearch(t *testing.T, f *fakeNet, host, addr string, h http.HandlerFunc) *searchService {
	t.Helper()
	s := &searchService{}
	f.host(host, addr)
	ap := addr + ":443"
	if strings.Contains(addr, ":") {
		ap = "[" + addr + "]:443"
	}
	f.serve(t, ap, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(r.Context()))
		s.mu.Unlock()
		h(w, r)
	}), host)
	return s
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func replyJSON(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-javascript")
		w.Write(b)
	}
}

func hits(t *testing.T, out map[string]any) []hit {
	t.Helper()
	b, _ := json.Marshal(out["results"])
	var hs []hit
	if err := json.Unmarshal(b, &hs); err != nil {
		t.Fatal(err)
	}
	return hs
}

func TestDuckDuckGo(t *testing.T) {
	tests := []struct {
		name, fixture, args string
		want                []hit
		note                string
	}{
		{
			name: "topic", fixture: "duckduckgo-go.json", args: `{"query": "  golang\tlanguage "}`,
			want: []hit{
				{"Go (programming language)", "https://en.wikipedia.org/wiki/Go_(programming_language)", "Go is a high-level general purpose programming language that is statically typed and compiled. It is known for the simplicity of its syntax & its concurrency."},
				{"Official site", "https://go.dev/", "Official site"},
				{"Rob Pike", "https://duckduckgo.com/Rob_Pike", "Robert Pike is a Canadian programmer and author."},
				{"Go (game)", "https://duckduckgo.com/Go_(game)", "An abstract strategy board game for two players."},
				{"C programming language family", "https://duckduckgo.com/c/C_programming_language_family", "C programming language family"},
			},
		},
		{
			name: "limited", fixture: "duckduckgo-go.json", args: `{"query": "golang", "max_results": 2}`,
			want: []hit{
				{"Go (programming language)", "https://en.wikipedia.org/wiki/Go_(programming_language)", "Go is a high-level general purpose programming language that is statically typed and compiled. It is known for the simplicity of its syntax & its concurrency."},
				{"Official site", "https://go.dev/", "Official site"},
			},
		},
		{
			name: "answer and definition", fixture: "duckduckgo-answer.json", args: `{"query": "serendipity"}`,
			want: []hit{
				{"Answer", "", "2 + 2 = 4"},
				{"Definition Wordnik", "https://www.wordnik.com/words/serendipity", "serendipity: The faculty of making fortunate discoveries by accident."},
			},
		},
		{
			name: "nothing", fixture: "duckduckgo-empty.json", args: `{"query": "how to fix my build"}`,
			want: []hit{}, note: "no answer for this query",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeNet(t)
			ddg := serveSearch(t, f, "api.duckduckgo.com", duckDuckGoAddr, replyJSON(fixture(t, tt.fixture)))
			tl := f.tools(t, Options{})
			out := call(t, tl, Search, tt.args)
			if got := hits(t, out); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("results =\n%+v\nwant\n%+v", got, tt.want)
			}
			if out["engine"] != EngineDuckDuckGo {
				t.Errorf("engine = %v, want duckduckgo", out["engine"])
			}
			note, _ := out["note"].(string)
			if (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
				t.Errorf("note = %q, want one containing %q", note, tt.note)
			}
			reqs := ddg.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests to DuckDuckGo, want 1", len(reqs))
			}
			r := reqs[0]
			var args map[string]string
			json.Unmarshal([]byte(tt.args), &args)
			wantQuery := strings.Join(strings.Fields(args["query"]), " ")
			q := r.URL.Query()
			if r.URL.Path != "/" || q.Get("q") != wantQuery || q.Get("format") != "json" || q.Get("no_html") != "1" || q.Get("skip_disambig") != "1" {
				t.Errorf("request %s, want /?q=%s&format=json&no_html=1&skip_disambig=1", r.URL, wantQuery)
			}
			if out["query"] != wantQuery {
				t.Errorf("query = %v, want %q", out["query"], wantQuery)
			}
			if r.Header.Get("X-Subscription-Token") != "" {
				t.Error("DuckDuckGo received a subscription token")
			}
		})
	}
}

func TestBrave(t *testing.T) {
	f := newFakeNet(t)
	ddg := serveSearch(t, f, "api.duckduckgo.com", duckDuckGoAddr, replyJSON(fixture(t, "duckduckgo-go.json")))
	brave := serveSearch(t, f, "api.search.brave.com", braveAddr, replyJSON(fixture(t, "brave-web.json")))
	tl := f.tools(t, OptionsFromEnv([]string{"HOME=/root", BraveKeyEnv + "=" + braveKey}))
	if tl.Engine() != EngineBrave || !reflect.DeepEqual(tl.Secrets(), []string{braveKey}) {
		t.Fatalf("Engine %s, Secrets %v; want brave and the key", tl.Engine(), tl.Secrets())
	}
	out := call(t, tl, Search, `{"query": "golang generics", "max_results": 5}`)
	want := []hit{
		{"Tutorial: Getting started with generics - The Go Programming Language", "https://go.dev/doc/tutorial/generics", "In this tutorial, you'll declare two simple non-generic functions, then capture the same logic in a single generic function."},
		{"An Introduction To Generics - The Go Programming Language", "https://go.dev/blog/intro-generics", "The Go 1.18 release adds support for generics."},
	}
	if got := hits(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("results =\n%+v\nwant\n%+v", got, want)
	}
	if out["engine"] != EngineBrave {
		t.Errorf("engine = %v, want brave", out["engine"])
	}
	reqs := brave.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to Brave, want 1", len(reqs))
	}
	r := reqs[0]
	if r.URL.Path != "/res/v1/web/search" || r.URL.Query().Get("q") != "golang generics" || r.URL.Query().Get("count") != "5" {
		t.Errorf("request %s, want /res/v1/web/search?q=golang+generics&count=5", r.URL)
	}
	if r.Header.Get("X-Subscription-Token") != braveKey || r.Header.Get("Accept") != "application/json" {
		t.Errorf("headers %v, want the token and Accept: application/json", r.Header)
	}
	if strings.Contains(r.URL.RawQuery, braveKey) {
		t.Error("the key travelled in the URL")
	}
	if len(ddg.requests()) != 0 {
		t.Error("DuckDuckGo was asked although a Brave key is set")
	}
}

func TestBraveKeyRedacted(t *testing.T) {
	f := newFakeNet(t)
	var elsewhere []http.Header
	var mu sync.Mutex
	f.host("collector.example.net", "93.184.215.14")
	f.serve(t, "93.184.215.14:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		elsewhere = append(elsewhere, r.Header.Clone())
	}), "collector.example.net")
	serveSearch(t, f, "api.search.brave.com", braveAddr, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("q") {
		case "echo error":
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"ErrorResponse","error":{"id":"5a1b","status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token ` + braveKey + ` is invalid.","meta":{"component":"authentication"}},"time":1700000000}`))
		case "echo text":
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("upstream saw token " + braveKey))
		case "echo result":
			w.Write([]byte(`{"type":"search","web":{"type":"search","results":[{"title":"Key ` + braveKey + `","url":"https://example.com/?k=` + braveKey + `","description":"leaked"}]}}`))
		case "redirect":
			http.Redirect(w, r, "https://collector.example.net/steal", http.StatusFound)
		}
	})
	tl := f.tools(t, Options{BraveKey: braveKey})
	for _, q := range []string{"echo error", "echo text", "redirect"} {
		e := callErr(t, tl, Search, `{"query": "`+q+`"}`, CodeSearchFailed)
		if strings.Contains(e.Message, braveKey) || strings.Contains(e.Error(), braveKey) {
			t.Errorf("%s: error %q holds the key", q, e.Message)
		}
		if e.Refused() {
			t.Errorf("%s: a failing search service is not a refusal", q)
		}
		contains(t, q+" message", e.Message, "Brave Search answered")
		if strings.Contains(e.Message, "api.search.brave.com/res") {
			t.Errorf("%s: message %q names the request URL", q, e.Message)
		}
	}
	e := callErr(t, tl, Search, `{"query": "echo error"}`, CodeSearchFailed)
	contains(t, "message", e.Message, "401 Unauthorized: SUBSCRIPTION_TOKEN_INVALID The provided subscription token "+redact.Marker+" is invalid.")
	e = callErr(t, tl, Search, `{"query": "redirect"}`, CodeSearchFailed)
	contains(t, "message", e.Message, "302 Found")
	mu.Lock()
	if len(elsewhere) != 0 {
		t.Errorf("Brave's redirect was followed: %v", elsewhere)
	}
	mu.Unlock()

	out, err := tl.Call(t.Context(), Search, json.RawMessage(`{"query": "echo result"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), braveKey) || !strings.Contains(string(out), redact.Marker) {
		t.Errorf("result %s holds the key or lacks the marker", out)
	}
}

func TestSearchFailures(t *testing.T) {
	tests := []struct {
		name, code, want string
		h                http.HandlerFunc
	}{
		{"server error", CodeSearchFailed, "DuckDuckGo Instant Answers answered 500 Internal Server Error: \"overloaded\"", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "overloaded", http.StatusInternalServerError)
		}},
		{"accepted, empty", CodeSearchFailed, "answered 202 Accepted", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
		}},
		{"empty body", CodeSearchFailed, "answered with an empty body", func(w http.ResponseWriter, r *http.Request) {}},
		{"not JSON", CodeSearchFailed, "answered with a body that is not its JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html>captcha</html>"))
		}},
		{"too large", CodeSearchFailed, "more than the 2048-byte read limit", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"Heading": "` + strings.Repeat("x", 4000) + `"}`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeNet(t)
			serveSearch(t, f, "api.duckduckgo.com", duckDuckGoAddr, tt.h)
			tl := f.tools(t, Options{MaxBytes: 2048})
			e := callErr(t, tl, Search, `{"query": "go"}`, tt.code)
			contains(t, "message", e.Message, tt.want)
		})
	}
}
