package workflows

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
)

// repairMADE is MADE running axlr_repair 1.0 as far as a job's workflow
// sees it: each completion enables the trigger its recorded fields name,
// and each trigger leads to the next step or a terminal state.
type repairMADE struct {
	noResume
	mu        sync.Mutex
	checks    int
	completed []CompleteInput
	grants    []GrantInput
	triggers  []string
	// diagnosis is what diagnose's hand-back holds, when set.
	diagnosis *HandBackResult
}

func (f *repairMADE) Start(_ context.Context, in CeremonyStartInput) (CeremonyStartResult, error) {
	return CeremonyStartResult{Definition: "axlr_repair", Version: "1.0", StepTimeout: time.Hour,
		Instructions: map[string]string{"reproduce": "Reproduce.", "diagnose": "Diagnose.", "repair": "Repair."},
		Instance:     InstanceView{InstanceID: in.InstanceID, State: "REPRODUCE", NextStep: "reproduce", Steps: []StepView{{Step: "reproduce", Status: "in_progress", Iteration: 1, Attempt: 1}}}}, nil
}

func (f *repairMADE) Claim(_ context.Context, in ClaimInput) (InstanceView, error) {
	return InstanceView{InstanceID: in.InstanceID, State: strings.ToUpper(in.Step), Steps: []StepView{{Step: in.Step, Status: "in_progress", Iteration: in.Iteration, Attempt: 1}}}, nil
}

func (f *repairMADE) HandBack(_ context.Context, in HandBackInput) (HandBackResult, error) {
	if in.Step == "reproduce" {
		return HandBackResult{Command: &ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}}, nil
	}
	if in.Step == "diagnose" && f.diagnosis != nil {
		return *f.diagnosis, nil
	}
	return HandBackResult{}, nil
}

// RunCheck fails the reproduction and passes every rerun.
func (f *repairMADE) RunCheck(_ context.Context, in RunCheckInput) (contract.CheckRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	exit := 0
	if strings.Contains(in.Key, ":reproduce:") {
		exit = 1
	}
	return contract.CheckRecord{Program: in.Command.Program, Args: in.Command.Args, ExitCode: contract.Exit(exit), OutputTail: "FAIL"}, nil
}

func (f *repairMADE) Complete(_ context.Context, in CompleteInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completed = append(f.completed, in)
	var trigger string
	switch in.Step {
	case "reproduce":
		trigger = "reproduced"
	case "diagnose":
		trigger = "diagnosed"
	case "repair":
		trigger = "repaired"
	case "propose":
		trigger = map[bool]string{true: "proposed", false: "propose_failed"}[in.Recorded["proposed"] == true]
	case "watch":
		trigger = map[any]string{ceremonies.VerdictGreen: "checks_passed", ceremonies.VerdictRed: "checks_failed", ceremonies.VerdictBlocked: "watch_blocked"}[in.Recorded["verdict"]]
	case "decide":
		trigger = map[any]string{ceremonies.DecisionAutomatic: "merge_automatic", ceremonies.DecisionApprove: "merge_approved", ceremonies.DecisionDecline: "merge_declined"}[in.Recorded["decision"]]
	case "merge":
		trigger = map[bool]string{true: "merged", false: "merge_failed"}[in.Recorded["merged"] == true]
	}
	return InstanceView{InstanceID: in.InstanceID, State: strings.ToUpper(in.Step), Enabled: []string{trigger}}, nil
}

func (f *repairMADE) Transition(_ context.Context, in TransitionInput) (InstanceView, error) {
	f.mu.Lock()
	f.triggers = append(f.triggers, in.Trigger)
	f.mu.Unlock()
	next := map[string]string{"reproduced": "diagnose", "diagnosed": "repair", "repaired": "propose", "proposed": "watch",
		"checks_passed": "decide", "checks_failed": "repair", "merge_automatic": "merge", "merge_approved": "merge"}[in.Trigger]
	switch {
	case in.Trigger == "merged":
		return InstanceView{InstanceID: in.InstanceID, State: "COMPLETED", Completed: true}, nil
	case next == "":
		return InstanceView{InstanceID: in.InstanceID, State: "BLOCKED", Completed: true}, nil
	}
	return InstanceView{InstanceID: in.InstanceID, State: strings.ToUpper(next), NextStep: next, Steps: []StepView{{Step: next, Status: "pending", Iteration: 1}}}, nil
}

