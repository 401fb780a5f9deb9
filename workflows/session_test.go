package workflows

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
)

// reply is one scripted model response.
type reply struct {
	text        string
	calls       []scriptCall
	contextFull bool
	err         error
}

type scriptCall struct {
	tool    string
	args    map[string]any
	invalid string
}

// scripted implements SessionActivities with a scripted model and an
// in-memory log length, so workflow logic is tested without I/O. The real
// activities are tested against the real store, tools and an HTTP model in
// package activities and in the integration tests.
type scripted struct {
	mu       sync.Mutex
	replies  []reply
	revision map[string]int
	requests []ModelRequestInput
	ran      []ToolCallInput
	recorded []RecordToolResultInput
	finished []FinishExecutionInput
	notes    []string
	begun    []BeginTurnInput
	next     int
	// profile is settings' ceremonies.profile in every turn's snapshot.
	profile string
	// alwaysAsk, when set, is every snapshot's destructive list (default
	// git push --force); hostTools are the tools it offers beside the
	// workspace's.
	alwaysAsk []string
	hostTools []HostTool
	// about is every snapshot's workspace about.
	about string
}

func newScripted(replies ...reply) *scripted {
	return &scripted{replies: replies, revision: map[string]int{}}
}

func (s *scripted) BeginTurn(_ context.Context, in BeginTurnInput) (BeginTurnResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begun = append(s.begun, in)
	if s.revision[in.SessionID] == 0 {
		s.revision[in.SessionID] = 2 // created, system
	}
	if in.Prompt != "" {
		s.revision[in.SessionID]++
	}
	alwaysAsk := s.alwaysAsk
	if alwaysAsk == nil {
		alwaysAsk = []string{"git push --force"}
	}
	return BeginTurnResult{Revision: s.revision[in.SessionID], Model: cmp.Or(in.Model, "fake-model"), Root: in.Root,
		Settings: policy.Settings{AlwaysAsk: alwaysAsk}, Stream: true, CeremonyProfile: s.profile, HostTools: s.hostTools, About: s.about}, nil
}

func (s *scripted) ModelRequest(_ context.Context, in ModelRequestInput) (ModelRequestResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, in)
	if in.Revision != s.revision[in.SessionID] {
		return ModelRequestResult{}, fmt.Errorf("revision %d, log at %d", in.Revision, s.revision[in.SessionID])
	}
	if s.next >= len(s.replies) {
		return ModelRequestResult{}, errors.New("no scripted reply left")
	}
	r := s.replies[s.next]
	s.next++
	if r.err != nil {
		return ModelRequestResult{}, r.err
	}
	if r.contextFull {
		return ModelRequestResult{Revision: in.Revision, ContextFull: true}, nil
	}
	rev := s.revision[in.SessionID]
	res := ModelRequestResult{Revision: rev + 1, Text: r.text, Usage: contract.Usage{Requests: 1, PromptTokens: 100, CompletionTokens: 10, UnmeteredRequests: 1}}
	for i, c := range r.calls {
		args := map[string]policy.Value{}
		for k, v := range c.args {
			text, ok := v.(string)
			if !ok {
				b, _ := json.Marshal(v)
				text = string(b)
			}
			args[k] = policy.Value{Text: text}
		}
		preview, _ := json.Marshal(c.args)
		res.Calls = append(res.Calls, ModelCall{Key: fmt.Sprintf("%d.%d", rev, i), CallID: fmt.Sprintf("call-%d-%d", rev, i), Tool: c.tool, Args: args, Preview: preview, Invalid: c.invalid})
	}
	s.revision[in.SessionID] = rev + 1
	return res, nil
}

func (s *scripted) ToolCall(_ context.Context, in ToolCallInput) (ToolCallResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran = append(s.ran, in)
	s.revision[in.SessionID]++
	return ToolCallResult{Revision: s.revision[in.SessionID], CallID: in.CallID, Tool: in.Tool, Decision: in.Decision, Status: contract.CallCompleted}, nil
}

