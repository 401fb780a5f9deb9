package sandbox

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// confined runs sh -c script under rules that read the system and dir and
// write dir, with the test binary as the launcher.
func confined(t *testing.T, dir, script string, connect ...uint16) (string, error) {
	t.Helper()
	if abi, err := ABI(); abi < 1 {
		t.Skipf("the kernel offers no Landlock: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	if err := Wrap(cmd, Rules{Read: append(SystemReads, dir), Write: []string{dir}, Connect: connect}); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestWrites: a confined command writes in its workspace, not outside.
func TestWrites(t *testing.T) {
	work, outside := t.TempDir(), t.TempDir()
	if out, err := confined(t, work, "echo in > in.txt && cat in.txt"); err != nil || out != "in\n" {
		t.Fatalf("a write in the workspace: %v %q", err, out)
	}
	out, err := confined(t, work, "echo out > "+filepath.Join(outside, "out.txt"))
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("a write outside the workspace: %v %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the write outside landed: %v", err)
	}
	if Denied(out) == "" {
		t.Fatalf("no sandbox line for %q", out)
	}
}

// TestReads: the person's keys and axlrd's state are not readable.
func TestReads(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	key := filepath.Join(home, ".ssh", "id_rsa")
	state := filepath.Join(home, ".local", "state", "axlr", "temporal.db")
	for _, p := range []string{key, state} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{key, state} {
		out, err := confined(t, work, "cat "+p)
		if err == nil || strings.Contains(out, "secret") || !strings.Contains(out, "Permission denied") {
			t.Fatalf("cat %s: %v %q", p, err, out)
		}
	}
}

// TestConnect: on ABI 4 and later a command connects only to the ports
// listed, or anywhere with the network open.
func TestConnect(t *testing.T) {
	if abi, _ := ABI(); abi < 4 {
		t.Skipf("Landlock ABI %d has no TCP rules (4 adds them)", abi)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: its /dev/tcp makes the connect")
	}
	script := bash + " -c 'exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + "'"
	if out, err := confined(t, t.TempDir(), script); err == nil {
		t.Fatalf("a connect to an unlisted port went through: %q", out)
	}
	if out, err := confined(t, t.TempDir(), script, uint16(port)); err != nil {
		t.Fatalf("a connect to a listed port: %v %q", err, out)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	if err := Wrap(cmd, Rules{Read: SystemReads, OpenNetwork: true}); err != nil {
		t.Fatal(err)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a connect with the network open: %v %q", err, out)
	}
}

// TestDecide: what each mode does with and without Landlock.
func TestDecide(t *testing.T) {
	gone := errors.New("landlock_create_ruleset: function not implemented")
	for _, tt := range []struct {
		mode   Mode
		abi    int
		status string
		err    string
	}{
		{Auto, 7, "landlock ABI 7", ""},
		{Required, 3, "landlock ABI 3", ""},
		{Auto, 0, "none: the kernel offers no Landlock (landlock_create_ruleset: function not implemented)", ""},
		{Off, 7, "none: tools.sandbox is off", ""},
		{Required, 0, "", "tools.sandbox is required, but this kernel cannot confine commands: the kernel offers no Landlock (landlock_create_ruleset: function not implemented)"},
	} {
		p, err := Decide(tt.mode, tt.abi, gone)
		if tt.err != "" {
			if !errors.Is(err, ErrUnavailable) || err.Error() != tt.err {
				t.Errorf("%s on ABI %d: %v, want %q", tt.mode, tt.abi, err, tt.err)
			}
			continue
		}
		if err != nil || p.Status() != tt.status {
			t.Errorf("%s on ABI %d: %q %v, want %q", tt.mode, tt.abi, p.Status(), err, tt.status)
		}
	}
	if _, err := ParseMode("strict"); err == nil || err.Error() != `unknown sandbox mode "strict": use auto, required or off` {
		t.Errorf("ParseMode: %v", err)
	}
}
