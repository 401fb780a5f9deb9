package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/sandbox"
	"github.com/underpass-ai/axlr/tools"
)

// testClock returns a clock that starts at 12:00:00 CET and advances 1.5 s
// at each reading.
func testClock() func() time.Time {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	n := 0
	return func() time.Time {
		t := t0.Add(time.Duration(n) * 1500 * time.Millisecond)
		n++
		return t
	}
}

// testResponse is the response document, decoded strictly.
type testResponse struct {
	ProtocolVersion int             `json:"protocol_version"`
	RequestID       string          `json:"request_id"`
	Tool            string          `json:"tool"`
	Status          string          `json:"status"`
	StartedAt       string          `json:"started_at"`
	FinishedAt      string          `json:"finished_at"`
	DurationMS      int64           `json:"duration_ms"`
	Output          json.RawMessage `json:"output"`
	Error           *responseError  `json:"error"`
}

type result struct {
	code   int
	stdout string
	stderr string
}

// runWorker runs the worker.
func runWorker(ctx context.Context, args []string, stdin string) result {
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, strings.NewReader(stdin), &stdout, &stderr, testClock())
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// decodeResponse decodes the one response document of stdout.
func decodeResponse(t *testing.T, stdout string) testResponse {
	t.Helper()
	if !strings.HasSuffix(stdout, "}\n") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout is not one JSON line: %.300q", stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var r testResponse
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decode response %.300q: %v", stdout, err)
	}
	if r.ProtocolVersion != 1 || r.StartedAt != "2026-11-30T11:00:00.000Z" || r.FinishedAt != "2026-11-30T11:00:01.500Z" || r.DurationMS != 1500 {
		t.Errorf("envelope = %+v", r)
	}
	if (r.Output == nil) == (r.Error == nil) {
		t.Errorf("response needs output or error, not both or neither: %.300q", stdout)
	}
	return r
}

