package workflows

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// AppendNote records a note in the scripted log.
func (s *scripted) AppendNote(_ context.Context, in AppendNoteInput) (RecordToolResultResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, in.Text)
	s.revision[in.SessionID]++
	return RecordToolResultResult{Revision: s.revision[in.SessionID]}, nil
}

// fakeCeremony is a two-step MADE stand-in for the driver's own logic:
// reproduce (whose check is the hand-back's command) then diagnose, then
// COMPLETED. The real engine and activities run in package activities and
// in the end-to-end tests.
type fakeCeremony struct {
	noResume
	mu      sync.Mutex
	timeout time.Duration
	// exit is what every check exits with, unless ending names another
	// end: "timeout" or "start".
	exit   int
	ending string
	// version of the definition (2.0 when empty); enabled, when set, is
	// what a completion enables; claimErr fails every claim.
	version     string
	enabled     []string
	claimErr    error
	completed   []CompleteInput
	checks      []RunCheckInput
	claims      []ClaimInput
	transitions []TransitionInput
}

func (f *fakeCeremony) Start(_ context.Context, in CeremonyStartInput) (CeremonyStartResult, error) {
	return CeremonyStartResult{Definition: "axlr_debug", Version: cmp.Or(f.version, "2.0"), StepTimeout: f.timeout,
		Instructions: map[string]string{"reproduce": "Reproduce it.", "diagnose": "Diagnose it."},
		Limits:       map[string]int{"reproduce": 1, "diagnose": 3},
		Instance:     InstanceView{InstanceID: in.InstanceID, State: "REPRODUCE", NextStep: "reproduce", Steps: []StepView{{Step: "reproduce", Status: "in_progress", Iteration: 1, Attempt: 1}}}}, nil
}

// noResume is a MADE stand-in that holds no instance to take over: a run
// takes one over in the end-to-end tests, on the real engine.
type noResume struct{}

func (noResume) Resume(_ context.Context, in CeremonyResumeInput) (CeremonyResumeResult, error) {
	return CeremonyResumeResult{Ended: "the stand-in holds no instance " + in.InstanceID}, nil
}

func (f *fakeCeremony) Claim(_ context.Context, in ClaimInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims = append(f.claims, in)
	if f.claimErr != nil {
		return InstanceView{}, f.claimErr
	}
	return InstanceView{InstanceID: in.InstanceID, State: "DIAGNOSE", Steps: []StepView{{Step: in.Step, Status: "in_progress", Iteration: in.Iteration, Attempt: 1}}}, nil
}

// HandBack accepts every hand-back; reproduce's names go test.
func (f *fakeCeremony) HandBack(_ context.Context, in HandBackInput) (HandBackResult, error) {
	if in.Step == "reproduce" {
		return HandBackResult{Command: &ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}}, nil
	}
	return HandBackResult{}, nil
}

func (f *fakeCeremony) RunCheck(_ context.Context, in RunCheckInput) (contract.CheckRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks = append(f.checks, in)
	rec := contract.CheckRecord{Program: in.Command.Program, Args: in.Command.Args}
	switch f.ending {
	case "timeout":
		rec.TimedOut, rec.OutputTail = true, "timed out after 5m0s"
	case "start":
		rec.StartError = "start_failed: program go was not found in the PATH of the exec environment"
	default:
		rec.ExitCode, rec.OutputTail = contract.Exit(f.exit), "FAIL"
	}
	return rec, nil
}

func (f *fakeCeremony) Complete(_ context.Context, in CompleteInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completed = append(f.completed, in)
	v := InstanceView{InstanceID: in.InstanceID, State: strings.ToUpper(in.Step)}
	if in.Status == "completed" {
		v.Enabled = []string{in.Step + "d"}
		if f.enabled != nil {
			v.Enabled = f.enabled
		}
	}
	return v, nil
}

func (f *fakeCeremony) Transition(_ context.Context, in TransitionInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.transitions = append(f.transitions, in)
	if in.Trigger == ceremonies.CancelTrigger {
		return InstanceView{InstanceID: in.InstanceID, State: "CANCELLED", Completed: true}, nil
	}
	if in.Trigger == "reproduced" {
		return InstanceView{InstanceID: in.InstanceID, State: "DIAGNOSE", NextStep: "diagnose", Steps: []StepView{{Step: "diagnose", Status: "pending", Iteration: 1}}}, nil
	}
	return InstanceView{InstanceID: in.InstanceID, State: "COMPLETED", Completed: true}, nil
}