func (f *repairMADE) ApproveGuard(_ context.Context, in GrantInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants = append(f.grants, in)
	return InstanceView{InstanceID: in.InstanceID}, nil
}

// fakeForge is a job's forge: each proposal pushes a new head, and each
// read answers the next scripted read of that head's checks (and of the
// pull request's state, when pulls is set). An update of the branch lands
// a new head one read after it is asked, as GitHub's does.
type fakeForge struct {
	// prepare, when set, answers Prepare instead.
	prepare func(context.Context, PrepareInput) (PrepareResult, error)
	// files are what each proposal's head changes.
	files []string
	// moved are the proposals refused for a branch the forge moved.
	moved map[int]string
	// issues are the issues read.
	issues   []IssueInput
	mu       sync.Mutex
	proposes int
	reads    []pull.Checks // by read, the checks of the current head
	read     int
	updates  int
	merges   []MergeInput
	reruns   int
	// pulls, by read, override the pull request's State, Merged and
	// MergeableState (default open and clean).
	pulls []pull.Request
	// unchanged names the proposals (from 1) that find nothing to commit.
	unchanged map[int]bool
	// refuse is why every merge is refused; empty, merges land.
	refuse string
	// unreadable is why every read fails; empty, reads answer.
	unreadable string
	// commits counts the heads pushed; landed the updates shown since.
	commits, landed int
	lagging         bool
	proposals       []ProposeInput
	updateHeads     []string
	rerunHeads      []string
}

func (f *fakeForge) head() string {
	return "head" + string(rune('0'+f.commits)) + strings.Repeat("u", f.landed)
}

func (f *fakeForge) Prepare(ctx context.Context, in PrepareInput) (PrepareResult, error) {
	if f.prepare != nil {
		return f.prepare(ctx, in)
	}
	return PrepareResult{Clone: in.Directory + "/" + in.Job, Base: "main", Head: "base0"}, nil
}

func (f *fakeForge) Issue(_ context.Context, in IssueInput) (pull.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issues = append(f.issues, in)
	return pull.Issue{Number: in.Number, Title: "Parse panics on empty input", Body: "go test ./... panics.", URL: "https://github.com/o/r/issues/12"}, nil
}

func (f *fakeForge) Propose(_ context.Context, in ProposeInput) (ProposeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proposes++
	f.proposals = append(f.proposals, in)
	if f.unchanged[f.proposes] {
		return ProposeResult{NothingChanged: true}, nil
	}
	if msg := f.moved[f.proposes]; msg != "" {
		return ProposeResult{}, temporal.NewNonRetryableApplicationError(msg, ErrTypeBranchMoved, nil)
	}
	f.commits++
	f.landed, f.lagging = 0, false
	return ProposeResult{PullRequest: 7, URL: "https://github.com/o/r/pull/7", HeadSHA: f.head(), Opened: f.commits == 1, Files: f.files}, nil
}

func (f *fakeForge) Read(_ context.Context, in ReadInput) (ReadResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.reads[min(f.read, len(f.reads)-1)]
	pr := pull.Request{Number: 7, State: "open", MergeableState: "clean", HeadSHA: f.head(), BaseRef: "main"}
	if len(f.pulls) > 0 {
		p := f.pulls[min(f.read, len(f.pulls)-1)]
		pr.State, pr.Merged, pr.MergeableState = cmp.Or(p.State, pr.State), p.Merged, cmp.Or(p.MergeableState, pr.MergeableState)
	}
	f.read++
	if f.unreadable != "" {
		return ReadResult{Error: f.unreadable}, nil
	}
	c.SHA = f.head()
	if f.lagging {
		// This read still shows the head before the update.
		f.lagging = false
		f.landed++
	}
	return ReadResult{PullRequest: pr, Checks: c}, nil
}

func (f *fakeForge) UpdateBranch(_ context.Context, in UpdateBranchInput) (UpdateBranchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates++
	f.updateHeads = append(f.updateHeads, in.ExpectedHeadSHA)
	f.lagging = true
	return UpdateBranchResult{}, nil
}