func reqJSON(id, tool string, arguments any) string {
	b, err := json.Marshal(map[string]any{"protocol_version": 1, "request_id": id, "tool": tool, "arguments": arguments})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// withPath adds this process's PATH to the exec environment of flags, which
// is otherwise empty, for exec of a bare program name.
func withPath(flags []string) []string {
	return append(slices.Clone(flags), "--env", "PATH="+os.Getenv("PATH"))
}

// workspace makes a workspace holding README.md and returns the flags to
// serve it.
func workspace(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# axlr\nhello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"--root", dir, "--profile", "trusted-local"}
}

func TestRunTools(t *testing.T) {
	dir, flags := workspace(t)
	flags = withPath(flags)
	tests := []struct {
		name     string
		tool     string
		args     any
		status   string
		code     string // error code, or "" for an output
		contains string // in the output or the error message
	}{
		{"read", "read", map[string]any{"path": "README.md"}, "completed", "", `"content":"# axlr\nhello world\n"`},
		{"write", "write", map[string]any{"path": "docs/new.md", "content": "new", "mode": "create"}, "completed", "", `"written_bytes":3`},
		{"edit", "edit", map[string]any{"path": "README.md", "old_text": "hello", "new_text": "hi"}, "completed", "", `"written_bytes":16`},
		{"exec", "exec", map[string]any{"program": "sh", "args": []string{"-c", "echo out; exit 4"}}, "completed", "", `"exit_code":4,"stdout":"out\n"`},
		{"search", "search", map[string]any{"pattern": "world"}, "completed", "", `"path":"README.md","line":2,"column":4`},
		{"list", "list", map[string]any{}, "completed", "", `{"path":"README.md","type":"file","size":`},
		{"operation failure", "read", map[string]any{"path": "missing.md"}, "failed", tools.CodeNotFound, `path "missing.md" does not exist`},
		{"argument rejection", "read", map[string]any{"path": "/etc/passwd"}, "rejected", tools.CodeInvalidRequest, `path "/etc/passwd" is absolute`},
		{"limit over its maximum", "exec", map[string]any{"program": "true", "timeout_ms": 600000}, "rejected", tools.CodeInvalidArguments, "timeout_ms 600000 exceeds the 300000 ms limit"},
		{"timeout", "exec", map[string]any{"program": "sleep", "args": []string{"5"}, "timeout_ms": 20}, "timed_out", tools.CodeTimeout, "did not finish within 20 ms"},
		{"plugins.list", "plugins.list", map[string]any{}, "rejected", codePluginsUnavailable, "no plugin is registered: pass --plugin /absolute/path/manifest.json"},
		{"plugins.call", "plugins.call", map[string]any{"plugin_id": "p", "tool_name": "t", "arguments": map[string]any{}}, "rejected", codePluginsUnavailable, "no plugin is registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWorker(t.Context(), flags, reqJSON("req-"+tt.name, tt.tool, tt.args))
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			resp := decodeResponse(t, r.stdout)
			if resp.RequestID != "req-"+tt.name || resp.Tool != tt.tool || resp.Status != tt.status {
				t.Errorf("request_id %q tool %q status %q", resp.RequestID, resp.Tool, resp.Status)
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
	if b, err := os.ReadFile(filepath.Join(dir, "docs", "new.md")); err != nil || string(b) != "new" {
		t.Errorf("docs/new.md = %q, %v", b, err)
	}
}

func TestRunProtocolRejections(t *testing.T) {
	_, flags := workspace(t)
	huge := reqJSON("big", "write", map[string]any{"path": "x", "mode": "create", "content": strings.Repeat("x", maxRequestBytes)})
	tests := []struct {
		name   string
		stdin  string
		id     string
		tool   string
		reason string
	}{
		{"empty body", "", "", "", "the request body is empty"},
		{"not JSON", "read README.md", "", "", "the request is not a JSON object"},
		{"array", `[1]`, "", "", "the request is not a JSON object"},
		{"null", `null`, "", "", "the request is not a JSON object"},
		{"second document", reqJSON("r1", "list", map[string]any{}) + "\n" + reqJSON("r2", "list", map[string]any{}), "", "", "more than one JSON document"},
		{"trailing data", reqJSON("r1", "list", map[string]any{}) + " x", "", "", "more than one JSON document"},
		{"body over 4 MiB", huge, "", "", "the request body exceeds the 4194304 byte limit"},
		{"unknown field", `{"protocol_version":1,"request_id":"r1","tool":"list","arguments":{},"priority":9}`, "r1", "list", `unknown request field "priority"`},
		{"field in another case", `{"protocol_version":1,"request_id":"r1","Tool":"list","arguments":{}}`, "r1", "", `unknown request field "Tool"`},
		{"protocol_version 2", `{"protocol_version":2,"request_id":"r1","tool":"list","arguments":{}}`, "r1", "list", "protocol_version 2 is not supported; this worker speaks protocol_version 1"},
		{"protocol_version as a string", `{"protocol_version":"1","request_id":"r1","tool":"list","arguments":{}}`, "r1", "list", `protocol_version "1" is not supported`},
		{"protocol_version missing", `{"request_id":"r1","tool":"list","arguments":{}}`, "r1", "list", "protocol_version is missing"},
		{"empty request_id", `{"protocol_version":1,"request_id":"","tool":"list","arguments":{}}`, "", "list", "request_id must be a non-empty string"},
		{"request_id not a string", `{"protocol_version":1,"request_id":7,"tool":"list","arguments":{}}`, "", "list", "request_id must be a non-empty string"},
		{"request_id missing", `{"protocol_version":1,"tool":"list","arguments":{}}`, "", "list", "request_id must be a non-empty string"},
		{"tool missing", `{"protocol_version":1,"request_id":"r1","arguments":{}}`, "r1", "", "tool must be a non-empty string"},
		{"unknown tool", `{"protocol_version":1,"request_id":"r1","tool":"delete","arguments":{}}`, "r1", "delete", `unknown tool "delete"`},
		{"arguments missing", `{"protocol_version":1,"request_id":"r1","tool":"list"}`, "r1", "list", "arguments must be a JSON object"},
		{"arguments null", `{"protocol_version":1,"request_id":"r1","tool":"list","arguments":null}`, "r1", "list", "arguments must be a JSON object"},
		{"arguments array", `{"protocol_version":1,"request_id":"r1","tool":"list","arguments":[]}`, "r1", "list", "arguments must be a JSON object"},
		{"unknown argument", reqJSON("r1", "list", map[string]any{"depth": 2}), "r1", "list", `unknown argument "depth" for list; it takes path, glob, recursive`},
		{"argument in another case", reqJSON("r1", "read", map[string]any{"PATH": "README.md"}), "r1", "read", `unknown argument "PATH" for read`},
		{"required argument missing", reqJSON("r1", "read", map[string]any{}), "r1", "read", "read needs argument path"},
		{"required argument null", reqJSON("r1", "exec", map[string]any{"program": nil}), "r1", "exec", "exec needs argument program"},
		{"argument of another type", reqJSON("r1", "read", map[string]any{"path": 7}), "r1", "read", "argument path of read must be a string, not number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWorker(t.Context(), flags, tt.stdin)
			if r.code != exitMalformed {
				t.Errorf("exit %d, want 2", r.code)
			}
			resp := decodeResponse(t, r.stdout)
			if resp.Status != tools.StatusRejected || resp.Error == nil || resp.Error.Code != tools.CodeInvalidRequest ||
				!strings.Contains(resp.Error.Message, tt.reason) {
				t.Errorf("status %s error %+v, want invalid_request containing %q", resp.Status, resp.Error, tt.reason)
			}
			if resp.RequestID != tt.id || resp.Tool != tt.tool {
				t.Errorf("echoed request_id %q tool %q, want %q %q", resp.RequestID, resp.Tool, tt.id, tt.tool)
			}
		})
	}
}

// TestRunResponseTooLarge reads and prints 1 MiB of control characters,
// which JSON escapes six times over, past the 4 MiB response limit.
func TestRunResponseTooLarge(t *testing.T) {
	dir, flags := workspace(t)
	flags = withPath(flags)
	control := bytes.Repeat([]byte{0x01}, 1<<20)
	if err := os.WriteFile(filepath.Join(dir, "control.txt"), control, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain.txt"), bytes.Repeat([]byte("p"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool string
		args       any
	}{
		{"read", "read", map[string]any{"path": "control.txt", "max_bytes": 1 << 20}},
		{"exec", "exec", map[string]any{"program": "cat", "args": []string{"control.txt"}, "max_output_bytes": 1 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWorker(t.Context(), flags, reqJSON("big-"+tt.name, tt.tool, tt.args))
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			resp := decodeResponse(t, r.stdout)
			if resp.Status != tools.StatusFailed || resp.Output != nil || resp.Error == nil || resp.Error.Code != codeResponseTooLarge ||
				!strings.Contains(resp.Error.Message, "over the 4194304 byte limit") || resp.RequestID != "big-"+tt.name {
				t.Errorf("response = %.400s", r.stdout)
			}
		})
	}
	// 1 MiB that needs no escaping fits.
	r := runWorker(t.Context(), flags, reqJSON("plain", "read", map[string]any{"path": "plain.txt", "max_bytes": 1 << 20}))
	if resp := decodeResponse(t, r.stdout); resp.Status != tools.StatusCompleted {
		t.Errorf("plain 1 MiB read: %s %+v", resp.Status, resp.Error)
	}
}

func TestRespondSizeLimit(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		size int
		want string
	}{
		{maxResponseBytes - 400, tools.StatusCompleted},
		{maxResponseBytes, tools.StatusFailed},
	} {
		out, _ := json.Marshal(map[string]string{"content": strings.Repeat("c", tt.size)})
		b, err := respond(request{RequestID: "r", Tool: "read"}, out, nil, now, now)
		if err != nil {
			t.Fatal(err)
		}
		var resp testResponse
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Status != tt.want || len(b)-1 > maxResponseBytes {
			t.Errorf("output of %d bytes: status %s, response %d bytes", tt.size, resp.Status, len(b))
		}
	}
}

// TestRunFlags: a bad command line is a fatal worker error, exit 1 with the
// reason on stderr and nothing on stdout, since no request was read.
func TestRunFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no flags", nil, exitFatal, "--root is required"},
		{"root missing", []string{"--root", filepath.Join(dir, "nope"), "--profile", "trusted-local"}, exitFatal, "--root must name an existing workspace directory"},
		{"root is a file", []string{"--root", file, "--profile", "trusted-local"}, exitFatal, "not a directory"},
		{"profile missing", []string{"--root", dir}, exitFatal, `--profile "" is not supported: pass --profile trusted-local`},
		{"other profile", []string{"--root", dir, "--profile", "sandboxed"}, exitFatal, `--profile "sandboxed" is not supported`},
		{"plugin", []string{"--root", dir, "--profile", "trusted-local", "--plugin", "/etc/axlr/p.json"}, exitFatal, "--plugin: plugin manifest /etc/axlr/p.json: no such file or directory"},
		{"plugin-env", []string{"--root", dir, "--profile", "trusted-local", "--plugin-env", "p:K=V"}, exitFatal, `--plugin-env "p:K=V": no --plugin has id p`},
		{"env without =", []string{"--root", dir, "--profile", "trusted-local", "--env", "NOVALUE"}, exitFatal, `--env "NOVALUE": want KEY=VALUE`},
		{"env without key", []string{"--root", dir, "--profile", "trusted-local", "--env", "=v"}, exitFatal, `--env "=v": want KEY=VALUE`},
		{"argument", []string{"--root", dir, "--profile", "trusted-local", "request.json"}, exitFatal, `unexpected argument "request.json"`},
		{"unknown flag", []string{"--root", dir, "--profile", "trusted-local", "--verbose"}, exitFatal, "axlr: flag provided but not defined: -verbose\n"},
		{"help", []string{"-h"}, exitOK, "usage: axlr --root DIR --profile trusted-local"},
		{"help lists the flags", []string{"--help"}, exitOK, "-plugin-env value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWorker(t.Context(), tt.args, reqJSON("r", "list", map[string]any{}))
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) || r.stdout != "" {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d and %q", r.code, r.stdout, r.stderr, tt.code, tt.stderr)
			}
		})
	}
}

