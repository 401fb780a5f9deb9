package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mainEnv, set to 1, makes this test binary axlrd.
const mainEnv = "AXLRD_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestExitCodes drives the binary: help is 0, a bad command line 2, and a
// part that does not open 1, with a message naming it. None of these
// starts a Temporal server.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"daemon": `), 0o600); err != nil {
		t.Fatal(err)
	}
	held := filepath.Join(dir, "held")
	if err := os.MkdirAll(held, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(held, "axlrd.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	tests := []struct {
		name   string
		args   []string
		env    []string
		code   int
		stderr string
	}{
		{name: "help", args: []string{"--help"}, code: 0, stderr: "Usage: axlrd [flags]"},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus"},
		{name: "an argument", args: []string{"serve"}, code: 2, stderr: `axlrd: unexpected argument "serve" (axlrd takes flags only; see --help)`},
		{name: "bad settings file", args: []string{"--settings", bad}, code: 1, stderr: "axlrd: open settings: settings " + bad + ": not valid JSON"},
		{name: "bad settings file by AXLR_SETTINGS", env: []string{"AXLR_SETTINGS=" + bad}, code: 1, stderr: "axlrd: open settings: settings " + bad + ": not valid JSON"},
		{name: "bad variable", env: []string{"AXLR_LOG_LEVEL=loud"}, code: 1, stderr: `axlrd: open settings: AXLR_LOG_LEVEL "loud": use trace, debug, info, warn, error`},
		{name: "held state dir", args: []string{"--state-dir", held}, code: 1,
			stderr: fmt.Sprintf("axlrd: lock the state dir: state dir %s is in use by another axlrd (pid %d): stop it, or pass --state-dir for a separate one", held, os.Getpid())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tt.args...)
			cmd.Env = append([]string{mainEnv + "=1", "HOME=" + dir, "PATH=" + os.Getenv("PATH"), "AXLR_HOST_ID=unit",
				"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_STATE_HOME=" + filepath.Join(dir, "state")}, tt.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if exit, ok := err.(*exec.ExitError); ok {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
