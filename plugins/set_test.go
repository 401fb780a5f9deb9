package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/plugins/pluginstest"
)

func TestMain(m *testing.M) {
	pluginstest.MainIfServer()
	os.Exit(m.Run())
}

// stdioPlugin is a plugin whose server is this test binary, re-executed
// over stdio with env added to what makes it serve.
func stdioPlugin(t *testing.T, id string, allow []string, env ...string) Plugin {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Plugin{
		Manifest: &Manifest{Path: "/test/" + id + ".json", ID: id, Command: exe, AllowTools: allow},
		Env:      append([]string{pluginstest.EnvServer + "=" + pluginstest.ServeStdio}, env...),
	}
}

// httpPlugin serves srv over Streamable HTTP on 127.0.0.1.
func httpPlugin(t *testing.T, id string, allow []string, srv *mcp.Server) Plugin {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return Plugin{Manifest: &Manifest{Path: "/test/" + id + ".json", ID: id, URL: hs.URL, AllowTools: allow}}
}

func newSet(t *testing.T, opts Options, plugins ...Plugin) *Set {
	t.Helper()
	s, err := NewSet(plugins, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func names(l Listing) []string {
	var out []string
	for _, t := range l.Tools {
		out = append(out, t.Name)
	}
	return out
}

func TestList(t *testing.T) {
	allowed := []string{pluginstest.ToolEcho, pluginstest.ToolDotted, "ghost"}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			var p, all Plugin
			if transport == "stdio" {
				p, all = stdioPlugin(t, "notes", allowed), stdioPlugin(t, "everything", []string{AllowAll})
			} else {
				p, all = httpPlugin(t, "notes", allowed, pluginstest.NewServer()), httpPlugin(t, "everything", []string{AllowAll}, pluginstest.NewServer())
			}
			s := newSet(t, Options{}, p, all)
			ls, err := s.ListAll(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) != 2 || ls[0].Plugin != "notes" || ls[1].Plugin != "everything" {
				t.Fatalf("listings = %+v", ls)
			}

			// Exact names: the allowed among the advertised; "ghost" is not advertised.
			if got, want := names(ls[0]), []string{pluginstest.ToolEcho, pluginstest.ToolDotted}; !sameSet(got, want) || len(ls[0].Skipped) != 0 {
				t.Errorf("notes offers %v, skips %v; want %v", got, ls[0].Skipped, want)
			}
			echo, ok := Resolve(ls[0].Tools, "notes__echo")
			if !ok || echo.Canonical != "notes/echo" || echo.Description != "Echoes text." {
				t.Errorf("echo = %+v, %v", echo, ok)
			}
			var in struct {
				Type       string         `json:"type"`
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(echo.InputSchema, &in); err != nil || in.Type != "object" || in.Properties["text"] == nil || echo.OutputSchema == nil {
				t.Errorf("echo schemas = %s, %s", echo.InputSchema, echo.OutputSchema)
			}
			if dotted, ok := Resolve(ls[0].Tools, "notes/"+pluginstest.ToolDotted); !ok || dotted.Alias != Alias("notes", pluginstest.ToolDotted) {
				t.Errorf("dotted = %+v, %v", dotted, ok)
			}

			// The wildcard: every advertised tool, the unofferable ones skipped.
			want := []string{pluginstest.ToolEcho, pluginstest.ToolEnv, pluginstest.ToolFail, pluginstest.ToolSleep, pluginstest.ToolExit, pluginstest.ToolPID,
				pluginstest.ToolDotted, pluginstest.ToolSecret, pluginstest.ToolLongDescription}
			if got := names(ls[1]); !sameSet(got, want) {
				t.Errorf("everything offers %v, want %v", got, want)
			}
			skipped := map[string]string{}
			for _, sk := range ls[1].Skipped {
				skipped[sk.Name] = sk.Reason
			}
			if len(skipped) != 2 || !strings.Contains(skipped[pluginstest.ToolBadName], "the name is not 1 to 128 bytes") ||
				!strings.Contains(skipped[pluginstest.ToolHugeSchema], "input schema is") || !strings.Contains(skipped[pluginstest.ToolHugeSchema], "over the 65536 byte limit") {
				t.Errorf("skipped = %v", skipped)
			}
			long, _ := Resolve(ls[1].Tools, "everything/"+pluginstest.ToolLongDescription)
			if len(long.Description) > MaxDescriptionBytes || !strings.HasSuffix(long.Description, "…") || !utf8.ValidString(long.Description) {
				t.Errorf("long description: %d bytes, ends %q", len(long.Description), long.Description[len(long.Description)-8:])
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestListNowOrLater: a listing and a call see what the server advertises
// at that moment, across pages.
func TestListNowOrLater(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, okTool)
	}
	s := newSet(t, Options{}, httpPlugin(t, "paged", []string{AllowAll}, srv))
	l, err := s.List(t.Context(), "paged")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l); !sameSet(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("offers %v", got)
	}

	srv.AddTool(&mcp.Tool{Name: "f", InputSchema: map[string]any{"type": "object"}}, okTool)
	srv.RemoveTools("a")
	if l, err = s.List(t.Context(), "paged"); err != nil {
		t.Fatal(err)
	}
	if got := names(l); !sameSet(got, []string{"b", "c", "d", "e", "f"}) {
		t.Errorf("after the change, offers %v", got)
	}
	if _, err := s.Call(t.Context(), "paged", "f", nil); err != nil {
		t.Errorf("call f: %v", err)
	}
	if _, err := s.Call(t.Context(), "paged", "a", nil); !errors.Is(err, ErrToolNotAdvertised) {
		t.Errorf("call a, no longer advertised: %v", err)
	}
}

func okTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

func TestCall(t *testing.T) {
	allowed := []string{pluginstest.ToolEcho, pluginstest.ToolFail, pluginstest.ToolHugeSchema, "ghost"}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			p := stdioPlugin(t, "notes", allowed)
			if transport == "http" {
				p = httpPlugin(t, "notes", allowed, pluginstest.NewServer())
			}
			s := newSet(t, Options{}, p)
			ctx := t.Context()

			res, err := s.Call(ctx, "notes", pluginstest.ToolEcho, json.RawMessage(`{"text":"hi"}`))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" || string(res.StructuredContent) != `{"text":"hi"}` {
				t.Errorf("echo = %+v, structured %s", res, res.StructuredContent)
			}

			res, err = s.Call(ctx, "notes", pluginstest.ToolFail, nil)
			if err != nil {
				t.Fatalf("an error result is a completed call: %v", err)
			}
			if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, pluginstest.FailMessage) {
				t.Errorf("fail = %+v", res)
			}

			refusals := []struct {
				name, plugin, tool, args string
				want                     error
				message                  string
			}{
				{"unknown plugin", "other", pluginstest.ToolEcho, `{}`, ErrUnknownPlugin, `plugin "other": unknown plugin (configured: notes)`},
				{"not allowed", "notes", pluginstest.ToolSecret, `{}`, ErrToolNotAllowed, "call notes/secret: tool not allowed by the plugin's manifest (/test/notes.json allows echo, fail, huge_schema, ghost)"},
				{"not advertised", "notes", "ghost", `{}`, ErrToolNotAdvertised, "call notes/ghost: tool not advertised by the plugin's server"},
				{"advertised, not offered", "notes", pluginstest.ToolHugeSchema, `{}`, ErrToolNotAdvertised, "advertised but not offered: its input schema is"},
				{"arguments not an object", "notes", pluginstest.ToolEcho, `["hi"]`, nil, "call notes/echo: arguments must be one JSON object"},
			}
			for _, c := range refusals {
				t.Run(c.name, func(t *testing.T) {
					res, err := s.Call(ctx, c.plugin, c.tool, json.RawMessage(c.args))
					if err == nil || res != nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.message) {
						t.Errorf("call = %+v, %v; want %v with %q", res, err, c.want, c.message)
					}
					var he *HostError
					if errors.As(err, &he) {
						t.Errorf("a refusal is not a host error: %v", err)
					}
				})
			}
		})
	}
}

