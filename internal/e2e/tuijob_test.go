package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// tuiMarker opens the prompts of the session the person starts a job
// from; the job's own session never sees it.
const tuiMarker = "TUI:"

// tuiSession plays the model of the TUI's session: it answers in words
// and keeps the job outcome notes its last request held. The job's
// session gets repairReply.
type tuiSession struct {
	mu    sync.Mutex
	notes []string
}

func (s *tuiSession) reply(req agenttest.Request) agenttest.Reply {
	if !strings.Contains(firstUser(req), tuiMarker) {
		return repairReply(req)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = nil
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "[AXLR] Job ") {
			s.notes = append(s.notes, m.Content)
		}
	}
	return agenttest.Reply{Text: "Noted."}
}

// TestJobStartedFromTheTUI starts a repair as the TUI's /repair and n do,
// through a client whose environment holds no forge token: as the
// person's, from the TUI's session, with its model. g reads the job's pull
// request through axlrd, open with its checks while the merge waits and
// merged with them after; the session's next prompt carries the job's
// outcome note, once.
func TestJobStartedFromTheTUI(t *testing.T) {
	tui := &tuiSession{}
	gh, repo, e := repairEnvWith(t, 1, tui.reply)
	jobSettings(e, gh.URL, repo.Path())
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The TUI's environment: axlrd's, without a token for the forge.
	c, err := client.Dial(ctx, client.Options{Address: e.address(), Getenv: func(k string) string {
		if strings.Contains(k, "TOKEN") {
			return ""
		}
		return e.getenv(k)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	r := e.tui(ctx, "--exec", tuiMarker+" hello", "--json")
	_, res := lines(t, r.stdout)
	if r.code != 0 || res.Status != contract.Completed {
		t.Fatalf("the TUI's session: exit %d %+v\n%s", r.code, res, r.stderr)
	}
	sid := res.SessionID
	rec, err := c.LaunchJob(ctx, workflows.LaunchRequest{Kind: jobs.Repair, Brief: "TestParse fails on empty input", Model: "m", OriginSession: sid, Person: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Person || rec.OriginSession != sid || rec.Signature != jobs.JobSignature("underpass-ai/calc", jobs.Repair, "TestParse fails on empty input") {
		t.Fatalf("the admitted job %+v", rec)
	}
	if _, err := c.PullRequest(ctx, rec.ID); err == nil || !strings.Contains(err.Error(), "no pull request yet") {
		t.Fatalf("g before the pull request: %v", err)
	}
	waitJob(ctx, t, c, rec.ID, jobs.AwaitingApproval)
	if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingCheck, Approve: true}); err != nil {
		t.Fatal(err)
	}
	waiting := waitJob(ctx, t, c, rec.ID, jobs.AwaitingMerge)
	open, err := c.PullRequest(ctx, rec.ID)
	if err != nil {
		t.Fatalf("g while the merge waits: %v", err)
	}
	if open.State() != "open" || open.PullRequest.Number != waiting.PullRequest || open.PullRequest.HeadSHA != waiting.Pending.HeadSHA ||
		open.PullRequest.MergeableState == "" || strings.Join(open.Checks.Passed, ",") != "test" || len(open.Checks.Pending)+len(open.Checks.Failed) != 0 {
		t.Fatalf("g while the merge waits: %+v", open)
	}
	if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingMerge, Approve: true, HeadSHA: waiting.Pending.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	done := waitJob(ctx, t, c, rec.ID, jobs.Completed)
	for {
		if reg, err := c.Job(ctx, rec.ID); err == nil && reg.Status == jobs.Completed {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the registry never saw the job completed")
		case <-time.After(100 * time.Millisecond):
		}
	}
	merged, err := c.PullRequest(ctx, rec.ID)
	if err != nil || merged.State() != "merged" || merged.PullRequest.MergeSHA != done.MergeSHA || strings.Join(merged.Checks.Passed, ",") != "test" {
		t.Fatalf("g after the merge: %+v, %v", merged, err)
	}
	if calls := gh.Calls(); calls.PullRequestsOpened != 1 || calls.Merges != 1 {
		t.Fatalf("forge calls %+v", calls)
	}
	capturePullRead(ctx, t, e)

	for _, prompt := range []string{"what became of it?", "and now?"} {
		if r := e.tui(ctx, "--exec", tuiMarker+" "+prompt, "--session", sid); r.code != 0 {
			t.Fatalf("the session's next prompt: exit %d %s", r.code, r.stderr)
		}
	}
	tui.mu.Lock()
	defer tui.mu.Unlock()
	if len(tui.notes) != 1 || !strings.Contains(tui.notes[0], "[AXLR] Job "+rec.ID+" (repair) ended completed: pull request #") {
		t.Fatalf("the session was told %q", tui.notes)
	}
}

// capturePullRead captures one of g's reads with -update-replay: the
// client chose its workflow id, so it is found by its type.
func capturePullRead(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	if !*updateReplay {
		return
	}
	sdk := dialSDK(t, e)
	for {
		resp, err := sdk.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowType = '" + workflows.PullReadWorkflow + "'"})
		if err == nil && len(resp.GetExecutions()) > 0 {
			captureWorkflow(t, e, resp.GetExecutions()[0].GetExecution().GetWorkflowId(), "pull_read")
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s to capture: %v", workflows.PullReadWorkflow, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
