package workflows

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/session"
)

// announceAt has hosts announce themselves at d of workflow time.
func (h *registryHarness) announceAt(d time.Duration, hosts ...HostAnnounce) {
	h.env.RegisterDelayedCallback(func() {
		for _, a := range hosts {
			h.env.SignalWorkflow(SignalHostAnnounce, a)
		}
	}, d)
}

func admission(n string) jobs.Admission {
	return jobs.Admission{Kind: jobs.Repair, Repository: "o/r", Signature: "sig" + n, Brief: "fix " + n + " " + strings.Repeat("x", len(n))}
}

// TestRegistryPlacesJobs: an admitted job goes to the live host with the
// most free slots; the live hosts' capacity bounds the active jobs; a
// host not heard from for HostLiveWindow takes no job, and with no live
// host a job runs where its client is.
func TestRegistryPlacesJobs(t *testing.T) {
	h := newRegistryHarness()
	h.announceAt(time.Second, HostAnnounce{ID: "a", Capacity: 1}, HostAnnounce{ID: "b", Capacity: 2})
	var outs [5]admitOutcome
	lim := jobs.Limits{MaxActive: 8, MaxAttempts: 2}
	for i := range 4 {
		h.env.RegisterDelayedCallback(func() { h.admitNow("req"+string(rune('1'+i)), admission(string(rune('p'+i))), lim, &outs[i]) }, time.Duration(2+i)*time.Second)
	}
	// b is heard from again, a is not: past the window only b is live.
	h.announceAt(40*time.Second, HostAnnounce{ID: "b", Capacity: 2})
	var seen []HostSeen
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryHosts)
		if err == nil {
			err = v.Get(&seen)
		}
		if err != nil {
			t.Error(err)
		}
	}, 45*time.Second)
	h.env.RegisterDelayedCallback(func() { h.admitNow("req5", admission("t"), lim, &outs[4]) }, 10*time.Minute)
	h.at = 11 * time.Minute
	h.run(t)

	for i, want := range []string{"b", "a", "b"} {
		if !outs[i].done || outs[i].rec.Host != want {
			t.Errorf("admission %d: %+v, want placed on %s", i+1, outs[i], want)
		}
	}
	var app *temporal.ApplicationError
	if !errors.As(outs[3].rejected, &app) || !strings.Contains(app.Error(), "of 3 allowed") {
		t.Errorf("the fourth job on 3 slots: %v, want refused naming the cluster's 3", outs[3].rejected)
	}
	if len(seen) != 2 || seen[0].ID != "a" || seen[1].ID != "b" || seen[1].Capacity != 2 {
		t.Errorf("hosts %+v", seen)
	}
	if !outs[4].done || outs[4].rec.Host != "" {
		t.Errorf("with no live host: %+v, want admitted for the client's host", outs[4])
	}
}

// TestRegistryPlaceUpdate: a job whose host was lost goes to another live
// host, once per request; with none live the request is refused.
func TestRegistryPlaceUpdate(t *testing.T) {
	h := newRegistryHarness()
	h.announceAt(time.Second, HostAnnounce{ID: "a", Capacity: 2}, HostAnnounce{ID: "b", Capacity: 2})
	var adm admitOutcome
	h.env.RegisterDelayedCallback(func() { h.admitNow("req1", admission("p"), jobs.Limits{}, &adm) }, 2*time.Second)
	type placed struct {
		host     string
		rejected error
	}
	var got [3]placed
	place := func(i int, req PlaceInput, at time.Duration) {
		h.env.RegisterDelayedCallback(func() {
			h.env.UpdateWorkflow(UpdatePlace, req.RequestID, &testsuite.TestUpdateCallback{
				OnReject: func(err error) { got[i].rejected = err }, OnAccept: func() {},
				OnComplete: func(v any, err error) {
					if r, ok := v.(PlaceResult); ok && err == nil {
						got[i].host = r.Host
					}
				},
			}, req)
		}, at)
	}
	h.env.RegisterDelayedCallback(func() {
		place(0, PlaceInput{RequestID: "move-1", Job: adm.rec.ID, Lost: adm.rec.Host}, 0)
		place(1, PlaceInput{RequestID: "move-1", Job: adm.rec.ID, Lost: adm.rec.Host}, time.Second)
		place(2, PlaceInput{RequestID: "move-2", Job: adm.rec.ID, Lost: "a"}, 5*time.Minute)
	}, 3*time.Second)
	h.at = 10 * time.Minute
	h.run(t)
	if adm.rec.Host == "" {
		t.Fatalf("not placed: %+v", adm)
	}
	other := map[string]string{"a": "b", "b": "a"}[adm.rec.Host]
	if got[0].host != other || got[1].host != other {
		t.Errorf("placed again on %+v, want %s twice (one request)", got[:2], other)
	}
	if got[2].rejected == nil || !strings.Contains(got[2].rejected.Error(), "no live host") {
		t.Errorf("with no host live: %+v", got[2])
	}
}