var _ CeremonyActivities = (*fakeCeremony)(nil)

// TestStepTimeoutStopsTheCeremony: MADE records the definition's step
// timeout without enforcing it; the driver does: a step past its deadline
// is completed as failed, the session returns to normal mode and the model
// answers the person.
func TestStepTimeoutStopsTheCeremony(t *testing.T) {
	acts := newScripted(reply{text: "The step timed out."})
	cer := &fakeCeremony{timeout: -time.Second}
	h := newHarness(t, acts)
	h.env.RegisterActivityWithOptions(cer, activity.RegisterOptions{Name: "ceremony."})
	var ex outcome
	var p Progress
	req := execReq("exec-1", "TestParse fails", policy.ApproveNone, nil)
	req.Mode = "debug"
	h.update(UpdateExecute, "exec-1", req, &ex)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	if len(cer.completed) != 1 || cer.completed[0].Status != "failed" || cer.completed[0].Step != "reproduce" {
		t.Fatalf("completions %+v", cer.completed)
	}
	c := p.Result.Ceremony
	if p.Result.Status != contract.Completed || c == nil || !c.Ended || !strings.HasPrefix(c.Stopped, StoppedTimeout) {
		t.Fatalf("result %+v ceremony %+v", p.Result, c)
	}
	if len(acts.notes) != 2 || !strings.Contains(acts.notes[1], "passed its -1s timeout") || acts.requests[0].StepDone != nil {
		t.Fatalf("notes %q, first request offers step_done %v", acts.notes, acts.requests[0].StepDone)
	}
}

// ResetView records a view reset like a note.
func (s *scripted) ResetView(ctx context.Context, in AppendNoteInput) (RecordToolResultResult, error) {
	return s.AppendNote(ctx, in)
}

func stepDoneCall(args map[string]any) scriptCall {
	return scriptCall{tool: StepDoneTool, args: args}
}

var (
	reproduceHandBack = stepDoneCall(map[string]any{"check_command": map[string]any{"program": "go", "args": []string{"test", "./..."}}, "expected": "ok", "observed": "FAIL"})
	diagnoseHandBack  = stepDoneCall(map[string]any{"root_cause": "r", "evidence": "e", "proposed_fix": "f"})
)

func newCeremonyHarness(t *testing.T, acts *scripted, cer *fakeCeremony) *harness {
	h := newHarness(t, acts)
	h.env.RegisterActivityWithOptions(cer, activity.RegisterOptions{Name: "ceremony."})
	return h
}

func debugReq(id, prompt string) ExecuteRequest {
	req := execReq(id, prompt, policy.ApproveLocal, nil)
	req.Mode = "debug"
	return req
}

