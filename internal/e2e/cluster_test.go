package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cluster"
	"github.com/underpass-ai/axlr/internal/database"
	"github.com/underpass-ai/axlr/internal/database/dbtest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// The cluster tests share one Temporal server per package, built from the
// pinned module and persisting to the package's PostgreSQL; each test has
// a namespace of its own.
var sharedTemporal struct {
	once sync.Once
	t    *cluster.Temporal
	err  error
}

// onCluster points e at the shared Temporal server, in a new namespace
// named for the test, with the cluster's database: every axlrd of e and
// its hosts runs with --temporal-address, as hosts of a real cluster do.
func (e *env) onCluster(t testing.TB) *cluster.Temporal {
	t.Helper()
	sharedTemporal.once.Do(func() {
		dir, err := os.MkdirTemp("", "axlr-temporal-")
		if err != nil {
			sharedTemporal.err = err
			return
		}
		sharedTemporal.t, sharedTemporal.err = cluster.StartTemporal(context.Background(),
			cluster.TemporalOptions{Postgres: dbtest.Server(t), Dir: dir})
	})
	if sharedTemporal.err != nil {
		t.Fatal(sharedTemporal.err)
	}
	tp := sharedTemporal.t
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if err := tp.RegisterNamespace(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(tp.Address, ":")
	fmt.Sscan(port, &e.port)
	e.vars["AXLR_NAMESPACE"] = ns
	e.vars["AXLR_TEMPORAL_ADDRESS"] = tp.Address
	e.vars["AXLR_DATABASE"] = dbtest.URL(t)
	return tp
}

// stopTemporal stops the shared server, if a test started it.
func stopTemporal() {
	if sharedTemporal.t != nil {
		_ = sharedTemporal.t.Stop()
	}
}

// host is another host of e's cluster: its own state dir, jobs directory
// and host id, e's settings, model, forge and Temporal frontend.
func (e *env) host(id string) *env {
	e.t.Helper()
	h := *e
	h.dir = filepath.Join(e.dir, "hosts", id)
	h.stateDir = filepath.Join(h.dir, "state")
	h.vars = maps.Clone(e.vars)
	h.vars["AXLR_HOST_ID"] = id
	h.vars["XDG_STATE_HOME"] = filepath.Join(h.dir, "xdgstate")
	h.vars["XDG_DATA_HOME"] = filepath.Join(h.dir, "data")
	return &h
}

// waitHosts waits until the registry has heard from every host named.
func waitHosts(ctx context.Context, t testing.TB, e *env, ids ...string) {
	t.Helper()
	c := dialSDK(t, e)
	for {
		var seen []workflows.HostSeen
		v, err := c.QueryWorkflow(ctx, workflows.RegistryWorkflowID, "", workflows.QueryHosts)
		if err == nil && v.Get(&seen) == nil {
			n := 0
			for _, h := range seen {
				for _, id := range ids {
					if h.ID == id && time.Since(h.Seen) < workflows.HostLiveWindow {
						n++
					}
				}
			}
			if n == len(ids) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("hosts %v never all announced themselves (last %+v, %v)", ids, seen, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestJobMovesWhenItsHostIsLost runs three hosts on one Temporal
// namespace and one PostgreSQL database (MADE and memory). A repair
// admitted on host z is placed on host b, the freest; b is killed with
// SIGKILL for good while the model works on the diagnose step. Within
// cluster.host_lost_seconds the job moves to host c: a fresh clone, a new
// session saying why, the ceremony taken over where MADE recorded it. It
// ends merged, with one pull request and one merge, the steps b completed
// not completed again, and its record saying it moved from b to c.
func TestJobMovesWhenItsHostIsLost(t *testing.T) {
	e, rec := movingRepair(t, false)
	ctx := t.Context()
	// The run that moved (placed on b, then continued as new) and the one
	// that finished on c; the registry with its hosts.
	d, err := dialSDK(t, e).DescribeWorkflowExecution(ctx, workflows.JobWorkflowID(rec.ID), "")
	if err != nil {
		t.Fatal(err)
	}
	captureRun(t, e, workflows.JobWorkflowID(rec.ID), d.GetWorkflowExecutionInfo().GetFirstRunId(), "job_placed_moved")
	captureWorkflow(t, e, workflows.JobWorkflowID(rec.ID), "job_placed_after_move")
	captureWorkflow(t, e, workflows.RegistryWorkflowID, "job_registry_hosts")
}

// TestJobMovesAfterItsPush kills the job's host for good between its push
// and its pull request's opening (the forge refusing the first opens): on
// the next host the fresh clone checks out the pushed branch, the pull
// request is opened once, and the job ends merged once.
func TestJobMovesAfterItsPush(t *testing.T) {
	movingRepair(t, true)
}

// movingRepair runs a repair on three hosts and kills the one it was
// placed on, during the diagnose step's model request or after its push,
// and checks how the job ended on the next host.
func movingRepair(t *testing.T, afterPush bool, during ...func(*cluster.Temporal)) (*env, jobs.Record) {
	t.Helper()
	var once sync.Once
	inDiagnose := make(chan struct{})
	var toldMoved atomic.Bool // the new session's prompt says the job moved
	gh, repo, e := repairEnvWith(t, 1, func(req agenttest.Request) agenttest.Reply {
		if strings.Contains(firstUser(req), "[AXLR] AXLR moved this job from host host-b to host host-c at ") {
			toldMoved.Store(true)
		}
		r := repairReply(req)
		if len(r.ToolCalls) > 0 && r.ToolCalls[0].ID == "d1" && !afterPush { // the diagnose step's answer
			first := false
			once.Do(func() { first = true; close(inDiagnose) })
			if first {
				time.Sleep(3 * time.Second) // the host dies while this request is in flight
			}
		}
		return r
	})
	tp := e.onCluster(t)
	dbURL := e.vars["AXLR_DATABASE"]
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "cluster": {"host_lost_seconds": 5}}`)
	e.vars["AXLR_HOST_ID"] = "host-z"
	e.spawnReady(t)
	b := e.host("host-b").spawnReady(t)
	e.host("host-c").spawnReady(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	waitHosts(ctx, t, e, "host-z", "host-b", "host-c")

	c := dialAxlrd(t, e)
	rec := admitRepair(ctx, t, c)
	if rec.Host != "host-b" {
		t.Fatalf("the job was placed on %q, want host-b (the freest, first by id)", rec.Host)
	}
	sid, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	in := workflows.JobInput{Record: rec, Host: rec.Host, SessionID: sid, Model: "m", Settings: workflows.JobSettings{
		Remote: repo.Path(), Directory: e.dir + "/repairs", Watch: 2 * time.Minute, Poll: time.Second, HostLost: 5 * time.Second}}
	if err := c.StartJob(ctx, in); err != nil {
		t.Fatal(err)
	}
	waitJob(ctx, t, c, rec.ID, jobs.AwaitingApproval)
	if afterPush {
		// The branch is pushed, then the forge refuses to open the pull
		// request for a while: host-b dies in between.
		gh.Fail("POST /repos/underpass-ai/calc/pulls", 502, 4)
	}
	if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingCheck, Approve: true}); err != nil {
		t.Fatal(err)
	}
	if afterPush {
		waitBranch(ctx, t, repo, "repair/"+rec.ID)
	} else {
		select {
		case <-inDiagnose:
		case <-ctx.Done():
			t.Fatal("the model never reached the diagnose step")
		}
	}
	for _, f := range during {
		f(tp)
	}
	lost := time.Now()
	b.kill()
	t.Logf("killed host-b for good (after its push: %v)", afterPush)

	done := decideUntilDone(ctx, t, c, rec.ID)
	t.Logf("the job moved and ended %s %.1f s after its host was killed; moves: %q", done.Status, time.Since(lost).Seconds(), done.Moves)
	if done.Status != jobs.Completed || done.Host != "host-c" || len(done.Moves) != 1 ||
		!strings.HasPrefix(done.Moves[0], "moved from host host-b to host host-c") {
		t.Fatalf("the job ended %+v", done)
	}
	if !afterPush && !toldMoved.Load() { // after the push, no model step is left
		t.Error("the moved job's session was not told that AXLR moved it")
	}
	calls := gh.Calls()
	if calls.PullRequestsOpened != 1 || calls.Merges != 1 || done.MergeSHA == "" {
		t.Fatalf("forge calls %+v", calls)
	}
	if !strings.HasPrefix(done.Clone, filepath.Join(e.dir, "hosts", "host-c")) {
		t.Errorf("the moved job's clone %s is not host-c's own", done.Clone)
	}
	if prs := repo.PullRequests(); len(prs) != 1 {
		t.Fatalf("%d pull requests", len(prs))
	}
	// MADE (in PostgreSQL) completed each step once: the steps host-b
	// completed were not run again.
	steps := madeSteps(ctx, t, dbURL, done.Instance)
	again := []string{"reproduce"}
	if afterPush {
		again = append(again, "diagnose", "repair")
	}
	for _, id := range again {
		if s := steps[id]; s.Status != made.StepCompleted || s.Attempt != 1 {
			t.Errorf("%s: %+v, want completed at its first attempt", id, s)
		}
	}
	for _, id := range []string{"diagnose", "repair", "propose", "merge"} {
		if s, ok := steps[id]; !ok || s.Status != made.StepCompleted {
			t.Errorf("%s: %+v", id, s)
		}
	}
	return e, rec
}

// spawnReady starts axlrd on the cluster, trying again while the test's
// new namespace has not reached every service of the server.
func (e *env) spawnReady(t testing.TB) *process {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		p, err := e.trySpawn()
		if err == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestJobThroughTemporalKill kills the Temporal server with SIGKILL, and
// starts it again, while a repair runs on the cluster, then kills the
// job's host for good: the job still moves and ends merged once.
func TestJobThroughTemporalKill(t *testing.T) {
	movingRepair(t, false, func(tp *cluster.Temporal) {
		if err := tp.Kill(); err != nil {
			t.Fatal(err)
		}
		t.Log("killed the Temporal server with SIGKILL")
		if err := tp.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// decideUntilDone approves what the job waits for until it ends.
func decideUntilDone(ctx context.Context, t *testing.T, c *client.Client, id string) jobs.Record {
	t.Helper()
	for {
		r := waitJob(ctx, t, c, id, jobs.AwaitingApproval, jobs.AwaitingMerge, jobs.Completed)
		if r.Status == jobs.Completed {
			return r
		}
		if r.Pending == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: id, Kind: r.Pending.Kind, Approve: true}); err != nil {
			t.Logf("decide %s: %v", r.Pending.Kind, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// madeSteps reads an instance's steps from the cluster's MADE.
func madeSteps(ctx context.Context, t *testing.T, url, instance string) map[string]made.Step {
	t.Helper()
	db, err := database.Open(ctx, url, database.SchemaMade)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eng, err := embedded.OpenDB(ctx, db, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := eng.Get(ctx, instance)
	if err != nil {
		t.Fatalf("instance %s: %v", instance, err)
	}
	out := map[string]made.Step{}
	for _, s := range in.Steps {
		out[s.StepID] = s
	}
	return out
}

// TestSessionStaysOnItsHost: a session runs on its host's queue; another
// host of the cluster killed with SIGKILL in the middle of its turn
// changes nothing for it.
func TestSessionStaysOnItsHost(t *testing.T) {
	killed := make(chan struct{})
	var b *process
	var once sync.Once
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		once.Do(func() { b.kill(); close(killed) }) // host-b dies while the turn waits for the model
		return agenttest.Reply{Text: "Done on host-z."}
	})
	e := newEnv(t, model.URL)
	e.onCluster(t)
	e.writeSettings(`{"model": "m"}`)
	e.vars["AXLR_HOST_ID"] = "host-z"
	e.spawnReady(t)
	b = e.host("host-b").spawnReady(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitHosts(ctx, t, e, "host-z", "host-b")
	r := e.tui(ctx, "--exec", "say where you run", "--model", "m")
	select {
	case <-killed:
	default:
		t.Fatalf("host-b was not killed during the turn: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "Done on host-z.") {
		t.Fatalf("the session's turn with host-b killed: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