// TestRegistryMovesToClusterQueue: a registry an older axlr started on a
// host's queue continues as new on the cluster queue at its next task.
func TestRegistryMovesToClusterQueue(t *testing.T) {
	h := newRegistryHarness()
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: HostTaskQueue("old")})
	h.announceAt(time.Second, HostAnnounce{ID: "a", Capacity: 2})
	h.env.ExecuteWorkflow(RegistryWorkflow, RegistryInput{})
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) || can.TaskQueueName != ClusterTaskQueue {
		t.Fatalf("registry on a host queue ended with %v, want continued as new on %s", err, ClusterTaskQueue)
	}
}

// fakeCluster answers the cluster's activities.
type fakeCluster struct {
	mu     sync.Mutex
	seen   time.Time
	to     string
	asked  int
	places []PlaceInput
}

func (c *fakeCluster) HostAlive(context.Context, HostAliveInput) (HostAliveResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	return HostAliveResult{Seen: c.seen}, nil
}

func (c *fakeCluster) Place(_ context.Context, in PlaceInput) (PlaceResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.places = append(c.places, in)
	return PlaceResult{Host: c.to}, nil
}

// placedJob runs a job started on the cluster queue for host a, whose
// first Prepare finds no worker on a's queue.
func placedJob(t *testing.T, cl *fakeCluster) (*jobHarness, *[]string) {
	h := newJobHarness(t, &scripted{})
	var mu sync.Mutex
	var queues []string
	h.forge.prepare = func(ctx context.Context, in PrepareInput) (PrepareResult, error) {
		mu.Lock()
		defer mu.Unlock()
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		if len(queues) == 1 {
			return PrepareResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		}
		return PrepareResult{Clone: "/jobs/" + in.Job, Base: "main", Head: "base0"}, nil
	}
	h.env.RegisterActivityWithOptions(cl, activity.RegisterOptions{Name: "cluster."})
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: ClusterTaskQueue})
	h.record.Host = "a"
	h.env.ExecuteWorkflow(JobWorkflow, JobInput{Record: h.record, SessionID: sessionID, Host: "a", Settings: JobSettings{HostLost: 20 * time.Second}})
	return h, &queues
}