// TestDriverRunsTheCeremony: while a step is open the driver offers
// axlr_step_done with the step's schema (Offer) and takes the hand-back
// (OnCall); the first check command waits for the person, and once
// approved the driver runs it, completes the step, applies the transition
// and claims the next; when the ceremony ends the session is back in
// normal mode and step_done is no longer offered.
func TestDriverRunsTheCeremony(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{reproduceHandBack}},
		reply{calls: []scriptCall{diagnoseHandBack}},
		reply{text: "Diagnosed."},
	)
	cer := &fakeCeremony{timeout: time.Hour, exit: 1}
	h := newCeremonyHarness(t, acts, cer)
	var ex, dec outcome
	var p1, p2 Progress
	h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
	h.progress(&p1)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-4-0", Decision: contract.Approve}, &dec)
	h.progress(&p2)
	h.run()
	ex.mustAccept(t, "execute")
	dec.mustAccept(t, "decide")
	if r := p1.Result; r == nil || r.Status != contract.NeedsDecision || r.Pending.Tool != CheckTool || r.Pending.CallID != "call-4-0" {
		t.Fatalf("first result %+v", r)
	}
	if len(acts.requests) != 3 {
		t.Fatalf("%d requests", len(acts.requests))
	}
	first, second, last := acts.requests[0], acts.requests[1], acts.requests[2]
	if first.StepDone == nil || *first.StepDone != (StepDoneSpec{Definition: "axlr_debug", Version: "2.0", Step: "reproduce"}) || first.Tools[len(first.Tools)-1] != StepDoneTool {
		t.Fatalf("first request offers %v, step_done %+v", first.Tools, first.StepDone)
	}
	if second.StepDone == nil || second.StepDone.Step != "diagnose" {
		t.Fatalf("second request step_done %+v", second.StepDone)
	}
	if last.StepDone != nil || slices.Contains(last.Tools, StepDoneTool) {
		t.Fatalf("after the ceremony the request offers %v, step_done %+v", last.Tools, last.StepDone)
	}
	if len(cer.checks) != 1 || cer.checks[0].Command.Program != "go" || len(cer.claims) != 1 || cer.claims[0].Step != "diagnose" || len(cer.transitions) != 2 {
		t.Fatalf("checks %+v claims %+v transitions %+v", cer.checks, cer.claims, cer.transitions)
	}
	r := p2.Result
	if r == nil || r.Status != contract.Completed || r.Ceremony == nil || r.Ceremony.State != "COMPLETED" || !r.Ceremony.Ended || len(r.Ceremony.Steps) != 2 {
		t.Fatalf("result %+v ceremony %+v", r, r.Ceremony)
	}
	if c := r.Ceremony.Steps[0].Check; c == nil || !c.Failed() || *c.ExitCode != 1 || r.Ceremony.Steps[0].Output["reproduced"] != true {
		t.Fatalf("reproduce record %+v", r.Ceremony.Steps[0])
	}
	// Each claim says its step's iteration and the step's limit, for the
	// TUI's footer (step diagnose 1/3).
	var claimed []string
	for _, e := range slices.Concat(p1.Events, p2.Events) {
		if e.Type == contract.EventStepClaimed {
			claimed = append(claimed, fmt.Sprintf("%s %d/%d", e.Step, e.Iteration, e.Limit))
		}
	}
	if want := []string{"reproduce 1/1", "diagnose 1/3"}; !slices.Equal(claimed, want) {
		t.Fatalf("step.claimed events %q, want %q", claimed, want)
	}
}

// TestEmptyModeKeepsTheSessions: a prompt without a mode keeps the
// session's as it stands: after a ceremony ended it is normal (no new
// instance, no axlr_step_done), after review it is review; each result
// says the mode the execution ended in, for a client that sends none.
func TestEmptyModeKeepsTheSessions(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{reproduceHandBack}},
		reply{calls: []scriptCall{diagnoseHandBack}},
		reply{text: "Diagnosed."},
		reply{text: "Hello."},
		reply{text: "Reviewed."},
		reply{text: "Still reviewing."},
	)
	cer := &fakeCeremony{timeout: time.Hour, exit: 1}
	h := newCeremonyHarness(t, acts, cer)
	plain := func(id, prompt string) ExecuteRequest {
		req := execReq(id, prompt, policy.ApproveLocal, nil)
		req.Mode = ""
		return req
	}
	review := execReq("exec-3", "review the parser", policy.ApproveLocal, nil)
	review.Mode = "review"
	var ex1, dec, ex2, ex3, ex4 outcome
	var p1, p2, p3, p4, p5 Progress
	h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex1)
	h.progress(&p1)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-4-0", Decision: contract.Approve}, &dec)
	h.progress(&p2)
	h.update(UpdateExecute, "exec-2", plain("exec-2", "and now?"), &ex2)
	h.progress(&p3)
	h.update(UpdateExecute, "exec-3", review, &ex3)
	h.progress(&p4)
	h.update(UpdateExecute, "exec-4", plain("exec-4", "and the lexer?"), &ex4)
	h.progress(&p5)
	h.run()
	for _, o := range []struct {
		what string
		o    outcome
	}{{"debug", ex1}, {"decide", dec}, {"plain after the ceremony", ex2}, {"review", ex3}, {"plain after review", ex4}} {
		o.o.mustAccept(t, o.what)
	}
	for i, tt := range []struct {
		p    Progress
		mode string
	}{{p1, "debug"}, {p2, "normal"}, {p3, "normal"}, {p4, "review"}, {p5, "review"}} {
		if r := tt.p.Result; r == nil || r.Mode != tt.mode {
			t.Errorf("result %d: %+v, want mode %s", i+1, r, tt.mode)
		}
	}
	if c := p2.Result.Ceremony; c == nil || !c.Ended {
		t.Fatalf("the ceremony did not end: %+v", c)
	}
	if after := acts.requests[3]; after.StepDone != nil || slices.Contains(after.Tools, StepDoneTool) || p3.Result.Ceremony != nil || len(cer.claims) != 1 {
		t.Fatalf("the prompt after the ceremony: step_done %+v, tools %v, ceremony %+v, claims %+v", after.StepDone, after.Tools, p3.Result.Ceremony, cer.claims)
	}
	if tools := acts.requests[5].Tools; slices.Contains(tools, "local_write") {
		t.Fatalf("the prompt after review offers %v", tools)
	}
}