func (s *scripted) RecordToolResult(_ context.Context, in RecordToolResultInput) (RecordToolResultResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorded = append(s.recorded, in)
	s.revision[in.SessionID]++
	return RecordToolResultResult{Revision: s.revision[in.SessionID], CallID: in.CallID, Tool: in.Tool, Status: in.Status}, nil
}

func (s *scripted) ContinueSession(_ context.Context, in ContinueSessionInput) (ContinueSessionResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := in.SessionID + "-next"
	s.revision[id] = 3
	return ContinueSessionResult{SessionID: id, Revision: 3}, nil
}

func (s *scripted) FinishExecution(_ context.Context, in FinishExecutionInput) (contract.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, in)
	r := contract.Result{Schema: contract.Schema, Status: in.Status, SessionID: in.Sessions[len(in.Sessions)-1], Sessions: in.Sessions,
		Error: in.Error, ToolCalls: in.ToolCalls, Usage: in.Usage, Artifacts: []contract.Artifact{}}
	if in.Pending != nil {
		r.Pending = &contract.PendingCall{CallID: in.Pending.CallID, Tool: in.Pending.Tool, Arguments: json.RawMessage(`{}`)}
	}
	r.Ceremony, r.Mode = in.Ceremony, in.Mode
	return r, nil
}

var _ SessionActivities = (*scripted)(nil)

// harness runs a session workflow with scripted activities and a timeline
// of updates.
type harness struct {
	testsuite.WorkflowTestSuite
	t      *testing.T
	env    *testsuite.TestWorkflowEnvironment
	acts   *scripted
	memory *fakeMemory
	at     time.Duration
}

const sessionID = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"

func newHarness(t *testing.T, acts *scripted) *harness {
	h := &harness{t: t, acts: acts, memory: &fakeMemory{}}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(Session, workflowOptions())
	h.env.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session."})
	h.env.RegisterActivityWithOptions(h.memory, activity.RegisterOptions{Name: "memory."})
	return h
}

// update schedules an update a minute after the previous one and records
// its outcome in *out.
func (h *harness) update(name, id string, arg any, out *outcome) {
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { out.rejected = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { out.err, out.completed = err, true },
		}, arg)
	}, h.at)
}

// query schedules a progress query after the previous step.
func (h *harness) progress(out *Progress) {
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryProgress, ProgressQuery{})
		if err != nil {
			h.t.Errorf("progress query: %v", err)
			return
		}
		if err := v.Get(out); err != nil {
			h.t.Errorf("decode progress: %v", err)
		}
	}, h.at)
}

// run starts the workflow and cancels it after the last step.
func (h *harness) run() {
	h.at += time.Minute
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, h.at)
	h.env.ExecuteWorkflow(SessionWorkflow, SessionInput{SessionID: sessionID, Host: "test"})
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not end")
	}
}

type outcome struct {
	rejected  error
	err       error
	completed bool
}

func (o *outcome) mustAccept(t *testing.T, what string) {
	t.Helper()
	if o.rejected != nil || o.err != nil || !o.completed {
		t.Fatalf("%s: rejected %v, failed %v, completed %v", what, o.rejected, o.err, o.completed)
	}
}

func (o *outcome) mustReject(t *testing.T, what, contains string) {
	t.Helper()
	if o.rejected == nil || !strings.Contains(o.rejected.Error(), contains) {
		t.Fatalf("%s: rejection %v, want one containing %q", what, o.rejected, contains)
	}
}

func execReq(id, prompt string, approval policy.Approval, p *policy.Policy) ExecuteRequest {
	return ExecuteRequest{ExecutionID: id, Prompt: prompt, Root: "/work/app", Mode: "normal", Approval: approval, Policy: p}
}

