package root

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/internal/tui"
)

// terminal returns test streams on a terminal, or not, and their stderr.
func terminal(tty bool) (*factory.IOStreams, *bytes.Buffer) {
	ios, _, _, stderr := factory.Test()
	ios.SetStdinTTY(tty)
	ios.SetStdoutTTY(tty)
	return ios, stderr
}

func TestNewCmdTUI(t *testing.T) {
	tests := []struct {
		name string
		args []string
		tty  bool
		want TUIOptions
		err  string
	}{
		{name: "bare", tty: true},
		{name: "every flag", tty: true, args: []string{"--model", "m", "--root", "/w", "--mode", "review", "--approve", "all"},
			want: TUIOptions{Model: "m", Root: "/w", Mode: "review", Approve: "all"}},
		{name: "unknown mode", tty: true, args: []string{"--mode", "Review"}, err: `unknown mode "Review": this axlr-tui supports normal`},
		{name: "bad approval", tty: true, args: []string{"--approve", "most"}, err: `--approve: unknown approval level "most"`},
		{name: "off a terminal", err: "no command: the terminal UI needs a terminal; off one, name a command above"},
		{name: "off a terminal with flags", args: []string{"--model", "m"}, err: "no command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, stderr := terminal(tt.tty)
			var got *TUIOptions
			err := cmdtest.Execute(newCmdTUI(&factory.Factory{IOStreams: ios}, func(_ context.Context, o *TUIOptions) error { got = o; return nil }), tt.args...)
			if tt.err != "" {
				if !errors.As(err, new(*cmdutil.FlagError)) || !strings.Contains(err.Error(), tt.err) || got != nil {
					t.Fatalf("error %v, want a usage error containing %q", err, tt.err)
				}
				if !tt.tty && !strings.Contains(stderr.String(), "Flags:\n") {
					t.Fatalf("off a terminal, stderr lacks the help:\n%s", stderr)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("options %+v, %v", got, err)
			}
			if f := [4]string{got.Model, got.Root, got.Mode, got.Approve}; f != [4]string{tt.want.Model, tt.want.Root, tt.want.Mode, tt.want.Approve} || got.Run == nil {
				t.Errorf("options %q, want %+v", f, tt.want)
			}
		})
	}
}

// fakeTUI is axlrd as the terminal UI's start sees it; the terminal UI
// itself is not run.
type fakeTUI struct {
	tui.Client
	set       settings.Settings
	workerErr error
	closed    bool
}

func (f *fakeTUI) CheckWorker(context.Context) error { return f.workerErr }
func (f *fakeTUI) Settings() *settings.Settings      { return &f.set }
func (f *fakeTUI) Close()                            { f.closed = true }

// TestTUIRun: the terminal UI opens in the current directory with
// settings.json's model and jobs limit unless the flags say otherwise,
// and does not open without a worker.
func TestTUIRun(t *testing.T) {
	dir := t.TempDir()
	set := settings.Settings{Model: "from-settings"}
	set.Jobs.MaxActive = 3
	tests := []struct {
		name string
		opts TUIOptions
		fake *fakeTUI
		want *tui.Options
		code int
	}{
		{name: "settings", fake: &fakeTUI{set: set}, want: &tui.Options{Root: dir, Model: "from-settings", MaxActive: 3}},
		{name: "flags", opts: TUIOptions{Model: "m", Root: ".", Mode: "debug", Approve: "none"}, fake: &fakeTUI{set: set},
			want: &tui.Options{Root: dir, Model: "m", Mode: "debug", Approve: "none", MaxActive: 3}},
		{name: "no worker", fake: &fakeTUI{workerErr: &client.NoWorkerError{TaskQueue: "axlr-host-h"}}, code: 4},
		{name: "root not a directory", opts: TUIOptions{Root: "absent"}, fake: &fakeTUI{}, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *tui.Options
			ran := cmdtest.Run(func(ios *factory.IOStreams) error {
				opts := tt.opts
				opts.IO, opts.Client, opts.Getwd = ios, cmdtest.Dial[TUIClient](tt.fake), func() (string, error) { return dir, nil }
				opts.Run = func(_ context.Context, _ tui.Client, o tui.Options) error {
					if o.Deltas != nil {
						t.Error("deltas passed though the options named none")
					}
					got = &o
					return nil
				}
				return tuiRun(context.Background(), &opts)
			})
			if ran.Code != tt.code || (got == nil) != (tt.want == nil) || got != nil && !reflect.DeepEqual(*got, *tt.want) {
				t.Fatalf("ran %+v, opened %+v, want %+v", ran, got, tt.want)
			}
		})
	}
}

