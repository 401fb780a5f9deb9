package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	updatepb "go.temporal.io/api/update/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

const (
	sid       = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"
	successor = "0b9e4d0c-6a2f-4f57-8f0e-2f5c3b7d9a11"
)

var sessionWID = workflows.SessionWorkflowID(sid)

func newTestClient(t *testing.T, f *fakeTemporal) *Client {
	f.t = t
	c := newClient(f, "127.0.0.1:7233", "h")
	c.poll, c.idle, c.retry, c.workerWait = time.Millisecond, time.Millisecond, time.Millisecond, 50*time.Millisecond
	return c
}

func TestDial(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	env := func(hostID string) func(string) string {
		return func(k string) string {
			if k == "AXLR_HOST_ID" {
				return hostID
			}
			return ""
		}
	}
	absent := filepath.Join(dir, "absent.json")
	tests := []struct {
		name string
		o    Options
		// unreachable is the address the dial fails at; else err is a
		// *ConfigError's text.
		unreachable string
		err         string
	}{
		{name: "flag address", o: Options{Address: "127.0.0.1:1", SettingsPath: absent, Getenv: env("h")}, unreachable: "127.0.0.1:1"},
		{name: "settings address", o: Options{SettingsPath: write("addr.json", `{"daemon": {"temporal_address": "127.0.0.1:1"}}`), Getenv: env("h")}, unreachable: "127.0.0.1:1"},
		{name: "settings frontend port", o: Options{SettingsPath: write("port.json", `{"daemon": {"frontend_port": 1}}`), Getenv: env("h")}, unreachable: "127.0.0.1:1"},
		{name: "settings address over frontend port", o: Options{SettingsPath: write("both.json", `{"daemon": {"temporal_address": "127.0.0.1:1", "frontend_port": 2}}`), Getenv: env("h")}, unreachable: "127.0.0.1:1"},
		{name: "flag over settings", o: Options{Address: "127.0.0.1:1", SettingsPath: write("addr2.json", `{"daemon": {"temporal_address": "127.0.0.1:2"}}`), Getenv: env("h")}, unreachable: "127.0.0.1:1"},
		{name: "bad settings", o: Options{Address: "127.0.0.1:1", SettingsPath: write("bad.json", `{"daemon": {"temporal_address": 7}}`), Getenv: env("h")}, err: "bad.json"},
		{name: "bad host id", o: Options{Address: "127.0.0.1:1", SettingsPath: absent, Getenv: env("Not A Host")}, err: `AXLR_HOST_ID="Not A Host"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tt.o)
			if c != nil {
				c.Close()
			}
			if tt.unreachable != "" {
				var u *UnreachableError
				if !errors.As(err, &u) || u.Address != tt.unreachable || strings.Contains(err.Error(), "\n") ||
					!strings.HasPrefix(err.Error(), "axlrd not reachable at "+tt.unreachable+`: start it with "go run ./cmd/axlrd" (or "axlrd"), or pass --temporal-address (`) {
					t.Fatalf("error %v, want axlrd unreachable at %s", err, tt.unreachable)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want a config error containing %q", err, tt.err)
			}
		})
	}
}

func TestCheckWorker(t *testing.T) {
	boom := serviceerror.NewUnavailable("connection refused")
	tests := []struct {
		name    string
		pollers func(n int) (int, error)
		err     string
	}{
		{"polled", func(int) (int, error) { return 1, nil }, ""},
		{"polls after a while", func(n int) (int, error) { return min(n/3, 1), nil }, ""},
		{"no worker", func(int) (int, error) { return 0, nil },
			"no axlrd worker serves this host (task queue axlr-host-h): start axlrd on this machine, with the same AXLR_HOST_ID if you set it"},
		{"no answer", func(int) (int, error) { return 0, boom }, "describe task queue axlr-host-h: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTemporal{pollers: tt.pollers}
			err := newTestClient(t, f).CheckWorker(context.Background())
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if nw := new(*NoWorkerError); !errors.As(err, nw) || err.Error() != tt.err {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if f.describedTQ[0] != "axlr-host-h" {
				t.Errorf("described %v", f.describedTQ)
			}
		})
	}
}

// accept answers execute and decide updates as the session workflow does.
func accept(o sdkclient.UpdateWorkflowOptions) (any, error, error) {
	return workflows.Accepted{ExecutionID: o.UpdateID, SessionID: sid}, nil, nil
}

func TestStart(t *testing.T) {
	f := &fakeTemporal{update: accept}
	c := newTestClient(t, f)
	req := workflows.ExecuteRequest{ExecutionID: "exec-given", Prompt: "fix it", Root: "/w", Mode: "normal", Approval: policy.ApproveLocal}
	ex, err := c.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.withStart) != 1 || len(f.updateStarts) != 1 {
		t.Fatalf("start %+v update %+v", f.withStart, f.updateStarts)
	}
	start := f.withStart[0]
	in, _ := start.args[0].(workflows.SessionInput)
	if start.workflow != workflows.SessionWorkflow || !session.ValidID(in.SessionID) || in.Host != "h" || len(start.args) != 1 ||
		start.opts.ID != workflows.SessionWorkflowID(in.SessionID) || start.opts.TaskQueue != "axlr-host-h" ||
		start.opts.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING {
		t.Errorf("start %+v", start)
	}
	u := f.updateStarts[0].UpdateOptions
	if u.UpdateName != workflows.UpdateExecute || u.UpdateID != "exec-given" || u.WaitForStage != sdkclient.WorkflowUpdateStageCompleted ||
		!reflect.DeepEqual(u.Args, []any{req}) {
		t.Errorf("update %+v", u)
	}
	if ex != (Execution{WorkflowID: start.opts.ID, ExecutionID: "exec-given", SessionID: sid}) {
		t.Errorf("execution %+v", ex)
	}

	// Without an execution id, the client chooses one: the update's id.
	req.ExecutionID = ""
	if ex, err = c.Start(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	u = f.updateStarts[1].UpdateOptions
	if sent := u.Args[0].(workflows.ExecuteRequest); !session.ValidID(u.UpdateID) || sent.ExecutionID != u.UpdateID || ex.ExecutionID != u.UpdateID {
		t.Errorf("update %+v, execution %+v", u, ex)
	}
	if f.withStart[0].opts.ID == f.withStart[1].opts.ID {
		t.Errorf("two starts in one session %s", f.withStart[0].opts.ID)
	}
}

func TestExecuteAndDecide(t *testing.T) {
	f := &fakeTemporal{update: accept, workflows: map[string]string{sessionWID: "run-1"}, visibility: map[string]string{successor: sessionWID}}
	c := newTestClient(t, f)
	ctx := context.Background()
	exec := workflows.ExecuteRequest{ExecutionID: "exec-2", Prompt: "and then", Mode: "normal", Approval: policy.ApproveNone}
	if ex, err := c.Execute(ctx, sid, exec); err != nil || ex != (Execution{sessionWID, "exec-2", sid}) {
		t.Fatalf("execute: %+v %v", ex, err)
	}
	decide := workflows.DecideRequest{ExecutionID: "exec-3", CallID: "exec-1", Decision: contract.Approve}
	// A successor's id finds the workflow that holds it.
	if ex, err := c.Decide(ctx, successor, decide); err != nil || ex.WorkflowID != sessionWID {
		t.Fatalf("decide: %+v %v", ex, err)
	}
	want := []sdkclient.UpdateWorkflowOptions{
		{WorkflowID: sessionWID, UpdateID: "exec-2", UpdateName: workflows.UpdateExecute, WaitForStage: sdkclient.WorkflowUpdateStageCompleted, Args: []any{exec}},
		{WorkflowID: sessionWID, UpdateID: "exec-3", UpdateName: workflows.UpdateDecide, WaitForStage: sdkclient.WorkflowUpdateStageCompleted, Args: []any{decide}},
	}
	if !reflect.DeepEqual(f.updates, want) {
		t.Errorf("updates\n%+v\nwant\n%+v", f.updates, want)
	}
	if len(f.listQueries) != 1 || f.listQueries[0] != "AxlrSessions = '"+successor+"'" {
		t.Errorf("visibility queries %q", f.listQueries)
	}
}

func TestUpdateRefused(t *testing.T) {
	tests := []struct {
		name            string
		sendErr, getErr error
		unreachable     bool
		msg             string
	}{
		{name: "validator", getErr: errors.New("update failed: decide: no call exec-9 waits for a decision in session S; the pending call is exec-1"),
			msg: "decide: no call exec-9 waits for a decision in session S; the pending call is exec-1"},
		{name: "on send", sendErr: errors.New("unable to update workflow: session S is running execution E: wait for it to end or interrupt it\ndetails"),
			msg: "session S is running execution E: wait for it to end or interrupt it"},
		{name: "unavailable", sendErr: serviceerror.NewUnavailable("connection refused"), unreachable: true,
			msg: `axlrd not reachable at 127.0.0.1:7233: start it with "go run ./cmd/axlrd" (or "axlrd"), or pass --temporal-address (connection refused)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTemporal{workflows: map[string]string{sessionWID: "run-1"},
				update: func(sdkclient.UpdateWorkflowOptions) (any, error, error) { return nil, tt.sendErr, tt.getErr }}
			_, err := newTestClient(t, f).Decide(context.Background(), sid, workflows.DecideRequest{CallID: "exec-9", Decision: contract.Approve})
			if tt.unreachable != errors.As(err, new(*UnreachableError)) || !tt.unreachable && !errors.As(err, new(*RefusedError)) || err.Error() != tt.msg {
				t.Fatalf("error %T %v, want %q", err, err, tt.msg)
			}
		})
	}
}