// TestDriverCompactOffer: under the compact profile a read-only step hides
// the writes and offers axlr_history; the driver refuses the same call
// twice in a row and a write the step does not allow (OnCall).
func TestDriverCompactOffer(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{
			{tool: "local_read", args: map[string]any{"path": "a.go"}},
			{tool: "local_read", args: map[string]any{"path": "a.go"}},
			{tool: "local_write", args: map[string]any{"path": "a.go", "content": "x", "mode": "create"}},
		}},
		reply{calls: []scriptCall{reproduceHandBack}},
	)
	acts.profile = "compact"
	h := newCeremonyHarness(t, acts, &fakeCeremony{timeout: time.Hour})
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	first := acts.requests[0]
	want := []string{"local_read", "local_exec", "local_search", "local_list", HistoryTool, StepDoneTool}
	if !slices.Equal(first.Tools, want) || first.StepDone == nil || !first.StepDone.Compact {
		t.Fatalf("compact reproduce offers %v, step_done %+v; want %v", first.Tools, first.StepDone, want)
	}
	if len(acts.ran) != 1 || len(acts.recorded) != 2 {
		t.Fatalf("ran %+v recorded %+v", acts.ran, acts.recorded)
	}
	if acts.recorded[0].Message != "same call as before; change something" || !strings.Contains(acts.recorded[1].Message, "local_write is not available in step reproduce") {
		t.Fatalf("refusals %q, %q", acts.recorded[0].Message, acts.recorded[1].Message)
	}
	if p.Result == nil || p.Result.Status != contract.NeedsDecision {
		t.Fatalf("result %+v", p.Result)
	}
}

// TestDriverRemindsThenStops: a model that answers with the step open is
// reminded once (OnAnswer) in a session the person watches, where a job
// and a plan task are reminded BackgroundReminders times; the second time
// the driver cancels the step in MADE, the session returns to normal mode
// and the model answers.
func TestDriverRemindsThenStops(t *testing.T) {
	acts := newScripted(reply{text: "Is this done? <tool_call>"}, reply{text: "Done."}, reply{text: "Sorry, I stopped."})
	cer := &fakeCeremony{timeout: time.Hour}
	h := newCeremonyHarness(t, acts, cer)
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	if len(acts.notes) != 3 || !strings.Contains(acts.notes[1], "still open") || !strings.Contains(acts.notes[1], "<tool_call>") || !strings.Contains(acts.notes[2], "was stopped") {
		t.Fatalf("notes %q", acts.notes)
	}
	if len(cer.completed) != 1 || cer.completed[0].Status != "cancelled" {
		t.Fatalf("completions %+v", cer.completed)
	}
	c := p.Result.Ceremony
	if p.Result.Status != contract.Completed || c == nil || !c.Ended || !strings.HasPrefix(c.Stopped, StoppedStalled) || len(acts.requests) != 3 || acts.requests[2].StepDone != nil {
		t.Fatalf("result %+v ceremony %+v", p.Result, c)
	}
}

