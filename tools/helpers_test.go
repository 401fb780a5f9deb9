package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "CANARY-0b7f3e-outside-the-workspace"

// fixture is a workspace beside an outside directory holding a secret file,
// with symbolic links from the workspace to both sides.
type fixture struct {
	w       *Workspace
	dir     string // the workspace
	outside string
}

// newFixture builds:
//
//	outside/secret.txt         the canary
//	ws/a.txt                   "hello\n"
//	ws/sub/b.txt               "inside b\n"
//	ws/in-file -> a.txt        link staying inside
//	ws/in-dir -> sub           link staying inside
//	ws/out-file -> ../outside/secret.txt
//	ws/out-dir -> ../outside
//	ws/abs-out -> <abs>/outside/secret.txt
//	ws/abs-in -> <abs>/ws/a.txt  absolute link to inside (os.Root refuses it)
func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	mkdir(t, f.outside)
	writeFile(t, filepath.Join(f.outside, "secret.txt"), secret+"\n")
	mkdir(t, filepath.Join(f.dir, "sub"))
	writeFile(t, filepath.Join(f.dir, "a.txt"), "hello\n")
	writeFile(t, filepath.Join(f.dir, "sub", "b.txt"), "inside b\n")
	symlink(t, "a.txt", filepath.Join(f.dir, "in-file"))
	symlink(t, "sub", filepath.Join(f.dir, "in-dir"))
	symlink(t, "../outside/secret.txt", filepath.Join(f.dir, "out-file"))
	symlink(t, "../outside", filepath.Join(f.dir, "out-dir"))
	symlink(t, filepath.Join(f.outside, "secret.txt"), filepath.Join(f.dir, "abs-out"))
	symlink(t, filepath.Join(f.dir, "a.txt"), filepath.Join(f.dir, "abs-in"))
	w, err := Open(f.dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	f.w = w
	return f
}

// newWorkspace opens an empty workspace.
func newWorkspace(t testing.TB) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

func mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// args encodes a tool's arguments: a string is taken as JSON, anything else
// is marshalled.
func args(t testing.TB, v any) json.RawMessage {
	t.Helper()
	if s, ok := v.(string); ok {
		return json.RawMessage(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call runs a tool and decodes its output into a value of type O.
func call[O any](t testing.TB, w *Workspace, tool string, a any) (O, error) {
	t.Helper()
	var out O
	raw, err := w.Call(context.Background(), tool, args(t, a))
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode %s output %s: %v", tool, raw, err)
	}
	return out, nil
}

func decode[O any](t testing.TB, raw []byte) O {
	t.Helper()
	var out O
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return out
}

// mustCall runs a tool that must succeed.
func mustCall[O any](t testing.TB, w *Workspace, tool string, a any) O {
	t.Helper()
	out, err := call[O](t, w, tool, a)
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args(t, a), err)
	}
	return out
}

// wantError checks that err is an *Error with code whose message contains
// every one of parts.
func wantError(t testing.TB, err error, code string, parts ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *Error %s", err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%s), want %s", e.Code, e.Message, code)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Fatalf("message %q does not contain %q", e.Message, p)
		}
	}
}

func ptr[T any](v T) *T { return &v }