func TestFindSession(t *testing.T) {
	tests := []struct {
		name        string
		f           *fakeTemporal
		wid         string
		unreachable bool
		err         string
	}{
		{name: "own workflow", f: &fakeTemporal{workflows: map[string]string{sessionWID: "r"}}, wid: sessionWID},
		{name: "held by a task", f: &fakeTemporal{visibility: map[string]string{sid: "axlr-task-" + sid}}, wid: "axlr-task-" + sid},
		{name: "none", f: &fakeTemporal{}, err: "no session " + sid + " in axlrd"},
		{name: "describe unavailable", f: &fakeTemporal{describeErr: serviceerror.NewUnavailable("connection refused")}, unreachable: true,
			err: "look up session " + sid + `: axlrd not reachable at 127.0.0.1:7233: start it with "go run ./cmd/axlrd" (or "axlrd"), or pass --temporal-address (connection refused)`},
		{name: "describe refused", f: &fakeTemporal{describeErr: serviceerror.NewPermissionDenied("no", "")}, err: "look up session " + sid + ": no"},
		{name: "visibility fails", f: &fakeTemporal{listErr: serviceerror.NewInvalidArgument("unknown search attribute AxlrSessions")},
			err: "look up session " + sid + ": unknown search attribute AxlrSessions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wid, err := newTestClient(t, tt.f).FindSession(context.Background(), sid)
			if tt.err == "" {
				if err != nil || wid != tt.wid {
					t.Fatalf("%q %v, want %q", wid, err, tt.wid)
				}
				return
			}
			if err == nil || err.Error() != tt.err || errors.As(err, new(*UnreachableError)) != tt.unreachable {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if tt.name == "none" && !errors.As(err, new(*NotFoundError)) {
				t.Fatalf("error %T, want *NotFoundError", err)
			}
		})
	}
}

