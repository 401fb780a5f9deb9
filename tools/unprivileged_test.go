package tools

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnprivileged covers what the OS refuses to an ordinary user:
// permission_denied and a directory search cannot read. Run as root, it
// reruns itself as nobody, since root reads anything.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() == 0 {
		runAsNobody(t, "TestUnprivileged")
		return
	}
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "closed.txt"), "x")
	writeFile(t, filepath.Join(dir, "locked", "inside.txt"), "needle")
	writeFile(t, filepath.Join(dir, "open.txt"), "needle")
	mkdir(t, filepath.Join(dir, "readonly"))
	for p, mode := range map[string]os.FileMode{"closed.txt": 0, "locked": 0, "readonly": 0o555} {
		if err := os.Chmod(filepath.Join(dir, p), mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(dir, p), 0o755) })
	}

	tests := []struct {
		name string
		tool string
		args map[string]any
		msg  string
	}{
		{"read", Read, map[string]any{"path": "closed.txt"}, `path "closed.txt": permission denied`},
		{"edit", Edit, map[string]any{"path": "closed.txt", "old_text": "x", "new_text": "y"}, `path "closed.txt": permission denied`},
		{"replace", Write, map[string]any{"path": "closed.txt", "content": "y", "mode": "replace", "expected_sha256": digestOf("x")}, `path "closed.txt": permission denied`},
		{"create in a read-only directory", Write, map[string]any{"path": "readonly/new.txt", "content": "y", "mode": "create"}, `path "readonly/new.txt": permission denied`},
		{"list an unreadable directory", List, map[string]any{"path": "locked"}, `path "locked": permission denied`},
		{"search an unreadable directory", Search, map[string]any{"pattern": "needle", "path": "locked"}, `path "locked": permission denied`},
		{"search an unreadable file", Search, map[string]any{"pattern": "needle", "path": "closed.txt"}, `path "closed.txt": permission denied`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.Call(t.Context(), tt.tool, args(t, tt.args))
			wantError(t, err, CodePermissionDenied, tt.msg)
		})
	}

	t.Run("search counts an unreadable directory and file as skipped", func(t *testing.T) {
		got := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "needle"})
		if got.FilesSkipped != 2 || got.FilesScanned != 1 || len(got.Matches) != 1 || got.Matches[0].Path != "open.txt" {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("list shows an unreadable directory without entering it", func(t *testing.T) {
		got := mustCall[ListOutput](t, w, List, map[string]any{"recursive": true})
		if keys := strings.Join(entryKeys(got.Entries), " "); keys != "closed.txt:file:1 locked:dir open.txt:file:6 readonly:dir" {
			t.Errorf("entries = %s", keys)
		}
	})
}

// runAsNobody reruns the test binary as user nobody with only test name
// selected, and fails with its output if it fails.
func runAsNobody(t *testing.T, name string) {
	t.Helper()
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	mkdir(t, tmp)
	for _, p := range []string{filepath.Dir(base), base, tmp} {
		mode := os.FileMode(0o755)
		if p == tmp {
			mode = 0o777 | os.ModeSticky
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(base, "tools.test")
	copyExecutable(t, os.Args[0], bin)
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("cannot run as nobody: %v", err)
	}
	t.Logf("as nobody:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s as nobody: %v (output above)", name, err)
	}
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