// TestJobMovesWhenItsHostIsLost: the host's queue takes no task and the
// host was never seen: the job asks the registry for another host and
// continues as new there, in a new session, saying where from and why,
// under the next recovery's keys.
func TestJobMovesWhenItsHostIsLost(t *testing.T) {
	cl := &fakeCluster{to: "b"}
	h, queues := placedJob(t, cl)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the job ended with %v, want continued as new", err)
	}
	var next JobInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Host != "b" || next.Record.Host != "b" || next.Record.Recoveries != 1 || len(next.Record.Moves) != 1 ||
		!strings.HasPrefix(next.Recovered, "moved from host a to host b at preparing: forge.Prepare found no worker on axlr-host-a; the host was never seen") {
		t.Errorf("next run: host %s, record %+v, recovered %q", next.Host, next.Record, next.Recovered)
	}
	if next.SessionID == sessionID || !session.ValidID(next.SessionID) || next.SessionID != movedSession(h.record.ID, 1) {
		t.Errorf("the moved job's session %q: want a new valid id", next.SessionID)
	}
	if len(cl.places) != 1 || cl.places[0].Lost != "a" || cl.places[0].Job != h.record.ID {
		t.Errorf("place requests %+v", cl.places)
	}
	if got := *queues; len(got) != 1 || got[0] != HostTaskQueue("a") {
		t.Errorf("Prepare ran on %v, want once on a's queue", got)
	}
	last := h.reports[len(h.reports)-1]
	if last.Host != "b" || len(last.Moves) != 1 {
		t.Errorf("the registry was last told %+v", last)
	}
}

// TestJobWaitsForItsHost: a host seen within the bound may be
// restarting: the activity is scheduled on its queue again and the job
// stays.
func TestJobWaitsForItsHost(t *testing.T) {
	cl := &fakeCluster{to: "b", seen: time.Now()}
	h, queues := placedJob(t, cl)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); errors.As(err, &can) {
		t.Fatalf("the job moved: %v", err)
	}
	if got := *queues; len(got) != 2 || got[1] != HostTaskQueue("a") {
		t.Errorf("Prepare ran on %v, want twice on a's queue", got)
	}
	if cl.asked != 1 || len(cl.places) != 0 {
		t.Errorf("asked about the host %d times, placed %d times; want 1 and 0", cl.asked, len(cl.places))
	}
}

// TestPlanWorksOnItsHost: a plan started on the cluster queue runs every
// activity, local ones too, and every task worker on the queue of the
// host it was started on, and says so in its record. A worker lost there
// is waited for on that queue: the plan never asks where its host is, nor
// moves.
func TestPlanWorksOnItsHost(t *testing.T) {
	model := append(append([]reply{{calls: []scriptCall{{tool: "local_read", args: map[string]any{"path": "calc/calc.go"}}}}},
		planHandBack()...), planHandBack()...)
	h := newPlanHarness(t, model, overlapping(), threeTasks())
	h.verifier.lose = true
	cl := &fakeCluster{}
	h.env.RegisterActivityWithOptions(cl, activity.RegisterOptions{Name: "cluster."})
	var mu sync.Mutex
	queues := map[string]bool{}
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		queues[info.TaskQueue] = true
	})
	locals := 0
	h.env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { locals++ })
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: ClusterTaskQueue})
	commands := h.decideAt(time.Minute, h.decision("d-1", PlanDecideCommands, PlanApprove, ""))
	approve := h.decideAt(2*time.Minute, h.decision("d-2", PlanDecidePlan, PlanApprove, ""))
	rec := h.run()

	commands.mustAccept(t, "approve the commands")
	approve.mustAccept(t, "approve the plan")
	if rec.Status != plans.Done || rec.Host != "test" {
		t.Fatalf("record: status %s host %q", rec.Status, rec.Host)
	}
	if len(queues) != 1 || !queues[HostTaskQueue("test")] || locals != 0 {
		t.Errorf("activities ran on %v and %d as local activities; want all on %s", queues, locals, HostTaskQueue("test"))
	}
	if got := strings.Join(h.workers.queues, " "); got != strings.TrimSpace(strings.Repeat(HostTaskQueue("test")+" ", 3)) {
		t.Errorf("the task workers ran on %s", got)
	}
	if h.verifier.lose || len(h.verifier.inputs) != 2 || cl.asked != 0 || len(cl.places) != 0 {
		t.Errorf("verify calls %d after the lost one; asked about the host %d times, placed %d times; want 2, 0, 0",
			len(h.verifier.inputs), cl.asked, len(cl.places))
	}
}
