package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"

func TestNewCmdExec(t *testing.T) {
	defaults := func(o ExecOptions) ExecOptions {
		if o.Mode == "" {
			o.Mode = "normal"
		}
		if o.Approve == "" {
			o.Approve = "none"
		}
		return o
	}
	tests := []struct {
		name string
		args []string
		want ExecOptions
		err  string
	}{
		{name: "prompt", args: []string{"fix it", "--model", "m"}, want: ExecOptions{Prompt: "fix it", Model: "m"}},
		{name: "prompt after flags", args: []string{"--mode", "normal", "fix it", "--approve", "local"}, want: ExecOptions{Prompt: "fix it", Approve: "local"}},
		{name: "prompt that reads result", args: []string{"result"}, want: ExecOptions{Prompt: "result"}},
		{name: "prompt that reads history after flags", args: []string{"--model", "m", "history"}, want: ExecOptions{Prompt: "history", Model: "m"}},
		{name: "prompt from stdin", args: []string{"-", "--json"}, want: ExecOptions{Prompt: "-", JSON: true}},
		{name: "prompt after --", args: []string{"--", "-v is broken"}, want: ExecOptions{Prompt: "-v is broken"}},
		{name: "every exec flag", args: []string{"x", "--model", "m", "--root", "/w", "--mode", "debug", "--approve", "all",
			"--session", sid, "--policy", "p.json", "--json"},
			want: ExecOptions{Prompt: "x", Model: "m", Root: "/w", Mode: "debug", Approve: "all", SessionID: sid, PolicyFile: "p.json", JSON: true}},
		{name: "decide", args: []string{"--session", sid, "--decide", "deny", "--call", "exec-1", "--reason", "not now", "--json"},
			want: ExecOptions{SessionID: sid, Decide: "deny", CallID: "exec-1", Reason: "not now", JSON: true}},
		{name: "decide without call", args: []string{"--decide=approve", "--session", sid}, want: ExecOptions{SessionID: sid, Decide: "approve"}},
		{name: "web tools removed", args: []string{"x", "--web=false"}, want: ExecOptions{Prompt: "x", Web: new(false)}},
		{name: "stop ceremony", args: []string{"--session", sid, "--stop-ceremony", "--reason", "wrong approach"},
			want: ExecOptions{SessionID: sid, StopCeremony: true, Reason: "wrong approach"}},
		{name: "stop ceremony without session", args: []string{"--stop-ceremony"}, err: "--stop-ceremony needs --session ID"},
		{name: "stop ceremony and a prompt", args: []string{"x", "--stop-ceremony", "--session", sid}, err: "--stop-ceremony cannot be used with a prompt or --decide"},
		{name: "stop ceremony and decide", args: []string{"--decide", "deny", "--stop-ceremony", "--session", sid}, err: "--stop-ceremony cannot be used with a prompt or --decide"},
		{name: "no prompt", args: []string{}, err: `exec needs a prompt: axlr-tui exec "<prompt>", or exec - to read it from standard input`},
		{name: "blank prompt", args: []string{"  "}, err: "exec needs a prompt"},
		{name: "unknown mode", args: []string{"x", "--mode", "Review"}, err: `unknown mode "Review"`},
		{name: "ceremony mode", args: []string{"--mode", "debug", "TestParse fails"}, want: ExecOptions{Prompt: "TestParse fails", Mode: "debug"}},
		{name: "bad approval", args: []string{"x", "--approve", "most"}, err: `unknown approval level "most"`},
		{name: "decide without session", args: []string{"--decide", "approve"}, err: "--decide needs --session ID"},
		{name: "bad decision", args: []string{"--session", sid, "--decide", "maybe"}, err: `--decide "maybe": use approve or deny`},
		{name: "prompt and decide", args: []string{"x", "--decide", "approve", "--session", sid}, err: "a prompt and --decide cannot be used together"},
		{name: "bad session id", args: []string{"x", "--session", "abc"}, err: `--session "abc" is not a session id`},
		{name: "extra argument", args: []string{"x", "y"}, err: `unexpected argument "y"`},
		{name: "unknown flag", args: []string{"x", "--colour"}, err: "flag provided but not defined: -colour"},
		{name: "flag without value", args: []string{"x", "--model"}, err: "flag needs an argument: --model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := factory.Test()
			f := &factory.Factory{IOStreams: ios}
			var got *ExecOptions
			err := cmdtest.Execute(NewCmdExec(f, func(_ context.Context, o *ExecOptions) error { got = o; return nil }), tt.args...)
			if tt.err != "" {
				var fe *cmdutil.FlagError
				if !errors.As(err, &fe) || cmdutil.ExitCode(err, io.Discard) != cmdutil.ExitUsage || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("options %+v, %v", got, err)
			}
			want := defaults(tt.want)
			flags := ExecOptions{Prompt: got.Prompt, Model: got.Model, Root: got.Root, Mode: got.Mode, Approve: got.Approve, SessionID: got.SessionID,
				Decide: got.Decide, CallID: got.CallID, StopCeremony: got.StopCeremony, Reason: got.Reason, PolicyFile: got.PolicyFile, JSON: got.JSON, Web: got.Web}
			if !reflect.DeepEqual(flags, want) {
				t.Errorf("options\n%+v\nwant\n%+v", flags, want)
			}
		})
	}
}