// TestDriverBudgetNote: before a request the driver counts the step's
// calls and tells the model when a fifth of its budget is left
// (BeforeRequest).
func TestDriverBudgetNote(t *testing.T) {
	var calls []scriptCall
	for i := range StepBudget - 5 {
		calls = append(calls, scriptCall{tool: "local_read", args: map[string]any{"path": strings.Repeat("a", i+1)}})
	}
	acts := newScripted(reply{calls: calls}, reply{calls: []scriptCall{reproduceHandBack}})
	h := newCeremonyHarness(t, acts, &fakeCeremony{timeout: time.Hour})
	var ex outcome
	h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
	h.run()
	ex.mustAccept(t, "execute")
	if len(acts.notes) != 2 || acts.notes[1] != "[AXLR · budget] 5 tool calls remain for step reproduce: finish it and hand it back with axlr_step_done." {
		t.Fatalf("notes %q", acts.notes)
	}
}

// TestCheckIsALocalCommandToThePolicy: a check command is judged as
// local_exec of its program and arguments. A policy that forbids it
// refuses the hand-back with its reason, before any card and without
// running it; a decision that approves a waiting check under a policy that
// forbids it is refused.
func TestCheckIsALocalCommandToThePolicy(t *testing.T) {
	t.Run("hand-back refused", func(t *testing.T) {
		acts := newScripted(reply{calls: []scriptCall{reproduceHandBack}}, reply{text: "The policy forbids commands."}, reply{text: "It does."}, reply{text: "Stopped."})
		cer := &fakeCeremony{timeout: time.Hour, exit: 1}
		h := newCeremonyHarness(t, acts, cer)
		req := debugReq("exec-1", "TestParse fails")
		req.Approval = policy.ApproveAll
		req.Policy = &policy.Policy{Tools: policy.Tools{Deny: []policy.Rule{{Name: "local_exec", Arguments: map[string]string{"program": "go"}}}}}
		var ex outcome
		var p Progress
		h.update(UpdateExecute, "exec-1", req, &ex)
		h.progress(&p)
		h.run()
		ex.mustAccept(t, "execute")
		if len(cer.checks) != 0 || slices.ContainsFunc(cer.completed, func(c CompleteInput) bool { return c.Status == "completed" }) {
			t.Fatalf("checks %+v completions %+v: a forbidden check ran", cer.checks, cer.completed)
		}
		r := acts.recorded[0]
		if r.Tool != StepDoneTool || r.Status != contract.CallForbidden ||
			!strings.Contains(r.Message, `check_command go test ./... is forbidden by the execution's policy: local_exec is denied by a rule for local_exec with program=\"go\"`) {
			t.Fatalf("recorded %+v", r)
		}
		if p.Result == nil || p.Result.Status != contract.Completed || p.Result.Pending != nil {
			t.Fatalf("result %+v", p.Result)
		}
	})
	t.Run("approval refused", func(t *testing.T) {
		acts := newScripted(reply{calls: []scriptCall{reproduceHandBack}})
		cer := &fakeCeremony{timeout: time.Hour, exit: 1}
		h := newCeremonyHarness(t, acts, cer)
		var ex, dec outcome
		var p Progress
		h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
		h.progress(&p)
		observe := &policy.Policy{Level: policy.Observe}
		h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-4-0", Decision: contract.Approve, Policy: observe}, &dec)
		h.run()
		ex.mustAccept(t, "execute")
		if p.Result == nil || p.Result.Status != contract.NeedsDecision || p.Result.Pending.Tool != CheckTool {
			t.Fatalf("result %+v", p.Result)
		}
		dec.mustReject(t, "approve a check under observe", "decide: check command go test ./... is forbidden by the execution's policy: level observe allows reads only")
		if len(cer.checks) != 0 {
			t.Fatalf("checks %+v", cer.checks)
		}
	})
}

