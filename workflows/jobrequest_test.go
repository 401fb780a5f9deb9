package workflows

import (
	"context"
	"errors"
	"slices"
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
	"github.com/underpass-ai/axlr/jobs"
)

func TestJobOutcomeNote(t *testing.T) {
	tests := []struct {
		name string
		o    JobOutcome
		want string
	}{
		{"merged", JobOutcome{Job: "fix-read", Kind: "repair", Status: "completed", PullRequest: 12, URL: "https://github.com/o/r/pull/12", MergeSHA: "abc123"},
			"[AXLR] Job fix-read (repair) ended completed: pull request #12 (https://github.com/o/r/pull/12) merged as abc123. The merge changed the repository, not the axlr that runs this session."},
		{"merged without a sha", JobOutcome{Job: "j", Kind: "improve", Status: "completed", PullRequest: 3},
			"[AXLR] Job j (improve) ended completed: pull request #3 merged. The merge changed the repository, not the axlr that runs this session."},
		{"blocked with its pull request", JobOutcome{Job: "j", Kind: "improve", Status: "blocked", PullRequest: 3, Reason: "the person declined the merge: not now."},
			"[AXLR] Job j (improve) ended blocked: the person declined the merge: not now (pull request #3)."},
		{"failed without a reason", JobOutcome{Job: "j", Kind: "repair", Status: "failed"},
			"[AXLR] Job j (repair) ended failed: no reason was recorded."},
		{"interrupted", JobOutcome{Job: "j", Kind: "repair", Status: "interrupted", Reason: "axlrd stopped"},
			"[AXLR] Job j (repair) was interrupted: axlrd stopped. The person can recover it with axlr-tui jobs recover j."},
		{"another status", JobOutcome{Job: "j", Kind: "repair", Status: "awaiting_merge"},
			"[AXLR] Job j (repair) is awaiting_merge."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JobOutcomeNote(tt.o); got != tt.want {
				t.Fatalf("note\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestKeepOutcome(t *testing.T) {
	o := func(job string) JobOutcome { return JobOutcome{Job: job, Kind: "repair", Status: "failed"} }
	var kept []JobOutcomeState
	kept = keepOutcome(kept, o("a"))
	kept = keepOutcome(kept, o("a"))
	if len(kept) != 1 {
		t.Fatalf("an outcome sent twice is kept %d times", len(kept))
	}
	kept[0].Noted = true
	if kept = keepOutcome(kept, o("a")); len(kept) != 1 {
		t.Fatalf("an outcome already noted is kept again: %+v", kept)
	}
	if kept = keepOutcome(kept, JobOutcome{Job: "a", Kind: "repair", Status: "completed"}); len(kept) != 2 {
		t.Fatalf("a new outcome of the same job is not kept: %+v", kept)
	}
	for _, job := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		kept = keepOutcome(kept, o(job))
	}
	// Nine outcomes: the noted one goes first.
	if len(kept) != MaxJobOutcomes || kept[0].Status != "completed" || kept[len(kept)-1].Job != "h" {
		t.Fatalf("kept %+v", kept)
	}
	kept = keepOutcome(kept, o("i"))
	if len(kept) != MaxJobOutcomes || kept[0].Job != "b" {
		t.Fatalf("none noted: the oldest goes first; kept %+v", kept)
	}
	long := keepOutcome(nil, JobOutcome{Job: "x", Status: "failed", Reason: strings.Repeat("é", MaxOutcomeReason)})
	if r := long[0].Reason; len(r) > MaxOutcomeReason || !strings.HasPrefix(strings.Repeat("é", MaxOutcomeReason), r) {
		t.Fatalf("reason cut to %d bytes", len(r))
	}
}

// TestJobOutcomeNotes: an outcome signalled to an idle session, and one
// signalled while an execution runs, each reach the next prompt as one
// note, once; the same outcome sent again adds none.
func TestJobOutcomeNotes(t *testing.T) {
	acts := newScripted(reply{text: "one"}, reply{text: "two"}, reply{text: "three"})
	h := newHarness(t, acts)
	a := JobOutcome{Job: "fix-read", Kind: "repair", Status: "completed", PullRequest: 12, MergeSHA: "abc123"}
	b := JobOutcome{Job: "better-list", Kind: "improve", Status: "blocked", Reason: "the check already passes"}
	signal := func(o JobOutcome) {
		h.at += time.Minute
		h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalJobOutcome, o) }, h.at)
	}
	var ex1, ex2, ex3 outcome
	signal(a)
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "first", policy.ApproveNone, nil), &ex1)
	signal(a)
	signal(b)
	h.update(UpdateExecute, "exec-2", execReq("exec-2", "second", policy.ApproveNone, nil), &ex2)
	h.update(UpdateExecute, "exec-3", execReq("exec-3", "third", policy.ApproveNone, nil), &ex3)
	h.run()
	ex1.mustAccept(t, "exec-1")
	ex2.mustAccept(t, "exec-2")
	ex3.mustAccept(t, "exec-3")
	want := []string{JobOutcomeNote(a), JobOutcomeNote(b)}
	if !slices.Equal(acts.notes, want) {
		t.Fatalf("notes %q, want %q", acts.notes, want)
	}
	// Each note follows its prompt: exec-1's (revision 3) and exec-2's.
	if n := len(acts.requests); n != 3 || acts.requests[0].Revision != 4 || acts.requests[1].Revision != 7 || acts.requests[2].Revision != 9 {
		t.Fatalf("requests %+v", acts.requests)
	}
}

