package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// planBrief opens the planner's prompt.
const planBrief = "PLAN: make Parse refuse empty input, then add Double"

// planDecomposition is the planner's hand-back on calcRepo: two waves, the
// fix of Parse first, then Double, which depends on it; the end-to-end
// check is the whole module's tests.
const planDecomposition = `{
  "tasks": [
    {"id": "fix-parse", "goal": "Parse returns an error for empty input instead of panicking",
     "scope": ["calc.go"], "context": [{"path": "calc.go", "line": 7, "quote": "return strconv.Atoi(s[:1])"}],
     "unit_check": {"program": "go", "args": ["test", "-run", "TestParse", "./..."]}, "depends_on": [], "test_first": false, "protect": ["calc_test.go"]},
    {"id": "add-double", "goal": "Add Double, which returns twice its argument, with a test",
     "scope": ["double.go", "double_test.go"], "context": [],
     "unit_check": {"program": "go", "args": ["test", "-run", "TestDouble", "./..."]}, "depends_on": ["fix-parse"], "test_first": false, "protect": []}
  ],
  "e2e_check": {"program": "go", "args": ["test", "./..."]},
  "interfaces": "func Double(n int) int",
  "summary_en": "Fix Parse on empty input, then add Double."
}`

// planReply plays the planner and the two task workers of the plan.
func planReply(req agenttest.Request) agenttest.Reply {
	first := firstUser(req)
	tools := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			tools++
		}
	}
	switch {
	case strings.Contains(first, planBrief):
		if tools == 0 {
			return stepDone("plan-1", planDecomposition)
		}
		return agenttest.Reply{Text: "Planned: two tasks in two waves."}
	case strings.HasPrefix(first, "Task fix-parse"):
		switch tools {
		case 0:
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "e1", Name: "local_edit",
				Arguments: `{"path": "calc.go", "old_text": "\treturn strconv.Atoi(s[:1])", "new_text": "\tif s == \"\" {\n\t\treturn 0, strconv.ErrSyntax\n\t}\n\treturn strconv.Atoi(s[:1])"}`}}}
		case 1:
			return stepDone("g1", `{"summary": "Parse returns ErrSyntax for empty input.", "summary_en": "Parse errs on empty input.", "notes": [{"to": "add-double", "text": "Parse now returns strconv.ErrSyntax on empty input."}]}`)
		}
	case strings.HasPrefix(first, "Task add-double"):
		switch tools {
		case 0:
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write",
				Arguments: `{"path": "double.go", "mode": "create", "content": "package calc\n\n// Double returns twice n.\nfunc Double(n int) int { return 2 * n }\n"}`}}}
		case 1:
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w2", Name: "local_write",
				Arguments: `{"path": "double_test.go", "mode": "create", "content": "package calc\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(\"Double(2) is not 4\")\n\t}\n}\n"}`}}}
		case 2:
			return stepDone("g2", `{"summary": "Add Double with its test.", "summary_en": "Adds Double."}`)
		}
	}
	return agenttest.Reply{Text: "Done."}
}

