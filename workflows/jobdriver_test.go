package workflows

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// improveCeremony is MADE as an improvement's model steps see it: brief
// (a check that must show the improvement missing on a clean tree), build
// (the same check must pass and run a test), then the console's propose.
type improveCeremony struct {
	mu sync.Mutex
	// dirty is what the first clean-tree check finds; later ones are clean.
	dirty     string
	checks    []RunCheckInput
	completed []CompleteInput
	claims    []ClaimInput
}

func (f *improveCeremony) Start(_ context.Context, in CeremonyStartInput) (CeremonyStartResult, error) {
	if in.Definition != "axlr_improve" || in.Version != "1.0" || in.Context["improvement_brief"] == nil || in.Context["repository"] != "underpass-ai/axlr" {
		return CeremonyStartResult{}, errTest("start input " + in.Definition)
	}
	return CeremonyStartResult{Definition: "axlr_improve", Version: "1.0", StepTimeout: time.Hour,
		Instructions: map[string]string{"brief": "Brief it.", "build": "Build it."},
		Instance:     InstanceView{InstanceID: in.InstanceID, State: "BRIEF", NextStep: "brief", Steps: []StepView{{Step: "brief", Status: "in_progress", Iteration: 1, Attempt: 1}}}}, nil
}

func (f *improveCeremony) Claim(_ context.Context, in ClaimInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims = append(f.claims, in)
	return InstanceView{InstanceID: in.InstanceID, State: strings.ToUpper(in.Step), Steps: []StepView{{Step: in.Step, Status: "in_progress", Iteration: in.Iteration, Attempt: 1}}}, nil
}

func (f *improveCeremony) HandBack(_ context.Context, in HandBackInput) (HandBackResult, error) {
	if in.Step == "brief" {
		return HandBackResult{Command: &ceremonies.CheckCommand{Program: "go", Args: []string{"test", "-run", "TestFlag", "./..."}}}, nil
	}
	return HandBackResult{}, nil
}

func (f *improveCeremony) RunCheck(_ context.Context, in RunCheckInput) (contract.CheckRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks = append(f.checks, in)
	rec := contract.CheckRecord{Program: in.Command.Program, Args: in.Command.Args, ExitCode: contract.Exit(0)}
	switch {
	case in.Command.Program == "":
		rec.OutputTail = "0123abc\n" + f.dirty
		f.dirty = ""
	case strings.HasSuffix(in.Key, ":brief:1"):
		rec.OutputTail = "ok  \texample.com/app\t0.01s [no tests to run]\n"
	default:
		rec.OutputTail = "ok  \texample.com/app\t0.02s\n"
	}
	return rec, nil
}

func (f *improveCeremony) Complete(_ context.Context, in CompleteInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completed = append(f.completed, in)
	triggers := map[string]string{"brief": "briefed", "build": "verified", "propose": "proposed", "watch": "checks_passed", "decide": "merge_approved", "merge": "merged"}
	return InstanceView{InstanceID: in.InstanceID, State: strings.ToUpper(in.Step), Enabled: []string{triggers[in.Step]}}, nil
}

func (f *improveCeremony) Transition(_ context.Context, in TransitionInput) (InstanceView, error) {
	if in.Trigger == "merged" {
		return InstanceView{InstanceID: in.InstanceID, State: "COMPLETED", Completed: true}, nil
	}
	next := map[string]string{"briefed": "build", "verified": "propose", "proposed": "watch", "checks_passed": "decide", "merge_approved": "merge"}[in.Trigger]
	return InstanceView{InstanceID: in.InstanceID, State: strings.ToUpper(next), NextStep: next, Steps: []StepView{{Step: next, Status: "pending", Iteration: 1}}}, nil
}

func (f *improveCeremony) ApproveGuard(_ context.Context, in GrantInput) (InstanceView, error) {
	return InstanceView{InstanceID: in.InstanceID}, nil
}

type errTest string

func (e errTest) Error() string { return string(e) }

// jobReport is what the job host saw.
type jobReport struct {
	Result  contract.Result
	Console string
	State   string
	// Steps are the console steps the host completed, and where each left
	// the ceremony.
	Steps []string
	Ended bool
}