// TestJobOutcomeSignalledDuringExecution: an outcome that arrives while an
// execution runs waits for the next prompt.
func TestJobOutcomeSignalledDuringExecution(t *testing.T) {
	o := JobOutcome{Job: "fix-read", Kind: "repair", Status: "failed", Reason: "three nudges"}
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_read", args: map[string]any{"path": "a"}}}},
		reply{text: "read"},
		reply{text: "again"},
	)
	h := newHarness(t, acts)
	var ex1, ex2 outcome
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateExecute, "exec-1", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { ex1.rejected = err },
			OnAccept:   func() { h.env.SignalWorkflow(SignalJobOutcome, o) },
			OnComplete: func(_ any, err error) { ex1.err, ex1.completed = err, true },
		}, execReq("exec-1", "read a", policy.ApproveAll, nil))
	}, time.Minute)
	h.at = time.Minute
	h.update(UpdateExecute, "exec-2", execReq("exec-2", "again", policy.ApproveAll, nil), &ex2)
	h.run()
	ex1.mustAccept(t, "exec-1")
	ex2.mustAccept(t, "exec-2")
	if !slices.Equal(acts.notes, []string{JobOutcomeNote(o)}) || acts.requests[0].Revision != 3 || acts.requests[2].Revision != acts.requests[1].Revision+3 {
		t.Fatalf("notes %q, requests %+v", acts.notes, acts.requests)
	}
}

// TestJobOutcomeCarriedAcrossContinueAsNew: an outcome no prompt has
// carried yet is carried over continue-as-new, and the next run's first
// prompt carries its note.
func TestJobOutcomeCarriedAcrossContinueAsNew(t *testing.T) {
	o := JobOutcome{Job: "fix-read", Kind: "repair", Status: "completed", PullRequest: 12, MergeSHA: "abc123"}
	acts := newScripted(reply{text: "hello"})
	h := newHarness(t, acts)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalJobOutcome, o) }, time.Minute)
	h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 2*time.Minute)
	h.env.ExecuteWorkflow(SessionWorkflow, SessionInput{SessionID: sessionID, Host: "test"})
	var can *workflow.ContinueAsNewError
	if !errors.As(h.env.GetWorkflowError(), &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", h.env.GetWorkflowError())
	}
	var next SessionInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if st := next.State; st == nil || len(st.JobOutcomes) != 1 || st.JobOutcomes[0].JobOutcome != o || st.JobOutcomes[0].Noted {
		t.Fatalf("carried %+v", next.State)
	}
	h2 := newHarness(t, acts)
	var ex outcome
	h2.update(UpdateExecute, "exec-1", execReq("exec-1", "hi", policy.ApproveNone, nil), &ex)
	h2.at += time.Minute
	h2.env.RegisterDelayedCallback(h2.env.CancelWorkflow, h2.at)
	h2.env.ExecuteWorkflow(SessionWorkflow, next)
	ex.mustAccept(t, "exec-1")
	if !slices.Equal(acts.notes, []string{JobOutcomeNote(o)}) {
		t.Fatalf("notes %q", acts.notes)
	}
}

// hostScripted is the scripted session with the host's job request tools
// and a RequestJob that records what it was asked.
type hostScripted struct {
	*scripted
	mu       sync.Mutex
	requests []JobRequestInput
}

func (s *hostScripted) BeginTurn(ctx context.Context, in BeginTurnInput) (BeginTurnResult, error) {
	res, err := s.scripted.BeginTurn(ctx, in)
	res.HostTools = []HostTool{{Name: jobs.ToolRequestRepair}, {Name: jobs.ToolRequestImprovement}, {Name: jobs.ToolRepairStatus}}
	return res, err
}

// ModelRequest marks the job request tools' calls as host calls, as the
// real activity's inspection does.
func (s *hostScripted) ModelRequest(ctx context.Context, in ModelRequestInput) (ModelRequestResult, error) {
	res, err := s.scripted.ModelRequest(ctx, in)
	for i := range res.Calls {
		res.Calls[i].Host = JobRequestTool(res.Calls[i].Tool)
	}
	return res, err
}

func (s *hostScripted) RequestJob(_ context.Context, in JobRequestInput) (ToolCallResult, error) {
	s.mu.Lock()
	s.requests = append(s.requests, in)
	s.mu.Unlock()
	s.scripted.mu.Lock()
	defer s.scripted.mu.Unlock()
	s.revision[in.SessionID]++
	return ToolCallResult{Revision: s.revision[in.SessionID], CallID: in.CallID, Tool: in.Tool, Decision: in.Decision, Status: contract.CallCompleted}, nil
}

