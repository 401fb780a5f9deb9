package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/underpass-ai/axlr/plugins/pluginstest"
	"github.com/underpass-ai/axlr/tools"
)

// TestMain lets this test binary serve as a stdio MCP plugin
// (pluginstest.EnvServer).
func TestMain(m *testing.M) {
	pluginstest.MainIfServer()
	os.Exit(m.Run())
}

// pluginManifest writes a manifest whose server is this test binary and
// returns the flags that register it: its id, allow_tools, and the
// --plugin-env that makes the child serve.
func pluginManifest(t *testing.T, id string, allow ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return writeManifest(t, id, map[string]any{"manifest_version": 1, "id": id, "command": exe, "args": []string{}, "allow_tools": allow},
		"--plugin-env", id+":"+pluginstest.EnvServer+"="+pluginstest.ServeStdio)
}

func writeManifest(t *testing.T, id string, m map[string]any, extra ...string) []string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), id+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return append([]string{"--plugin", path}, extra...)
}

type listedForTest struct {
	Tools []struct {
		PluginID     string          `json:"plugin_id"`
		Name         string          `json:"name"`
		Alias        string          `json:"alias"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		OutputSchema json.RawMessage `json:"output_schema"`
	} `json:"tools"`
	Skipped []struct {
		PluginID string `json:"plugin_id"`
		Name     string `json:"name"`
		Reason   string `json:"reason"`
	} `json:"skipped"`
}

func TestRunPluginsList(t *testing.T) {
	_, flags := workspace(t)
	flags = append(flags, pluginManifest(t, "notes", pluginstest.ToolEcho, pluginstest.ToolDotted, "ghost")...)
	flags = append(flags, pluginManifest(t, "everything", "*")...)
	r := runWorker(t.Context(), flags, reqJSON("list-1", "plugins.list", map[string]any{}))
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	resp := decodeResponse(t, r.stdout)
	if resp.Status != tools.StatusCompleted {
		t.Fatalf("response = %s", r.stdout)
	}
	var out listedForTest
	dec := json.NewDecoder(bytes.NewReader(resp.Output))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("output %s: %v", resp.Output, err)
	}
	got := map[string][]string{}
	for _, tool := range out.Tools {
		got[tool.PluginID] = append(got[tool.PluginID], tool.Name)
		if tool.PluginID == "notes" && tool.Name == pluginstest.ToolEcho &&
			(tool.Alias != "notes__echo" || tool.Description != "Echoes text." || !bytes.Contains(tool.InputSchema, []byte(`"text"`)) || tool.OutputSchema == nil) {
			t.Errorf("notes/echo = %+v", tool)
		}
	}
	if !sameNames(got["notes"], []string{pluginstest.ToolEcho, pluginstest.ToolDotted}) {
		t.Errorf("notes lists %v", got["notes"])
	}
	if len(got["everything"]) != 9 || !slices.Contains(got["everything"], pluginstest.ToolSecret) {
		t.Errorf("everything lists %v", got["everything"])
	}
	if len(out.Skipped) != 2 || out.Skipped[0].PluginID != "everything" {
		t.Errorf("skipped = %+v", out.Skipped)
	}
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestRunPluginsCall(t *testing.T) {
	_, flags := workspace(t)
	flags = append(flags, pluginManifest(t, "notes", pluginstest.ToolEcho, pluginstest.ToolFail, pluginstest.ToolEnv, "ghost")...)
	flags = append(flags, "--plugin-env", "notes:GREETING=hello")
	call := func(plugin, tool string, args any) map[string]any {
		return map[string]any{"plugin_id": plugin, "tool_name": tool, "arguments": args}
	}
	tests := []struct {
		name     string
		args     map[string]any
		status   string
		code     string // error code, or "" for an output
		contains string // in the output or the error message
	}{
		{"ok", call("notes", pluginstest.ToolEcho, map[string]any{"text": "hi"}), "completed", "",
			`{"content":[{"type":"text","text":"hi"}],"structured_content":{"text":"hi"},"is_error":false}`},
		{"arguments left out", map[string]any{"plugin_id": "notes", "tool_name": pluginstest.ToolEnv}, "completed", "", `"is_error":false`},
		{"arguments null", call("notes", pluginstest.ToolEnv, nil), "completed", "", `"is_error":false`},
		{"arguments the server refuses", call("notes", pluginstest.ToolEcho, map[string]any{}), "completed", "", `missing properties: [\"text\"]"}],"is_error":true}`},
		{"error result", call("notes", pluginstest.ToolFail, map[string]any{}), "completed", "", `"text":"` + pluginstest.FailMessage + `"}],"is_error":true}`},
		{"complete environment", call("notes", pluginstest.ToolEnv, map[string]any{}), "completed", "",
			`"structured_content":{"env":["AXLR_PLUGINS_TEST_SERVER=serve","GREETING=hello"]}`},
		{"unknown plugin", call("other", pluginstest.ToolEcho, map[string]any{}), "rejected", codeUnknownPlugin, `plugin "other": unknown plugin (configured: notes)`},
		{"not allowed", call("notes", pluginstest.ToolSecret, map[string]any{}), "rejected", codeUnknownPluginTool, "call notes/secret: tool not allowed by the plugin's manifest"},
		{"not advertised", call("notes", "ghost", map[string]any{}), "rejected", codeUnknownPluginTool, "call notes/ghost: tool not advertised by the plugin's server"},
	}
	t.Setenv("HOME", "/home/worker")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWorker(t.Context(), flags, reqJSON("call-"+tt.name, "plugins.call", tt.args))
			if r.code != exitOK {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			resp := decodeResponse(t, r.stdout)
			if resp.Status != tt.status {
				t.Errorf("status %q, want %q: %s", resp.Status, tt.status, r.stdout)
			}
			if tt.code == "" {
				if resp.Error != nil || !strings.Contains(string(resp.Output), tt.contains) {
					t.Errorf("output %s, error %+v; want output containing %s", resp.Output, resp.Error, tt.contains)
				}
				return
			}
			if resp.Error == nil || resp.Error.Code != tt.code || !strings.Contains(resp.Error.Message, tt.contains) {
				t.Errorf("error = %+v, want %s containing %q", resp.Error, tt.code, tt.contains)
			}
		})
	}
}

// TestRunPluginsUnavailable: a server that cannot start fails plugins.list
// and a call to it, as the host's failure.
func TestRunPluginsUnavailable(t *testing.T) {
	_, flags := workspace(t)
	flags = append(flags, pluginManifest(t, "fine", "*")...)
	flags = append(flags, writeManifest(t, "missing", map[string]any{"manifest_version": 1, "id": "missing", "command": "/nonexistent/axlr-plugin", "allow_tools": []string{"*"}})...)
	for _, req := range []string{
		reqJSON("list-1", "plugins.list", map[string]any{}),
		reqJSON("call-1", "plugins.call", map[string]any{"plugin_id": "missing", "tool_name": "echo", "arguments": map[string]any{}}),
	} {
		r := runWorker(t.Context(), flags, req)
		if r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		resp := decodeResponse(t, r.stdout)
		if resp.Status != tools.StatusFailed || resp.Error == nil || resp.Error.Code != codePluginsUnavailable ||
			resp.Error.Message != "plugin missing: start: fork/exec /nonexistent/axlr-plugin: no such file or directory" {
			t.Errorf("response = %s", r.stdout)
		}
	}
}

// TestRunPluginsClosed: the plugin's server is gone once the worker has
// answered.
func TestRunPluginsClosed(t *testing.T) {
	_, flags := workspace(t)
	flags = append(flags, pluginManifest(t, "notes", pluginstest.ToolPID)...)
	r := runWorker(t.Context(), flags, reqJSON("pid", "plugins.call", map[string]any{"plugin_id": "notes", "tool_name": pluginstest.ToolPID}))
	resp := decodeResponse(t, r.stdout)
	var out struct {
		StructuredContent struct {
			PID int `json:"pid"`
		} `json:"structured_content"`
	}
	if err := json.Unmarshal(resp.Output, &out); err != nil || out.StructuredContent.PID == 0 {
		t.Fatalf("output %s: %v", resp.Output, err)
	}
	// Closing waits for the child, so it has been reaped: no such process.
	if err := syscall.Kill(out.StructuredContent.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("plugin server %d after the response: %v; want it gone", out.StructuredContent.PID, err)
	}
}

// TestRunPluginsMalformed: plugins.list and plugins.call arguments without
// their shape are malformed protocol input, exit 2, as a tool's are.
func TestRunPluginsMalformed(t *testing.T) {
	_, flags := workspace(t)
	flags = append(flags, pluginManifest(t, "notes", "*")...)
	tests := []struct {
		name, stdin, reason string
	}{
		{"list takes none", reqJSON("r", "plugins.list", map[string]any{"plugin_id": "notes"}), `unknown argument "plugin_id" for plugins.list; it takes none`},
		{"unknown argument", reqJSON("r", "plugins.call", map[string]any{"plugin_id": "notes", "tool_name": "echo", "timeout_ms": 5}),
			`unknown argument "timeout_ms" for plugins.call; it takes plugin_id, tool_name, arguments`},
		{"another case", reqJSON("r", "plugins.call", map[string]any{"Plugin_ID": "notes", "tool_name": "echo"}), `unknown argument "Plugin_ID" for plugins.call; it takes plugin_id, tool_name, arguments`},
		{"plugin_id missing", reqJSON("r", "plugins.call", map[string]any{"tool_name": "echo"}), "plugins.call needs argument plugin_id"},
		{"tool_name null", reqJSON("r", "plugins.call", map[string]any{"plugin_id": "notes", "tool_name": nil}), "plugins.call needs argument tool_name"},
		{"plugin_id a number", `{"protocol_version":1,"request_id":"r","tool":"plugins.call","arguments":{"plugin_id": 7, "tool_name": "echo"}}`,
			"argument plugin_id of plugins.call must be a string, not number"},
		{"arguments an array", reqJSON("r", "plugins.call", map[string]any{"plugin_id": "notes", "tool_name": "echo", "arguments": []string{"hi"}}),
			"argument arguments of plugins.call must be a JSON object, not array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWorker(t.Context(), flags, tt.stdin)
			if r.code != exitMalformed {
				t.Errorf("exit %d, want 2", r.code)
			}
			resp := decodeResponse(t, r.stdout)
			if resp.Status != tools.StatusRejected || resp.Error == nil || resp.Error.Code != tools.CodeInvalidRequest || resp.Error.Message != tt.reason {
				t.Errorf("status %s error %+v, want invalid_request %q", resp.Status, resp.Error, tt.reason)
			}
		})
	}
}

func TestRunPluginFlags(t *testing.T) {
	_, flags := workspace(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stdio := writeManifest(t, "notes", map[string]any{"manifest_version": 1, "id": "notes", "command": exe, "allow_tools": []string{"*"}})
	web := writeManifest(t, "web", map[string]any{"manifest_version": 1, "id": "web", "url": "http://127.0.0.1:1/mcp", "allow_tools": []string{"*"}})
	other := writeManifest(t, "other", map[string]any{"manifest_version": 1, "id": "notes", "url": "http://127.0.0.1:1/mcp", "allow_tools": []string{"*"}})
	bad := writeManifest(t, "bad", map[string]any{"manifest_version": 1, "id": "Bad", "command": exe, "allow_tools": []string{"*"}})
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"relative manifest", []string{"--plugin", "notes.json"}, "axlr: --plugin: plugin manifest notes.json: the path is not absolute"},
		{"invalid manifest", bad, `axlr: --plugin: plugin manifest ` + bad[1] + `: field id: "Bad" is not a plugin id`},
		{"same id twice", append(slices.Clone(stdio), other...), "axlr: --plugin " + other[1] + ": id notes is already the id of " + stdio[1]},
		{"env without id", append(slices.Clone(stdio), "--plugin-env", "K=V"), `axlr: --plugin-env "K=V": want ID:KEY=VALUE`},
		{"env without value", append(slices.Clone(stdio), "--plugin-env", "notes:K"), `axlr: --plugin-env "notes:K": want ID:KEY=VALUE`},
		{"env without key", append(slices.Clone(stdio), "--plugin-env", "notes:=V"), `axlr: --plugin-env "notes:=V": want ID:KEY=VALUE`},
		{"env of an unknown id", append(slices.Clone(stdio), "--plugin-env", "other:K=V"), `axlr: --plugin-env "other:K=V": no --plugin has id other`},
		{"env of an HTTP plugin", append(slices.Clone(web), "--plugin-env", "web:K=V"), `axlr: --plugin-env "web:K=V": plugin web is reached over HTTP and takes no environment`},
		{"env key twice", append(slices.Clone(stdio), "--plugin-env", "notes:K=1", "--plugin-env", "notes:K=2"), "axlr: plugin notes: environment variable K is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWorker(t.Context(), append(slices.Clone(flags), tt.args...), reqJSON("r", "list", map[string]any{}))
			if r.code != exitFatal || r.stdout != "" || !strings.HasPrefix(r.stderr, tt.stderr) {
				t.Errorf("exit %d stdout %q stderr %q; want exit 1 and %q", r.code, r.stdout, r.stderr, tt.stderr)
			}
		})
	}
}

// TestBinaryPlugins runs the built worker against this test binary as a
// stdio plugin: the manifest, the environment and the call cross real
// process boundaries.
func TestBinaryPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "axlr")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	flags := append([]string{"--root", t.TempDir(), "--profile", "trusted-local"}, pluginManifest(t, "notes", pluginstest.ToolEcho, pluginstest.ToolEnv)...)
	cases := []struct {
		name, stdin, want string
	}{
		{"list", reqJSON("list-1", "plugins.list", map[string]any{}), `"plugin_id":"notes","name":"echo","alias":"notes__echo"`},
		{"call", reqJSON("call-1", "plugins.call", map[string]any{"plugin_id": "notes", "tool_name": "echo", "arguments": map[string]any{"text": "über"}}),
			`"output":{"content":[{"type":"text","text":"über"}],"structured_content":{"text":"über"},"is_error":false}`},
		{"environment", reqJSON("env-1", "plugins.call", map[string]any{"plugin_id": "notes", "tool_name": "env"}),
			`"structured_content":{"env":["AXLR_PLUGINS_TEST_SERVER=serve"]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, flags...)
			cmd.Stdin = strings.NewReader(c.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("exit: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), `"status":"completed"`) || !strings.Contains(stdout.String(), c.want) {
				t.Errorf("stdout = %s\nwant %s", stdout.String(), c.want)
			}
		})
	}
}