func TestInterrupt(t *testing.T) {
	f := &fakeTemporal{update: func(o sdkclient.UpdateWorkflowOptions) (any, error, error) {
		return workflows.Accepted{ExecutionID: "exec-7", SessionID: sid}, nil, nil
	}}
	c := newTestClient(t, f)
	ex := Execution{WorkflowID: sessionWID, ExecutionID: "exec-7", SessionID: sid}
	if err := c.Interrupt(context.Background(), ex, "interrupted from axlr-tui"); err != nil {
		t.Fatal(err)
	}
	u := f.updates[0]
	if u.WorkflowID != sessionWID || u.UpdateName != workflows.UpdateInterrupt || !session.ValidID(u.UpdateID) ||
		!reflect.DeepEqual(u.Args, []any{workflows.InterruptRequest{ExecutionID: "exec-7", Reason: "interrupted from axlr-tui"}}) {
		t.Errorf("update %+v", u)
	}
	f.update = func(sdkclient.UpdateWorkflowOptions) (any, error, error) {
		return nil, nil, errors.New("update failed: interrupt: session " + sid + " runs execution exec-8, not exec-7")
	}
	if err := c.Interrupt(context.Background(), ex, ""); !errors.As(err, new(*RefusedError)) || err.Error() != "interrupt: session "+sid+" runs execution exec-8, not exec-7" {
		t.Errorf("refused interrupt: %v", err)
	}
}

