package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
)

func testIO(stdout, stderr *strings.Builder) IO {
	return IO{
		Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr,
		Getenv: func(string) string { return "" },
		Getwd:  func() (string, error) { return "/", nil },
	}
}

func TestUsageAndCodes(t *testing.T) {
	var out, errb strings.Builder
	if code := Main(context.Background(), nil, testIO(&out, &errb)); code != ExitUsage || !strings.Contains(errb.String(), "Usage:") {
		t.Fatalf("no arguments: %d %q", code, errb.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"--help"}, testIO(&out, &errb)); code != ExitOK || !strings.Contains(out.String(), "Exit codes: 0 completed, 3") {
		t.Fatalf("help: %d %q", code, out.String())
	}
	errb.Reset()
	if code := Main(context.Background(), []string{"result"}, testIO(&out, &errb)); code != ExitUsage || !strings.Contains(errb.String(), "usage: axlr-tui result SESSION_ID") {
		t.Fatalf("result without id: %d %q", code, errb.String())
	}
	for status, code := range map[contract.Status]int{contract.Completed: 0, contract.NeedsDecision: 3, contract.Interrupted: 1, contract.Failed: 1} {
		if got := cmdutil.ExitCode(cmdutil.StatusExit(status), &errb); got != code {
			t.Errorf("%s exits %d, want %d", status, got, code)
		}
	}
}

func TestPolicyFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(`{"policy": {"level": "observe", "budget": {"usd": 1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := Main(context.Background(), []string{"--exec", "x", "--policy", path}, testIO(&out, &errb))
	if code != ExitUsage || !strings.Contains(errb.String(), `unknown field "budget"`) {
		t.Fatalf("exit %d %q", code, errb.String())
	}
}

// TestMainUnreachable runs --exec against 127.0.0.1:1, where nothing
// listens: one line that says how to start axlrd, and exit 4.
func TestMainUnreachable(t *testing.T) {
	var out, errb strings.Builder
	sys := testIO(&out, &errb)
	sys.Getenv = func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return t.TempDir()
		}
		return map[string]string{"AXLR_HOST_ID": "test-host"}[k]
	}
	code := Main(context.Background(), []string{"--exec", "hello", "--model", "m", "--temporal-address", "127.0.0.1:1"}, sys)
	msg := strings.TrimSpace(errb.String())
	if code != ExitUnreachable || strings.Contains(msg, "\n") || !strings.Contains(msg, `axlrd not reachable at 127.0.0.1:1: start it with "go run ./cmd/axlrd"`) {
		t.Fatalf("exit %d %q", code, msg)
	}
}