// TestChildEnvironment: a stdio child gets only the environment given,
// not this process's.
func TestChildEnvironment(t *testing.T) {
	t.Setenv("HOME", "/home/parent")
	t.Setenv("AXLR_PLUGINS_PARENT_ONLY", "leak")
	s := newSet(t, Options{}, stdioPlugin(t, "env", []string{pluginstest.ToolEnv}, "GREETING=hello", "EMPTY="))
	res, err := s.Call(t.Context(), "env", pluginstest.ToolEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Env []string `json:"env"`
	}
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"AXLR_PLUGINS_TEST_SERVER=serve", "EMPTY=", "GREETING=hello"}
	if !slices.Equal(out.Env, want) {
		t.Errorf("child environment = %q, want %q", out.Env, want)
	}
}

func TestHostErrors(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + closed.Addr().String() + "/mcp"
	closed.Close()

	missing := stdioPlugin(t, "missing", []string{AllowAll})
	missing.Manifest.Command = "/nonexistent/axlr-plugin"
	early := stdioPlugin(t, "early", []string{AllowAll})
	early.Env = []string{pluginstest.EnvServer + "=" + pluginstest.ExitEarly}
	cases := []struct {
		name    string
		plugin  Plugin
		message string
	}{
		{"no such command", missing, "plugin missing: start: fork/exec /nonexistent/axlr-plugin: no such file or directory"},
		{"exits before the handshake", early, "plugin early: start: "},
		{"nothing listens", Plugin{Manifest: &Manifest{Path: "/test/dead.json", ID: "dead", URL: deadURL, AllowTools: []string{AllowAll}}}, "plugin dead: start: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSet(t, Options{}, stdioPlugin(t, "fine", []string{AllowAll}), c.plugin)
			_, err := s.ListAll(t.Context())
			var he *HostError
			if !errors.As(err, &he) || he.Plugin != c.plugin.Manifest.ID || he.Op != "start" || !strings.HasPrefix(err.Error(), c.message) {
				t.Errorf("list all = %v; want a host error starting %q", err, c.message)
			}
			_, err = s.Call(t.Context(), c.plugin.Manifest.ID, pluginstest.ToolEcho, nil)
			if !errors.As(err, &he) || he.Op != "start" {
				t.Errorf("call = %v; want a host error", err)
			}
		})
	}
}

