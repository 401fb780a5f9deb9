package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// killSeed is the seed of TestJobsThroughRandomKills' kill times: set it to
// a failed run's seed (the test logs it) to kill at the same times again.
const killSeed = "AXLR_E2E_KILL_SEED"

// randomKiller kills axlrd with SIGKILL and starts it again at random
// times, one to three seconds apart, at most maxKills times.
type randomKiller struct {
	t     *testing.T
	e     *env
	d     *process
	rng   *rand.Rand
	next  time.Time
	kills int
}

// maxKills bounds a randomKiller's kills, so that a run always ends.
const maxKills = 12

// newRandomKiller starts axlrd, and the kill times from $AXLR_E2E_KILL_SEED
// or a new seed, which it logs.
func newRandomKiller(t *testing.T, e *env) *randomKiller {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(killSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", killSeed, s, err)
		}
	}
	t.Logf("kill times from seed %d (%s=%d repeats them)", seed, killSeed, seed)
	k := &randomKiller{t: t, e: e, d: e.spawn(), rng: rand.New(rand.NewPCG(seed, 0))}
	k.schedule()
	return k
}

func (k *randomKiller) schedule() {
	k.next = time.Now().Add(time.Second + time.Duration(k.rng.Int64N(int64(2*time.Second))))
}

// maybe kills axlrd and starts it again when its time has come.
func (k *randomKiller) maybe() {
	k.t.Helper()
	if k.kills >= maxKills || time.Now().Before(k.next) {
		return
	}
	k.d.kill()
	k.kills++
	k.d = k.e.spawn()
	k.schedule()
}

// TestJobsThroughRandomKills kills axlrd with SIGKILL at random times
// (randomKiller) while a repair and two improvements go from
// their admission through their check approvals to the merge queue, which
// lands them on a base under strict protection. The person acts only on
// what the records say, so an approval or a queueing whose answer a kill
// lost is found done, not asked again. In the end each job has one pull
// request and one merge, in the order the queue took them, whatever the
// kills hit: a model request, a check, a push, a forge call, an Update.
func TestJobsThroughRandomKills(t *testing.T) {
	// A model that takes its time, so that kills land in its requests too.
	gh, repo, e := queueEnvWith(t, 2, func(req agenttest.Request) agenttest.Reply {
		r := queueReply(req)
		r.Delay = 300 * time.Millisecond
		return r
	})
	k := newRandomKiller(t, e)
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	var ids []string
	for _, start := range [][]string{{"--repair", "TestParse fails on empty input"}, {"--improve", "add Triple to calc"}, {"--improve", "add Quad to calc"}} {
		r := e.tui(ctx, append(start, "--detach")...)
		id := strings.TrimSpace(r.stdout)
		if r.code != 0 || id == "" {
			t.Fatalf("%v: exit %d %s", start, r.code, r.stderr)
		}
		ids = append(ids, id)
	}

	// call bounds each of the person's reads and decisions, so that one
	// sent to an axlrd being killed gives up and is asked again later.
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 5*time.Second) }
	seq := map[string]int{} // the queue's sequence number of each job's entry
	seen := func(v workflows.QueueView) {
		for _, en := range v.Entries {
			if slices.Contains(ids, en.Job) {
				seq[en.Job] = en.Seq
			}
		}
	}
	for {
		if ctx.Err() != nil {
			t.Fatalf("the jobs did not end after %d kills: %v", k.kills, ctx.Err())
		}
		k.maybe()
		qctx, qcancel := call()
		if views, err := c.Queues(qctx); err == nil {
			for _, v := range views {
				seen(v)
			}
		}
		qcancel()
		done := 0
		for _, id := range ids {
			cctx, ccancel := call()
			rec, err := c.JobNow(cctx, id)
			switch {
			case err != nil:
			case rec.Status == jobs.Completed:
				done++
			case rec.Terminal():
				ccancel()
				t.Fatalf("job %s ended %s after %d kills: %s", id, rec.Status, k.kills, rec.Reason)
			case rec.Status == jobs.AwaitingApproval:
				_, _ = c.DecideJob(cctx, workflows.JobDecision{Job: id, Kind: jobs.PendingCheck, Approve: true})
			case rec.Status == jobs.AwaitingMerge:
				if _, queued := seq[id]; !queued {
					if v, err := c.QueueJob(cctx, id); err == nil {
						seen(v)
					}
				}
			}
			ccancel()
		}
		if done == len(ids) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("the %d jobs merged through %d kills", len(ids), k.kills)
	if len(seq) != len(ids) {
		t.Fatalf("the queue's entries seen %v, want every job of %v", seq, ids)
	}
	order := slices.Clone(ids)
	slices.SortFunc(order, func(a, b string) int { return seq[a] - seq[b] })
	mergedInOrder(ctx, t, c, repo, order)
	calls := gh.Calls()
	if calls.PullRequestsOpened != len(ids) || calls.Merges != len(ids) || len(repo.PullRequests()) != len(ids) {
		t.Fatalf("forge calls %+v, %d pull requests", calls, len(repo.PullRequests()))
	}
}

// TestPlanThroughRandomKills kills axlrd with SIGKILL at random times
// (randomKiller) while a two-wave plan goes from its decomposition through
// its commands, its card, its task workers and their syncs, the person
// approving what the record says waits. The plan ends done, each task's
// work made once, and the module's tests pass.
func TestPlanThroughRandomKills(t *testing.T) {
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		r := planReply(req)
		r.Delay = 300 * time.Millisecond
		return r
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	k := newRandomKiller(t, e)
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--plan", planBrief, "--detach")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("--plan: exit %d %s", r.code, r.stderr)
	}
	for {
		if ctx.Err() != nil {
			t.Fatalf("the plan did not end after %d kills: %v", k.kills, ctx.Err())
		}
		k.maybe()
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		rec, err := c.Plan(cctx, id)
		switch {
		case err != nil:
		case rec.Status == plans.Done:
			ccancel()
			t.Logf("plan %s done through %d kills", id, k.kills)
			calc, err := os.ReadFile(filepath.Join(e.workspace, "calc.go"))
			if n := strings.Count(string(calc), `if s == ""`); err != nil || n != 1 {
				t.Fatalf("calc.go holds the fix %d times:\n%s", n, calc)
			}
			if out, err := testCalc(e); err != nil {
				t.Fatalf("go test ./... after the plan: %v\n%s", err, out)
			}
			return
		case rec.Status.Terminal() || rec.Status == plans.Interrupted:
			ccancel()
			t.Fatalf("plan %s ended %s after %d kills: %s", id, rec.Status, k.kills, rec.Reason)
		case rec.Pending != nil && rec.Pending.Kind == plans.PendingCommand:
			_, _ = c.DecidePlan(cctx, workflows.PlanDecision{Plan: id, Kind: workflows.PlanDecideCommands, Decision: workflows.PlanApprove})
		case rec.Pending != nil && rec.Pending.Kind == plans.PendingApproval:
			_, _ = c.DecidePlan(cctx, workflows.PlanDecision{Plan: id, Kind: workflows.PlanDecidePlan, Decision: workflows.PlanApprove})
		}
		ccancel()
		time.Sleep(300 * time.Millisecond)
	}
}