// jobHost hosts a turn and the driver the way a job's workflow will: the
// job's definition opened, the model's steps in one turn.
func jobHost(ctx workflow.Context) (jobReport, error) {
	st := newHostState(sessionID, "normal", "exec-1")
	st.Approval = policy.ApproveAll
	h := newHost(&st, hostOptions{approved: []ceremonies.CheckCommand{{Program: "go", Args: []string{"test", "-run", "TestFlag", "./..."}}}})
	t, d := h.turn, h.driver
	err := t.Begin(ctx, BeginTurnInput{SessionID: sessionID, ExecutionID: "exec-1", Prompt: "add a --flag", Root: "/work/app", Mode: "improve"})
	if err == nil {
		err = d.Open(ctx, "axlr_improve", "1.0", Opening{Brief: "add a --flag", Inputs: map[string]any{"repository": "underpass-ai/axlr"}, Execution: "exec-1"}, nil)
	}
	if err == nil {
		err = t.Run(ctx, nil)
	}
	status, msg := endedAs(err, "")
	res := t.Finish(ctx, status, msg, d.Outcome("exec-1"))
	var console string
	if s, ok := d.ConsoleStep(); ok {
		console = s.ID
	}
	r := jobReport{Result: *res, Console: console, State: st.Ceremony.State}
	recorded := map[string]map[string]any{
		"propose": {"proposed": true, "pull_request": 7, "head_sha": "abc"},
		"watch":   {"verdict": ceremonies.VerdictGreen, "pull_request": 7, "head_sha": "abc"},
		"decide":  {"decision": ceremonies.DecisionApprove, "pull_request": 7, "head_sha": "abc"},
		"merge":   {"merged": true, "merge_sha": "def", "pull_request": 7},
	}
	for {
		st, ok := d.ConsoleStep()
		if !ok {
			break
		}
		out, err := d.CompleteConsole(ctx, recorded[st.ID], nil)
		if err != nil {
			return r, err
		}
		r.Steps = append(r.Steps, st.ID+">"+out.State)
		r.Ended = out.Ended
	}
	return r, nil
}

// TestJobDriver: an improvement's brief is refused on a dirty tree; on a
// clean one its check passing with [no tests to run] shows the
// improvement missing; the build's rerun passes with a test; then the
// driver claims the console's propose, tells the model it is AXLR's, and
// the turn ends with the step left for the job's workflow, which completes
// the console's steps with what it recorded.
func TestJobDriver(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{stepDoneCall(map[string]any{"criteria": "c", "scope": "s", "check_command": map[string]any{"program": "go", "args": []string{"test", "-run", "TestFlag", "./..."}}})}},
		reply{calls: []scriptCall{stepDoneCall(map[string]any{"criteria": "c", "scope": "s", "check_command": map[string]any{"program": "go", "args": []string{"test", "-run", "TestFlag", "./..."}}})}},
		reply{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "added --flag", "summary_en": "Added --flag."})}},
		reply{text: "Built; AXLR proposes it now."},
	)
	cer := &improveCeremony{dirty: " M main.go\n"}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(jobHost, workflow.RegisterOptions{Name: "test.JobHost"})
	env.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session."})
	env.RegisterActivityWithOptions(cer, activity.RegisterOptions{Name: "ceremony."})
	env.ExecuteWorkflow("test.JobHost")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var r jobReport
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	if first := acts.recorded[0].Message; !strings.Contains(first, "the clone has changes (M main.go)") {
		t.Fatalf("dirty brief recorded %s", first)
	}
	if len(cer.completed) != 6 || cer.completed[0].Recorded["missing"] != true || cer.completed[0].Recorded["settled"] != true || cer.completed[1].Recorded["verified"] != true {
		t.Fatalf("completions %+v", cer.completed)
	}
	if r.Console != "propose" || r.State != "PROPOSE" || r.Result.Status != contract.Completed || len(acts.requests) != 4 {
		t.Fatalf("report %+v", r)
	}
	reply := acts.recorded[len(acts.recorded)-1].Message
	if !strings.Contains(reply, "Step propose is AXLR's own: it runs without you") {
		t.Fatalf("the build's reply %s", reply)
	}
	if last := acts.requests[len(acts.requests)-1]; last.StepDone != nil || slices.Contains(last.Tools, StepDoneTool) {
		t.Fatalf("the last request offers %v, step_done %+v", last.Tools, last.StepDone)
	}
	// The host then runs the console steps through CompleteConsole.
	if strings.Join(r.Steps, " ") != "propose>WATCH watch>DECIDE decide>MERGE merge>COMPLETED" || !r.Ended {
		t.Fatalf("console steps %v, ended %v", r.Steps, r.Ended)
	}
	if got := cer.completed[len(cer.completed)-1]; got.Step != "merge" || got.Recorded["merge_sha"] != "def" {
		t.Fatalf("the merge's completion %+v", got)
	}
}
