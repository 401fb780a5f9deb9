package root

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

func TestSubcommandAfterConnectionFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		cmd  string
		rest []string
	}{
		{[]string{"result", "S", "--json"}, "result", []string{"S", "--json"}},
		{[]string{"--temporal-address", "127.0.0.1:1", "result", "S"}, "result", []string{"--temporal-address", "127.0.0.1:1", "S"}},
		{[]string{"--namespace=ns", "--json", "history", "S"}, "history", []string{"--namespace=ns", "--json", "S"}},
		{[]string{"--settings", "s.json", "history", "S"}, "history", []string{"--settings", "s.json", "S"}},
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

func TestHoldsExec(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"--exec", "result"}, true},
		{[]string{"--json", "--exec=x"}, true},
		{[]string{"--session", "S", "--decide", "approve"}, true},
		{[]string{"--decide=deny"}, true},
		{[]string{"--session", "S", "--stop-ceremony"}, true},
		{[]string{"result", "S", "--json"}, false},
		{[]string{"history", "--", "--exec"}, false},
	} {
		if got := holdsExec(tt.args); got != tt.want {
			t.Errorf("holdsExec(%q) = %v", tt.args, got)
		}
	}
}

func TestHoldsJob(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"--repair", "jobs fail"}, true},
		{[]string{"--json", "--improve=x"}, true},
		{[]string{"jobs", "--", "--repair"}, false},
		{[]string{"jobs", "show", "x"}, false},
	} {
		if got := holdsJob(tt.args); got != tt.want {
			t.Errorf("holdsJob(%q) = %v", tt.args, got)
		}
	}
}

// TestExecute routes invocations. A command that reaches the point of
// dialing meets 127.0.0.1:1, where nothing listens: its *UnreachableError
// says which command ran with which arguments, and no server is needed.
func TestExecute(t *testing.T) {
	const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"
	settings := filepath.Join(t.TempDir(), "absent.json")
	dial := []string{"--temporal-address", "127.0.0.1:1", "--settings", settings}
	tests := []struct {
		name string
		args []string
		// err is what the error holds: "unreachable" for an
		// *UnreachableError, else a usage error's text; empty: none.
		err    string
		stdout string
	}{
		{name: "exec prompt result", args: append([]string{"--exec", "result"}, dial...), err: "unreachable"},
		{name: "exec prompt history after flags", args: append([]string{"--exec", "--model", "m", "history"}, dial...), err: "unreachable"},
		{name: "decide", args: append([]string{"--session", sid, "--decide", "approve"}, dial...), err: "unreachable"},
		{name: "result", args: append([]string{"result", sid}, dial...), err: "unreachable"},
		{name: "flags before result", args: append(append([]string{"--json"}, dial...), "result", sid), err: "unreachable"},
		{name: "flags before history", args: append(dial, "history", sid, "--json"), err: "unreachable"},
		{name: "result without id", args: []string{"result"}, err: "usage: axlr-tui result SESSION_ID [--json]"},
		{name: "result with an unknown flag", args: []string{"result", sid, "--colour"}, err: "flag provided but not defined: -colour"},
		{name: "unknown command", args: []string{"bogus"}, err: `unknown command "bogus" for "axlr-tui"`},
		{name: "flags only", args: []string{"--temporal-address", "h:1"}, err: "nothing to do"},
		{name: "help", args: []string{"--help"}, stdout: Usage},
		{name: "help command", args: []string{"help"}, stdout: Usage},
		{name: "result help", args: []string{"result", "--help"}, stdout: "Result fields:\n  schema, status"},
		{name: "exec help", args: []string{"--exec", "--help"}, stdout: "Exit codes: 0 completed, 3"},
		{name: "repair with a brief that reads jobs", args: append([]string{"--repair", "jobs", "--model", "m"}, dial...), err: "unreachable"},
		{name: "improve without a brief", args: []string{"--improve"}, err: "--improve needs a brief"},
		{name: "repair help", args: []string{"--repair", "--help"}, stdout: "Exit codes: 0 merged and completed, 3"},
		{name: "jobs watch", args: append([]string{"jobs", "watch", "x"}, dial...), err: "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, stdout, _ := factory.Test()
			f := &factory.Factory{IOStreams: ios, Getwd: func() (string, error) { return t.TempDir(), nil },
				Conn: client.Options{Getenv: func(k string) string {
					if k == "AXLR_HOST_ID" {
						return "test-host"
					}
					return ""
				}}}
			err := Execute(context.Background(), f, tt.args)
			switch tt.err {
			case "":
				if err != nil {
					t.Fatal(err)
				}
			case "unreachable":
				if !errors.As(err, new(*client.UnreachableError)) || !strings.Contains(err.Error(), "127.0.0.1:1") {
					t.Fatalf("error %v, want axlrd unreachable at 127.0.0.1:1", err)
				}
			default:
				if !errors.As(err, new(*cmdutil.FlagError)) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want a usage error containing %q", err, tt.err)
				}
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout)
			}
		})
	}
}
