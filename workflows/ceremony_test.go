package workflows

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/underpass-ai/axlr/agent/policy"
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

// fakeCeremony is a one-step MADE stand-in for the driver's own logic
// (deadlines); the real engine and activities run in package activities
// and in the end-to-end tests.
type fakeCeremony struct {
	timeout   time.Duration
	completed []CompleteInput
}

func (f *fakeCeremony) Start(_ context.Context, in CeremonyStartInput) (CeremonyStartResult, error) {
	return CeremonyStartResult{Definition: "axlr_debug", Version: "2.0", StepTimeout: f.timeout,
		Instructions: map[string]string{"reproduce": "Reproduce it."},
		Instance:     InstanceView{InstanceID: in.InstanceID, State: "REPRODUCE", NextStep: "reproduce", Steps: []StepView{{Step: "reproduce", Status: "in_progress", Iteration: 1, Attempt: 1}}}}, nil
}

func (f *fakeCeremony) Claim(context.Context, ClaimInput) (InstanceView, error) {
	return InstanceView{}, fmt.Errorf("not scripted")
}

func (f *fakeCeremony) HandBack(context.Context, HandBackInput) (HandBackResult, error) {
	return HandBackResult{}, fmt.Errorf("not scripted")
}

func (f *fakeCeremony) RunCheck(context.Context, RunCheckInput) (contract.CheckRecord, error) {
	return contract.CheckRecord{}, fmt.Errorf("not scripted")
}

func (f *fakeCeremony) Complete(_ context.Context, in CompleteInput) (InstanceView, error) {
	f.completed = append(f.completed, in)
	return InstanceView{InstanceID: in.InstanceID, State: "REPRODUCE"}, nil
}

func (f *fakeCeremony) Transition(context.Context, TransitionInput) (InstanceView, error) {
	return InstanceView{}, fmt.Errorf("not scripted")
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