func TestStartTask(t *testing.T) {
	valid := workflows.TaskInput{ExecutionID: "exec-1", SessionID: sid, Root: "/w", Prompt: "fix the build"}
	tests := []struct {
		name       string
		in         workflows.TaskInput
		executeErr error
		queue      string
		err        string
	}{
		{name: "this host", in: valid, queue: "axlr-host-h"},
		{name: "another host", in: func() workflows.TaskInput { in := valid; in.Host = "build-1"; return in }(), queue: "axlr-host-build-1"},
		{name: "invalid", in: func() workflows.TaskInput { in := valid; in.Prompt = " "; return in }(),
			err: "start task in session " + sid + ": task: the prompt is empty"},
		{name: "already ran", in: valid, executeErr: serviceerror.NewWorkflowExecutionAlreadyStarted("workflow execution already started", "", ""),
			err: "start task in session " + sid + ": workflow execution already started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTemporal{executeErr: tt.executeErr}
			ex, err := newTestClient(t, f).StartTask(context.Background(), tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				if tt.executeErr == nil && len(f.executed) != 0 {
					t.Fatalf("started %+v", f.executed)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.in
			if want.Host == "" {
				want.Host = "h"
			}
			got := f.executed[0]
			if got.workflow != workflows.TaskWorkflow || !reflect.DeepEqual(got.args, []any{want}) ||
				got.opts.ID != workflows.TaskWorkflowID(sid) || got.opts.TaskQueue != tt.queue ||
				got.opts.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING ||
				got.opts.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE {
				t.Errorf("start %+v", got)
			}
			if ex != (Execution{WorkflowID: workflows.TaskWorkflowID(sid), ExecutionID: "exec-1", SessionID: sid}) {
				t.Errorf("execution %+v", ex)
			}
		})
	}
}

func TestResultAndPendingCall(t *testing.T) {
	pending := &contract.PendingCall{CallID: "exec-1", Tool: "local_exec", Arguments: []byte(`{"program":"touch"}`)}
	tests := []struct {
		name    string
		result  *contract.Result
		err     error
		pending *contract.PendingCall
		want    string
	}{
		{name: "needs decision", result: &contract.Result{Status: contract.NeedsDecision, SessionID: sid, Pending: pending}, pending: pending},
		{name: "completed", result: &contract.Result{Status: contract.Completed, SessionID: sid},
			want: "no call waits for a decision in session " + sid + ": its last execution ended completed"},
		{name: "no result yet", err: serviceerror.NewQueryFailed("session " + sid + " has no execution result yet"),
			want: "result of session " + sid + ": session " + sid + " has no execution result yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTemporal{workflows: map[string]string{sessionWID: "r"}, query: func(_ int, wid, queryType string, args []any) (any, error) {
				if wid != sessionWID || queryType != workflows.QueryResult || len(args) != 0 {
					t.Errorf("query %s %s %v", wid, queryType, args)
				}
				return tt.result, tt.err
			}}
			c := newTestClient(t, f)
			if r, err := c.Result(context.Background(), sid); tt.err == nil && (err != nil || !reflect.DeepEqual(r, tt.result)) {
				t.Errorf("result %+v %v", r, err)
			}
			p, err := c.PendingCall(context.Background(), sid)
			if tt.want == "" {
				if err != nil || !reflect.DeepEqual(p, tt.pending) {
					t.Fatalf("pending %+v %v", p, err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if tt.result != nil && !errors.Is(err, ErrNoPendingCall) {
				t.Errorf("error %v is not ErrNoPendingCall", err)
			}
		})
	}
}

// recorder is a Watcher that writes down what it sees.
type recorder struct {
	seen []string
	// onDown runs at Unreachable.
	onDown func()
}

func (r *recorder) Event(ev contract.Event) { r.seen = append(r.seen, "event "+string(ev.Type)) }
func (r *recorder) Back()                   { r.seen = append(r.seen, "back") }
func (r *recorder) Unreachable(err error) {
	r.seen = append(r.seen, "unreachable: "+err.Error())
	if r.onDown != nil {
		r.onDown()
	}
}

func TestWatch(t *testing.T) {
	ex := Execution{WorkflowID: sessionWID, ExecutionID: "exec-1", SessionID: sid}
	down := serviceerror.NewUnavailable("connection refused")
	result := &contract.Result{Status: contract.Completed, SessionID: sid, Answer: "done"}
	var afters []int
	f := &fakeTemporal{query: func(n int, wid, queryType string, args []any) (any, error) {
		q := args[0].(workflows.ProgressQuery)
		if wid != sessionWID || queryType != workflows.QueryProgress || q.ExecutionID != "exec-1" {
			t.Errorf("query %s %s %+v", wid, queryType, q)
		}
		afters = append(afters, q.After)
		switch n {
		case 0:
			return workflows.Progress{Running: true, Events: []contract.Event{{Type: contract.EventSession}, {Type: contract.EventText}}, Next: 2}, nil
		case 1, 2:
			return nil, down
		case 3:
			return workflows.Progress{Running: true, Events: []contract.Event{{Type: contract.EventCompleted}}, Next: 3}, nil
		case 4:
			return workflows.Progress{Running: true, Next: 3}, nil
		}
		return workflows.Progress{Next: 3, Result: result}, nil
	}}
	w := &recorder{}
	got, err := newTestClient(t, f).Watch(context.Background(), ex, w)
	if err != nil || !reflect.DeepEqual(got, result) {
		t.Fatalf("result %+v %v", got, err)
	}
	want := []string{"event session", "event text", "unreachable: connection refused", "back", "event completed"}
	if !reflect.DeepEqual(w.seen, want) {
		t.Errorf("seen %q, want %q", w.seen, want)
	}
	if !reflect.DeepEqual(afters, []int{0, 2, 2, 2, 3, 3}) {
		t.Errorf("cursors %v", afters)
	}
}

// Between two queries Watch waits for the session's history to grow: it
// does not query an execution whose history stands still.
func TestWatchWaitsForTheHistory(t *testing.T) {
	ex := Execution{WorkflowID: sessionWID, ExecutionID: "exec-1", SessionID: sid}
	result := &contract.Result{Status: contract.Completed, SessionID: sid}
	var queries atomic.Int32
	f := &fakeTemporal{grows: make(chan *historypb.HistoryEvent), query: func(n int, _, _ string, _ []any) (any, error) {
		queries.Add(1)
		if n == 0 {
			return workflows.Progress{Running: true, Events: []contract.Event{{Type: contract.EventSession}}, Next: 1}, nil
		}
		return workflows.Progress{Next: 1, Result: result}, nil
	}}
	c := newTestClient(t, f)
	c.idle = time.Hour
	done := make(chan error, 1)
	go func() {
		_, err := c.Watch(context.Background(), ex, &recorder{})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if n := queries.Load(); n != 1 {
		t.Fatalf("%d queries while the history stood still, want 1", n)
	}
	f.grows <- &historypb.HistoryEvent{EventId: 7}
	select {
	case err := <-done:
		if err != nil || queries.Load() != 2 {
			t.Fatalf("watch: %v after %d queries", err, queries.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the history grew and Watch did not query again")
	}
}

// A query axlrd does not answer (the SDK retries a refused connection
// until its context ends) is an *UnreachableError after queryTimeout, so a
// panel's refresh says axlrd is down instead of waiting for ever.
func TestQueryWithoutAnswer(t *testing.T) {
	c := newTestClient(t, &fakeTemporal{silent: true})
	c.answer = 20 * time.Millisecond
	_, err := c.Jobs(context.Background())
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no answer in 20ms") {
		t.Fatalf("error %v, want an *UnreachableError", err)
	}
	c = newTestClient(t, &fakeTemporal{silent: true, deadline: true})
	if _, err := c.Jobs(context.Background()); !errors.As(err, &ue) {
		t.Fatalf("error %v after the SDK's deadline, want an *UnreachableError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Jobs(ctx); errors.As(err, &ue) {
		t.Errorf("a cancelled caller's query is %v, not axlrd's silence", err)
	}
}

// A query held in the sticky queue of a worker that is gone (its host
// lost) passes the SDK's deadline; the client resets the workflow's
// stickiness and asks once more, and any live worker answers.
func TestQueryOfALostWorker(t *testing.T) {
	ft := &fakeTemporal{sticky: true, query: func(int, string, string, []any) (any, error) {
		return plans.Record{ID: "p-1", Status: plans.Running}, nil
	}}
	c := newTestClient(t, ft)
	c.namespace = "team"
	rec, err := c.Plan(context.Background(), "p-1")
	if err != nil || rec.ID != "p-1" {
		t.Fatalf("plan %+v, %v", rec, err)
	}
	if len(ft.resets) != 1 || ft.resets[0] != "team/"+workflows.PlanWorkflowID("p-1") || ft.queries != 1 {
		t.Errorf("resets %v, queries answered %d; want one reset of the plan's workflow, then its answer", ft.resets, ft.queries)
	}
}

func TestWatchEnds(t *testing.T) {
	ex := Execution{WorkflowID: sessionWID, ExecutionID: "exec-1", SessionID: sid}
	fc := sdktemporal.GetDefaultFailureConverter()
	refusal := "execution exec-1 is not one of the recent executions of session " + sid
	refused := serviceerror.NewQueryFailedWithFailure(refusal+" (type: QueryRefused, retryable: false)", fc.ErrorToFailure(sdktemporal.NewNonRetryableApplicationError(refusal, workflows.ErrTypeQueryRefused, nil)))
	// What the SDK sends for a query task whose replay panicked.
	panicked := "[TMPRL1100] invalid state transition: attempt to handleInitiatedEvent, CommandType: Activity, ID: 122, state=Created"
	unanswered := serviceerror.NewQueryFailedWithFailure(panicked, fc.ErrorToFailure(errors.New(panicked)))
	t.Run("refused", func(t *testing.T) {
		var queries int
		f := &fakeTemporal{query: func(int, string, string, []any) (any, error) {
			queries++
			return nil, refused
		}}
		_, err := newTestClient(t, f).Watch(context.Background(), ex, &recorder{})
		if err == nil || err.Error() != "watch execution exec-1: "+refusal || queries != 1 {
			t.Fatalf("error %v after %d queries", err, queries)
		}
	})
	t.Run("a query the worker failed to answer is asked again", func(t *testing.T) {
		result := &contract.Result{Status: contract.Completed, SessionID: sid}
		f := &fakeTemporal{query: func(n int, _, _ string, _ []any) (any, error) {
			if n < maxUnanswered-1 {
				return nil, unanswered
			}
			return workflows.Progress{Next: 1, Result: result}, nil
		}}
		w := &recorder{}
		res, err := newTestClient(t, f).Watch(context.Background(), ex, w)
		if err != nil || res == nil || res.Status != contract.Completed || res.SessionID != sid {
			t.Fatalf("result %+v, error %v", res, err)
		}
		if want := []string{"unreachable: " + panicked, "back"}; !reflect.DeepEqual(w.seen, want) {
			t.Fatalf("seen %q, want %q", w.seen, want)
		}
	})
	t.Run("a worker that never answers", func(t *testing.T) {
		var queries int
		f := &fakeTemporal{query: func(int, string, string, []any) (any, error) {
			queries++
			return nil, unanswered
		}}
		_, err := newTestClient(t, f).Watch(context.Background(), ex, &recorder{})
		want := fmt.Sprintf("watch execution exec-1: axlrd failed to answer %d times in a row: %s", maxUnanswered, panicked)
		if err == nil || err.Error() != want || queries != maxUnanswered {
			t.Fatalf("error %v after %d queries, want %q", err, queries, want)
		}
	})
	t.Run("cancelled while axlrd is down", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := &fakeTemporal{query: func(int, string, string, []any) (any, error) {
			return nil, serviceerror.NewUnavailable("connection refused")
		}}
		w := &recorder{onDown: cancel}
		if _, err := newTestClient(t, f).Watch(ctx, ex, w); !errors.Is(err, context.Canceled) || len(w.seen) != 1 {
			t.Fatalf("error %v, seen %q", err, w.seen)
		}
	})
	t.Run("progress names the execution", func(t *testing.T) {
		f := &fakeTemporal{query: func(int, string, string, []any) (any, error) {
			return nil, serviceerror.NewUnavailable("connection refused")
		}}
		_, err := newTestClient(t, f).Progress(context.Background(), ex, 0)
		if !errors.As(err, new(*UnreachableError)) || !strings.HasPrefix(err.Error(), "progress of execution exec-1: axlrd not reachable at 127.0.0.1:7233") {
			t.Fatalf("error %v", err)
		}
	})
}

// historyOf builds history events the way the server records them for a
// session workflow, with payloads from the default data converter.
type historyOf struct {
	t      *testing.T
	at     time.Time
	events []*historypb.HistoryEvent
}

func (h *historyOf) payloads(v ...any) *commonpb.Payloads {
	p, err := converter.GetDefaultDataConverter().ToPayloads(v...)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *historyOf) add(after time.Duration, typ enumspb.EventType, attrs func(*historypb.HistoryEvent)) {
	h.at = h.at.Add(after)
	ev := &historypb.HistoryEvent{EventId: int64(len(h.events) + 1), EventTime: timestamppb.New(h.at), EventType: typ}
	attrs(ev)
	h.events = append(h.events, ev)
}

func TestLoadTrajectory(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)
	run1 := &historyOf{t: t, at: t0}
	run1.add(0, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			TaskQueue: &taskqueuepb.TaskQueue{Name: "axlr-host-h"}}}
	})
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{}}
	})
	accepted := func(id, name string, arg any) func(*historypb.HistoryEvent) {
		return func(ev *historypb.HistoryEvent) {
			ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes{WorkflowExecutionUpdateAcceptedEventAttributes: &historypb.WorkflowExecutionUpdateAcceptedEventAttributes{
				AcceptedRequest: &updatepb.Request{Meta: &updatepb.Meta{UpdateId: id}, Input: &updatepb.Input{Name: name, Args: run1.payloads(arg)}}}}
		}
	}
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, accepted("u1", workflows.UpdateExecute,
		workflows.ExecuteRequest{ExecutionID: "u1", Prompt: "create notes.md", Model: "m", Mode: "normal", Approval: policy.ApproveNone}))
	run1.add(3*time.Millisecond, enumspb.EVENT_TYPE_MARKER_RECORDED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: "LocalActivity",
			Details: map[string]*commonpb.Payloads{
				"data": run1.payloads(struct {
					ActivityType string
					ReplayTime   time.Time
					Attempt      int32
				}{workflows.ActivityBeginTurn, t0.Add(5 * time.Millisecond), 1}),
				"result": run1.payloads(workflows.BeginTurnResult{Revision: 3, Model: "m"}),
			}}}
	})
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityType: &commonpb.ActivityType{Name: workflows.ActivityModelRequest},
			Input:        run1.payloads(workflows.ModelRequestInput{SessionID: sid, Revision: 3, Model: "m"})}}
	})
	scheduled := int64(len(run1.events))
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{
			ScheduledEventId: scheduled, Attempt: 2}}
	})
	run1.add(time.Second, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
			ScheduledEventId: scheduled,
			Result: run1.payloads(workflows.ModelRequestResult{Revision: 5, Calls: []workflows.ModelCall{{Tool: "local_exec"}},
				Usage: contract.Usage{PromptTokens: 100, CompletionTokens: 10}})}}
	})
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{}}
	})
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, accepted("u2", workflows.UpdateDecide,
		workflows.DecideRequest{ExecutionID: "u2", CallID: "exec-9", Decision: contract.Approve}))
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateCompletedEventAttributes{WorkflowExecutionUpdateCompletedEventAttributes: &historypb.WorkflowExecutionUpdateCompletedEventAttributes{
			Meta:    &updatepb.Meta{UpdateId: "u2"},
			Outcome: &updatepb.Outcome{Value: &updatepb.Outcome_Failure{Failure: &failurepb.Failure{Message: "decide: no call exec-9 waits"}}}}}
	})
	run1.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes{WorkflowExecutionContinuedAsNewEventAttributes: &historypb.WorkflowExecutionContinuedAsNewEventAttributes{
			NewExecutionRunId: "run-2"}}
	})
	run2 := &historyOf{t: t, at: run1.at}
	run2.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			TaskQueue: &taskqueuepb.TaskQueue{Name: "axlr-host-h"}, ContinuedExecutionRunId: "run-1"}}
	})
	run2.add(time.Millisecond, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, func(ev *historypb.HistoryEvent) {
		ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes{WorkflowExecutionCompletedEventAttributes: &historypb.WorkflowExecutionCompletedEventAttributes{}}
	})

	f := &fakeTemporal{workflows: map[string]string{sessionWID: "run-2"}, histories: map[string][]*historypb.HistoryEvent{"run-1": run1.events, "run-2": run2.events}}
	c := newTestClient(t, f)
	for _, id := range []string{sid, sessionWID} {
		tr, err := c.History(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if tr.WorkflowID != sessionWID || !reflect.DeepEqual(tr.Runs, []string{"run-1", "run-2"}) {
			t.Errorf("trajectory %s %v", tr.WorkflowID, tr.Runs)
		}
		var got []string
		for _, s := range tr.Steps {
			took := "-"
			if s.Duration != nil {
				took = time.Duration(*s.Duration).String()
			}
			got = append(got, fmt.Sprintf("%s %s | %s %s | %s | %d %s | %s | %s", s.Time.Sub(t0), s.RunID, s.Kind, s.Name, s.Detail, s.Attempt, took, s.Outcome, s.Error))
		}
		// An update shows when its workflow task started, as the local
		// activities of that task do, not when the task's completion
		// wrote it.
		want := []string{
			"0s run-1 | workflow started | first run | 0 - | axlr-host-h | ",
			`1ms run-1 | update execute | "create notes.md" model m approve none | 0 - | accepted | `,
			"5ms run-1 | local_activity BeginTurn | model m | 1 4ms | revision 3 | ",
			"6ms run-1 | activity ModelRequest | m at revision 3 | 2 1s | 1 call(s): local_exec · 100→10 tokens | ",
			"1.008s run-1 | update decide | approve the pending call exec-9 | 0 - | failed | decide: no call exec-9 waits",
			"1.011s run-1 | workflow continued as new |  | 0 - | run-2 | ",
			"1.012s run-2 | workflow started | continued as new from run-1 | 0 - | axlr-host-h | ",
			"1.013s run-2 | workflow closed |  | 0 - | completed | ",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("steps of %s:\n%s\nwant\n%s", id, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if _, err := c.History(context.Background(), "axlr-task-"+sid); err == nil || err.Error() != "describe workflow axlr-task-"+sid+": workflow axlr-task-"+sid+" not found" {
		t.Errorf("history of a missing workflow: %v", err)
	}
}

// A one-shot query (jobs, jobs show, a panel's refresh) that axlrd's
// worker failed to answer is asked again, up to queryTries in all; a
// refusal is not.
func TestQueryAskedAgain(t *testing.T) {
	fc := sdktemporal.GetDefaultFailureConverter()
	panicked := "[TMPRL1100] invalid state transition"
	unanswered := serviceerror.NewQueryFailedWithFailure(panicked, fc.ErrorToFailure(errors.New(panicked)))
	refused := serviceerror.NewQueryFailedWithFailure("no", fc.ErrorToFailure(sdktemporal.NewNonRetryableApplicationError("no", workflows.ErrTypeQueryRefused, nil)))
	for _, tt := range []struct {
		name     string
		failure  error
		failures int
		queries  int
	}{
		{"answered on the last try", unanswered, queryTries - 1, queryTries},
		{"never answered", unanswered, queryTries, queryTries},
		{"refused", refused, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTemporal{query: func(n int, _, _ string, _ []any) (any, error) {
				if n < tt.failures {
					return nil, tt.failure
				}
				return []jobs.Record{{ID: "j1"}}, nil
			}}
			all, err := newTestClient(t, f).Jobs(context.Background())
			if answered := tt.failures < tt.queries; answered != (err == nil) || (answered && (len(all) != 1 || all[0].ID != "j1")) {
				t.Fatalf("jobs %+v, error %v", all, err)
			}
			if f.queries != tt.queries {
				t.Errorf("%d queries, want %d", f.queries, tt.queries)
			}
		})
	}
}

// JobRetries shows what the job's record cannot: an activity whose last
// attempt failed, running again or waiting for its next attempt. A first
// attempt is not a retry.
func TestJobRetries(t *testing.T) {
	next := time.Date(2026, 12, 1, 21, 0, 4, 0, time.UTC)
	wid := workflows.JobWorkflowID("j1")
	f := &fakeTemporal{workflows: map[string]string{wid: "run-1"}, pending: map[string][]*workflowpb.PendingActivityInfo{wid: {
		{ActivityType: &commonpb.ActivityType{Name: workflows.ActivityModelRequest}, Attempt: 1, State: enumspb.PENDING_ACTIVITY_STATE_STARTED},
		{ActivityId: "5", ActivityType: &commonpb.ActivityType{Name: workflows.ActivityForgePrepare}, Attempt: 3, MaximumAttempts: 6, State: enumspb.PENDING_ACTIVITY_STATE_SCHEDULED,
			LastFailure: &failurepb.Failure{Message: "connection refused"}, NextAttemptScheduleTime: timestamppb.New(next)},
		{ActivityId: "9", ActivityType: &commonpb.ActivityType{Name: workflows.ActivityForgeRead}, Attempt: 2, State: enumspb.PENDING_ACTIVITY_STATE_STARTED,
			LastFailure: &failurepb.Failure{Message: "502 Bad Gateway"}, NextAttemptScheduleTime: timestamppb.New(next)},
	}}}
	got, err := newTestClient(t, f).JobRetries(context.Background(), "j1")
	want := []Retry{
		{ID: "5", Activity: workflows.ActivityForgePrepare, Attempt: 3, MaxAttempts: 6, Failure: "connection refused", Next: next},
		{ID: "9", Activity: workflows.ActivityForgeRead, Attempt: 2, Failure: "502 Bad Gateway"},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("retries %+v, %v; want %+v", got, err, want)
	}
	if _, err := newTestClient(t, &fakeTemporal{}).JobRetries(context.Background(), "gone"); err == nil || !strings.HasPrefix(err.Error(), "retries of job gone: ") {
		t.Errorf("retries of a job without a workflow: %v", err)
	}
}
