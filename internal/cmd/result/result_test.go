package result

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"

func TestNewCmdResult(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want ResultOptions
		err  string
	}{
		{"session", []string{sid}, ResultOptions{SessionID: sid}, ""},
		{"json after", []string{sid, "--json"}, ResultOptions{SessionID: sid, JSON: true}, ""},
		{"json before", []string{"--json", sid}, ResultOptions{SessionID: sid, JSON: true}, ""},
		{"no id", []string{}, ResultOptions{}, "usage: axlr-tui result SESSION_ID [--json]"},
		{"two ids", []string{sid, sid}, ResultOptions{}, "usage: axlr-tui result SESSION_ID [--json]"},
		{"not a session id", []string{"axlr-session-" + sid}, ResultOptions{}, `"axlr-session-` + sid + `" is not a session id (a lowercase UUID)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := factory.Test()
			var got *ResultOptions
			cmd := NewCmdResult(&factory.Factory{IOStreams: ios}, func(_ context.Context, o *ResultOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			_, err := cmd.ExecuteC()
			if tt.err != "" {
				var fe *cmdutil.FlagError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got.SessionID != tt.want.SessionID || got.JSON != tt.want.JSON {
				t.Fatalf("options %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

type fakeClient struct {
	result *contract.Result
	err    error
	asked  string
	closed bool
}

func (f *fakeClient) Result(_ context.Context, sessionID string) (*contract.Result, error) {
	f.asked = sessionID
	return f.result, f.err
}

func (f *fakeClient) Close() { f.closed = true }

// full sets every field a needs_decision result holds, so the golden file
// shows each; "failed json" shows error.
var full = &contract.Result{
	Schema: contract.Schema, Status: contract.NeedsDecision, SessionID: "s-2", Sessions: []string{sid, "s-2"},
	Answer:  "The fix needs the tests to run.",
	Pending: &contract.PendingCall{CallID: "check-1", Tool: "axlr_check", Arguments: json.RawMessage(`{"program":"go","args":["test","./..."]}`)},
	ToolCalls: []contract.ToolCallRecord{
		{CallID: "read-1", Tool: "local_read", Decision: contract.AutoApprove, Status: contract.CallCompleted},
		{CallID: "exec-1", Tool: "local_exec", Decision: contract.Deny, Status: contract.CallDenied},
		{CallID: "check-1", Tool: "axlr_check", Status: contract.CallPending},
	},
	Usage: contract.Usage{Requests: 3, PromptTokens: 3120, CachedTokens: 2048, CacheWriteTokens: 10, CompletionTokens: 96,
		ReasoningTokens: 40, CostUSD: 0.0021, CostRequests: 2, UnmeteredRequests: 1},
	Artifacts: []contract.Artifact{{Name: "report.md", MediaType: "text/markdown", Ref: "made://report/1"}},
	Ceremony: &contract.CeremonyOutcome{InstanceID: "i-1", Definition: "debug", Version: "1.0.0", State: "DIAGNOSE", Step: "diagnose",
		Steps: []contract.StepRecord{{Step: "reproduce", Iteration: 1, Status: "completed",
			Check:      &contract.CheckRecord{Program: "go", Args: []string{"test", "./..."}, ExitCode: contract.Exit(1), OutputTail: "--- FAIL: TestParse", TimedOut: true},
			Output:     map[string]any{"expected": "ok", "observed": "panic"},
			Transcript: &contract.TranscriptSpan{SessionID: sid, From: 3, To: 9}}}},
}

func TestResultRun(t *testing.T) {
	failed := &contract.Result{Schema: contract.Schema, Status: contract.Failed, SessionID: sid, Sessions: []string{sid},
		Error: "model provider refused the request", ToolCalls: []contract.ToolCallRecord{}, Artifacts: []contract.Artifact{}}
	tests := []struct {
		name    string
		json    bool
		fake    fakeClient
		dialErr error
		code    int
		stdout  string
		golden  bool
		stderr  string
	}{
		{name: "text", fake: fakeClient{result: full}, code: 3, stdout: "The fix needs the tests to run.\n",
			stderr: "axlr-tui: ceremony debug 1.0.0 (instance i-1): DIAGNOSE, step diagnose open\n" +
				"axlr-tui: axlr_check (call check-1) waits for a decision: axlr-tui --session s-2 --decide approve|deny --call check-1\n"},
		{name: "json", json: true, fake: fakeClient{result: full}, code: 3, golden: true},
		{name: "failed", fake: fakeClient{result: failed}, code: 1,
			stderr: "axlr-tui: execution failed: model provider refused the request (session " + sid + ")\n"},
		{name: "failed json", json: true, fake: fakeClient{result: failed}, code: 1, golden: true},
		{name: "no session", fake: fakeClient{err: &client.NotFoundError{SessionID: sid}}, code: 1,
			stderr: "axlr-tui: no session " + sid + " in axlrd\n"},
		{name: "unreachable", dialErr: &client.UnreachableError{Address: "127.0.0.1:1", Err: errors.New("connection refused")}, code: 4,
			stderr: "axlr-tui: axlrd not reachable at 127.0.0.1:1: start it with \"go run ./cmd/axlrd\" (or \"axlrd\"), or pass --temporal-address (connection refused)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, stdout, stderr := factory.Test()
			fake := &tt.fake
			opts := &ResultOptions{IO: ios, SessionID: sid, JSON: tt.json, Client: func(context.Context) (Client, error) {
				if tt.dialErr != nil {
					return nil, tt.dialErr
				}
				return fake, nil
			}}
			code := cmdutil.ExitCode(resultRun(context.Background(), opts), stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if tt.golden {
				cmdtest.Golden(t, stdout.Bytes(), *update)
			} else if stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout, tt.stdout)
			}
			if stderr.String() != tt.stderr {
				t.Errorf("stderr\n%s\nwant\n%s", stderr, tt.stderr)
			}
			if tt.dialErr == nil && (fake.asked != sid || !fake.closed) {
				t.Errorf("asked for %q, closed %v", fake.asked, fake.closed)
			}
		})
	}
}
