package tools

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExec(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "sub", "keep"), "")
	writeFile(t, filepath.Join(dir, "bin", "hello.sh"), "#!/bin/sh\necho hello \"$@\"\n")
	if err := os.Chmod(filepath.Join(dir, "bin", "hello.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Like a virtualenv's bin/python, a link to a program outside.
	symlink(t, "/bin/sh", filepath.Join(dir, "bin", "sh"))
	tests := []struct {
		name string
		args map[string]any
		want ExecOutput
	}{
		{"exit code", map[string]any{"program": "sh", "args": []string{"-c", "echo out; echo err >&2; exit 3"}},
			ExecOutput{ExitCode: 3, Stdout: "out\n", Stderr: "err\n", CapturedBytes: 8}},
		{"argv without a shell", map[string]any{"program": "echo", "args": []string{"a  b", "$HOME", "*"}},
			ExecOutput{Stdout: "a  b $HOME *\n", CapturedBytes: 13}},
		{"stdin", map[string]any{"program": "cat", "stdin": "hello\nworld"},
			ExecOutput{Stdout: "hello\nworld", CapturedBytes: 11}},
		{"stdin the program does not read", map[string]any{"program": "true", "stdin": strings.Repeat("s", 1<<20)},
			ExecOutput{}},
		{"absolute program", map[string]any{"program": "/bin/sh", "args": []string{"-c", "exit 0"}},
			ExecOutput{}},
		{"program relative to the workspace", map[string]any{"program": "./bin/hello.sh", "args": []string{"x"}},
			ExecOutput{Stdout: "hello x\n", CapturedBytes: 8}},
		{"program relative to cwd", map[string]any{"program": "./hello.sh", "cwd": "bin"},
			ExecOutput{Stdout: "hello\n", CapturedBytes: 6}},
		{"program path without dot", map[string]any{"program": "bin/hello.sh"},
			ExecOutput{Stdout: "hello\n", CapturedBytes: 6}},
		{"program linked to a program outside", map[string]any{"program": "bin/sh", "args": []string{"-c", "echo linked"}},
			ExecOutput{Stdout: "linked\n", CapturedBytes: 7}},
		{"invalid UTF-8 output is replaced", map[string]any{"program": "printf", "args": []string{`\377ok`}},
			ExecOutput{Stdout: "\uFFFDok", CapturedBytes: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCall[ExecOutput](t, w, Exec, tt.args)
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestExecCwd(t *testing.T) {
	w, dir := newWorkspace(t)
	mkdir(t, filepath.Join(dir, "sub", "deeper"))
	writeFile(t, filepath.Join(dir, "a.txt"), "")
	for cwd, want := range map[string]string{"": dir, ".": dir, "sub": dir + "/sub", "sub/deeper/": dir + "/sub/deeper", "sub/../sub": dir + "/sub"} {
		got := mustCall[ExecOutput](t, w, Exec, map[string]any{"program": "pwd", "cwd": cwd})
		if strings.TrimSpace(got.Stdout) != mustEval(t, want) {
			t.Errorf("pwd in %q = %q, want %s", cwd, got.Stdout, want)
		}
	}
	_, err := call[ExecOutput](t, w, Exec, map[string]any{"program": "pwd", "cwd": "a.txt"})
	wantError(t, err, CodeNotFound, `cwd "a.txt" is not a directory`)
	_, err = call[ExecOutput](t, w, Exec, map[string]any{"program": "pwd", "cwd": "nope"})
	wantError(t, err, CodeNotFound, `cwd "nope" does not exist`)
}

func TestExecOutputCap(t *testing.T) {
	w, _ := newWorkspace(t)
	yes := func(n int) map[string]any {
		return map[string]any{"program": "sh", "args": []string{"-c", "yes | head -c " + strconv.Itoa(n)}}
	}
	withCap := func(a map[string]any, c int) map[string]any { a["max_output_bytes"] = c; return a }

	got := mustCall[ExecOutput](t, w, Exec, withCap(yes(300000), 1000))
	if got.CapturedBytes != 1000 || got.DiscardedBytes != 299000 || len(got.Stdout) != 1000 || !got.Truncated {
		t.Errorf("cap 1000: captured %d discarded %d stdout %d truncated %v", got.CapturedBytes, got.DiscardedBytes, len(got.Stdout), got.Truncated)
	}
	got = mustCall[ExecOutput](t, w, Exec, yes(300000))
	if got.CapturedBytes != 256<<10 || got.DiscardedBytes != 300000-256<<10 || !got.Truncated {
		t.Errorf("default cap: captured %d discarded %d", got.CapturedBytes, got.DiscardedBytes)
	}
	got = mustCall[ExecOutput](t, w, Exec, withCap(yes(2<<20), 1<<20))
	if got.CapturedBytes != 1<<20 || got.DiscardedBytes != 1<<20 {
		t.Errorf("cap 1 MiB: captured %d discarded %d", got.CapturedBytes, got.DiscardedBytes)
	}
	got = mustCall[ExecOutput](t, w, Exec, withCap(yes(10), 0))
	if got.CapturedBytes != 0 || got.DiscardedBytes != 10 || got.Stdout != "" || !got.Truncated {
		t.Errorf("cap 0: %+v", got)
	}
	got = mustCall[ExecOutput](t, w, Exec, yes(10))
	if got.CapturedBytes != 10 || got.DiscardedBytes != 0 || got.Truncated {
		t.Errorf("under the cap: %+v", got)
	}
	// stdout and stderr share the cap.
	got = mustCall[ExecOutput](t, w, Exec, map[string]any{"program": "sh", "args": []string{"-c", "printf aaaa; printf bbbb >&2"}, "max_output_bytes": 6})
	if got.CapturedBytes != 6 || got.DiscardedBytes != 2 || len(got.Stdout)+len(got.Stderr) != 6 {
		t.Errorf("combined cap: %+v", got)
	}
}

// TestExecBackgroundChildHoldsPipes runs a program that exits while a
// background child keeps its stdout open.
func TestExecBackgroundChildHoldsPipes(t *testing.T) {
	w, _ := newWorkspace(t)
	got := mustCall[ExecOutput](t, w, Exec, map[string]any{"program": "sh", "args": []string{"-c", "sleep 30 & echo $!"}})
	pid, err := strconv.Atoi(strings.TrimSpace(got.Stdout))
	if err != nil {
		t.Fatalf("stdout %q: %v", got.Stdout, err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if got.ExitCode != 0 || !got.Truncated || got.DiscardedBytes != 0 {
		t.Errorf("got %+v, want exit 0 and truncated", got)
	}
}

func TestExecTimeout(t *testing.T) {
	w, _ := newWorkspace(t)
	_, err := call[ExecOutput](t, w, Exec, map[string]any{"program": "sleep", "args": []string{"5"}, "timeout_ms": 50})
	wantError(t, err, CodeTimeout, `"sleep" did not finish within 50 ms; its process group was killed`)
	if s := err.(*Error).Status(); s != StatusTimedOut {
		t.Errorf("status = %s", s)
	}
	// The whole group goes, a background child holding the pipes included.
	_, err = call[ExecOutput](t, w, Exec, map[string]any{"program": "sh", "args": []string{"-c", "sleep 5 & sleep 5"}, "timeout_ms": 50})
	wantError(t, err, CodeTimeout, `"sh" did not finish within 50 ms`)
}

// TestExecCancel cancels a run once the program has started a background
// child, and checks that the child's whole process group was killed.
func TestExecCancel(t *testing.T) {
	w, _ := newWorkspace(t)
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pids := make(chan int, 1)
	go func() {
		// Opening blocks until the program opens the FIFO for writing.
		f, err := os.Open(fifo)
		if err != nil {
			t.Error(err)
			pids <- 0
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		pid, _ := strconv.Atoi(strings.TrimSpace(line))
		pids <- pid
		cancel()
	}()
	a := args(t, map[string]any{"program": "sh", "args": []string{"-c", `sleep 30 & echo $! > "$0"; wait`, fifo}})
	_, err := w.Call(ctx, Exec, a)
	wantError(t, err, CodeCancelled, `"sh" was cancelled; its process group was killed`)
	pid := <-pids
	if pid == 0 {
		t.Fatal("no pid from the program")
	}
	waitDead(t, pid)
}

// waitDead waits until process pid is gone or a zombie.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err == nil {
			// The state follows the parenthesized command name.
			fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X") {
				return
			}
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d of the cancelled group is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExecFailures(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "data.txt"), "not a program")
	writeFile(t, filepath.Join(dir, "bin", "tool"), "#!/bin/sh\necho tool\n")
	writeFile(t, filepath.Join(dir, "bin", "garbage"), "\x00\x01 not a program")
	for _, p := range []string{"tool", "garbage"} {
		if err := os.Chmod(filepath.Join(dir, "bin", p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args map[string]any
		code string
		msg  string
	}{
		{"unknown program", map[string]any{"program": "no-such-program-axlr"}, CodeStartFailed, `program "no-such-program-axlr" was not found in the PATH of the exec environment`},
		{"not executable", map[string]any{"program": "./data.txt"}, CodeStartFailed, `program "./data.txt" cannot be run: permission denied`},
		{"missing in the workspace", map[string]any{"program": "./missing.sh"}, CodeStartFailed, `program "./missing.sh" cannot be run: no such file or directory`},
		{"missing absolute", map[string]any{"program": "/nonexistent/prog"}, CodeStartFailed, `program "/nonexistent/prog" cannot be run`},
		{"a directory", map[string]any{"program": "./bin"}, CodeStartFailed, `program "./bin" cannot be run: is a directory`},
		{"not a program format", map[string]any{"program": "bin/garbage"}, CodeStartFailed, `start "bin/garbage": exec format error`},
		{"killed by a signal", map[string]any{"program": "sh", "args": []string{"-c", "kill -9 $$"}}, CodeProcessError, `"sh" was terminated by signal 9 (killed)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call[ExecOutput](t, w, Exec, tt.args)
			wantError(t, err, tt.code, tt.msg)
		})
	}

	// A relative PATH entry is ignored: it would resolve against cwd.
	rel, err := Open(dir, Options{Env: []string{"PATH=bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	_, err = call[ExecOutput](t, rel, Exec, map[string]any{"program": "tool"})
	wantError(t, err, CodeStartFailed, `program "tool" was not found in the PATH`)
	abs, err := Open(dir, Options{Env: []string{"PATH=/nonexistent:" + filepath.Join(dir, "bin")}})
	if err != nil {
		t.Fatal(err)
	}
	defer abs.Close()
	if got := mustCall[ExecOutput](t, abs, Exec, map[string]any{"program": "tool"}); got.Stdout != "tool\n" {
		t.Errorf("tool from the child's PATH: %+v", got)
	}
}

func TestExecEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-should-not-pass")
	t.Setenv("AXLR_TEST_TOKEN", "tok")
	t.Setenv("GOFLAGS", "-count=1")
	envLines := func(w *Workspace, program string) []string {
		got := mustCall[ExecOutput](t, w, Exec, map[string]any{"program": program})
		return strings.Fields(got.Stdout)
	}

	w, _ := newWorkspace(t) // Options{}: the restricted environment of this process
	lines := envLines(w, "env")
	for _, l := range lines {
		if strings.HasPrefix(l, "OPENAI_API_KEY=") || strings.HasPrefix(l, "AXLR_TEST_TOKEN=") {
			t.Errorf("secret passed to the child: %s", l)
		}
	}
	if !slices.Contains(lines, "GOFLAGS=-count=1") || !slices.Contains(lines, "PATH="+os.Getenv("PATH")) {
		t.Errorf("allowed variables missing from %v", lines)
	}

	dir := t.TempDir()
	set, err := Open(dir, Options{Env: []string{"PATH=/usr/bin:/bin", "ONLY=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if got := envLines(set, "env"); !slices.Equal(got, []string{"PATH=/usr/bin:/bin", "ONLY=1"}) {
		t.Errorf("env with Options.Env = %v", got)
	}

	empty, err := Open(dir, Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if got := envLines(empty, "/usr/bin/env"); len(got) != 0 {
		t.Errorf("env with an empty Options.Env = %v", got)
	}
	_, err = call[ExecOutput](t, empty, Exec, map[string]any{"program": "env"})
	wantError(t, err, CodeStartFailed, `program "env" was not found in the PATH of the exec environment: it has none; name the program by its path`)
}