func (f *fakeForge) RerunFailed(_ context.Context, in RerunInput) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reruns++
	f.rerunHeads = append(f.rerunHeads, in.HeadSHA)
	return 1, nil
}

func (f *fakeForge) Merge(_ context.Context, in MergeInput) (MergeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.merges = append(f.merges, in)
	if f.refuse != "" {
		return MergeResult{Refused: f.refuse}, nil
	}
	return MergeResult{MergeSHA: "merged1"}, nil
}

var _ ForgeActivities = (*fakeForge)(nil)
var _ CeremonyActivities = (*repairMADE)(nil)

var (
	pendingChecks = pull.Checks{Pending: []string{"test"}}
	redChecks     = pull.Checks{Failed: []string{"test: failure https://ci/1"}}
	greenChecks   = pull.Checks{Passed: []string{"test"}}
)

type jobHarness struct {
	testsuite.WorkflowTestSuite
	env    *testsuite.TestWorkflowEnvironment
	acts   *scripted
	made   *repairMADE
	pinned *pinnedMADE
	forge  *fakeForge
	memory *fakeMemory
	record jobs.Record
	at     time.Duration
	mu     sync.Mutex
	// reports are the records the job signalled to the registry.
	reports []jobs.Record
}

func newJobHarness(t *testing.T, acts *scripted, reads ...pull.Checks) *jobHarness {
	h := &jobHarness{made: &repairMADE{}}
	h.setup(acts, h.made, reads)
	h.record = jobs.Record{ID: "20261201-1200-testparse-fails", Kind: jobs.Repair, Signature: "abcd1234", Repository: "o/r",
		Brief: "TestParse fails on empty input", Status: jobs.Preparing, Attempt: 1, Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	return h
}

// setup registers the job's workflow, the session's activities, cer as
// MADE and a forge fake reading reads, and keeps what the job reports to
// the registry.
func (h *jobHarness) setup(acts *scripted, cer CeremonyActivities, reads []pull.Checks) {
	h.acts, h.forge = acts, &fakeForge{reads: reads}
	if h.memory == nil {
		h.memory = &fakeMemory{}
	}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(Job, workflow.RegisterOptions{Name: JobWorkflow})
	h.env.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session."})
	h.env.RegisterActivityWithOptions(cer, activity.RegisterOptions{Name: "ceremony."})
	h.env.RegisterActivityWithOptions(h.forge, activity.RegisterOptions{Name: "forge."})
	h.env.RegisterActivityWithOptions(h.memory, activity.RegisterOptions{Name: "memory."})
	h.env.OnSignalExternalWorkflow(mock.Anything, RegistryWorkflowID, "", SignalJobRecord, mock.Anything).Run(func(args mock.Arguments) {
		if r, ok := args.Get(4).(jobs.Record); ok {
			h.mu.Lock()
			h.reports = append(h.reports, r)
			h.mu.Unlock()
		}
	}).Return(nil)
}

// decideAt sends a decision after d of workflow time.
func (h *jobHarness) decideAt(d time.Duration, dec JobDecision, out *outcome) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdateJobDecide, dec.RequestID, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { out.rejected = err }, OnAccept: func() {},
			OnComplete: func(_ any, err error) { out.err, out.completed = err, true },
		}, dec)
	}, d)
}

func (h *jobHarness) run(t *testing.T, settings JobSettings) jobs.Record {
	t.Helper()
	return h.runInput(t, JobInput{Record: h.record, SessionID: sessionID, Host: "test", Settings: settings})
}

// runInput runs the job with in and returns its last record.
func (h *jobHarness) runInput(t *testing.T, in JobInput) jobs.Record {
	t.Helper()
	h.env.ExecuteWorkflow(JobWorkflow, in)
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the job did not end")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var rec jobs.Record
	if err := h.env.GetWorkflowResult(&rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

var repairModel = []reply{
	{calls: []scriptCall{stepDoneCall(map[string]any{"check_command": map[string]any{"program": "go", "args": []string{"test", "./..."}}, "expected": "ok", "observed": "panic"})}},
	{calls: []scriptCall{stepDoneCall(map[string]any{"root_cause": "r", "evidence": "e", "proposed_fix": "f"})}},
	{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "fixed Parse", "summary_en": "Fixed Parse."})}},
	{text: "AXLR proposes it now."},
}

