package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/sandbox"
)

// confinedFixture is newFixture with a sandbox that confines, or a skip
// where the kernel offers no Landlock.
func confinedFixture(t *testing.T, box *Sandbox) *fixture {
	t.Helper()
	abi, err := sandbox.ABI()
	if abi < 1 {
		t.Skipf("the kernel offers no Landlock: %v", err)
	}
	box.Plan = sandbox.Plan{ABI: abi}
	return newFixture(t, Options{Sandbox: box})
}

// TestExecConfined: under the sandbox a command writes in the workspace
// and its TMPDIR, never outside; a read of the file beside the workspace
// fails with the command's own error and AXLR's line; the output says how
// it ran.
func TestExecConfined(t *testing.T) {
	f := confinedFixture(t, &Sandbox{})
	out := mustCall[ExecOutput](t, f.w, Exec, ExecArgs{Program: "/bin/sh", Args: []string{"-c", `echo in > in.txt && echo t > "$TMPDIR/t" && cat in.txt "$TMPDIR/t"`}})
	if out.ExitCode != 0 || out.Stdout != "in\nt\n" || !strings.HasPrefix(out.Sandbox, "landlock ABI ") || out.SandboxNote != "" {
		t.Fatalf("a write in the workspace: %+v", out)
	}
	for _, script := range []string{"cat " + filepath.Join(f.outside, "secret.txt"), "echo x > " + filepath.Join(f.outside, "new.txt")} {
		out := mustCall[ExecOutput](t, f.w, Exec, ExecArgs{Program: "/bin/sh", Args: []string{"-c", script}})
		if out.ExitCode == 0 || strings.Contains(out.Stdout, secret) || !strings.Contains(out.Stderr, "Permission denied") || !strings.Contains(out.SandboxNote, "tools.sandbox_read") {
			t.Fatalf("%s: %+v", script, out)
		}
	}
	if _, err := os.Stat(filepath.Join(f.outside, "new.txt")); err == nil {
		t.Fatal("the write outside the workspace landed")
	}
}

// TestExecGoTestConfined: go test runs under the sandbox when the
// toolchain and the module cache are readable and the build cache
// writable.
func TestExecGoTestConfined(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed")
	}
	env := map[string]string{}
	for _, k := range []string{"GOROOT", "GOMODCACHE", "GOCACHE"} {
		v, err := exec.Command(goBin, "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env[k] = strings.TrimSpace(string(v))
	}
	f := confinedFixture(t, &Sandbox{Read: []string{env["GOROOT"], env["GOMODCACHE"]}, Write: []string{env["GOCACHE"]}})
	writeFile(t, filepath.Join(f.dir, "go.mod"), "module example.com/m\n\ngo 1.26\n")
	writeFile(t, filepath.Join(f.dir, "m_test.go"), "package m\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n")
	f.w.env = append(f.w.env, "GOCACHE="+env["GOCACHE"], "GOMODCACHE="+env["GOMODCACHE"], "GOTOOLCHAIN=local", "GOFLAGS=-count=1", "HOME="+t.TempDir())
	out := mustCall[ExecOutput](t, f.w, Exec, ExecArgs{Program: goBin, Args: []string{"test", "./..."}, TimeoutMS: new(int64(120_000))})
	if out.ExitCode != 0 || !strings.Contains(out.Stdout, "ok") {
		t.Fatalf("go test under the sandbox: %+v", out)
	}
}

// TestExecSandboxRefused: a required sandbox the kernel cannot give
// refuses every command, with the reason.
func TestExecSandboxRefused(t *testing.T) {
	_, err := sandbox.Decide(sandbox.Required, 0, nil)
	f := newFixture(t, Options{Sandbox: &Sandbox{Refused: err.Error()}})
	_, cerr := call[ExecOutput](t, f.w, Exec, ExecArgs{Program: "/bin/true"})
	if cerr == nil || !strings.Contains(cerr.Error(), "tools.sandbox is required, but this kernel cannot confine commands") {
		t.Fatalf("a command under a sandbox the kernel cannot give: %v", cerr)
	}
}

// TestExecHomeConfined: with the sandbox NewSandbox builds for a person's
// HOME, git reads their global configuration (it refuses to run when that
// file exists and cannot be read) and go its env file, while the
// credentials beside them stay unread.
func TestExecHomeConfined(t *testing.T) {
	if abi, err := sandbox.ABI(); abi < 1 {
		t.Skipf("the kernel offers no Landlock: %v", err)
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Person\n\temail = p@example.com\n")
	writeFile(t, filepath.Join(home, ".git-credentials"), "https://p:"+secret+"@github.com\n")
	writeFile(t, filepath.Join(home, ".config", "git", "credentials"), "https://p:"+secret+"@example.com\n")
	env := append(RestrictedEnv(os.Environ()), "HOME="+home, "XDG_CONFIG_HOME=")
	box, warning := NewSandbox(SandboxConfig{Mode: sandbox.Required}, env)
	if warning != "" {
		t.Fatal(warning)
	}
	f := newFixture(t, Options{Env: env, Sandbox: box})
	out := mustCall[ExecOutput](t, f.w, Exec, ExecArgs{Program: gitBin, Args: []string{"init", "-q", "."}})
	if out.ExitCode != 0 {
		t.Fatalf("git init under the sandbox: %+v", out)
	}
	out = mustCall[ExecOutput](t, f.w, Exec, ExecArgs{Program: gitBin, Args: []string{"config", "user.name"}})
	if out.ExitCode != 0 || out.Stdout != "Person\n" {
		t.Fatalf("git config user.name under the sandbox: %+v", out)
	}
	for _, p := range []string{".git-credentials", ".config/git/credentials"} {
		out := mustCall[ExecOutput](t, f.w, Exec, ExecArgs{Program: "/bin/cat", Args: []string{filepath.Join(home, p)}})
		if out.ExitCode == 0 || strings.Contains(out.Stdout, secret) || !strings.Contains(out.Stderr, "Permission denied") {
			t.Fatalf("cat ~/%s: %+v", p, out)
		}
	}
	if goBin, err := exec.LookPath("go"); err == nil {
		writeFile(t, filepath.Join(home, ".config", "go", "env"), "GOFLAGS=-mod=mod\n")
		out := mustCall[ExecOutput](t, f.w, Exec, ExecArgs{Program: goBin, Args: []string{"env", "GOFLAGS"}})
		if out.ExitCode != 0 || out.Stdout != "-mod=mod\n" {
			t.Fatalf("go env under the sandbox: %+v", out)
		}
	}
}