func TestAnswerCompletes(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_read", args: map[string]any{"path": "README.md"}}}},
		reply{text: "The README says hello."},
	)
	h := newHarness(t, acts)
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "what does the README say?", policy.ApproveNone, nil), &ex)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	if p.Result == nil || p.Result.Status != contract.Completed {
		t.Fatalf("result %+v", p.Result)
	}
	want := []contract.EventType{contract.EventSession, contract.EventToolRequested, contract.EventToolCompleted, contract.EventText, contract.EventCompleted}
	if got := eventTypes(p.Events); !equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if len(acts.ran) != 1 || acts.ran[0].Decision != contract.AutoApprove || acts.ran[0].Tool != "local_read" {
		t.Fatalf("ran %+v", acts.ran)
	}
	f := acts.finished[0]
	if f.Usage.Requests != 2 || f.Usage.PromptTokens != 200 || len(f.ToolCalls) != 1 || f.ToolCalls[0].Status != contract.CallCompleted {
		t.Fatalf("finish input %+v", f)
	}
	if got := acts.requests[0].Tools; !equal(got, LocalTools) {
		t.Fatalf("tools offered %v", got)
	}
}

func TestNeedsDecisionThenApprove(t *testing.T) {
	acts := newScripted(
		reply{text: "I will create the file now.", calls: []scriptCall{
			{tool: "local_read", args: map[string]any{"path": "a"}},
			{tool: "local_write", args: map[string]any{"path": "notes.md", "content": "x", "mode": "create"}},
			{tool: "local_read", args: map[string]any{"path": "notes.md"}},
		}},
		reply{text: "Done."},
	)
	h := newHarness(t, acts)
	var ex, early, wrongCall, dec, again, interrupt outcome
	var p1, p2 Progress
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "create notes.md", policy.ApproveNone, nil), &ex)
	h.progress(&p1)
	h.update(UpdateExecute, "exec-2", execReq("exec-2", "something else", policy.ApproveNone, nil), &early)
	h.update(UpdateDecide, "dec-0", DecideRequest{ExecutionID: "dec-0", CallID: "nope", Decision: contract.Approve}, &wrongCall)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", Decision: contract.Approve}, &dec)
	h.progress(&p2)
	h.update(UpdateDecide, "dec-2", DecideRequest{ExecutionID: "dec-2", CallID: "call-3-1", Decision: contract.Deny}, &again)
	h.update(UpdateInterrupt, "int-1", InterruptRequest{}, &interrupt)
	h.run()

	ex.mustAccept(t, "execute")
	if p1.Result == nil || p1.Result.Status != contract.NeedsDecision || p1.Result.Pending.CallID != "call-3-1" {
		t.Fatalf("first result %+v", p1.Result)
	}
	if got := eventTypes(p1.Events); got[len(got)-1] != contract.EventDecisionRequired {
		t.Fatalf("events %v end without decision.required", got)
	}
	early.mustReject(t, "execute while pending", "waiting for a decision")
	wrongCall.mustReject(t, "decide an unknown call", "no call nope waits")
	dec.mustAccept(t, "decide")
	again.mustReject(t, "decide a decided call", "call call-3-1 was already decided (approve)")
	interrupt.mustReject(t, "interrupt when idle", "runs no execution")
	if p2.Result == nil || p2.Result.Status != contract.Completed {
		t.Fatalf("second result %+v", p2.Result)
	}
	if len(acts.ran) != 3 || acts.ran[1].Decision != contract.Approve || acts.ran[2].Tool != "local_read" {
		t.Fatalf("ran %+v", acts.ran)
	}
	calls := acts.finished[1].ToolCalls
	if len(calls) != 3 || calls[1].Decision != contract.Approve || calls[1].Status != contract.CallCompleted {
		t.Fatalf("tool calls %+v", calls)
	}
}

