package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/workflows"
)

// handBacks counts the model's hand-backs of each step of a repair, and
// can hold the model's answer in diagnose until the test ends: the job is
// interrupted while the model works the step.
type handBacks struct {
	mu     sync.Mutex
	steps  map[string]int
	hold   bool
	inStep chan struct{}
	never  chan struct{}
}

func newHandBacks(t *testing.T, holdDiagnose bool) *handBacks {
	h := &handBacks{steps: map[string]int{}, hold: holdDiagnose, inStep: make(chan struct{}), never: make(chan struct{})}
	t.Cleanup(func() { close(h.never) })
	return h
}

func (h *handBacks) reply(req agenttest.Request) agenttest.Reply {
	r := repairReply(req)
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "axlr_step_done" {
		return r
	}
	step := map[string]string{"r1": "reproduce", "d1": "diagnose", "p1": "repair"}[r.ToolCalls[0].ID]
	h.mu.Lock()
	defer h.mu.Unlock()
	if step == "diagnose" && h.hold {
		// The first diagnose is never answered: the job is interrupted
		// while it waits, and its recovery asks again.
		h.hold = false
		close(h.inStep)
		return agenttest.Reply{Wait: h.never, Text: "never sent"}
	}
	h.steps[step]++
	return r
}

func (h *handBacks) count(step string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.steps[step]
}

