package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBinary builds axlr and checks what only main wires: SIGTERM cancels
// the operation, a bad command line is the process's exit 1, and a closed
// stdout is a write failure (exit 1), not a death by SIGPIPE.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "axlr")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	flags := []string{"--root", dir, "--profile", "trusted-local", "--env", "PATH=" + os.Getenv("PATH")}

	t.Run("SIGTERM cancels", func(t *testing.T) {
		// In the workspace: the sandbox lets the program write nowhere else.
		fifo := filepath.Join(dir, "started")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, flags...)
		cmd.Stdin = strings.NewReader(reqJSON("term-1", "exec", map[string]any{"program": "sh", "args": []string{"-c", `echo up > "$0"; sleep 30`, fifo}}))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		opened := make(chan struct{})
		go func() {
			// Read the line: a reader gone before the program writes would
			// kill it with SIGPIPE.
			if f, err := os.Open(fifo); err == nil {
				bufio.NewReader(f).ReadString('\n')
				f.Close()
			}
			close(opened)
		}()
		select {
		case <-opened:
		case err := <-done:
			// Release the reader, then report.
			if f, ferr := os.OpenFile(fifo, os.O_RDWR, 0); ferr == nil {
				f.Close()
			}
			t.Fatalf("worker exited before the program started: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("exit: %v\n%s", err, stderr.String())
		}
		var resp testResponse
		if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
			t.Fatalf("response %q: %v", stdout.String(), err)
		}
		if resp.Status != "cancelled" || resp.Error == nil || resp.Error.Code != "cancelled" || resp.RequestID != "term-1" {
			t.Errorf("response = %s", stdout.String())
		}
	})

	t.Run("bad command line", func(t *testing.T) {
		cmd := exec.Command(bin, "--root", dir, "--profile", "sandboxed")
		cmd.Stdin = strings.NewReader(reqJSON("flags-1", "list", map[string]any{}))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitFatal || stdout.Len() != 0 ||
			stderr.String() != "axlr: --profile \"sandboxed\" is not supported: pass --profile trusted-local\n" {
			t.Errorf("exit %v, stdout %q, stderr %q; want exit 1 and nothing on stdout", err, stdout.String(), stderr.String())
		}
	})

	t.Run("closed stdout", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		defer w.Close()
		cmd := exec.Command(bin, flags...)
		cmd.Stdin = strings.NewReader(reqJSON("pipe-1", "list", map[string]any{}))
		cmd.Stdout = w
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitFatal || !strings.Contains(stderr.String(), "axlr: write the response") {
			t.Errorf("exit %v, stderr %q; want exit 1", err, stderr.String())
		}
	})
}