func TestRunEnv(t *testing.T) {
	_, flags := workspace(t)
	// Nothing of the worker's own environment passes.
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("HOME", "/home/u")
	envOf := func(args []string) string {
		r := runWorker(t.Context(), args, reqJSON("env", "exec", map[string]any{"program": "/usr/bin/env"}))
		resp := decodeResponse(t, r.stdout)
		var out tools.ExecOutput
		if err := json.Unmarshal(resp.Output, &out); err != nil {
			t.Fatalf("output %s: %v", resp.Output, err)
		}
		return out.Stdout
	}
	// --env is the complete environment: without it, no variable at all,
	// not even PATH or HOME.
	off := append(slices.Clone(flags), "--sandbox", "off")
	if got := envOf(off); got != "" {
		t.Errorf("without --env the child gets %q, want no variable", got)
	}
	if got := envOf(append(off, "--env", "A=1", "--env", "B=two=2")); got != "A=1\nB=two=2\n" {
		t.Errorf("with --env the child gets %q", got)
	}
	// A confined child gets its own TMPDIR beside them, and nothing else.
	if abi, _ := sandbox.ABI(); abi > 0 {
		if got := envOf(flags); !strings.HasPrefix(got, "TMPDIR=") || !strings.Contains(got, "axlr-exec-") || strings.Count(got, "\n") != 1 {
			t.Errorf("a confined child without --env gets %q, want its TMPDIR only", got)
		}
	}
	// So a bare program name is not found without a PATH.
	r := runWorker(t.Context(), flags, reqJSON("bare", "exec", map[string]any{"program": "env"}))
	if resp := decodeResponse(t, r.stdout); resp.Error == nil || resp.Error.Code != tools.CodeStartFailed ||
		!strings.Contains(resp.Error.Message, `program "env" was not found in the PATH of the exec environment: it has none`) {
		t.Errorf("bare program without PATH: %s", r.stdout)
	}
}