// TestBrokenConnection: a server that dies during a call fails it as the
// host's failure, without a retry, and the next use starts a new server.
func TestBrokenConnection(t *testing.T) {
	s := newSet(t, Options{}, stdioPlugin(t, "mortal", []string{AllowAll}))
	ctx := t.Context()
	_, err := s.Call(ctx, "mortal", pluginstest.ToolExit, nil)
	var he *HostError
	if !errors.As(err, &he) || he.Op != "call exit" {
		t.Fatalf("call exit = %v; want a host error for the closed connection", err)
	}
	res, err := s.Call(ctx, "mortal", pluginstest.ToolEcho, json.RawMessage(`{"text":"again"}`))
	if err != nil || string(res.StructuredContent) != `{"text":"again"}` {
		t.Errorf("call after the loss = %+v, %v", res, err)
	}
}

func TestTimeoutAndCancellation(t *testing.T) {
	s := newSet(t, Options{CallTimeout: 300 * time.Millisecond}, stdioPlugin(t, "slow", []string{AllowAll}))
	_, err := s.Call(t.Context(), "slow", pluginstest.ToolSleep, nil)
	var he *HostError
	if !errors.As(err, &he) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("call past the timeout = %v; want a host error wrapping the deadline", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	s = newSet(t, Options{}, stdioPlugin(t, "slow", []string{AllowAll}))
	_, err = s.Call(ctx, "slow", pluginstest.ToolSleep, nil)
	if !errors.Is(err, context.Canceled) || errors.As(err, &he) {
		t.Errorf("cancelled call = %v; want the context's error, not a host error", err)
	}
}

func TestNewSet(t *testing.T) {
	stdio := &Manifest{Path: "/m/a.json", ID: "a", Command: "/bin/true", AllowTools: []string{AllowAll}}
	web := &Manifest{Path: "/m/w.json", ID: "w", URL: "https://h/mcp", AllowTools: []string{AllowAll}}
	cases := []struct {
		name    string
		plugins []Plugin
		opts    Options
		message string
	}{
		{"ok", []Plugin{{Manifest: stdio, Env: []string{"A=1"}}, {Manifest: web}}, Options{}, ""},
		{"no manifest", []Plugin{{}}, Options{}, "plugin 0 has no manifest"},
		{"duplicate id", []Plugin{{Manifest: stdio}, {Manifest: &Manifest{Path: "/m/b.json", ID: "a", Command: "/bin/true", AllowTools: []string{"x"}}}},
			Options{}, "plugin manifest /m/b.json: id a is already configured by /m/a.json"},
		{"env for http", []Plugin{{Manifest: web, Env: []string{"A=1"}}}, Options{}, "plugin w: an HTTP plugin takes no environment"},
		{"env not KEY=VALUE", []Plugin{{Manifest: stdio, Env: []string{"A"}}}, Options{}, `plugin a: environment entry "A" is not KEY=VALUE`},
		{"env empty key", []Plugin{{Manifest: stdio, Env: []string{"=1"}}}, Options{}, `plugin a: environment entry "=1" is not KEY=VALUE`},
		{"env twice", []Plugin{{Manifest: stdio, Env: []string{"A=1", "A=2"}}}, Options{}, "plugin a: environment variable A is given twice"},
		{"negative timeout", nil, Options{CallTimeout: -time.Second}, "plugin options: timeouts must not be negative (connect 0s, call -1s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewSet(c.plugins, c.opts)
			if c.message == "" {
				if err != nil || !slices.Equal(s.IDs(), []string{"a", "w"}) {
					t.Errorf("NewSet = %v, %v", s, err)
				}
				return
			}
			if err == nil || err.Error() != c.message {
				t.Errorf("NewSet error = %v, want %q", err, c.message)
			}
		})
	}
}