// planLines decodes a plan watch's --json output: the first line's plan
// and the result line's status and plan.
func planLines(t *testing.T, out string) (first plans.Record, status string, last plans.Record) {
	t.Helper()
	ls := strings.Split(strings.TrimSpace(out), "\n")
	var head struct {
		Type string       `json:"type"`
		Plan plans.Record `json:"plan"`
	}
	if len(ls) < 2 || json.Unmarshal([]byte(ls[0]), &head) != nil || head.Type != "plan" {
		t.Fatalf("plan output:\n%s", out)
	}
	var tail struct {
		Type   string `json:"type"`
		Result struct {
			Status string       `json:"status"`
			Plan   plans.Record `json:"plan"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(ls[len(ls)-1]), &tail) != nil || tail.Type != "result" {
		t.Fatalf("last line %s", ls[len(ls)-1])
	}
	return head.Plan, tail.Result.Status, tail.Result.Plan
}

// TestPlanFromTheCommandLine runs a two-wave plan on a real Go module as a
// person does: --plan waits for its commands (exit 3), plans approve runs
// them as the baseline, plans watch stops at the plan's card (exit 3),
// plans approve runs the waves in the background, each task in its own
// worker, with a sync after each wave, and plans watch sees it done
// (exit 0); go test ./... passes in the workspace after it.
func TestPlanFromTheCommandLine(t *testing.T) {
	model := agenttest.NewServer(t, planReply)
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--plan", planBrief, "--json")
	first, status, rec := planLines(t, r.stdout)
	if r.code != 3 || status != "needs_decision" || rec.Pending == nil || rec.Pending.Kind != plans.PendingCommand {
		t.Fatalf("--plan: exit %d %s %+v\n%s", r.code, status, rec.Pending, r.stderr)
	}
	id := first.ID
	if r := e.tui(ctx, "plans", "approve", id); r.code != 0 {
		t.Fatalf("approve the commands: exit %d %s", r.code, r.stderr)
	}
	r = e.tui(ctx, "plans", "watch", id, "--json")
	_, status, rec = planLines(t, r.stdout)
	if r.code != 3 || rec.Pending == nil || rec.Pending.Kind != plans.PendingApproval || len(rec.Tasks) != 2 || rec.Waves != 2 {
		t.Fatalf("watch to the card: exit %d %s %+v\n%s", r.code, status, rec, r.stderr)
	}
	if r := e.tui(ctx, "plans", "approve", id); r.code != 0 {
		t.Fatalf("approve the plan: exit %d %s", r.code, r.stderr)
	}
	r = e.tui(ctx, "plans", "watch", id)
	if r.code != 0 || !strings.Contains(r.stdout, "plan "+id+" done: 2/2 tasks") {
		t.Fatalf("watch to the end: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.tui(ctx, "plans", "show", id, "--json")
	var done plans.Record
	if err := json.Unmarshal([]byte(r.stdout), &done); err != nil || done.Status != plans.Done || len(done.Syncs) < 2 {
		t.Fatalf("plans show: %v\n%s", err, r.stdout)
	}
	for _, task := range done.Tasks {
		if task.Status != plans.TaskDone || task.Session == "" || len(task.Changed) == 0 {
			t.Fatalf("task %+v", task)
		}
	}
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir, cmd.Env = e.workspace, append(e.environ(), "GOFLAGS=-count=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test ./... after the plan: %v\n%s", err, out)
	}
	if r := e.tui(ctx, "plans"); r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "done") {
		t.Fatalf("plans: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	captureWorkflow(t, e, workflows.PlanWorkflowID(id), "plan_two_waves")
	captureWorkflow(t, e, workflows.PlanWorkflowID(id), "plan_memory")
	captureWorkflow(t, e, workflows.PlanTaskWorkflowID(id, "add-double", 0), "plan_task")
}

// TestPlanThroughCrashes kills axlrd with SIGKILL while a task of wave 1
// waits for its model, and while the sync after wave 1 runs its end-to-end
// check; after each restart the plan goes on, and it ends done with each
// task's work made once.
func TestPlanThroughCrashes(t *testing.T) {
	gate := make(chan struct{})
	var held atomic.Bool
	slowCheck := strings.Replace(planDecomposition, `"e2e_check": {"program": "go", "args": ["test", "./..."]}`,
		`"e2e_check": {"program": "/bin/sh", "args": ["-c", "sleep 3 && go test ./..."]}`, 1)
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		first := firstUser(req)
		reply := planReply(req)
		switch {
		case strings.Contains(first, planBrief) && len(reply.ToolCalls) == 1:
			return stepDone("plan-1", slowCheck)
		case strings.HasPrefix(first, "Task fix-parse") && held.CompareAndSwap(false, true):
			// The worker's first request waits while axlrd is killed.
			<-gate
		}
		return reply
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	k := spawnKillable(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--plan", planBrief, "--detach")
	id := strings.TrimSpace(r.stdout)
	for _, step := range []string{"commands", "card"} {
		if r := e.tui(ctx, "plans", "watch", id); r.code != 3 {
			t.Fatalf("watch to the %s: exit %d\n%s%s", step, r.code, r.stdout, r.stderr)
		}
		if r := e.tui(ctx, "plans", "approve", id); r.code != 0 {
			t.Fatalf("approve the %s: exit %d %s", step, r.code, r.stderr)
		}
	}
	for !held.Load() && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	k.restart("while a task of wave 1 waits for its model")
	close(gate)

	for {
		rec, err := k.c.Plan(ctx, id)
		if err == nil && rec.Tasks[0].Status == plans.TaskDone && len(rec.Syncs) == 0 {
			break
		}
		if ctx.Err() != nil || (err == nil && len(rec.Syncs) > 0) {
			t.Fatalf("no sync of wave 1 to kill axlrd in: %+v, %v", rec, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	k.restart("while the sync after wave 1 runs its check")

	r = e.tui(ctx, "plans", "watch", id)
	if r.code != 0 || !strings.Contains(r.stdout, "done: 2/2 tasks") {
		t.Fatalf("watch to the end: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	calc, err := os.ReadFile(filepath.Join(e.workspace, "calc.go"))
	if n := strings.Count(string(calc), `if s == ""`); err != nil || n != 1 {
		t.Fatalf("calc.go holds the fix %d times:\n%s", n, calc)
	}
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir, cmd.Env = e.workspace, append(e.environ(), "GOFLAGS=-count=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test ./... after the plan: %v\n%s", err, out)
	}
	captureWorkflow(t, e, workflows.PlanWorkflowID(id), "plan_crashes")
}

// restorePlan is the planner's hand-back for TestPlanBlockedTaskRestoresScope:
// one wave of two tasks on calcRepo, add-max first, then add-double.
const restorePlan = `{
  "tasks": [
    {"id": "add-max", "goal": "Add Max, which returns the larger of two ints",
     "scope": ["calc.go", "max.go"], "context": [{"path": "calc.go", "line": 7, "quote": "return strconv.Atoi(s[:1])"}],
     "unit_check": {"program": "go", "args": ["test", "-run", "TestMax", "./..."]}, "depends_on": [], "test_first": false, "protect": ["calc_test.go"]},
    {"id": "add-double", "goal": "Add Double, which returns twice its argument, with a test",
     "scope": ["double.go", "double_test.go"], "context": [],
     "unit_check": {"program": "go", "args": ["test", "-run", "TestDouble", "./..."]}, "depends_on": [], "test_first": false, "protect": []}
  ],
  "e2e_check": {"program": "go", "args": ["test", "./..."]},
  "interfaces": "func Max(a, b int) int; func Double(n int) int",
  "summary_en": "Add Max and Double."
}`

// TestPlanBlockedTaskRestoresScope runs a plan whose first task breaks
// calc.go, creates max.go and fails its green step three times: the task
// ends blocked with calc.go put back as it was and max.go left in place.
// The next task of the wave starts on the original calc.go (its baseline
// unit check exits 0, as its worker is told) and is done; plans show lists
// what was put back and the file the blocked task created, and nothing of
// the kept scope is left in axlrd's state dir.
func TestPlanBlockedTaskRestoresScope(t *testing.T) {
	var baselineNote atomic.Value
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		first := firstUser(req)
		tools := toolResults(req)
		switch {
		case strings.Contains(first, planBrief):
			if tools == 0 {
				return stepDone("plan-1", restorePlan)
			}
			return agenttest.Reply{Text: "Planned: two tasks in one wave."}
		case strings.HasPrefix(first, "Task add-max"):
			switch tools {
			case 0:
				return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "e1", Name: "local_edit",
					Arguments: `{"path": "calc.go", "old_text": "\treturn strconv.Atoi(s[:1])", "new_text": "\treturn strconv.Atoi(maxOf(s))"}`}}}
			case 1:
				return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write",
					Arguments: `{"path": "max.go", "mode": "create", "content": "package calc\n\n// Max returns the larger of a and b.\nfunc Max(a, b int) int { return max(a, b) }\n"}`}}}
			default:
				// Each green hand-back fails: calc.go calls a function that does not exist.
				return stepDone(fmt.Sprintf("g%d", tools), `{"summary": "Max added.", "summary_en": "Adds Max."}`)
			}
		case strings.HasPrefix(first, "Task add-double"):
			if tools == 0 {
				for _, m := range req.Messages {
					if i := strings.Index(m.Content, "when the task started: it "); i >= 0 {
						baselineNote.Store(m.Content[i:])
					}
				}
			}
			return planReply(req)
		}
		return agenttest.Reply{Text: "Done."}
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--plan", planBrief, "--detach")
	id := strings.TrimSpace(r.stdout)
	for _, step := range []string{"commands", "card"} {
		if r := e.tui(ctx, "plans", "watch", id); r.code != 3 {
			t.Fatalf("watch to the %s: exit %d\n%s%s", step, r.code, r.stdout, r.stderr)
		}
		if r := e.tui(ctx, "plans", "approve", id); r.code != 0 {
			t.Fatalf("approve the %s: exit %d %s", step, r.code, r.stderr)
		}
	}
	r = e.tui(ctx, "plans", "watch", id)
	if r.code != 1 || !strings.Contains(r.stdout, "plan "+id+" partial") {
		t.Fatalf("watch to the end: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = e.tui(ctx, "plans", "show", id, "--json")
	var rec plans.Record
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || rec.Status != plans.Partial || len(rec.Tasks) != 2 {
		t.Fatalf("plans show: %v\n%s", err, r.stdout)
	}
	add, double := rec.Tasks[0], rec.Tasks[1]
	if add.ID != "add-max" || add.Status != plans.TaskBlocked || !strings.HasPrefix(add.Reason, "green round 3 of 3: the unit check go test -run TestMax ./... exited") ||
		!slices.Equal(add.Restored, []string{"calc.go"}) || !slices.Equal(add.Created, []string{"max.go"}) || !slices.Equal(add.Changed, []string{"max.go"}) {
		t.Fatalf("the blocked task %+v", add)
	}
	if double.ID != "add-double" || double.Status != plans.TaskDone || double.Created != nil || double.Restored != nil {
		t.Fatalf("the next task %+v", double)
	}
	if got, _ := baselineNote.Load().(string); !strings.HasPrefix(got, "when the task started: it exited 0.") {
		t.Fatalf("add-double's worker was told of its baseline %q; it must run on the original calc.go", got)
	}
	if calc, err := os.ReadFile(filepath.Join(e.workspace, "calc.go")); err != nil || string(calc) != calcFiles["calc.go"] {
		t.Fatalf("calc.go after the plan (%v):\n%s", err, calc)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "max.go")); err != nil {
		t.Fatalf("max.go, which the blocked task created, is gone: %v", err)
	}
	r = e.tui(ctx, "plans", "show", id)
	for _, want := range []string{"restored for add-max, as they were when its worker started: calc.go\n", "created by add-max, left in place: max.go\n"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("plans show lacks %q: exit %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}
	if kept, err := filepath.Glob(filepath.Join(e.stateDir, "scopes", "*", "*", "*")); err != nil || len(kept) != 0 {
		t.Fatalf("kept scopes left in the state dir: %v %v", kept, err)
	}
	captureWorkflow(t, e, workflows.PlanWorkflowID(id), "plan_task_blocked")
	captureWorkflow(t, e, workflows.PlanTaskWorkflowID(id, "add-max", 0), "plan_task_restored")
}

// TestPlanInterruptedTaskRestoresScope interrupts a plan while its first
// task's worker waits for its model, after it broke calc.go and created
// max.go: once the interrupt is taken, calc.go is as it was, max.go is
// left, and the record and plans show list both for the task, pending
// again.
func TestPlanInterruptedTaskRestoresScope(t *testing.T) {
	waiting := make(chan struct{})
	var once sync.Once
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		first := firstUser(req)
		switch tools := toolResults(req); {
		case strings.Contains(first, planBrief) && tools == 0:
			return stepDone("plan-1", restorePlan)
		case strings.Contains(first, planBrief):
			return agenttest.Reply{Text: "Planned: two tasks in one wave."}
		case strings.HasPrefix(first, "Task add-max") && tools == 0:
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "e1", Name: "local_edit",
				Arguments: `{"path": "calc.go", "old_text": "\treturn strconv.Atoi(s[:1])", "new_text": "\treturn strconv.Atoi(maxOf(s))"}`}}}
		case strings.HasPrefix(first, "Task add-max") && tools == 1:
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write",
				Arguments: `{"path": "max.go", "mode": "create", "content": "package calc\n\nfunc Max(a, b int) int { return max(a, b) }\n"}`}}}
		case strings.HasPrefix(first, "Task add-max"):
			once.Do(func() { close(waiting) })
			return agenttest.Reply{Delay: 10 * time.Minute, Text: "too late"}
		}
		return agenttest.Reply{Text: "Done."}
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--plan", planBrief, "--detach")
	id := strings.TrimSpace(r.stdout)
	for _, step := range []string{"commands", "card"} {
		if r := e.tui(ctx, "plans", "watch", id); r.code != 3 {
			t.Fatalf("watch to the %s: exit %d\n%s%s", step, r.code, r.stdout, r.stderr)
		}
		if r := e.tui(ctx, "plans", "approve", id); r.code != 0 {
			t.Fatalf("approve the %s: exit %d %s", step, r.code, r.stderr)
		}
	}
	select {
	case <-waiting:
	case <-ctx.Done():
		t.Fatal("add-max's worker never waited for its model")
	}
	if err := c.InterruptPlan(ctx, id); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Plan(ctx, id)
	if err != nil || rec.Status != plans.Interrupted {
		t.Fatalf("plan %+v, %v", rec, err)
	}
	if add := rec.Tasks[0]; add.Status != plans.TaskPending || !slices.Equal(add.Restored, []string{"calc.go"}) || !slices.Equal(add.Created, []string{"max.go"}) {
		t.Fatalf("the interrupted task %+v", add)
	}
	if calc, err := os.ReadFile(filepath.Join(e.workspace, "calc.go")); err != nil || string(calc) != calcFiles["calc.go"] {
		t.Fatalf("calc.go after the interrupt (%v):\n%s", err, calc)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "max.go")); err != nil {
		t.Fatalf("max.go, which the interrupted task created, is gone: %v", err)
	}
	r = e.tui(ctx, "plans", "show", id)
	if r.code != 0 || !strings.Contains(r.stdout, "created by add-max, left in place: max.go\n") {
		t.Fatalf("plans show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
