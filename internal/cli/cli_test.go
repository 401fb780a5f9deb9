package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/contract"
)

func testIO(stdout, stderr *strings.Builder) IO {
	return IO{
		Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr,
		Getenv: func(string) string { return "" },
		Getwd:  func() (string, error) { return "/", nil },
	}
}

func TestParseExec(t *testing.T) {
	const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"
	tests := []struct {
		name   string
		args   []string
		prompt string
		err    string
	}{
		{"prompt as value", []string{"--exec", "fix it", "--model", "m"}, "fix it", ""},
		{"prompt after flags", []string{"--exec", "--mode", "normal", "fix it", "--approve", "local"}, "fix it", ""},
		{"equals form", []string{"--exec=fix it"}, "fix it", ""},
		{"no prompt", []string{"--exec"}, "", "--exec needs a prompt"},
		{"unknown mode", []string{"--exec", "x", "--mode", "review"}, "", `unknown mode "review"`},
		{"ceremony mode", []string{"--exec", "--mode", "debug", "TestParse fails"}, "TestParse fails", ""},
		{"bad approval", []string{"--exec", "x", "--approve", "most"}, "", `unknown approval level "most"`},
		{"decide without session", []string{"--decide", "approve"}, "", "--decide needs --session ID"},
		{"bad decision", []string{"--session", sid, "--decide", "maybe"}, "", `--decide "maybe": use approve or deny`},
		{"exec and decide", []string{"--exec", "x", "--decide", "approve", "--session", sid}, "", "cannot be used together"},
		{"bad session id", []string{"--exec", "x", "--session", "abc"}, "", `--session "abc" is not a session id`},
		{"extra argument", []string{"--exec", "x", "y"}, "", `unexpected argument "y"`},
		{"nothing", []string{"--json"}, "", "nothing to do"},
		{"unknown flag", []string{"--exec", "x", "--colour"}, "", "flag provided but not defined: -colour"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb strings.Builder
			o, err := parseExec(tt.args, testIO(&out, &errb))
			if tt.err != "" {
				var e *exitError
				if !errors.As(err, &e) || e.code != ExitUsage || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || o.prompt != tt.prompt {
				t.Fatalf("options %+v, %v", o, err)
			}
		})
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
		if got := exitCode(statusExit(status), &errb); got != code {
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

func TestSubcommandAfterConnectionFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		cmd  string
		rest []string
	}{
		{[]string{"result", "S", "--json"}, "result", []string{"S", "--json"}},
		{[]string{"--temporal-address", "127.0.0.1:1", "result", "S"}, "result", []string{"--temporal-address", "127.0.0.1:1", "S"}},
		{[]string{"--namespace=ns", "--json", "history", "S"}, "history", []string{"--namespace=ns", "--json", "S"}},
		// A prompt that reads "result" is a prompt.
		{[]string{"--exec", "result"}, "--exec", []string{"result"}},
		{[]string{"--temporal-address", "h:1", "--exec", "history"}, "--temporal-address", []string{"h:1", "--exec", "history"}},
	} {
		cmd, rest := subcommand(tt.args)
		if cmd != tt.cmd || strings.Join(rest, " ") != strings.Join(tt.rest, " ") {
			t.Errorf("subcommand(%q) = %q %q, want %q %q", tt.args, cmd, rest, tt.cmd, tt.rest)
		}
	}
}