// interrupt cancels a job's workflow, as Ctrl+C on its watch does, and
// waits for its record to say interrupted.
func interrupt(ctx context.Context, t *testing.T, c *client.Client, id string) jobs.Record {
	t.Helper()
	if err := c.InterruptJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := c.Job(ctx, id)
		if err == nil && rec.Status == jobs.Interrupted {
			return rec
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s never interrupted: %+v %v", id, rec, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recoverToMerge recovers an interrupted job and follows it to its merge
// decision, which it approves; the check command the person approved
// before the interruption is never asked for again. It returns the
// completed record.
func recoverToMerge(ctx context.Context, t *testing.T, c *client.Client, id string) jobs.Record {
	t.Helper()
	if _, err := c.RecoverJob(ctx, id, "m"); err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := c.JobNow(ctx, id)
		switch {
		case err != nil:
		case rec.Recoveries == 1 && rec.Status == jobs.AwaitingApproval:
			t.Fatalf("the recovered job asks again for its check command: %+v", rec.Pending)
		case rec.Recoveries == 1 && rec.Status == jobs.AwaitingMerge:
			if _, err := c.DecideJob(ctx, decision(rec, jobs.PendingMerge)); err != nil {
				t.Fatal(err)
			}
			return waitJob(ctx, t, c, id, jobs.Completed)
		case rec.Recoveries == 1 && rec.Terminal():
			t.Fatalf("the recovered job ended %s: %s", rec.Status, rec.Reason)
		}
		if ctx.Err() != nil {
			t.Fatalf("the recovered job never reached its merge decision: %v", ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// decision is the person's approval of what a record waits for.
func decision(rec jobs.Record, kind jobs.PendingKind) workflows.JobDecision {
	return workflows.JobDecision{Job: rec.ID, Kind: kind, Approve: true}
}

// startRepair admits the person's repair and starts it with the settings
// of jobSettings, approving its check command.
func startRepair(ctx context.Context, t *testing.T, c *client.Client) jobs.Record {
	t.Helper()
	rec, err := c.LaunchJob(ctx, workflows.LaunchRequest{Kind: jobs.Repair, Brief: "TestParse fails on empty input", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	waiting := waitJob(ctx, t, c, rec.ID, jobs.AwaitingApproval)
	if _, err := c.DecideJob(ctx, decision(waiting, jobs.PendingCheck)); err != nil {
		t.Fatal(err)
	}
	return rec
}

// recovery is a repair's world for an interruption test: the GitHub fake,
// the scripted model counting hand-backs, axlrd in this process and a
// client of it.
type recovery struct {
	t    *testing.T
	h    *handBacks
	gh   *githubtest.Server
	repo *githubtest.Repository
	e    *env
	d    *inProcess
	c    *client.Client
}

// newRecovery starts the world with checks that register after afterReads
// reads; holdDiagnose holds the model's first diagnose.
func newRecovery(t *testing.T, holdDiagnose bool, afterReads int) *recovery {
	t.Helper()
	w := &recovery{t: t, h: newHandBacks(t, holdDiagnose)}
	w.gh, w.repo, w.e = repairEnvWith(t, afterReads, w.h.reply)
	jobSettings(w.e, w.gh.URL, w.repo.Path())
	w.d = w.e.start()
	w.c = dialAxlrd(t, w.e)
	return w
}

// interruptAt interrupts the job and checks the step it stood at.
func (w *recovery) interruptAt(ctx context.Context, id, step string) jobs.Record {
	w.t.Helper()
	before := interrupt(ctx, w.t, w.c, id)
	if before.Step != step {
		w.t.Fatalf("interrupted at %q, want %s", before.Step, step)
	}
	return before
}

// recoveredOnce checks what a recovery must leave: the job completed on
// the instance it was interrupted in, which MADE holds COMPLETED with each
// step completed in the definition's order; reproduce handed back once;
// one pull request, one merge.
func (w *recovery) recoveredOnce(before, done jobs.Record, at string) {
	t := w.t
	t.Helper()
	captureWorkflow(t, w.e, workflows.JobWorkflowID(done.ID), "job_resumed_"+at)
	if done.Instance != before.Instance || done.MergeSHA == "" || !strings.Contains(done.Recovery, "continued instance "+before.Instance+" at "+at) {
		t.Fatalf("recovered record: instance %s (interrupted in %s), merge %q, recovery %q", done.Instance, before.Instance, done.MergeSHA, done.Recovery)
	}
	if n := w.h.count("reproduce"); n != 1 {
		t.Fatalf("reproduce handed back %d times", n)
	}
	if calls := w.gh.Calls(); calls.PullRequestsOpened != 1 || calls.Merges != 1 {
		t.Fatalf("forge calls %+v", calls)
	}
	w.d.stop()
	inst := madeInstance(t, w.e, before.Instance)
	var order []string
	for _, s := range inst.Steps {
		order = append(order, s.StepID)
		if s.Status != made.StepCompleted {
			t.Errorf("MADE step %s is %s", s.StepID, s.Status)
		}
	}
	if got := strings.Join(order, " "); got != "reproduce diagnose repair propose watch decide merge" || inst.CurrentState != "COMPLETED" {
		t.Fatalf("MADE instance %s: steps %s", inst.CurrentState, got)
	}
}

// TestRecoverDuringDiagnose interrupts a repair while the model works its
// diagnose step: the recovery goes on in the same instance at diagnose,
// reproduce neither runs nor asks for its command again.
func TestRecoverDuringDiagnose(t *testing.T) {
	w := newRecovery(t, true, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	rec := startRepair(ctx, t, w.c)
	select {
	case <-w.h.inStep:
	case <-ctx.Done():
		t.Fatal("the model never worked diagnose")
	}
	before := w.interruptAt(ctx, rec.ID, "diagnose")
	done := recoverToMerge(ctx, t, w.c, rec.ID)
	if n := w.h.count("diagnose"); n != 1 {
		t.Fatalf("diagnose handed back %d times after the recovery", n)
	}
	w.recoveredOnce(before, done, "diagnose")
}

// TestRecoverAfterThePush interrupts a repair whose branch is pushed while
// the forge refuses to open its pull request: the recovery goes on in
// propose, finds its commit made and opens the one pull request.
func TestRecoverAfterThePush(t *testing.T) {
	w := newRecovery(t, false, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	w.gh.Fail("POST /repos/underpass-ai/calc/pulls", 502, 4)
	rec := startRepair(ctx, t, w.c)
	waitBranch(ctx, t, w.repo, "repair/"+rec.ID)
	before := w.interruptAt(ctx, rec.ID, "propose")
	if before.PullRequest != 0 {
		t.Fatalf("interrupted with pull request %d, want none yet", before.PullRequest)
	}
	pushed, err := w.repo.Head("repair/" + rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := recoverToMerge(ctx, t, w.c, rec.ID)
	if done.HeadSHA != pushed {
		t.Fatalf("the pull request's head %s is not the commit pushed before the interruption, %s", done.HeadSHA, pushed)
	}
	w.recoveredOnce(before, done, "propose")
}

// TestRecoverDuringTheWatch interrupts a repair while its pull request's
// checks are pending: the recovery goes on watching the same pull request.
func TestRecoverDuringTheWatch(t *testing.T) {
	w := newRecovery(t, false, 12)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	rec := startRepair(ctx, t, w.c)
	for {
		r, err := w.c.JobNow(ctx, rec.ID)
		if err == nil && r.Step == "watch" && r.PullRequest != 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no watch: %+v %v", r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := w.interruptAt(ctx, rec.ID, "watch")
	done := recoverToMerge(ctx, t, w.c, rec.ID)
	if done.PullRequest != before.PullRequest {
		t.Fatalf("pull request #%d, interrupted watching #%d", done.PullRequest, before.PullRequest)
	}
	w.recoveredOnce(before, done, "watch")
}

// TestRecoverAtTheMergeDecision interrupts a repair that waits for its
// merge decision: the recovery waits for it again, and the person's
// approval merges the one pull request.
func TestRecoverAtTheMergeDecision(t *testing.T) {
	w := newRecovery(t, false, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	rec := startRepair(ctx, t, w.c)
	waitJob(ctx, t, w.c, rec.ID, jobs.AwaitingMerge)
	before := w.interruptAt(ctx, rec.ID, "decide")
	tc, err := sdkclient.Dial(sdkclient.Options{HostPort: w.e.address(), Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	desc, err := tc.DescribeWorkflowExecution(ctx, workflows.JobWorkflowID(rec.ID), "")
	if err != nil {
		t.Fatal(err)
	}
	done := recoverToMerge(ctx, t, w.c, rec.ID)
	captureRun(t, w.e, workflows.JobWorkflowID(rec.ID), desc.WorkflowExecutionInfo.Execution.RunId, "job_interrupted_decide")
	w.recoveredOnce(before, done, "decide")
}