func TestDeny(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_exec", args: map[string]any{"program": "git", "args": []string{"push", "--force"}}}}},
		reply{text: "Understood, I did not push."},
	)
	h := newHarness(t, acts)
	var ex, dec outcome
	var p Progress
	// --approve all does not approve the destructive list.
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "push it", policy.ApproveAll, nil), &ex)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", Decision: contract.Deny, Reason: "not on main"}, &dec)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	dec.mustAccept(t, "decide")
	if len(acts.ran) != 0 {
		t.Fatalf("a denied call ran: %+v", acts.ran)
	}
	if len(acts.recorded) != 1 || acts.recorded[0].Status != contract.CallDenied || acts.recorded[0].Message != "denied by the person: not on main" {
		t.Fatalf("recorded %+v", acts.recorded)
	}
	if p.Result == nil || p.Result.Status != contract.Completed || p.Result.ToolCalls[0].Decision != contract.Deny {
		t.Fatalf("result %+v", p.Result)
	}
}

func TestForbiddenAndInvalidCalls(t *testing.T) {
	pol := &policy.Policy{Level: policy.ActWithinPolicy, Tools: policy.Tools{Deny: []policy.Rule{{Name: "local_exec"}}}}
	acts := newScripted(
		reply{calls: []scriptCall{
			{tool: "local_exec", args: map[string]any{"program": "ls"}},
			{tool: "local_read", args: map[string]any{"path": "/etc/passwd"}, invalid: "invalid arguments: path must be relative"},
			{tool: HistoryTool, args: map[string]any{"from": 0}},
		}},
		reply{text: "I could not run it."},
	)
	h := newHarness(t, acts)
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "list", policy.ApproveAll, pol), &ex)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	if got := acts.requests[0].Tools; strings.Contains(strings.Join(got, ","), "local_exec") {
		t.Fatalf("a forbidden tool was offered: %v", got)
	}
	if len(acts.recorded) != 3 {
		t.Fatalf("recorded %+v", acts.recorded)
	}
	if r := acts.recorded[2]; r.Status != contract.CallFailed || r.Message != "axlr_history is not offered here: it reads the transcript in a compact ceremony step" {
		t.Fatalf("hidden tool record %+v", r)
	}
	if r := acts.recorded[0]; r.Status != contract.CallForbidden || r.Message != "forbidden by the execution's policy: local_exec is denied by a rule for local_exec" {
		t.Fatalf("forbidden record %+v", r)
	}
	if r := acts.recorded[1]; r.Status != contract.CallFailed || r.Message != "invalid arguments: path must be relative" {
		t.Fatalf("invalid record %+v", r)
	}
	if len(acts.ran) != 0 {
		t.Fatalf("ran %+v", acts.ran)
	}
	if p.Result == nil || p.Result.Status != contract.Completed || p.Result.ToolCalls[0].Status != contract.CallForbidden {
		t.Fatalf("result %+v", p.Result)
	}
}

func TestDecisionUnderPolicyCannotRunWhatItForbids(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_write", args: map[string]any{"path": "main.go", "content": "x", "mode": "create"}}}},
		reply{text: "ok"},
	)
	h := newHarness(t, acts)
	var ex, approve, deny outcome
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "write", policy.ApproveNone, nil), &ex)
	observe := &policy.Policy{Level: policy.Observe}
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", Decision: contract.Approve, Policy: observe}, &approve)
	h.update(UpdateDecide, "dec-2", DecideRequest{ExecutionID: "dec-2", Decision: contract.Deny, Policy: observe}, &deny)
	h.run()
	ex.mustAccept(t, "execute")
	approve.mustReject(t, "approve under observe", "forbidden by the execution's policy: level observe allows reads only")
	deny.mustAccept(t, "deny under observe")
	if len(acts.ran) != 0 {
		t.Fatalf("ran %+v", acts.ran)
	}
}