// TestCheckThatDidNotExit: a check that could not start or ran out of
// time is neither a reproduced failure nor a pass: the model reads what
// happened, MADE is not told, and no exit code is invented.
func TestCheckThatDidNotExit(t *testing.T) {
	for _, tt := range []struct{ ending, says string }{
		{"timeout", "the check command go test ./... timed out: that neither reproduces a failure nor passes, and MADE is unchanged"},
		{"start", "the check command go test ./... could not start: start_failed: program go was not found"},
	} {
		t.Run(tt.ending, func(t *testing.T) {
			// After the refusal the model gives up: reminded, then stopped.
			acts := newScripted(reply{calls: []scriptCall{reproduceHandBack}}, reply{text: "The command does not run."}, reply{text: "It does not."}, reply{text: "Stopped."})
			cer := &fakeCeremony{timeout: time.Hour, ending: tt.ending}
			h := newCeremonyHarness(t, acts, cer)
			var ex, dec outcome
			var p Progress
			h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
			h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-4-0", Decision: contract.Approve}, &dec)
			h.progress(&p)
			h.run()
			ex.mustAccept(t, "execute")
			dec.mustAccept(t, "decide")
			if len(cer.checks) != 1 || len(cer.transitions) != 0 || slices.ContainsFunc(cer.completed, func(c CompleteInput) bool { return c.Status == "completed" }) {
				t.Fatalf("checks %d, completions %+v, transitions %+v", len(cer.checks), cer.completed, cer.transitions)
			}
			r := acts.recorded[0]
			if r.Tool != StepDoneTool || r.Status != contract.CallFailed || !strings.Contains(r.Message, tt.says) || strings.Contains(r.Message, `"exit_code":-1`) || strings.Contains(r.Message, `"exit_code":127`) {
				t.Fatalf("recorded %+v", r)
			}
			if !strings.Contains(r.Message, `"exit_code":null`) {
				t.Fatalf("the reply's check shows no null exit code: %s", r.Message)
			}
			if p.Result == nil || p.Result.Ceremony == nil || slices.ContainsFunc(p.Result.Ceremony.Steps, func(s contract.StepRecord) bool { return s.Check != nil }) {
				t.Fatalf("result %+v", p.Result)
			}
		})
	}
}

// TestSeveralEnabledTransitionsNeedAnOperator: the driver never takes the
// first of several enabled transitions; it stops driving, leaves the
// instance as it is and says so in the outcome, the journal and the reply.
func TestSeveralEnabledTransitionsNeedAnOperator(t *testing.T) {
	acts := newScripted(reply{calls: []scriptCall{reproduceHandBack}}, reply{text: "An operator has to look."})
	cer := &fakeCeremony{timeout: time.Hour, exit: 1, enabled: []string{"reproduced", "not_reproducible"}}
	h := newCeremonyHarness(t, acts, cer)
	req := debugReq("exec-1", "TestParse fails")
	req.Approval = policy.ApproveAll
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", req, &ex)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-4-0", Decision: contract.Approve}, &outcome{})
	h.progress(&p)
	h.run()
	ex.mustAccept(t, "execute")
	if len(cer.transitions) != 0 {
		t.Fatalf("transitions %+v: the driver took one of several", cer.transitions)
	}
	want := "needs_operator: 2 transitions are enabled from REPRODUCE (reproduced, not_reproducible)"
	c := p.Result.Ceremony
	if p.Result.Status != contract.Completed || c == nil || !c.Ended || c.Stopped != want || c.State != "REPRODUCE" {
		t.Fatalf("result %+v ceremony %+v", p.Result, c)
	}
	if !slices.ContainsFunc(p.Events, func(e contract.Event) bool { return e.Type == contract.EventCeremonyStopped && e.Reason == want }) {
		t.Fatalf("no ceremony.stopped event in %+v", p.Events)
	}
	if r := acts.recorded[len(acts.recorded)-1]; !strings.Contains(r.Message, "The ceremony needs an operator: 2 transitions are enabled") {
		t.Fatalf("reply %s", r.Message)
	}
}

// TestUnresolvedClaimNeedsAnOperator: a claim MADE refuses because the
// step is held or closed under another claim stops the driver for an
// operator instead of failing the execution.
func TestUnresolvedClaimNeedsAnOperator(t *testing.T) {
	acts := newScripted(reply{calls: []scriptCall{reproduceHandBack}}, reply{text: "An operator has to look."})
	cer := &fakeCeremony{timeout: time.Hour, exit: 1,
		claimErr: temporal.NewNonRetryableApplicationError("step diagnose of x cannot be claimed and is not in progress under this claim", ErrTypeNeedsOperator, nil)}
	h := newCeremonyHarness(t, acts, cer)
	var ex outcome
	var p Progress
	h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
	h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-4-0", Decision: contract.Approve}, &outcome{})
	h.progress(&p)
	h.run()
	c := p.Result.Ceremony
	if p.Result.Status != contract.Completed || c == nil || !c.Ended || !strings.HasPrefix(c.Stopped, "needs_operator: step diagnose of x cannot be claimed") {
		t.Fatalf("result %+v ceremony %+v", p.Result, c)
	}
}

