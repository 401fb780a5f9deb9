package plans

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

type fakeClient struct {
	records   []domain.Record
	launched  []client.PlanLaunch
	end       client.PlanEnd
	decisions []workflows.PlanDecision
}

func (f *fakeClient) CheckWorker(context.Context) error              { return nil }
func (f *fakeClient) Plans(context.Context) ([]domain.Record, error) { return f.records, nil }
func (f *fakeClient) InterruptPlan(context.Context, string) error    { return nil }
func (f *fakeClient) Close()                                         {}
func (f *fakeClient) Plan(_ context.Context, id string) (domain.Record, error) {
	return domain.Find(f.records, id)
}

func (f *fakeClient) LaunchPlan(_ context.Context, in client.PlanLaunch) (domain.Record, error) {
	f.launched = append(f.launched, in)
	return domain.Record{ID: "add-a-flag-0a1b2c", Status: domain.Decomposing, Brief: in.Brief, Root: in.Root}, nil
}

func (f *fakeClient) WatchPlan(_ context.Context, _ string, w client.Watcher) (client.PlanEnd, error) {
	w.Event(contract.Event{Type: contract.EventSession, SessionID: "s1"})
	return f.end, nil
}

func (f *fakeClient) DecidePlan(_ context.Context, dec workflows.PlanDecision) (domain.Record, error) {
	f.decisions = append(f.decisions, dec)
	r, err := domain.Find(f.records, dec.Plan)
	r.Status, r.Pending = domain.Running, nil
	return r, err
}

func (f *fakeClient) RecoverPlan(ctx context.Context, id string) (domain.Record, error) {
	r, err := f.Plan(ctx, id)
	if err == nil && r.Status != domain.Interrupted {
		return domain.Record{}, fmt.Errorf("plan %s is %s: only an interrupted plan is recovered", id, r.Status)
	}
	return r, err
}

var (
	at      = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	exit0   = 0
	records = []domain.Record{
		{ID: "card", Status: domain.AwaitingApproval, Pending: &domain.Pending{Kind: domain.PendingApproval}, Waves: 2, Created: at, Updated: at,
			Tasks: []domain.Task{{ID: "add-flag", Wave: 1, Status: domain.TaskPending}, {ID: "doc-flag", Wave: 2, Status: domain.TaskPending}}},
		{ID: "cmds", Status: domain.AwaitingApproval, Pending: &domain.Pending{Kind: domain.PendingCommand, Commands: []string{"go test ./..."}}, Created: at.Add(-time.Hour), Updated: at},
		{ID: "done", Status: domain.Done, Waves: 1, Root: "/w", Created: at.Add(-2 * time.Hour), Updated: at,
			Tasks: []domain.Task{{ID: "add-flag", Wave: 1, Status: domain.TaskDone, Session: "s-1", Changed: []string{"main.go", "main_test.go"},
				Questions: []string{"Should --flag be documented in the man page too?"}}},
			Syncs: []domain.Sync{{Wave: 1, Check: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}, Exit: &exit0, Round: 1}}},
	}
)

func run(t *testing.T, fake *fakeClient, launch bool, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := factory.Test()
	f := &factory.Factory{IOStreams: ios, Getwd: func() (string, error) { return t.TempDir(), nil }}
	runF := func(ctx context.Context, o *Options) error {
		o.Client = func(context.Context) (Client, error) { return fake, nil }
		return plansRun(ctx, o)
	}
	cmd := NewCmdPlans(f, runF)
	if launch {
		cmd = NewCmdLaunch(f, runF)
	}
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmdutil.ExitCode(cmd.Execute(), errOut), out.String(), errOut.String()
}