func TestNewCmdExecHelp(t *testing.T) {
	ios, _, out, _ := factory.Test()
	cmd := NewCmdExec(&factory.Factory{IOStreams: ios}, func(context.Context, *ExecOptions) error {
		t.Fatal("help runs the command")
		return nil
	})
	cmd.SetArgs([]string{"--help"})
	cmd.SetOut(out)
	if _, err := cmd.ExecuteC(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exec - (or --exec -) reads the prompt from standard input (up to 1 MiB)", "Exit codes: 0 completed, 3", "--decide string", "Result fields:\n  schema, status"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

// fakeClient is axlrd as exec sees it: it records the requests and plays a
// scripted watch.
type fakeClient struct {
	t         *testing.T
	workerErr error
	// refuse fails Start, Execute and Decide.
	refuse  error
	pending *contract.PendingCall
	// pendingErr fails PendingCall; without it or pending, PendingCall
	// fails the test.
	pendingErr error
	// down makes Watch report axlrd gone and back before the events.
	down   bool
	events []contract.Event
	result *contract.Result
	// watchUntil is "interrupt" (Watch ends when Interrupt is called),
	// "cancel" (when its context ends) or empty.
	watchUntil string

	mu       sync.Mutex
	started  []workflows.ExecuteRequest
	executed []string // session ids
	decided  []workflows.DecideRequest
	stopped  []workflows.StopCeremonyRequest
	// last is the session's last result, for Result.
	last        *contract.Result
	interrupts  []interruptCall
	interrupted chan struct{}
	watched     client.Execution
	closed      bool
	// streamed, when set, holds Watch until the deltas went out.
	streamed chan struct{}
}

type interruptCall struct {
	ex     client.Execution
	reason string
}

var _ Client = (*fakeClient)(nil)

var execution = client.Execution{WorkflowID: "axlr-session-" + sid, ExecutionID: "exec-id-1", SessionID: sid}

func (f *fakeClient) CheckWorker(context.Context) error { return f.workerErr }

func (f *fakeClient) Start(_ context.Context, req workflows.ExecuteRequest) (client.Execution, error) {
	f.started = append(f.started, req)
	return execution, f.refuse
}

func (f *fakeClient) Execute(_ context.Context, sessionID string, req workflows.ExecuteRequest) (client.Execution, error) {
	f.executed = append(f.executed, sessionID)
	f.started = append(f.started, req)
	return execution, f.refuse
}

func (f *fakeClient) PendingCall(_ context.Context, sessionID string) (*contract.PendingCall, error) {
	if sessionID != sid {
		f.t.Errorf("pending call of session %s", sessionID)
	}
	if f.pending == nil && f.pendingErr == nil {
		f.t.Error("PendingCall called")
	}
	return f.pending, f.pendingErr
}

func (f *fakeClient) Decide(_ context.Context, sessionID string, req workflows.DecideRequest) (client.Execution, error) {
	if sessionID != sid {
		f.t.Errorf("decide in session %s", sessionID)
	}
	f.decided = append(f.decided, req)
	return execution, f.refuse
}

func (f *fakeClient) Result(_ context.Context, sessionID string) (*contract.Result, error) {
	if f.last == nil {
		return nil, fmt.Errorf("session %s has no execution result yet", sessionID)
	}
	return f.last, nil
}

func (f *fakeClient) StopCeremony(_ context.Context, sessionID string, req workflows.StopCeremonyRequest) (client.Execution, error) {
	if sessionID != sid {
		f.t.Errorf("stop in session %s", sessionID)
	}
	f.stopped = append(f.stopped, req)
	return execution, f.refuse
}

func (f *fakeClient) Interrupt(_ context.Context, ex client.Execution, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.interrupts = append(f.interrupts, interruptCall{ex, reason})
	if len(f.interrupts) == 1 {
		close(f.interrupted)
	}
	return nil
}

func (f *fakeClient) Watch(ctx context.Context, ex client.Execution, w client.Watcher) (*contract.Result, error) {
	f.watched = ex
	if f.streamed != nil {
		<-f.streamed
	}
	if f.down {
		w.Unreachable(errors.New("connection refused"))
		w.Back()
	}
	for _, ev := range f.events {
		w.Event(ev)
	}
	switch f.watchUntil {
	case "interrupt":
		select {
		case <-f.interrupted:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "cancel":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.result, nil
}

func (f *fakeClient) Close() { f.closed = true }

var (
	completed = &contract.Result{Schema: contract.Schema, Status: contract.Completed, SessionID: sid, Sessions: []string{sid},
		Answer: "a.txt holds one line.", ToolCalls: []contract.ToolCallRecord{{CallID: "write-1", Tool: "local_write", Decision: contract.AutoApprove, Status: contract.CallCompleted}},
		Usage: contract.Usage{Requests: 2, PromptTokens: 300, CompletionTokens: 20}, Artifacts: []contract.Artifact{}}
	needsDecision = &contract.Result{Schema: contract.Schema, Status: contract.NeedsDecision, SessionID: sid, Sessions: []string{sid},
		Answer: "I will create the file now.", Pending: &contract.PendingCall{CallID: "exec-1", Tool: "local_exec", Arguments: json.RawMessage(`{"program":"touch","args":["notes.md"]}`)},
		ToolCalls: []contract.ToolCallRecord{{CallID: "exec-1", Tool: "local_exec", Status: contract.CallPending}}, Artifacts: []contract.Artifact{}}
	interrupted = &contract.Result{Schema: contract.Schema, Status: contract.Interrupted, SessionID: sid, Sessions: []string{sid},
		Error: InterruptReason, Artifacts: []contract.Artifact{}}
	events = []contract.Event{
		{Type: contract.EventSession, SessionID: sid},
		{Type: contract.EventToolRequested, CallID: "write-1", Tool: "local_write", Arguments: json.RawMessage(`{"path":"a.txt","content":"one\n"}`)},
		{Type: contract.EventToolCompleted, CallID: "write-1", Tool: "local_write", Decision: contract.AutoApprove, Status: contract.CallCompleted, Text: "wrote 4 bytes\nto a.txt"},
		{Type: contract.EventText, Text: "a.txt holds one line."},
		{Type: contract.EventCompleted, SessionID: sid},
	}
)

func TestExecRun(t *testing.T) {
	workspace := t.TempDir()
	policyFile := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policyFile, []byte(`{"policy": {"level": "observe"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    ExecOptions
		stdin   string
		fake    *fakeClient
		dialErr error
		signals int
		code    int
		stdout  string
		// golden compares stdout with testdata/TestExecRun/<case>.json.
		golden bool
		stderr string
		check  func(t *testing.T, f *fakeClient)
	}{
		{
			name: "new session", opts: ExecOptions{Prompt: "write a.txt", Model: "m", Mode: "normal", Approve: "local"},
			fake: &fakeClient{events: events, result: completed}, code: 0, stdout: "a.txt holds one line.\n",
			stderr: "· session " + sid + "\n" +
				"→ local_write {\"path\":\"a.txt\",\"content\":\"one\\n\"}\n" +
				"  local_write completed: wrote 4 bytes\n",
			check: func(t *testing.T, f *fakeClient) {
				want := workflows.ExecuteRequest{Prompt: "write a.txt", Model: "m", Root: workspace, Mode: "normal", Approval: policy.ApproveLocal}
				if len(f.started) != 1 || !reflect.DeepEqual(f.started[0], want) || len(f.executed) != 0 {
					t.Errorf("started %+v executed %v, want %+v", f.started, f.executed, want)
				}
				if f.watched != execution || !f.closed {
					t.Errorf("watched %+v, closed %v", f.watched, f.closed)
				}
			},
		},
		{
			name: "continue session", opts: ExecOptions{Prompt: "and b.txt", SessionID: sid, Mode: "normal", Approve: "none", PolicyFile: policyFile},
			fake: &fakeClient{result: completed}, stdout: "a.txt holds one line.\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.executed) != 1 || f.executed[0] != sid || f.started[0].Root != "" || f.started[0].Prompt != "and b.txt" {
					t.Errorf("executed %v %+v: want session %s, no root", f.executed, f.started, sid)
				}
				if p := f.started[0].Policy; p == nil || p.Level != policy.Observe {
					t.Errorf("policy %+v", p)
				}
			},
		},
		{
			name: "continue session in its root", opts: ExecOptions{Prompt: "x", SessionID: sid, Root: ".", Mode: "normal", Approve: "none"},
			fake: &fakeClient{result: completed}, stdout: "a.txt holds one line.\n",
			check: func(t *testing.T, f *fakeClient) {
				if f.started[0].Root != workspace {
					t.Errorf("root %q, want %q", f.started[0].Root, workspace)
				}
			},
		},
		{
			name: "json", opts: ExecOptions{Prompt: "write a.txt", Mode: "normal", Approve: "local", JSON: true},
			fake: &fakeClient{events: events, result: completed}, golden: true,
		},
		{
			name: "needs decision", opts: ExecOptions{Prompt: "create notes.md", Mode: "normal", Approve: "none"},
			fake: &fakeClient{result: needsDecision}, code: 3, stdout: "I will create the file now.\n",
			stderr: "axlr-tui: local_exec (call exec-1) waits for a decision: axlr-tui --session " + sid + " --decide approve|deny --call exec-1\n",
		},
		{
			name: "needs decision json", opts: ExecOptions{Prompt: "create notes.md", Mode: "normal", Approve: "none", JSON: true},
			fake: &fakeClient{events: []contract.Event{{Type: contract.EventDecisionRequired, CallID: "exec-1", Tool: "local_exec", Reason: "local_exec asks"}}, result: needsDecision},
			code: 3, golden: true,
		},
		{
			name: "decide with call", opts: ExecOptions{SessionID: sid, Decide: "approve", CallID: "exec-1"},
			fake: &fakeClient{result: completed}, stdout: "a.txt holds one line.\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.decided) != 1 || f.decided[0] != (workflows.DecideRequest{CallID: "exec-1", Decision: contract.Approve}) {
					t.Errorf("decided %+v", f.decided)
				}
			},
		},
		{
			name: "decide without call", opts: ExecOptions{SessionID: sid, Decide: "deny", Reason: "not now"},
			fake: &fakeClient{pending: needsDecision.Pending, result: completed}, stdout: "a.txt holds one line.\n",
			stderr: "axlr-tui: deciding call exec-1 (local_exec)\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.decided) != 1 || f.decided[0] != (workflows.DecideRequest{CallID: "exec-1", Decision: contract.Deny, Reason: "not now"}) {
					t.Errorf("decided %+v", f.decided)
				}
			},
		},
		{
			name: "decide without pending call", opts: ExecOptions{SessionID: sid, Decide: "approve"},
			fake: &fakeClient{pendingErr: fmt.Errorf("%w in session %s: its last execution ended completed", client.ErrNoPendingCall, sid)},
			code: 1, stderr: "axlr-tui: no call waits for a decision in session " + sid + ": its last execution ended completed\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.decided) != 0 {
					t.Errorf("decided %+v", f.decided)
				}
			},
		},
		{
			name: "stop ceremony names it", opts: ExecOptions{SessionID: sid, StopCeremony: true, Reason: "wrong approach"},
			fake:   &fakeClient{result: completed, last: &contract.Result{Ceremony: &contract.CeremonyOutcome{InstanceID: "axlr-x-1", Definition: "axlr_debug", Version: "2.1", State: "REPRODUCE"}}},
			stdout: "a.txt holds one line.\n", stderr: "axlr-tui: stopping ceremony axlr-x-1 (axlr_debug 2.1, state REPRODUCE)\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.stopped) != 1 || f.stopped[0] != (workflows.StopCeremonyRequest{InstanceID: "axlr-x-1", Reason: "wrong approach"}) {
					t.Errorf("stopped %+v", f.stopped)
				}
			},
		},
		{
			name: "stop refused", opts: ExecOptions{SessionID: sid, StopCeremony: true},
			fake: &fakeClient{refuse: &client.RefusedError{Message: "stop ceremony: session " + sid + " runs no ceremony"}},
			code: 1, stderr: "axlr-tui: stop ceremony: session " + sid + " runs no ceremony\n",
		},
		{
			name: "decision refused", opts: ExecOptions{SessionID: sid, Decide: "approve", CallID: "exec-9"},
			fake: &fakeClient{refuse: &client.RefusedError{Message: "decide: no call exec-9 waits for a decision in session " + sid + "; the pending call is exec-1"}},
			code: 1, stderr: "axlr-tui: decide: no call exec-9 waits for a decision in session " + sid + "; the pending call is exec-1\n",
		},
		{
			name: "prompt from stdin", opts: ExecOptions{Prompt: "-", Mode: "normal", Approve: "none"}, stdin: "why does this fail?\n--- a/x\n+++ b/x\n",
			fake: &fakeClient{result: completed}, stdout: "a.txt holds one line.\n",
			check: func(t *testing.T, f *fakeClient) {
				if f.started[0].Prompt != "why does this fail?\n--- a/x\n+++ b/x\n" {
					t.Errorf("prompt %q", f.started[0].Prompt)
				}
			},
		},
		{
			name: "prompt from stdin at the limit", opts: ExecOptions{Prompt: "-", Mode: "normal", Approve: "none"}, stdin: strings.Repeat("x", MaxPromptSize),
			fake: &fakeClient{result: completed}, stdout: "a.txt holds one line.\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.started[0].Prompt) != MaxPromptSize {
					t.Errorf("prompt of %d bytes", len(f.started[0].Prompt))
				}
			},
		},
		{
			name: "prompt from stdin over the limit", opts: ExecOptions{Prompt: "-", Mode: "normal", Approve: "none"}, stdin: strings.Repeat("x", MaxPromptSize+1),
			dialErr: errors.New("dialed"), code: 2, stderr: "axlr-tui: --exec -: the prompt on standard input is over the 1 MiB limit\n",
		},
		{
			name: "empty stdin", opts: ExecOptions{Prompt: "-", Mode: "normal", Approve: "none"}, stdin: "\n\n",
			dialErr: errors.New("dialed"), code: 2, stderr: "axlr-tui: --exec -: standard input holds no prompt\n",
		},
		{
			name: "root not a directory", opts: ExecOptions{Prompt: "x", Root: "/nonexistent/axlr", Mode: "normal", Approve: "none"},
			dialErr: errors.New("dialed"), code: 2, stderr: "axlr-tui: root /nonexistent/axlr is not a directory\n",
		},
		{
			name: "interrupt names the execution", opts: ExecOptions{Prompt: "a slow one", Mode: "normal", Approve: "none"},
			fake: &fakeClient{watchUntil: "interrupt", result: interrupted}, signals: 1, code: 1,
			stderr: "axlr-tui: interrupting the execution (Ctrl+C again to leave without waiting)\n" +
				"axlr-tui: execution interrupted: interrupted from axlr-tui (session " + sid + ")\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.interrupts) != 1 || f.interrupts[0] != (interruptCall{execution, InterruptReason}) {
					t.Errorf("interrupts %+v, want the watched execution %+v", f.interrupts, execution)
				}
			},
		},
		{
			name: "second ctrl+c leaves", opts: ExecOptions{Prompt: "a slow one", Mode: "normal", Approve: "none", JSON: true},
			fake: &fakeClient{watchUntil: "cancel"}, signals: 2, code: 130,
			stderr: "axlr-tui: interrupting the execution (Ctrl+C again to leave without waiting)\n" +
				"axlr-tui: left without waiting; the execution goes on in axlrd\n",
		},
		{
			name: "axlrd restarts", opts: ExecOptions{Prompt: "x", Mode: "normal", Approve: "none"},
			fake: &fakeClient{down: true, result: completed}, stdout: "a.txt holds one line.\n",
			stderr: "axlr-tui: axlrd unreachable (connection refused); waiting for it to come back\naxlr-tui: axlrd is back\n",
		},
		{
			name: "unreachable", opts: ExecOptions{Prompt: "x", Mode: "normal", Approve: "none"},
			dialErr: &client.UnreachableError{Address: "127.0.0.1:1", Err: errors.New("connection refused")}, code: 4,
			stderr: "axlr-tui: axlrd not reachable at 127.0.0.1:1: start it with \"go run ./cmd/axlrd\" (or \"axlrd\"), or pass --temporal-address (connection refused)\n",
		},
		{
			name: "no worker", opts: ExecOptions{SessionID: sid, Decide: "approve", CallID: "exec-1"},
			fake: &fakeClient{workerErr: &client.NoWorkerError{TaskQueue: "axlr-host-h"}}, code: 4,
			stderr: "axlr-tui: no axlrd worker serves this host (task queue axlr-host-h): start axlrd on this machine, with the same AXLR_HOST_ID if you set it\n",
			check: func(t *testing.T, f *fakeClient) {
				if len(f.decided) != 0 || !f.closed {
					t.Errorf("decided %+v, closed %v", f.decided, f.closed)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, stdin, stdout, stderr := factory.Test()
			stdin.WriteString(tt.stdin)
			fake := tt.fake
			if fake == nil {
				fake = &fakeClient{}
			}
			fake.t = t
			fake.interrupted = make(chan struct{})
			interrupts := make(chan os.Signal, 2)
			for range tt.signals {
				interrupts <- os.Interrupt
			}
			opts := tt.opts
			opts.IO = ios
			opts.Interrupts = interrupts
			opts.Getwd = func() (string, error) { return workspace, nil }
			opts.Client = func(context.Context) (Client, error) {
				if tt.dialErr != nil {
					return nil, tt.dialErr
				}
				return fake, nil
			}
			code := cmdutil.ExitCode(execRun(context.Background(), &opts), stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tt.code, stderr)
			}
			if tt.golden {
				cmdtest.Golden(t, stdout.Bytes(), *update)
			} else if stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout, tt.stdout)
			}
			if stderr.String() != tt.stderr {
				t.Errorf("stderr\n%s\nwant\n%s", stderr, tt.stderr)
			}
			if tt.check != nil {
				tt.check(t, fake)
			}
		})
	}
}

// TestExecRunJSONLines checks that --json's stdout is JSON lines ending
// with the result line, as the runtime contract reads it.
func TestExecRunJSONLines(t *testing.T) {
	ios, _, stdout, _ := factory.Test()
	fake := &fakeClient{t: t, events: events, result: needsDecision}
	opts := &ExecOptions{IO: ios, Prompt: "x", Mode: "normal", Approve: "none", JSON: true,
		Getwd: func() (string, error) { return t.TempDir(), nil }, Client: func(context.Context) (Client, error) { return fake, nil }}
	if code := cmdutil.ExitCode(execRun(context.Background(), opts), io.Discard); code != 3 {
		t.Fatalf("exit %d", code)
	}
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	var types []string
	var last contract.Event
	for dec.More() {
		last = contract.Event{}
		if err := dec.Decode(&last); err != nil {
			t.Fatal(err)
		}
		types = append(types, string(last.Type))
	}
	if strings.Join(types, " ") != "session tool.requested tool.completed text completed result" || last.Result == nil || last.Result.Pending.CallID != "exec-1" {
		t.Fatalf("lines %v, last %+v", types, last)
	}
}

// TestExecRunDeltas: on a terminal, the answer's deltas print as they
// come, and the result then prints without the answer the terminal
// shows already; a stream that missed its end prints the answer whole.
func TestExecRunDeltas(t *testing.T) {
	tests := []struct {
		name   string
		deltas []string
		tty    bool
		stdout string
	}{
		{"streamed whole", []string{"a.txt holds ", "one line."}, true, "a.txt holds one line.\n"},
		{"lines", []string{"Read:\n- a", ".txt\n- b.txt\n", "a.txt holds one line."}, true, "Read:\n- a.txt\n- b.txt\na.txt holds one line.\n"},
		{"earlier text, then the answer", []string{"Let me look.", "a.txt holds one line."}, true, "Let me look.a.txt holds one line.\n"},
		{"the end lost", []string{"a.txt ho"}, true, "a.txt ho\na.txt holds one line.\n"},
		{"off a terminal", []string{"a.txt holds one line."}, false, "a.txt holds one line.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, stdout, _ := factory.Test()
			ios.SetStdoutTTY(tt.tty)
			fake := &fakeClient{t: t, result: completed, interrupted: make(chan struct{}), streamed: make(chan struct{})}
			if !tt.tty {
				close(fake.streamed)
			}
			opts := ExecOptions{Prompt: "x", Mode: "normal", Approve: "local", IO: ios,
				Getwd:  func() (string, error) { return t.TempDir(), nil },
				Client: func(context.Context) (Client, error) { return fake, nil },
				Deltas: func(ctx context.Context, sessionID string, fn func(contract.Event)) error {
					if sessionID != sid {
						t.Errorf("deltas of session %s", sessionID)
					}
					for _, d := range tt.deltas {
						fn(contract.Event{Type: contract.EventTextDelta, Text: d})
					}
					fn(contract.Event{Type: contract.EventReasoningDelta, Text: "not printed"})
					close(fake.streamed)
					<-ctx.Done()
					return nil
				}}
			if err := execRun(context.Background(), &opts); err != nil {
				t.Fatal(err)
			}
			if stdout.String() != tt.stdout {
				t.Fatalf("stdout %q, want %q", stdout, tt.stdout)
			}
		})
	}
}
