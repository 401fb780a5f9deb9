package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// TestPlanWaitsForItsHost runs the two-wave plan on a cluster of two
// hosts. The plan is started on host z, whose directory it works in;
// z is killed with SIGKILL at the plan's card. Host b still answers for
// the plan and takes its approval, since the plan's own code runs on the
// cluster queue; its work waits for z. Started again, z runs the waves and
// the plan ends done, every activity and task worker of it having run on
// z.
func TestPlanWaitsForItsHost(t *testing.T) {
	model := agenttest.NewServer(t, planReply)
	e := newEnv(t, model.URL)
	e.onCluster(t)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	e.vars["AXLR_HOST_ID"] = "host-z"
	z := e.spawnReady(t)
	b := e.host("host-b")
	b.spawnReady(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	waitHosts(ctx, t, e, "host-z", "host-b")

	r := e.tui(ctx, "--plan", planBrief, "--detach")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !plans.ValidID(id) {
		t.Fatalf("--plan --detach: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "plans", "watch", id); r.code != 3 {
		t.Fatalf("watch to the commands: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "plans", "approve", id); r.code != 0 {
		t.Fatalf("approve the commands: exit %d %s", r.code, r.stderr)
	}
	if r := e.tui(ctx, "plans", "watch", id); r.code != 3 {
		t.Fatalf("watch to the card: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	z.kill()
	t.Log("killed host-z with SIGKILL at the plan's card")

	show := func(who *env) plans.Record {
		t.Helper()
		r := who.tui(ctx, "plans", "show", id, "--json")
		var rec plans.Record
		if err := json.Unmarshal([]byte(r.stdout), &rec); r.code != 0 || err != nil {
			t.Fatalf("plans show from %s: exit %d %v\n%s%s", who.vars["AXLR_HOST_ID"], r.code, err, r.stdout, r.stderr)
		}
		return rec
	}
	if rec := show(b); rec.Host != "host-z" || rec.Pending == nil || rec.Pending.Kind != plans.PendingApproval {
		t.Fatalf("the plan from host-b: host %q pending %+v", rec.Host, rec.Pending)
	}
	if r := b.tui(ctx, "plans", "approve", id); r.code != 0 {
		t.Fatalf("approve the plan from host-b: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The approval is taken; the plan's next activity waits for host-z.
	time.Sleep(3 * time.Second)
	if rec := show(b); (rec.Status != plans.Ready && rec.Status != plans.Running) || rec.Pending != nil || rec.Tasks[0].Status == plans.TaskDone {
		t.Fatalf("the approved plan with host-z down: %s, pending %+v, tasks %+v", rec.Status, rec.Pending, rec.Tasks)
	}

	e.spawnReady(t)
	t.Log("started host-z again")
	r = e.tui(ctx, "plans", "watch", id)
	if r.code != 0 || !strings.Contains(r.stdout, "done: 2/2 tasks") {
		t.Fatalf("watch to the end on host-z: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir, cmd.Env = e.workspace, append(e.environ(), "GOFLAGS=-count=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test ./... after the plan: %v\n%s", err, out)
	}

	tasks, acts := runHosts(ctx, t, e, workflows.PlanWorkflowID(id), "")
	if !slices.Contains(tasks, "host-b") {
		t.Errorf("host-b ran none of the plan's workflow tasks: %v", tasks)
	}
	if i := slices.IndexFunc(acts, func(h string) bool { return h != "host-z" }); i >= 0 || len(acts) == 0 {
		t.Errorf("the plan's activities ran on %v, want all on host-z", acts)
	}
	for _, task := range []string{"fix-parse", "add-double"} {
		tasks, acts := runHosts(ctx, t, e, workflows.PlanTaskWorkflowID(id, task, 0), "")
		if slices.ContainsFunc(append(tasks, acts...), func(h string) bool { return h != "host-z" }) {
			t.Errorf("task %s's worker ran on %v and its activities on %v, want all on host-z", task, tasks, acts)
		}
	}
	captureWorkflow(t, e, workflows.PlanWorkflowID(id), "plan_placed")
}