var _ JobRequestActivities = (*hostScripted)(nil)

// TestJobRequestCalls: a request runs as its own activity without asking
// the person, even under --approve none, with the workflow's sessions,
// mode, workspace and model; a policy that denies it records it forbidden.
func TestJobRequestCalls(t *testing.T) {
	acts := &hostScripted{scripted: newScripted(
		reply{calls: []scriptCall{{tool: jobs.ToolRequestRepair, args: map[string]any{"description": "x"}}, {tool: jobs.ToolRepairStatus}}},
		reply{text: "asked"},
		reply{calls: []scriptCall{{tool: jobs.ToolRequestImprovement}}},
		reply{text: "not asked"},
	)}
	h := &harness{t: t, acts: acts.scripted}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(Session, workflowOptions())
	h.env.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session."})
	deny := &policy.Policy{Tools: policy.Tools{Deny: []policy.Rule{{Name: "axlr_request_*"}}}}
	var ex1, ex2 outcome
	var p1, p2 Progress
	h.update(UpdateExecute, "exec-1", execReq("exec-1", "work", policy.ApproveNone, nil), &ex1)
	h.progress(&p1)
	h.update(UpdateExecute, "exec-2", execReq("exec-2", "more", policy.ApproveNone, deny), &ex2)
	h.progress(&p2)
	h.run()
	ex1.mustAccept(t, "exec-1")
	ex2.mustAccept(t, "exec-2")
	if p1.Result == nil || p1.Result.Status != contract.Completed || p2.Result == nil || p2.Result.Status != contract.Completed {
		t.Fatalf("results %+v %+v", p1.Result, p2.Result)
	}
	if tools := acts.scripted.requests[0].Tools; !slices.Contains(tools, jobs.ToolRequestRepair) || !slices.Contains(tools, jobs.ToolRepairStatus) {
		t.Fatalf("offered %v", tools)
	}
	if tools := acts.scripted.requests[2].Tools; slices.Contains(tools, jobs.ToolRequestImprovement) || !slices.Contains(tools, jobs.ToolRepairStatus) {
		t.Fatalf("under the deny policy offered %v", tools)
	}
	if len(acts.requests) != 2 || len(acts.ran) != 0 {
		t.Fatalf("requests %+v, tool calls %+v", acts.requests, acts.ran)
	}
	want := JobRequestInput{SessionID: sessionID, Sessions: []string{sessionID}, Key: "3.0", CallID: "call-3-0", Tool: jobs.ToolRequestRepair,
		Decision: contract.AutoApprove, Mode: "normal", Root: "/work/app", Model: "fake-model"}
	if got := acts.requests[0]; got.SessionID != want.SessionID || !slices.Equal(got.Sessions, want.Sessions) || got.Key != want.Key || got.CallID != want.CallID ||
		got.Tool != want.Tool || got.Decision != want.Decision || got.Mode != want.Mode || got.Root != want.Root || got.Model != want.Model {
		t.Fatalf("request %+v, want %+v", got, want)
	}
	if acts.requests[1].Tool != jobs.ToolRepairStatus {
		t.Fatalf("second request %+v", acts.requests[1])
	}
	if r := acts.recorded; len(r) != 1 || r[0].Tool != jobs.ToolRequestImprovement || r[0].Status != contract.CallForbidden ||
		!strings.HasPrefix(r[0].Message, "forbidden by the execution's policy: axlr_request_improvement is denied") {
		t.Fatalf("recorded %+v", r)
	}
}

// TestJobModeIsNotOfferedRequests: a job's own session (its mode is the
// job's kind) is not offered the job request tools; other modes are.
func TestJobModeIsNotOfferedRequests(t *testing.T) {
	for _, tt := range []struct {
		mode    string
		offered bool
	}{{"normal", true}, {"debug", true}, {"review", true}, {"repair", false}, {"improve", false}} {
		t.Run(tt.mode, func(t *testing.T) {
			st := newHostState(sessionID, tt.mode, "")
			st.Snapshot = &BeginTurnResult{HostTools: []HostTool{{Name: "web_fetch", Web: true}, {Name: jobs.ToolRequestRepair}, {Name: jobs.ToolRequestImprovement}, {Name: jobs.ToolRepairStatus}}}
			tools := newHost(&st, hostOptions{}).turn.offer().Tools
			if !slices.Contains(tools, "web_fetch") {
				t.Fatalf("offered %v", tools)
			}
			for _, name := range []string{jobs.ToolRequestRepair, jobs.ToolRequestImprovement, jobs.ToolRepairStatus} {
				if slices.Contains(tools, name) != tt.offered {
					t.Fatalf("mode %s offers %v", tt.mode, tools)
				}
			}
		})
	}
}