// TestExecute routes invocations, the legacy forms and the verbs. A
// command that reaches the point of dialing meets 127.0.0.1:1, where
// nothing listens: its *UnreachableError says which command ran, and no
// server is needed.
func TestExecute(t *testing.T) {
	const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"
	dial := []string{"--temporal-address", "127.0.0.1:1", "--settings", filepath.Join(t.TempDir(), "absent.json")}
	with := func(args ...string) []string { return append(args, dial...) }
	tests := []struct {
		name string
		args []string
		tty  bool
		// err is what the error holds: "unreachable" for an
		// *UnreachableError, else a usage error's text; empty: none.
		err            string
		stdout, stderr string
	}{
		{name: "exec prompt result", args: with("--exec", "result"), err: "unreachable"},
		{name: "exec prompt history after flags", args: with("--exec", "--model", "m", "history"), err: "unreachable"},
		{name: "the verb exec", args: with("exec", "result"), err: "unreachable"},
		{name: "decide", args: with("--session", sid, "--decide", "approve"), err: "unreachable"},
		{name: "the verb exec deciding", args: with("exec", "--session", sid, "--decide", "approve"), err: "unreachable"},
		{name: "result", args: with("result", sid), err: "unreachable"},
		{name: "connection flags before history", args: append(dial, "history", sid, "--json"), err: "unreachable"},
		{name: "result without id", args: []string{"result"}, err: "usage: axlr-tui result SESSION_ID [--json]"},
		{name: "result with an unknown flag", args: []string{"result", sid, "--colour"}, err: "flag provided but not defined: -colour"},
		{name: "unknown command", args: []string{"bogus"}, err: `unknown command "bogus" for "axlr-tui"`},
		{name: "unknown jobs verb", args: []string{"jobs", "bogus"}, err: `unknown command "bogus" for "axlr-tui jobs"`},
		{name: "exec without a prompt", args: []string{"--exec"}, err: "exec needs a prompt"},
		{name: "improve without a brief", args: []string{"--improve"}, err: "jobs improve needs a brief"},
		{name: "repair with a brief that reads jobs", args: with("--repair", "jobs", "--model", "m"), err: "unreachable"},
		{name: "jobs repair", args: with("jobs", "repair", "x fails"), err: "unreachable"},
		{name: "plan", args: with("--plan", "add a flag"), err: "unreachable"},
		{name: "plans new", args: with("plans", "new", "add a flag"), err: "unreachable"},
		{name: "jobs", args: with("jobs"), err: "unreachable"},
		{name: "jobs watch", args: with("jobs", "watch", "x"), err: "unreachable"},
		{name: "bare on a terminal", args: dial, tty: true, err: "unreachable"},
		{name: "bare off a terminal", args: nil, err: "no command", stderr: "Exit codes: 0 ok"},
		{name: "help", args: []string{"--help"}, stdout: "Exit codes: 0 ok"},
		{name: "help lists the commands", args: []string{"--help"}, stdout: "Available Commands:\n  ceremonies  List the ceremony definitions axlrd runs"},
		{name: "help command", args: []string{"help"}, stdout: "The runtime contract's forms"},
		{name: "result help", args: []string{"result", "--help"}, stdout: "Result fields:\n  schema, status"},
		{name: "exec help", args: []string{"--exec", "--help"}, stdout: "Exit codes: 0 completed, 3"},
		{name: "repair help", args: []string{"--repair", "--help"}, stdout: "Exit codes: 0 merged and completed, 3"},
		{name: "jobs help", args: []string{"jobs", "--help"}, stdout: "  axlr-tui jobs repair \"<failure brief or #123>\""},
		{name: "jobs list help", args: []string{"jobs", "list", "--help"}, stdout: "Job record fields:\n  id, kind, signature"},
		{name: "plan help", args: []string{"--plan", "--help"}, stdout: "Plan record fields:\n  id, status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, stdout, stderr := factory.Test()
			ios.SetStdinTTY(tt.tty)
			ios.SetStdoutTTY(tt.tty)
			f := &factory.Factory{IOStreams: ios, Getwd: func() (string, error) { return t.TempDir(), nil },
				Conn: client.Options{Getenv: func(k string) string { return map[string]string{"AXLR_HOST_ID": "test-host"}[k] }}}
			err := execute(context.Background(), f, tt.args)
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
			if !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stdout lacks %q or stderr %q:\n%s\n--\n%s", tt.stdout, tt.stderr, stdout, stderr.String())
			}
		})
	}
}

// TestMainExitCodes: the exit codes, and the one line that says how to start an
// axlrd that does not answer.
func TestMainExitCodes(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		line string
	}{
		{[]string{"--exec", "hello", "--model", "m", "--temporal-address", "127.0.0.1:1"}, 4,
			`axlr-tui: axlrd not reachable at 127.0.0.1:1: start it with "go run ./cmd/axlrd"`},
		{[]string{"result"}, 2, "axlr-tui: usage: axlr-tui result SESSION_ID [--json]"},
		{[]string{"--help"}, 0, ""},
	} {
		ios, stderr := terminal(false)
		f := &factory.Factory{IOStreams: ios, Conn: client.Options{
			SettingsPath: filepath.Join(t.TempDir(), "absent.json"),
			Getenv:       func(k string) string { return map[string]string{"AXLR_HOST_ID": "test-host"}[k] }}}
		code := Main(context.Background(), f, tt.args)
		msg := strings.TrimSpace(stderr.String())
		if code != tt.code || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, tt.line) {
			t.Errorf("%q: exit %d %q, want %d %q", tt.args, code, msg, tt.code, tt.line)
		}
	}
}