// TestStopCeremony: the person's stop cancels the open step and, for a
// definition with the cancel trigger, ends the instance in CANCELLED; a
// check waiting for approval is recorded as not approved; the next prompt
// carries the stop note once. A stop that names another ceremony, or a
// session with none, is refused.
func TestStopCeremony(t *testing.T) {
	for _, tt := range []struct{ version, state string }{{"2.1", "CANCELLED"}, {"2.0", "REPRODUCE"}} {
		t.Run(tt.version, func(t *testing.T) {
			acts := newScripted(reply{calls: []scriptCall{reproduceHandBack}}, reply{text: "Stopped, as asked."}, reply{text: "Hello."})
			cer := &fakeCeremony{timeout: time.Hour, exit: 1, version: tt.version}
			h := newCeremonyHarness(t, acts, cer)
			var ex, wrong, stop, again, next, after outcome
			var p1, p2 Progress
			h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
			h.update(UpdateStopCeremony, "stop-0", StopCeremonyRequest{ExecutionID: "stop-0", InstanceID: "axlr-other"}, &wrong)
			h.update(UpdateStopCeremony, "stop-1", StopCeremonyRequest{ExecutionID: "stop-1", Reason: "wrong approach"}, &stop)
			h.progress(&p1)
			h.update(UpdateStopCeremony, "stop-2", StopCeremonyRequest{ExecutionID: "stop-2"}, &again)
			h.update(UpdateExecute, "exec-2", execReq("exec-2", "thanks", policy.ApproveNone, nil), &next)
			h.progress(&p2)
			h.update(UpdateExecute, "exec-3", execReq("exec-3", "hello", policy.ApproveNone, nil), &after)
			h.run()
			ex.mustAccept(t, "execute")
			wrong.mustReject(t, "stop another ceremony", "stop ceremony: ceremony axlr-other is not the one running in session")
			stop.mustAccept(t, "stop")
			again.mustReject(t, "stop again", "stop ceremony: session "+sessionID+" runs no ceremony")
			next.mustAccept(t, "next prompt")
			after.mustAccept(t, "prompt after")
			if len(cer.completed) != 1 || cer.completed[0].Status != "cancelled" {
				t.Fatalf("completions %+v", cer.completed)
			}
			wantTransitions := 0
			if tt.version == "2.1" {
				wantTransitions = 1
			}
			if len(cer.transitions) != wantTransitions || (wantTransitions == 1 && cer.transitions[0].Trigger != ceremonies.CancelTrigger) {
				t.Fatalf("transitions %+v", cer.transitions)
			}
			c := p1.Result.Ceremony
			if p1.Result.Status != contract.Completed || c == nil || !c.Ended || c.State != tt.state ||
				c.Stopped != "stopped_by_person: the person stopped the ceremony: wrong approach" {
				t.Fatalf("stop result %+v ceremony %+v", p1.Result, c)
			}
			if tc := p1.Result.ToolCalls; len(tc) != 1 || tc[0].Tool != CheckTool || tc[0].Status != contract.CallDenied {
				t.Fatalf("tool calls %+v", tc)
			}
			if n := strings.Count(strings.Join(acts.notes, "\n"), StoppedNote); n != 1 {
				t.Fatalf("stop note %d times in %q", n, acts.notes)
			}
			if acts.requests[1].StepDone != nil || p2.Result.Ceremony != nil {
				t.Fatalf("after the stop: step_done %+v, ceremony %+v", acts.requests[1].StepDone, p2.Result.Ceremony)
			}
		})
	}
}

func (f *fakeCeremony) ApproveGuard(_ context.Context, in GrantInput) (InstanceView, error) {
	return InstanceView{InstanceID: in.InstanceID}, nil
}