func TestClosed(t *testing.T) {
	s, err := NewSet([]Plugin{stdioPlugin(t, "notes", []string{AllowAll})}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(t.Context(), "notes"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := s.Call(t.Context(), "notes", pluginstest.ToolEcho, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after close = %v", err)
	}
}

// TestOffer covers what the go-sdk server will not advertise: schemas that
// are not objects, a tool listed twice, colliding aliases.
func TestOffer(t *testing.T) {
	m := &Manifest{ID: "p", AllowTools: []string{AllowAll}}
	object := map[string]any{"type": "object"}
	// "a.b" aliases to p__a_b_<hash>; a tool already named so collides.
	collider := strings.TrimPrefix(Alias("p", "a.b"), "p__")
	advertised := []*mcp.Tool{
		nil,
		{Name: "ok", InputSchema: object},
		{Name: "no_schema"},
		{Name: "ok", InputSchema: object},
		{Name: "array_schema", InputSchema: []any{}},
		{Name: "bad_output", InputSchema: object, OutputSchema: "string"},
		{Name: "a.b", InputSchema: object},
		{Name: collider, InputSchema: object},
	}
	l := offer(m, advertised)
	if got := names(l); !slices.Equal(got, []string{"ok", "no_schema", "a.b"}) {
		t.Errorf("offers %v", got)
	}
	if string(l.Tools[1].InputSchema) != `{"type":"object"}` {
		t.Errorf("a missing input schema = %s", l.Tools[1].InputSchema)
	}
	want := []Skipped{
		{"ok", "the server advertises it twice"},
		{"array_schema", "its input schema is not a JSON object"},
		{"bad_output", "its output schema is not a JSON object"},
		{collider, "its alias p__" + collider + " is already the alias of a.b"},
	}
	if !slices.Equal(l.Skipped, want) {
		t.Errorf("skipped = %q\nwant %q", l.Skipped, want)
	}
}
