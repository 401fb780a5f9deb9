package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/plugins/pluginstest"
	"github.com/underpass-ai/axlr/redact"
)

// toolNames lists the tools a request offers.
func toolNames(req agenttest.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

// TestPluginTools: axlrd sessions offer the tools of MCP plugins from
// settings, over stdio (a re-executed test binary) and Streamable HTTP, as
// <plugin>__<tool>; a call reaches the server and its result the model; a
// policy rule that names <plugin>/<tool> hides and refuses it; the stdio
// child gets only the environment settings give it.
func TestPluginTools(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return pluginstest.NewServer() }, nil))
	defer srv.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var offered [][]string
	var results []string
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		offered = append(offered, toolNames(req))
		last := req.Messages[len(req.Messages)-1]
		prompt := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				prompt = m.Content
			}
		}
		if last.Role == "tool" {
			results = append(results, last.Content)
			return agenttest.Reply{Text: "done"}
		}
		switch {
		case strings.HasPrefix(prompt, "echo"):
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "p1", Name: "local__echo", Arguments: `{"text":"hello over stdio"}`}}}
		case strings.HasPrefix(prompt, "remote"):
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "p2", Name: "remote__echo", Arguments: `{"text":"hello over http"}`}}}
		case strings.HasPrefix(prompt, "env"):
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "p3", Name: "axlr_call_tool", Arguments: `{"tool":"local/env"}`}}}
		}
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "p4", Name: "local__env", Arguments: `{}`}}}
	})
	e := newEnv(t, model.URL)
	stdio := filepath.Join(e.dir, "local.json")
	remote := filepath.Join(e.dir, "remote.json")
	for path, doc := range map[string]string{
		stdio:  fmt.Sprintf(`{"manifest_version": 1, "id": "local", "command": %q, "args": [], "allow_tools": ["echo", "env"]}`, self),
		remote: fmt.Sprintf(`{"manifest_version": 1, "id": "remote", "url": %q, "allow_tools": ["*"]}`, srv.URL),
	} {
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.vars["PLUGIN_TOKEN"] = "token-from-axlrd-env"
	e.writeSettings(fmt.Sprintf(`{"model": "m", "tools": {"web": false}, "plugins": [
		{"manifest": %q, "env": {%q: %q}, "env_from": {"TOKEN": "PLUGIN_TOKEN"}},
		{"manifest": %q}]}`, stdio, pluginstest.EnvServer, pluginstest.ServeStdio, remote))
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	run := func(prompt string, args ...string) *contract.Result {
		t.Helper()
		r := e.tui(ctx, append([]string{"--exec", prompt, "--approve", "all", "--json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", prompt, r.code, r.stdout, r.stderr)
		}
		_, res := lines(t, r.stdout)
		return res
	}
	for _, prompt := range []string{"echo", "remote", "env"} {
		res := run(prompt)
		if len(res.ToolCalls) != 1 || res.ToolCalls[0].Status != contract.CallCompleted {
			t.Fatalf("%s: tool calls %+v", prompt, res.ToolCalls)
		}
	}
	pol := filepath.Join(e.dir, "policy.json")
	if err := os.WriteFile(pol, []byte(`{"tools": {"deny": [{"name": "local/env"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	denied := run("denied", "--policy", pol)

	mu.Lock()
	defer mu.Unlock()
	first := offered[0]
	for _, want := range []string{"local__echo", "local__env", "remote__echo", "remote__notes_search_ee3c0278", "axlr_tools", "axlr_call_tool"} {
		if !slices.Contains(first, want) {
			t.Errorf("offered %v, want %s", first, want)
		}
	}
	if slices.Contains(first, "local__secret") || slices.Contains(first, "web_fetch") {
		t.Errorf("offered %v: a tool the manifest leaves out, or the web tools settings turned off", first)
	}
	if !strings.Contains(results[0], "hello over stdio") || !strings.Contains(results[1], "hello over http") {
		t.Fatalf("results %q", results)
	}
	var env struct {
		StructuredContent struct {
			Env []string `json:"env"`
		} `json:"structured_content"`
	}
	if err := json.Unmarshal([]byte(results[2]), &env); err != nil {
		t.Fatalf("env result %s: %v", results[2], err)
	}
	// The value read from axlrd's environment reached the child, and is
	// redacted on its way to the model.
	want := []string{pluginstest.EnvServer + "=" + pluginstest.ServeStdio, "TOKEN=" + redact.Marker}
	if !slices.Equal(env.StructuredContent.Env, want) {
		t.Fatalf("the plugin's environment %v, want exactly %v", env.StructuredContent.Env, want)
	}
	last := offered[len(offered)-2]
	if slices.Contains(last, "local__env") || !slices.Contains(last, "local__echo") {
		t.Errorf("under a rule for local/env the request offers %v", last)
	}
	if len(denied.ToolCalls) != 1 || denied.ToolCalls[0].Status != contract.CallForbidden {
		t.Fatalf("a denied plugin tool: %+v", denied.ToolCalls)
	}
}

// TestWebToolsRefuseThisMachine: the web tools are offered by default, and
// the production transport refuses a server on this machine (a private
// address) without reaching it; --web=false removes them from the session.
func TestWebToolsRefuseThisMachine(t *testing.T) {
	var hits atomic.Int32
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer local.Close()
	var mu sync.Mutex
	var offered [][]string
	var results []string
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		offered = append(offered, toolNames(req))
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			results = append(results, last.Content)
			return agenttest.Reply{Text: "refused"}
		}
		if !slices.Contains(toolNames(req), "web_fetch") {
			return agenttest.Reply{Text: "no web"}
		}
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "web_fetch", Arguments: fmt.Sprintf(`{"url": %q}`, local.URL)}}}
	})
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "m"}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "fetch it", "--approve", "all", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	off := e.tui(ctx, "--exec", "fetch it again", "--session", res.SessionID, "--web=false", "--json")
	_, res2 := lines(t, off.stdout)
	mu.Lock()
	defer mu.Unlock()
	if len(results) != 1 || !strings.Contains(results[0], "forbidden_address") || hits.Load() != 0 {
		t.Fatalf("results %q, the local server was hit %d times", results, hits.Load())
	}
	if !slices.Contains(offered[0], "web_search") || slices.Contains(offered[len(offered)-1], "web_fetch") || res2.Answer != "no web" {
		t.Fatalf("offered %v then %v; answer %q", offered[0], offered[len(offered)-1], res2.Answer)
	}
}
