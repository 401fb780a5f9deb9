package web

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/jsonargs"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string // part of the error; "" for none
	}{
		{"zero", Options{}, ""},
		{"all set", Options{Timeout: time.Minute, MaxBytes: 4 << 20, BraveKey: braveKey, UserAgent: "bot/1 (x)"}, ""},
		{"negative timeout", Options{Timeout: -time.Second}, "Timeout -1s is negative"},
		{"long timeout", Options{Timeout: time.Hour}, "Timeout 1h0m0s exceeds the 5m0s limit"},
		{"negative bytes", Options{MaxBytes: -1}, "MaxBytes -1 is negative"},
		{"many bytes", Options{MaxBytes: 32 << 20}, "MaxBytes 33554432 exceeds the 16777216-byte limit"},
		{"key with space", Options{BraveKey: "abc def"}, "BraveKey holds a byte that is not a visible ASCII character"},
		{"key with newline", Options{BraveKey: "abc\n"}, "BraveKey"},
		{"key with quote", Options{BraveKey: `ab"c`}, "BraveKey"},
		{"agent with newline", Options{UserAgent: "a\r\nX-Injected: 1"}, "UserAgent holds a control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := New(tt.opts)
			if tt.want == "" {
				if err != nil || tl == nil {
					t.Fatalf("New = %v, %v; want Tools", tl, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	tl, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tl.timeout != DefaultTimeout || tl.maxBytes != DefaultMaxBytes || tl.userAgent != DefaultUserAgent {
		t.Errorf("defaults: %s, %d, %q", tl.timeout, tl.maxBytes, tl.userAgent)
	}
	if tl.Engine() != EngineDuckDuckGo || tl.Secrets() != nil {
		t.Errorf("without a key: Engine %s, Secrets %v; want duckduckgo, none", tl.Engine(), tl.Secrets())
	}
	if got := OptionsFromEnv([]string{"PATH=/bin", "BRAVE_SEARCH_API_KEY_OLD=x", BraveKeyEnv + "=k=v"}); got != (Options{BraveKey: "k=v"}) {
		t.Errorf("OptionsFromEnv = %+v, want the key k=v only", got)
	}
	if got := OptionsFromEnv(nil); got != (Options{}) {
		t.Errorf("OptionsFromEnv(nil) = %+v, want zero", got)
	}
}

func TestSpecs(t *testing.T) {
	tl, err := New(Options{MaxBytes: 2 << 20, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	specs := tl.Specs()
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
		var sc struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(s.Parameters, &sc); err != nil {
			t.Fatalf("%s parameters %s: %v", s.Name, s.Parameters, err)
		}
		if sc.Type != "object" || sc.AdditionalProperties == nil || *sc.AdditionalProperties {
			t.Errorf("%s: type %q, additionalProperties %v; want an object without additional properties", s.Name, sc.Type, sc.AdditionalProperties)
		}
		// The schema's properties are exactly the arguments the tool accepts.
		var args any = &fetchArgs{}
		if s.Name == Search {
			args = &searchArgs{}
		}
		props := slices.Sorted(maps.Keys(sc.Properties))
		if accepted := slices.Sorted(slices.Values(jsonargs.Names(args))); !slices.Equal(props, accepted) {
			t.Errorf("%s: schema properties %v, accepted arguments %v", s.Name, props, accepted)
		}
		for _, r := range sc.Required {
			if _, ok := sc.Properties[r]; !ok {
				t.Errorf("%s requires %s, which is not a property", s.Name, r)
			}
		}
	}
	if !slices.Equal(names, Names()) {
		t.Errorf("spec names %v, want %v", names, Names())
	}
	contains(t, "web_fetch description", specs[0].Description, "2097152 bytes of the body", "after 10s", "at most 5 redirects")
	contains(t, "web_search description", specs[1].Description, "DuckDuckGo Instant Answers")
	brave, err := New(Options{BraveKey: braveKey})
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "web_search description with a key", brave.Specs()[1].Description, "Brave Search")
	for _, s := range brave.Specs() {
		if strings.Contains(s.Description+string(s.Parameters), braveKey) {
			t.Errorf("%s spec holds the key", s.Name)
		}
	}
}

func TestArguments(t *testing.T) {
	tests := []struct {
		tool, args, code, want string
	}{
		{Fetch, `[]`, CodeInvalidRequest, "arguments of web_fetch must be one JSON object"},
		{Fetch, `null`, CodeInvalidRequest, "must be one JSON object"},
		{Fetch, ``, CodeInvalidRequest, "web_fetch needs argument url"},
		{Fetch, `{"url": null}`, CodeInvalidRequest, "needs argument url"},
		{Fetch, `{"URL": "https://go.dev"}`, CodeInvalidRequest, `unknown argument "URL" for web_fetch; it takes url, raw, offset_bytes, max_bytes`},
		{Fetch, `{"url": "https://go.dev", "headers": {"Cookie": "a"}}`, CodeInvalidRequest, `unknown argument "headers"`},
		{Fetch, `{"url": 7}`, CodeInvalidRequest, "argument url of web_fetch must be a string, not number"},
		{Fetch, `{"url": "https://go.dev", "raw": "yes"}`, CodeInvalidRequest, "argument raw of web_fetch must be a boolean"},
		{Fetch, `{"url": "https://go.dev", "max_bytes": 1.5}`, CodeInvalidRequest, "argument max_bytes of web_fetch must be an integer"},
		{Fetch, `{"url": "ftp://go.dev/x"}`, CodeInvalidArguments, `scheme "ftp" is not http or https`},
		{Fetch, `{"url": "file:///etc/passwd"}`, CodeInvalidArguments, `scheme "file"`},
		{Fetch, `{"url": "go.dev/doc"}`, CodeInvalidArguments, `scheme "" is not http or https`},
		{Fetch, `{"url": "https:///path"}`, CodeInvalidArguments, "names no host"},
		{Fetch, `{"url": "https://me:secret@go.dev/"}`, CodeInvalidArguments, "user information"},
		{Fetch, `{"url": "https://go.dev/%zz"}`, CodeInvalidArguments, "is not a URL"},
		{Fetch, `{"url": "http://[::1/"}`, CodeInvalidArguments, "is not a URL"},
		{Fetch, `{"url": "https://go.dev/` + strings.Repeat("a", 9000) + `"}`, CodeInvalidArguments, "over the 8192-byte limit"},
		{Fetch, `{"url": "https://go.dev", "max_bytes": 0}`, CodeInvalidArguments, "max_bytes must be at least 1, not 0"},
		{Fetch, `{"url": "https://go.dev", "max_bytes": 2000000}`, CodeInvalidArguments, "max_bytes 2000000 exceeds the limit of 1048576"},
		{Fetch, `{"url": "https://go.dev", "offset_bytes": -1}`, CodeInvalidArguments, "offset_bytes must be at least 0"},
		{Fetch, `{"url": "http://10.0.0.1/"}`, CodeForbiddenAddress, "10.0.0.1 is a private address"},
		{Fetch, `{"url": "http://[fe80::1%25eth0]/"}`, CodeForbiddenAddress, "scoped"},
		{Search, `{}`, CodeInvalidRequest, "web_search needs argument query"},
		{Search, `{"q": "go"}`, CodeInvalidRequest, `unknown argument "q" for web_search; it takes query, max_results`},
		{Search, `{"query": ["go"]}`, CodeInvalidRequest, "argument query of web_search must be a string, not array"},
		{Search, `{"query": " \t "}`, CodeInvalidArguments, "query is empty"},
		{Search, `{"query": "` + strings.Repeat("go ", 200) + `"}`, CodeInvalidArguments, "query is 599 bytes, over the 400-byte limit"},
		{Search, `{"query": "go", "max_results": 0}`, CodeInvalidArguments, "max_results must be at least 1"},
		{Search, `{"query": "go", "max_results": 21}`, CodeInvalidArguments, "max_results 21 exceeds the limit of 20"},
		{"web_browse", `{}`, CodeInvalidRequest, `unknown tool "web_browse"; the web tools are web_fetch and web_search`},
	}
	f := newFakeNet(t)
	tl := f.tools(t, Options{})
	for _, tt := range tests {
		t.Run(tt.tool+" "+cutUTF8(tt.args, 60), func(t *testing.T) {
			e := callErr(t, tl, tt.tool, tt.args, tt.code)
			contains(t, "message", e.Message, tt.want)
			if !e.Refused() || e.Status() != StatusRejected {
				t.Errorf("Refused %v, Status %s; want a rejected refusal", e.Refused(), e.Status())
			}
			var ce *Error
			if err := Check(tt.tool, json.RawMessage(tt.args)); !errors.As(err, &ce) || !reflect.DeepEqual(ce, e) {
				t.Errorf("Check = %v; want the same error as Call", err)
			}
		})
	}
	if len(f.looked()) != 0 || len(f.dialed()) != 0 {
		t.Errorf("refused arguments reached the network: lookups %v, dials %v", f.looked(), f.dialed())
	}
	for _, args := range []string{`{"url": "https://go.dev/doc/#x", "raw": true, "offset_bytes": 10, "max_bytes": 1048576}`, `{"url": "HTTP://GO.DEV"}`} {
		if err := Check(Fetch, json.RawMessage(args)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", args, err)
		}
	}
	if err := Check(Search, json.RawMessage(`{"query": "go generics", "max_results": 20}`)); err != nil {
		t.Errorf("Check(search) = %v, want nil", err)
	}
}