// TestJobRepairAutoMerge: a repair from its brief to a merged pull
// request under repair.auto_merge: the first check waits for the person
// (awaiting_approval, then approved by the decision Update), the model's
// steps run, the console proposes, the watch reads pending then red (back
// to the model with the failing check named, a second proposal on the
// same pull request), then green; the merge is automatic and lands once,
// guarded by the head the watch saw.
func TestJobRepairAutoMerge(t *testing.T) {
	model := append(append([]reply{}, repairModel...),
		reply{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "fixed the edge case", "summary_en": "Fixed it."})}},
		reply{text: "Proposed again."})
	h := newJobHarness(t, newScripted(model...), pendingChecks, redChecks, greenChecks)
	var bad, approve outcome
	h.decideAt(time.Minute, JobDecision{RequestID: "d-0", Job: "another-job", Kind: jobs.PendingCheck, Approve: true}, &bad)
	h.decideAt(2*time.Minute, JobDecision{RequestID: "d-1", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &approve)
	rec := h.run(t, JobSettings{Remote: "/origin.git", Directory: "/jobs", AutoMerge: true, Watch: 45 * time.Minute, Poll: 30 * time.Second})
	bad.mustReject(t, "a decision for another job", "decide: this is job "+h.record.ID+", not another-job")
	approve.mustAccept(t, "approve the check")
	if rec.Status != jobs.Completed || rec.MergeSHA != "merged1" || rec.PullRequest != 7 || rec.HeadSHA != "head2" || rec.Pending != nil {
		t.Fatalf("record %+v", rec)
	}
	if h.forge.proposes != 2 || len(h.forge.merges) != 1 || h.forge.merges[0].SHA != "head2" {
		t.Fatalf("proposes %d, merges %+v", h.forge.proposes, h.forge.merges)
	}
	want := "reproduced diagnosed repaired proposed checks_failed repaired proposed checks_passed merge_automatic merged"
	if got := strings.Join(h.made.triggers, " "); got != want {
		t.Fatalf("triggers\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(strings.Join(h.acts.notes, "\n"), "[AXLR] Check round 1: the pull request's checks failed on head1: test: failure https://ci/1") {
		t.Fatalf("notes %q", h.acts.notes)
	}
	if len(h.made.grants) != 0 {
		t.Fatalf("an automatic merge granted %+v", h.made.grants)
	}
}

// TestJobMergeDecision: without auto_merge the job waits for the person's
// merge decision (awaiting_merge, the pull request and head pending); a
// decline needs a reason and ends the job BLOCKED with it; an approval is
// granted by the approver identity before the merge.
func TestJobMergeDecision(t *testing.T) {
	for _, approve := range []bool{false, true} {
		h := newJobHarness(t, newScripted(repairModel...), greenChecks)
		var check, noReason, merge outcome
		h.decideAt(time.Minute, JobDecision{RequestID: "d-1", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &check)
		h.decideAt(2*time.Minute, JobDecision{RequestID: "d-2", Job: h.record.ID, Kind: jobs.PendingMerge}, &noReason)
		h.decideAt(3*time.Minute, JobDecision{RequestID: "d-3", Job: h.record.ID, Kind: jobs.PendingMerge, Approve: approve, Reason: "not this way"}, &merge)
		rec := h.run(t, JobSettings{Remote: "/origin.git", Directory: "/jobs", Watch: 45 * time.Minute, Poll: 30 * time.Second})
		check.mustAccept(t, "approve the check")
		noReason.mustReject(t, "a decline without a reason", "decide: refusing the merge of job "+h.record.ID+" needs a reason")
		merge.mustAccept(t, "the merge decision")
		if approve {
			if rec.Status != jobs.Completed || len(h.forge.merges) != 1 || len(h.made.grants) != 1 || h.made.grants[0].Role != ceremonies.ApproverRole {
				t.Fatalf("approved: record %+v, merges %d, grants %+v", rec, len(h.forge.merges), h.made.grants)
			}
			continue
		}
		if rec.Status != jobs.Blocked || rec.Reason != "the person declined the merge: not this way" || len(h.forge.merges) != 0 {
			t.Fatalf("declined: record %+v, merges %d", rec, len(h.forge.merges))
		}
	}
}
