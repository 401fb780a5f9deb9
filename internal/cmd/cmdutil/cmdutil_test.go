package cmdutil_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.temporal.io/api/serviceerror"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
)

func TestFields(t *testing.T) {
	for _, tt := range []struct {
		name     string
		declared []string
		v        any
	}{
		{"result", cmdutil.ResultFields, contract.Result{}},
		{"event", cmdutil.EventFields, contract.Event{}},
	} {
		if got := cmdtest.JSONFields(tt.v); !slices.Equal(got, tt.declared) {
			t.Errorf("%s fields are %q, declared %q: update the list (and the golden files) with the type", tt.name, got, tt.declared)
		}
	}
}

func TestExitCode(t *testing.T) {
	unreachable := &client.UnreachableError{Address: "127.0.0.1:1", Err: errors.New("connection refused")}
	for _, tt := range []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"nil", nil, cmdutil.ExitOK, ""},
		{"usage", cmdutil.FlagErrorf("--exec needs a prompt"), cmdutil.ExitUsage, "axlr-tui: --exec needs a prompt\n"},
		{"settings", &client.ConfigError{Err: errors.New("settings s.json: bad")}, cmdutil.ExitUsage, "axlr-tui: settings s.json: bad\n"},
		{"unreachable", unreachable, cmdutil.ExitUnreachable, "axlr-tui: " + unreachable.Error() + "\n"},
		{"unreachable wrapped", fmt.Errorf("look up session S: %w", unreachable), cmdutil.ExitUnreachable, "axlr-tui: look up session S: " + unreachable.Error() + "\n"},
		{"no worker", &client.NoWorkerError{TaskQueue: "axlr-host-h"}, cmdutil.ExitUnreachable,
			"axlr-tui: no axlrd worker serves this host (task queue axlr-host-h): start axlrd on this machine, with the same AXLR_HOST_ID if you set it\n"},
		{"refused", &client.RefusedError{Message: "decide: no call exec-9 waits for a decision in session S"}, cmdutil.ExitFailed,
			"axlr-tui: decide: no call exec-9 waits for a decision in session S\n"},
		{"left", cmdutil.ErrLeft, cmdutil.ExitSignal, "axlr-tui: left without waiting; the execution goes on in axlrd\n"},
		{"needs decision", cmdutil.StatusExit(contract.NeedsDecision), cmdutil.ExitNeedsDecide, ""},
		{"interrupted", cmdutil.StatusExit(contract.Interrupted), cmdutil.ExitFailed, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := cmdutil.ExitCode(tt.err, &stderr); code != tt.code || stderr.String() != tt.stderr {
				t.Errorf("cmdutil.ExitCode = %d, stderr %q; want %d, %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
	if err := cmdutil.StatusExit(contract.Completed); err != nil {
		t.Errorf("completed: %v", err)
	}
}

func TestFlagErrorWrap(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	fs.Bool("json", false, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--colour"}, "flag provided but not defined: -colour"},
		{[]string{"-x"}, "unknown shorthand flag: 'x' in -x"},
		{[]string{"--json=maybe"}, `invalid argument "maybe" for "--json" flag`},
	} {
		err := cmdutil.FlagErrorWrap(fs.Parse(tt.args))
		var fe *cmdutil.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestFieldsHelp(t *testing.T) {
	got := cmdutil.FieldsHelp(cmdutil.ResultFields)
	want := "  schema, status, session_id, sessions, answer, pending, error, tool_calls,\n  usage, artifacts, ceremony, mode"
	if got != want {
		t.Errorf("cmdutil.FieldsHelp =\n%s\nwant\n%s", got, want)
	}
}

func TestPrintResult(t *testing.T) {
	for _, tt := range []struct {
		name           string
		r              contract.Result
		stdout, stderr string
	}{
		{"completed", contract.Result{Status: contract.Completed, SessionID: "S", Answer: "done"}, "done\n", ""},
		{"needs decision", contract.Result{Status: contract.NeedsDecision, SessionID: "S", Answer: "I will.",
			Pending: &contract.PendingCall{CallID: "exec-1", Tool: "local_exec"}},
			"I will.\n", "axlr-tui: local_exec (call exec-1) waits for a decision: axlr-tui --session S --decide approve|deny --call exec-1\n"},
		{"failed", contract.Result{Status: contract.Failed, SessionID: "S", Error: "model refused"},
			"", "axlr-tui: execution failed: model refused (session S)\n"},
		{"ceremony open", contract.Result{Status: contract.Completed, SessionID: "S", Answer: "ok",
			Ceremony: &contract.CeremonyOutcome{InstanceID: "i-1", Definition: "debug", Version: "1", State: "DIAGNOSE", Step: "diagnose"}},
			"ok\n", "axlr-tui: ceremony debug 1 (instance i-1): DIAGNOSE, step diagnose open\n"},
		{"ceremony stopped", contract.Result{Status: contract.Completed, SessionID: "S",
			Ceremony: &contract.CeremonyOutcome{InstanceID: "i-1", Definition: "debug", Version: "1", State: "BLOCKED", Ended: true, Stopped: "no progress"}},
			"", "axlr-tui: ceremony debug 1 (instance i-1): BLOCKED (stopped: no progress)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			cmdutil.PrintResult(&stdout, &stderr, &tt.r)
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
		})
	}
}

func TestWriteJSONLine(t *testing.T) {
	var out strings.Builder
	cmdutil.WriteJSONLine(&out, contract.Event{Type: contract.EventText, Text: "hi"})
	cmdutil.WriteJSONLine(&out, contract.Event{Type: contract.EventToolRequested, Arguments: []byte("{bad")})
	want := `{"type":"text","text":"hi"}` + "\n" +
		`{"type":"failed","error":"encode output: json: error calling MarshalJSON for type json.RawMessage: invalid character 'b' looking for beginning of object key string"}` + "\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// A query axlrd's worker failed to answer is not axlrd gone, and the
// watch says which it is.
func TestPrinterLink(t *testing.T) {
	var errOut strings.Builder
	p := cmdutil.NewPrinter(io.Discard, &errOut, false)
	p.Unreachable(serviceerror.NewQueryFailed("[TMPRL1100] invalid state transition"))
	p.Back()
	p.Unreachable(errors.New("connection refused"))
	p.Back()
	want := "axlr-tui: axlrd failed to answer ([TMPRL1100] invalid state transition); asking again\n" +
		"axlr-tui: axlrd answers again\n" +
		"axlr-tui: axlrd unreachable (connection refused); waiting for it to come back\n" +
		"axlr-tui: axlrd is back\n"
	if errOut.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", errOut.String(), want)
	}
}
