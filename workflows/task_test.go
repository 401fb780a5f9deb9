package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

func taskInput(mode string) TaskInput {
	return TaskInput{ExecutionID: "task-exec-1", SessionID: sessionID, Host: "test", Root: "/work/app", Prompt: "add the entry", Mode: mode}
}

// taskEnv runs a task with scripted activities; before runs before the
// workflow starts (delayed callbacks).
func taskEnv(t *testing.T, acts *scripted, cer *fakeCeremony, in TaskInput, before func(*testsuite.TestWorkflowEnvironment)) (*contract.Result, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Task, workflow.RegisterOptions{Name: TaskWorkflow})
	env.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session."})
	if cer != nil {
		env.RegisterActivityWithOptions(cer, activity.RegisterOptions{Name: "ceremony."})
	}
	if before != nil {
		before(env)
	}
	env.ExecuteWorkflow(TaskWorkflow, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the task did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var res contract.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return &res, nil
}

// TestTaskCompletes: a task runs its prompt in a fresh session with the
// workspace's tools approved, and the workflow completes with the result.
func TestTaskCompletes(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{{tool: "local_write", args: map[string]any{"path": "CHANGELOG.md", "content": "x", "mode": "create"}}}},
		reply{text: "Added."},
	)
	res, err := taskEnv(t, acts, nil, taskInput(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.Completed || res.SessionID != sessionID || len(res.ToolCalls) != 1 || res.ToolCalls[0].Decision != contract.AutoApprove {
		t.Fatalf("result %+v", res)
	}
	if len(acts.ran) != 1 || acts.ran[0].Tool != "local_write" || len(acts.finished) != 1 || acts.finished[0].ExecutionID != "task-exec-1" {
		t.Fatalf("ran %+v finished %+v", acts.ran, acts.finished)
	}
}

// TestTaskEndsWhenACallNeedsThePerson: the destructive list still asks
// under the task's approval, and the task ends needs_decision instead of
// waiting.
func TestTaskEndsWhenACallNeedsThePerson(t *testing.T) {
	acts := newScripted(reply{calls: []scriptCall{{tool: "local_exec", args: map[string]any{"program": "git", "args": []string{"push", "--force"}}}}})
	res, err := taskEnv(t, acts, nil, taskInput(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.NeedsDecision || res.Pending == nil || res.Pending.Tool != "local_exec" || len(acts.ran) != 0 {
		t.Fatalf("result %+v, ran %+v", res, acts.ran)
	}
}

// TestTaskPolicyNarrows: the task's policy forbids what it names.
func TestTaskPolicyNarrows(t *testing.T) {
	acts := newScripted(reply{calls: []scriptCall{{tool: "local_exec", args: map[string]any{"program": "ls"}}}}, reply{text: "Could not."})
	in := taskInput("")
	in.Policy = &policy.Policy{Level: policy.ActWithinPolicy, Tools: policy.Tools{Deny: []policy.Rule{{Name: "local_exec"}}}}
	res, err := taskEnv(t, acts, nil, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.Completed || res.ToolCalls[0].Status != contract.CallForbidden || strings.Contains(strings.Join(acts.requests[0].Tools, ","), "local_exec") {
		t.Fatalf("result %+v, offered %v", res, acts.requests[0].Tools)
	}
}

// TestTaskCeremonyWithApprovedCheck: a task in a ceremony's mode runs the
// ceremony; a check command approved with the task runs without asking.
func TestTaskCeremonyWithApprovedCheck(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{reproduceHandBack}},
		reply{calls: []scriptCall{diagnoseHandBack}},
		reply{text: "Diagnosed."},
	)
	cer := &fakeCeremony{timeout: time.Hour, exit: 1}
	in := taskInput("debug")
	in.ApprovedChecks = []ceremonies.CheckCommand{{Program: "go", Args: []string{"test", "./..."}}}
	res, err := taskEnv(t, acts, cer, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.Completed || res.Ceremony == nil || res.Ceremony.State != "COMPLETED" || len(cer.checks) != 1 {
		t.Fatalf("result %+v ceremony %+v checks %d", res, res.Ceremony, len(cer.checks))
	}
	for _, c := range res.ToolCalls {
		if c.Decision != contract.AutoApprove || c.Status != contract.CallCompleted {
			t.Fatalf("tool call %+v", c)
		}
	}

	// Without the approval the same hand-back ends the task needs_decision.
	acts = newScripted(reply{calls: []scriptCall{reproduceHandBack}})
	res, err = taskEnv(t, acts, &fakeCeremony{timeout: time.Hour, exit: 1}, taskInput("debug"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.NeedsDecision || res.Pending == nil || res.Pending.Tool != CheckTool {
		t.Fatalf("unapproved check: result %+v", res)
	}
}

// TestTaskInterrupt: an interrupt naming another execution is refused; the
// task's own ends it interrupted, and the workflow completes.
func TestTaskInterrupt(t *testing.T) {
	var errs []reply
	for range 10 {
		errs = append(errs, reply{err: errors.New("provider busy")})
	}
	acts := newScripted(errs...)
	var stale, own outcome
	res, err := taskEnv(t, acts, nil, taskInput(""), func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(UpdateInterrupt, "int-1", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { stale.rejected = err }, OnAccept: func() {},
				OnComplete: func(_ any, err error) { stale.err, stale.completed = err, true },
			}, InterruptRequest{ExecutionID: "someone-else"})
			env.UpdateWorkflow(UpdateInterrupt, "int-2", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { own.rejected = err }, OnAccept: func() {},
				OnComplete: func(_ any, err error) { own.err, own.completed = err, true },
			}, InterruptRequest{ExecutionID: "task-exec-1", Reason: "stop it"})
		}, 5*time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	stale.mustReject(t, "stale interrupt", "execution someone-else is not this task's; the task runs execution task-exec-1")
	own.mustAccept(t, "interrupt")
	if res.Status != contract.Interrupted || res.Error != "stop it" {
		t.Fatalf("result %+v", res)
	}
}

// TestTaskRefusesBadInput: a task that cannot run fails at once, naming
// the field.
func TestTaskRefusesBadInput(t *testing.T) {
	in := taskInput("")
	in.Root = "app"
	_, err := taskEnv(t, newScripted(), nil, in, nil)
	if err == nil || !strings.Contains(err.Error(), `task: root "app" is not an absolute path`) {
		t.Fatalf("error %v", err)
	}
	in = taskInput("revisar")
	if _, err := taskEnv(t, newScripted(), nil, in, nil); err == nil || !strings.Contains(err.Error(), `unknown mode "revisar"`) {
		t.Fatalf("error %v", err)
	}
}