// TestRunCancel cancels the worker's context, as SIGTERM does, while a
// program runs.
func TestRunCancel(t *testing.T) {
	dir, flags := workspace(t)
	flags = withPath(flags)
	// In the workspace: the sandbox lets the program write nowhere else.
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		cancel()
	}()
	req := reqJSON("cancel-1", "exec", map[string]any{"program": "sh", "args": []string{"-c", `echo up > "$0"; sleep 30`, fifo}})
	r := runWorker(ctx, flags, req)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	resp := decodeResponse(t, r.stdout)
	if resp.Status != tools.StatusCancelled || resp.Error == nil || resp.Error.Code != tools.CodeCancelled ||
		!strings.Contains(resp.Error.Message, `"sh" was cancelled; its process group was killed`) {
		t.Errorf("response = %s", r.stdout)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("input/output error") }

func TestRunIOFailures(t *testing.T) {
	_, flags := workspace(t)
	var stderr bytes.Buffer
	code := run(t.Context(), flags, strings.NewReader(reqJSON("r", "list", map[string]any{})), failingWriter{}, &stderr, time.Now)
	if code != exitFatal || !strings.Contains(stderr.String(), "axlr: write the response: broken pipe") {
		t.Errorf("write failure: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	code = run(t.Context(), flags, failingReader{}, &bytes.Buffer{}, &stderr, time.Now)
	if code != exitFatal || !strings.Contains(stderr.String(), "axlr: read the request from stdin: input/output error") {
		t.Errorf("read failure: exit %d, stderr %q", code, stderr.String())
	}
}

type failingCaller struct{ err error }

func (c failingCaller) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, c.err
}

// TestDispatchErrors covers what no real tool produces: an error that is
// not a *tools.Error is a bug, reported as internal_error.
func TestDispatchErrors(t *testing.T) {
	req := request{RequestID: "r", Tool: "read", Arguments: json.RawMessage(`{}`)}
	_, terr := dispatch(t.Context(), failingCaller{errors.New("boom")}, req)
	if terr == nil || terr.Code != tools.CodeInternalError || terr.Message != "boom" || status(terr) != tools.StatusFailed {
		t.Errorf("plain error = %+v", terr)
	}
	_, terr = dispatch(t.Context(), failingCaller{&tools.Error{Code: tools.CodeConflict, Message: "m"}}, req)
	if terr == nil || terr.Code != tools.CodeConflict {
		t.Errorf("tool error = %+v", terr)
	}
}

// snapshot describes every entry under dir: mode, modification time, and the
// content of a file or the target of a link.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	s := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d", fi.Mode(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		s[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRunPreconditions refuses operations whose precondition fails before
// anything is touched: status rejected with the specific code, exit 0, and
// no entry of the workspace changed (bytes, mode, link target, and the
// modification time of every directory).
func TestRunPreconditions(t *testing.T) {
	dir, flags := workspace(t)
	full := "X" + strings.Repeat("f", 1<<20-1)
	for _, f := range []struct {
		name, content string
		mode          os.FileMode
	}{
		{"f.txt", "one two two aaa\n", 0o640},
		{"full.txt", full, 0o600},
		{"run.sh", "#!/bin/sh\n", 0o751},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, f.name), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	digest := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	stale := digest("one two two aaa\nstale\n")
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		code     string
		contains string
	}{
		{"create over an existing file", "write", map[string]any{"path": "f.txt", "content": "new", "mode": "create"}, tools.CodeConflict, `"f.txt" already exists`},
		{"create over a directory", "write", map[string]any{"path": "sub", "content": "new", "mode": "create"}, tools.CodeConflict, `"sub" already exists`},
		{"create over a link", "write", map[string]any{"path": "link", "content": "new", "mode": "create"}, tools.CodeConflict, `"link" already exists`},
		{"create below a file", "write", map[string]any{"path": "f.txt/x", "content": "new", "mode": "create"}, tools.CodeConflict, `a parent of "f.txt/x" is not a directory`},
		{"replace with a stale expected_sha256", "write", map[string]any{"path": "f.txt", "content": "new", "mode": "replace", "expected_sha256": stale}, tools.CodeConflict, "not the expected " + stale},
		{"replace of a directory", "write", map[string]any{"path": "sub", "content": "new", "mode": "replace", "expected_sha256": stale}, tools.CodeNotRegularFile, `"sub" is a directory`},
		{"edit with a stale expected_sha256", "edit", map[string]any{"path": "f.txt", "old_text": "one", "new_text": "1", "expected_sha256": stale}, tools.CodeConflict, "not the expected " + stale},
		{"old_text found zero times", "edit", map[string]any{"path": "f.txt", "old_text": "three", "new_text": "3"}, tools.CodeConflict, `old_text does not occur in "f.txt"`},
		{"old_text found twice", "edit", map[string]any{"path": "f.txt", "old_text": "two", "new_text": "2"}, tools.CodeConflict, `old_text occurs 2 times in "f.txt"`},
		{"old_text found twice, overlapping", "edit", map[string]any{"path": "f.txt", "old_text": "aa", "new_text": "b"}, tools.CodeConflict, "overlapping occurrences count"},
		{"edit of a directory", "edit", map[string]any{"path": "sub", "old_text": "a", "new_text": "b"}, tools.CodeNotRegularFile, `"sub" is a directory, not a regular file`},
		{"edit of a symbolic link", "edit", map[string]any{"path": "link", "old_text": "one", "new_text": "1"}, tools.CodeNotRegularFile, `"link" is a symbolic link, not a regular file`},
		{"edit of a named pipe", "edit", map[string]any{"path": "fifo", "old_text": "a", "new_text": "b"}, tools.CodeNotRegularFile, `"fifo" is a named pipe, not a regular file`},
		{"edit whose result passes 1 MiB", "edit", map[string]any{"path": "full.txt", "old_text": "X", "new_text": "XY"}, tools.CodeFileTooLarge, `the edit would make "full.txt" 1048577 bytes, over the 1048576 byte editable limit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Directories get an old modification time, so that an entry
			// created or removed in them, a temporary file included, shows.
			old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
			for _, d := range []string{dir, filepath.Join(dir, "sub")} {
				if err := os.Chtimes(d, old, old); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			r := runWorker(t.Context(), flags, reqJSON("pre-1", tt.tool, tt.args))
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			resp := decodeResponse(t, r.stdout)
			if resp.Status != tools.StatusRejected || resp.Error == nil || resp.Error.Code != tt.code ||
				!strings.Contains(resp.Error.Message, tt.contains) || resp.RequestID != "pre-1" || resp.Tool != tt.tool {
				t.Errorf("response = %s\nwant rejected, %s containing %q", r.stdout, tt.code, tt.contains)
			}
			after := snapshot(t, dir)
			for p := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("%s appeared: %q", p, after[p])
				}
			}
			for _, p := range slices.Sorted(maps.Keys(before)) {
				if after[p] != before[p] {
					t.Errorf("%s changed: %q, now %q", p, before[p], after[p])
				}
			}
		})
	}
}

// TestRunSandbox: --sandbox confines exec children over --root as axlrd
// does: a write outside the workspace is refused under auto and runs
// under off; a mode it does not know is a bad command line.
func TestRunSandbox(t *testing.T) {
	if abi, err := sandbox.ABI(); abi < 1 {
		t.Skipf("the kernel offers no Landlock: %v", err)
	}
	_, flags := workspace(t)
	flags = withPath(flags)
	outside := filepath.Join(t.TempDir(), "out.txt")
	write := reqJSON("w", "exec", map[string]any{"program": "sh", "args": []string{"-c", "echo x > " + outside}})
	for _, tt := range []struct {
		mode    []string
		exit    int
		sandbox string
	}{{nil, 2, "landlock ABI"}, {[]string{"--sandbox", "off"}, 0, "none: tools.sandbox is off"}} {
		r := runWorker(t.Context(), append(slices.Clone(flags), tt.mode...), write)
		var out tools.ExecOutput
		if err := json.Unmarshal(decodeResponse(t, r.stdout).Output, &out); err != nil {
			t.Fatal(err)
		}
		if out.ExitCode != tt.exit || !strings.HasPrefix(out.Sandbox, tt.sandbox) {
			t.Errorf("%v: %+v", tt.mode, out)
		}
	}
	if r := runWorker(t.Context(), append(flags, "--sandbox", "strict"), write); r.code != exitFatal || !strings.Contains(r.stderr, `--sandbox: unknown sandbox mode "strict": use auto, required or off`) {
		t.Errorf("--sandbox strict: exit %d %s", r.code, r.stderr)
	}
}