func TestExecuteValidation(t *testing.T) {
	tests := []struct {
		name string
		req  ExecuteRequest
		want string
	}{
		{"empty prompt", execReq("e", " ", policy.ApproveNone, nil), "the prompt is empty"},
		{"unknown mode", ExecuteRequest{ExecutionID: "e", Prompt: "x", Root: "/w", Mode: "Review", Approval: policy.ApproveNone}, `unknown mode "Review"`},
		{"unknown approval", ExecuteRequest{ExecutionID: "e", Prompt: "x", Root: "/w", Mode: "normal", Approval: "some"}, `unknown approval level "some"`},
		{"bad policy", execReq("e", "x", policy.ApproveNone, &policy.Policy{Level: "yolo"}), `unknown level "yolo"`},
		{"relative root", ExecuteRequest{ExecutionID: "e", Prompt: "x", Root: "app", Mode: "normal", Approval: policy.ApproveNone}, "not an absolute path"},
		{"no root", ExecuteRequest{ExecutionID: "e", Prompt: "x", Mode: "normal", Approval: policy.ApproveNone}, "needs its workspace root"},
		{"no execution id", execReq("", "x", policy.ApproveNone, nil), "execution_id is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newScripted())
			var o outcome
			h.update(UpdateExecute, "u-1", tt.req, &o)
			h.run()
			o.mustReject(t, tt.name, tt.want)
		})
	}
}

func TestRetriedUpdateIsAppliedOnce(t *testing.T) {
	acts := newScripted(reply{text: "one"})
	h := newHarness(t, acts)
	var a, b outcome
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "hi", policy.ApproveNone, nil), &a)
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "hi", policy.ApproveNone, nil), &b)
	h.run()
	a.mustAccept(t, "first")
	b.mustAccept(t, "retry")
	if len(acts.requests) != 1 || len(acts.finished) != 1 {
		t.Fatalf("the retried update ran again: %d requests, %d results", len(acts.requests), len(acts.finished))
	}
}

func TestContextCapContinuesInSuccessor(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_read", args: map[string]any{"path": "big"}}}},
		reply{contextFull: true},
		reply{text: "Summary from the successor."},
	)
	h := newHarness(t, acts)
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "read big", policy.ApproveNone, nil), &ex)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	succ := sessionID + "-next"
	if p.Result == nil || p.Result.Status != contract.Completed || p.Result.SessionID != succ || !equal(p.Result.Sessions, []string{sessionID, succ}) {
		t.Fatalf("result %+v", p.Result)
	}
	if last := acts.requests[len(acts.requests)-1]; last.SessionID != succ || last.Revision != 3 {
		t.Fatalf("last request %+v", last)
	}
	if got := eventTypes(p.Events); !contains(got, contract.EventSessionContinued) {
		t.Fatalf("events %v", got)
	}
	if u := acts.finished[0].Usage; u.Requests != 2 {
		t.Fatalf("usage over sessions %+v", u)
	}
}

func TestProviderFailureFailsExecution(t *testing.T) {
	acts := newScripted(reply{err: errors.New("provider returned 401: invalid key")})
	h := newHarness(t, acts)
	h.env.SetTestTimeout(time.Minute)
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "hi", policy.ApproveNone, nil), &ex)
	h.at += time.Hour // retries back off
	h.progress(&p)
	h.run()
	if p.Result == nil || p.Result.Status != contract.Failed {
		t.Fatalf("result %+v", p.Result)
	}
}

func eventTypes(evs []contract.Event) []contract.EventType {
	out := make([]contract.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func workflowOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: SessionWorkflow}
}