// TestPlans: the list, show, and the decisions on a plan's card and on its
// commands, each mapped to the Update the plan takes.
func TestPlans(t *testing.T) {
	tests := []struct {
		name           string
		args           []string
		want           *workflows.PlanDecision
		code           int
		stdout, stderr string
	}{
		{name: "list", stdout: "" +
			"ID    STATUS             TASKS  WAVES  UPDATED\n" +
			"card  awaiting_approval  0/2    2      2026-12-01T12:00:00Z\n" +
			"cmds  awaiting_approval  0/0    0      2026-12-01T12:00:00Z\n" +
			"done  done               1/1    1      2026-12-01T12:00:00Z\n"},
		{name: "show", args: []string{"show", "done"}, stdout: "" +
			"id:       done\nstatus:   done\nroot:     /w\ntasks:\n" +
			"  wave 1  add-flag  done  s-1  main.go, main_test.go\n" +
			"question from add-flag: Should --flag be documented in the man page too?\n" +
			"sync wave 1 round 1: go test ./...: exit 0\n"},
		{name: "approve the card", args: []string{"approve", "card"}, want: &workflows.PlanDecision{Plan: "card", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanApprove},
			stdout: "approved the plan card; it is running now (axlr-tui plans watch card follows it)\n"},
		{name: "return the card", args: []string{"return", "card", "--reason", "split add-flag"},
			want:   &workflows.PlanDecision{Plan: "card", Kind: workflows.PlanDecidePlan, Decision: workflows.PlanReturn, Reason: "split add-flag"},
			stdout: "returned the plan card; it is running now (axlr-tui plans watch card follows it)\n"},
		{name: "approve the commands", args: []string{"approve", "cmds"}, want: &workflows.PlanDecision{Plan: "cmds", Kind: workflows.PlanDecideCommands, Decision: workflows.PlanApprove},
			stdout: "approved the plan's commands cmds; it is running now (axlr-tui plans watch cmds follows it)\n"},
		{name: "decline the commands", args: []string{"decline", "cmds", "--reason", "x"}, code: 1,
			stderr: "axlr-tui: plan cmds waits for its commands, not its card: axlr-tui plans approve cmds runs them, axlr-tui plans return cmds --reason TEXT sends the planner back\n"},
		{name: "decide a done plan", args: []string{"approve", "done"}, code: 1, stderr: "axlr-tui: plan done waits for no decision: it is done\n"},
		{name: "return without a reason", args: []string{"return", "card"}, code: 2, stderr: "axlr-tui: plans return needs --reason TEXT: the planner and the record keep it\n"},
		{name: "recover a done plan", args: []string{"recover", "done"}, code: 1, stderr: "axlr-tui: plan done is done: only an interrupted plan is recovered\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{records: records}
			code, stdout, stderr := run(t, fake, false, tt.args...)
			if code != tt.code || stdout != tt.stdout || stderr != tt.stderr {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
			}
			switch {
			case tt.want == nil && len(fake.decisions) != 0:
				t.Fatalf("decided %+v", fake.decisions)
			case tt.want != nil && (len(fake.decisions) != 1 || fake.decisions[0] != *tt.want):
				t.Fatalf("decided %+v, want %+v", fake.decisions, *tt.want)
			}
		})
	}
}

// TestPlanLaunch: --plan starts the plan in the current directory and
// follows it to its card (exit 3); --json prints the plan line, the
// events and the result with the plan; a bad brief is a usage error.
func TestPlanLaunch(t *testing.T) {
	fake := &fakeClient{end: client.PlanEnd{Record: records[0]}}
	code, stdout, _ := run(t, fake, true, "--plan", "--model", "m", "add a flag", "--json")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 3 || len(lines) != 3 || len(fake.launched) != 1 || fake.launched[0].Brief != "add a flag" || fake.launched[0].Model != "m" || fake.launched[0].Root == "" {
		t.Fatalf("exit %d, launched %+v\n%s", code, fake.launched, stdout)
	}
	var last struct {
		Type   string         `json:"type"`
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil || last.Result["status"] != "needs_decision" || last.Result["plan"] == nil {
		t.Fatalf("result line %s: %v", lines[2], err)
	}
	done := &fakeClient{end: client.PlanEnd{Record: records[2]}}
	if code, stdout, _ := run(t, done, true, "--plan=tidy up"); code != 0 || stdout != "plan done done: 1/1 tasks\n" {
		t.Fatalf("a done plan: exit %d %q", code, stdout)
	}
	if code, _, stderr := run(t, &fakeClient{}, true, "--plan", " "); code != 2 || !strings.Contains(stderr, "--plan needs a brief") {
		t.Fatalf("no brief: exit %d %q", code, stderr)
	}
}