// TestContinueAsNewCarriesState: when Temporal suggests it, an idle session
// continues as new with its pending call, its applied update ids and its
// last result, and the next run decides the call.
func TestContinueAsNewCarriesState(t *testing.T) {
	acts := newScripted(
		reply{text: "writing", calls: []scriptCall{{tool: "local_write", args: map[string]any{"path": "n.md", "content": "x", "mode": "create"}}}},
		reply{text: "done"},
	)
	h := newHarness(t, acts)
	var ex outcome
	// Suggested while the execution is queued: the session continues as
	// new once it is idle again.
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateExecute, "exec-1", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { ex.rejected = err },
			OnAccept:   func() { h.env.SetContinueAsNewSuggested(true) },
			OnComplete: func(_ any, err error) { ex.err, ex.completed = err, true },
		}, execReq("exec-1", "write n.md", policy.ApproveNone, nil))
	}, time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflow, SessionInput{SessionID: sessionID, Host: "test"})
	ex.mustAccept(t, "execute")
	var can *workflow.ContinueAsNewError
	if !errors.As(h.env.GetWorkflowError(), &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", h.env.GetWorkflowError())
	}
	if can.WorkflowType.Name != SessionWorkflow {
		t.Fatalf("continued as %q", can.WorkflowType.Name)
	}
	var next SessionInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	st := next.State
	if st == nil || st.Pending == nil || st.Pending.Call.Tool != "local_write" || len(st.Recent) != 1 || st.Recent[0].Result.Status != contract.NeedsDecision || len(st.Events) != 0 || len(st.Applied) != 1 {
		t.Fatalf("carried state %+v", st)
	}

	// The next run: a retried exec-1 is not applied again, and the decision
	// continues the carried turn.
	h2 := newHarness(t, acts)
	var retry, dec outcome
	var p Progress
	h2.update(UpdateExecute, "exec-1", execReq("exec-1", "write n.md", policy.ApproveNone, nil), &retry)
	h2.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", Decision: contract.Approve}, &dec)
	h2.progress(&p)
	h2.at += time.Minute
	h2.env.RegisterDelayedCallback(h2.env.CancelWorkflow, h2.at)
	h2.env.ExecuteWorkflow(SessionWorkflow, next)
	retry.mustAccept(t, "retried execute")
	dec.mustAccept(t, "decide")
	if p.Result == nil || p.Result.Status != contract.Completed || len(acts.ran) != 1 || acts.ran[0].Decision != contract.Approve {
		t.Fatalf("result %+v, ran %+v", p.Result, acts.ran)
	}
}

// TestProgressPages: a progress answer holds at most MaxEventsPerQuery
// events; the result comes with the last page, and an ended execution's
// result stays readable after the next one starts.
func TestProgressPages(t *testing.T) {
	var calls []scriptCall
	for i := range 40 {
		calls = append(calls, scriptCall{tool: "local_read", args: map[string]any{"path": fmt.Sprintf("f%d", i)}})
	}
	acts := newScripted(reply{calls: calls}, reply{text: "read them all"}, reply{text: "second"})
	h := newHarness(t, acts)
	var ex1, ex2 outcome
	var first, second, old Progress
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "read", policy.ApproveNone, nil), &ex1)
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryProgress, ProgressQuery{ExecutionID: "exec-1"})
		if err == nil {
			err = v.Get(&first)
		}
		if err == nil {
			v, err = h.env.QueryWorkflow(QueryProgress, ProgressQuery{ExecutionID: "exec-1", After: first.Next})
		}
		if err == nil {
			err = v.Get(&second)
		}
		if err != nil {
			t.Error(err)
		}
	}, h.at)
	h.update(UpdateExecute, "exec-2", execReq("exec-2", "again", policy.ApproveNone, nil), &ex2)
	h.at += time.Minute
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryProgress, ProgressQuery{ExecutionID: "exec-1", After: 1 << 20})
		if err == nil {
			err = v.Get(&old)
		}
		if err != nil {
			t.Error(err)
		}
	}, h.at)
	h.run()
	ex1.mustAccept(t, "exec-1")
	ex2.mustAccept(t, "exec-2")
	if len(first.Events) != MaxEventsPerQuery || first.Result != nil || !first.Running {
		t.Fatalf("first page: %d events, result %v", len(first.Events), first.Result)
	}
	if len(second.Events) == 0 || second.Result == nil || second.Result.Status != contract.Completed {
		t.Fatalf("second page: %d events, result %+v", len(second.Events), second.Result)
	}
	if old.Result == nil || old.ExecutionID != "exec-1" || old.Result.Status != contract.Completed {
		t.Fatalf("an ended execution's result after the next one: %+v", old)
	}
}
