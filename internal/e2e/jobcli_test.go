package e2e

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// jobLines decodes a job watch's --json output: the first line's job, the
// event lines between, and the result line's status and job.
func jobLines(t *testing.T, out string) (first jobs.Record, events int, status string, last jobs.Record) {
	t.Helper()
	ls := strings.Split(strings.TrimSpace(out), "\n")
	if len(ls) < 2 {
		t.Fatalf("job output has %d lines:\n%s", len(ls), out)
	}
	var head struct {
		Type string      `json:"type"`
		Job  jobs.Record `json:"job"`
	}
	if err := json.Unmarshal([]byte(ls[0]), &head); err != nil || head.Type != "job" {
		t.Fatalf("first line %s: %v", ls[0], err)
	}
	var tail struct {
		Type   string `json:"type"`
		Result struct {
			Status string      `json:"status"`
			Job    jobs.Record `json:"job"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(ls[len(ls)-1]), &tail); err != nil || tail.Type != "result" {
		t.Fatalf("last line %s: %v", ls[len(ls)-1], err)
	}
	return head.Job, len(ls) - 2, tail.Result.Status, tail.Result.Job
}

// jobSettings points the jobs of e at repo on the GitHub fake.
func jobSettings(e *env, ghURL, remote string) {
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + ghURL + `"}, "repair": {"repository": "underpass-ai/calc", "remote": "` + remote +
		`", "poll_seconds": 1, "watch_minutes": 2}}`)
}

// TestRepairFromTheCommandLine runs a repair the way a person does: axlr-tui
// --repair admits and follows it to its check command (exit 3), jobs
// approve runs it, jobs watch follows it to the merge decision (exit 3),
// jobs approve merges it and jobs watch sees it completed (exit 0); jobs
// lists it. One pull request, one merge.
func TestRepairFromTheCommandLine(t *testing.T) {
	gh, repo, e := repairEnv(t, 1)
	jobSettings(e, gh.URL, repo.Path())
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--repair", "TestParse fails on empty input", "--json")
	first, events, status, rec := jobLines(t, r.stdout)
	if r.code != 3 || first.Status != jobs.Preparing || events == 0 || status != "needs_decision" ||
		rec.Pending == nil || rec.Pending.Kind != jobs.PendingCheck || rec.Pending.Command != "go test ./..." {
		t.Fatalf("--repair: exit %d, first %+v, status %s, record %+v\n%s", r.code, first, status, rec, r.stderr)
	}
	id := first.ID
	if r := e.tui(ctx, "jobs", "decline", id, "--reason", "no"); r.code != 1 || !strings.Contains(r.stderr, "waits for its check command") {
		t.Fatalf("decline of a check: exit %d %s", r.code, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 || !strings.Contains(r.stdout, "approved the check command go test ./... of job "+id) {
		t.Fatalf("approve the check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", id, "--json")
	_, _, status, rec = jobLines(t, r.stdout)
	if r.code != 3 || status != "needs_decision" || rec.Pending == nil || rec.Pending.Kind != jobs.PendingMerge || rec.PullRequest == 0 {
		t.Fatalf("watch to the merge: exit %d, %s, %+v\n%s", r.code, status, rec, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", id, "--json"); r.code != 0 {
		t.Fatalf("approve the merge: exit %d %s", r.code, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", id)
	if r.code != 0 || !strings.Contains(r.stdout, "job "+id+" completed: pull request #") {
		t.Fatalf("watch to the end: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if calls := gh.Calls(); calls.PullRequestsOpened != 1 || calls.Merges != 1 {
		t.Fatalf("forge calls %+v", calls)
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(id), "job_repair_cli")
	for range 50 {
		r = e.tui(ctx, "jobs")
		if strings.Contains(r.stdout, id) && strings.Contains(r.stdout, "completed") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("jobs does not list %s completed:\n%s", id, r.stdout)
}

// TestImproveFromTheCommandLine runs an improvement whose check fails on
// the clean clone (go test runs no test yet) and passes after the build:
// the merge always waits for the person, even under repair.auto_merge;
// declined, the job ends blocked with the reason and no merge (exit 1).
func TestImproveFromTheCommandLine(t *testing.T) {
	gh, repo, e := repairEnv(t, 1)
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() +
		`", "poll_seconds": 1, "watch_minutes": 2, "auto_merge": true}}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--improve", "add Double to calc", "--detach")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("--detach: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", id, "--json")
	_, _, status, rec := jobLines(t, r.stdout)
	if r.code != 3 || status != "needs_decision" || rec.Pending == nil || rec.Pending.Command != "go test -run TestDouble ./..." {
		t.Fatalf("watch to the check: exit %d %s %+v\n%s", r.code, status, rec, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 {
		t.Fatalf("approve the check: exit %d %s", r.code, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", id, "--json")
	_, _, status, rec = jobLines(t, r.stdout)
	if r.code != 3 || rec.Pending == nil || rec.Pending.Kind != jobs.PendingMerge {
		t.Fatalf("an improvement under auto_merge: exit %d %s %+v\n%s", r.code, status, rec, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "decline", id, "--reason", "Double belongs in another package"); r.code != 0 {
		t.Fatalf("decline: exit %d %s", r.code, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", id)
	if r.code != 1 || !strings.Contains(r.stdout, "blocked: the person declined the merge: Double belongs in another package") {
		t.Fatalf("watch a declined job: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if calls := gh.Calls(); calls.PullRequestsOpened != 1 || calls.Merges != 0 {
		t.Fatalf("forge calls %+v", calls)
	}
	pulls := repo.PullRequests()
	if len(pulls) != 1 || pulls[0].Title != "Improve: Parse returns ErrSyntax for empty input" || !strings.Contains(pulls[0].Body, "## Criteria\n\nDouble(n) returns 2n") {
		t.Fatalf("pull requests %+v", pulls)
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(id), "job_improve_declined")
}

// TestRecoverFromTheCommandLine interrupts a repair while its check
// command waits (as Ctrl+C does), and jobs recover runs it again in its
// session and clone: the job goes on to its merge, one pull request and
// one merge in all; recovering a job that is not interrupted is refused.
func TestRecoverFromTheCommandLine(t *testing.T) {
	gh, repo, e := repairEnv(t, 1)
	jobSettings(e, gh.URL, repo.Path())
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--repair", "TestParse fails on empty input", "--detach")
	id := strings.TrimSpace(r.stdout)
	if r := e.tui(ctx, "jobs", "watch", id); r.code != 3 {
		t.Fatalf("watch to the check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "recover", id); r.code != 1 || !strings.Contains(r.stderr, "only an interrupted job is recovered") {
		t.Fatalf("recover a waiting job: exit %d %s", r.code, r.stderr)
	}
	if err := c.InterruptJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	r = e.tui(ctx, "jobs", "watch", id)
	if r.code != 1 || !strings.Contains(r.stdout, "interrupted: interrupted while step reproduce") {
		t.Fatalf("watch an interrupted job: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var before jobs.Record
	for range 50 {
		if before, _ = c.Job(ctx, id); before.Status == jobs.Interrupted {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r = e.tui(ctx, "jobs", "recover", id)
	if r.code != 0 || !strings.Contains(r.stdout, "recovered job "+id+": it goes on in session "+before.Session) {
		t.Fatalf("recover: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, step := range []string{"check", "merge"} {
		r = e.tui(ctx, "jobs", "watch", id, "--json")
		_, _, _, rec := jobLines(t, r.stdout)
		if r.code != 3 || rec.Pending == nil || string(rec.Pending.Kind) != step {
			t.Fatalf("watch to the %s: exit %d %+v\n%s", step, r.code, rec, r.stderr)
		}
		if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 {
			t.Fatalf("approve the %s: exit %d %s", step, r.code, r.stderr)
		}
	}
	if r = e.tui(ctx, "jobs", "watch", id); r.code != 0 {
		t.Fatalf("watch to the end: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if calls := gh.Calls(); calls.PullRequestsOpened != 1 || calls.Merges != 1 {
		t.Fatalf("forge calls %+v", calls)
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(id), "job_recovered")
}

// TestRepairRedRound: the pull request's first head fails its checks; the
// job sends the model back to repair with the failing check named, the
// real MADE engine takes the repair step again (a new round), the second
// commit goes to the same pull request, its checks pass and the repair
// merges under repair.auto_merge: one pull request, two commits, one merge.
func TestRepairRedRound(t *testing.T) {
	gh, repo, e := repairEnv(t, 1)
	var mu sync.Mutex
	heads := map[string]int{}
	repo.SetCI(func(c githubtest.Commit) []githubtest.CheckRun {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := heads[c.SHA]; !ok && c.Branch != "main" {
			heads[c.SHA] = len(heads)
		}
		if heads[c.SHA] == 0 && c.Branch != "main" {
			return []githubtest.CheckRun{{Name: "test", Conclusion: "failure", AfterReads: 1}}
		}
		return []githubtest.CheckRun{{Name: "test", Conclusion: "success", AfterReads: 1}}
	})
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() +
		`", "poll_seconds": 1, "watch_minutes": 2, "auto_merge": true}}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--repair", "TestParse fails on empty input", "--json")
	first, _, _, _ := jobLines(t, r.stdout)
	if r.code != 3 {
		t.Fatalf("--repair: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", first.ID); r.code != 0 {
		t.Fatalf("approve the check: exit %d %s", r.code, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", first.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "completed: pull request #") {
		t.Fatalf("watch: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	calls := gh.Calls()
	pulls := repo.PullRequests()
	if calls.PullRequestsOpened != 1 || calls.Merges != 1 || len(pulls) != 1 || !pulls[0].Merged {
		t.Fatalf("forge calls %+v, pull requests %+v", calls, pulls)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heads) != 2 {
		t.Fatalf("the pull request had %d heads, want 2", len(heads))
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(first.ID), "job_red_round")
}

// TestRepairFromAMissingRemote: a repair.remote that is not there (a typo,
// a repository not made yet) ends the job at its first clone with the
// remote's refusal, not after the clone's retries: --repair exits 1 saying
// which remote and why, and the job's record says the same.
func TestRepairFromAMissingRemote(t *testing.T) {
	gh, _, e := repairEnv(t, 1)
	missing := filepath.Join(t.TempDir(), "calc-typo.git")
	jobSettings(e, gh.URL, missing)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--repair", "TestParse fails on empty input")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "calc-typo.git") || !strings.Contains(r.stdout+r.stderr, "repository not found") {
		t.Fatalf("--repair from a missing remote: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.tui(ctx, "jobs", "--json")
	var recs []jobs.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 1 || !recs[0].Terminal() || !strings.Contains(recs[0].Reason, "repository not found") {
		t.Fatalf("jobs: %v %+v\n%s", err, recs, r.stderr)
	}
	// The clone failed at its first attempt: a retry cannot find it.
	h := e.tui(ctx, "history", workflows.JobWorkflowID(recs[0].ID), "--json")
	var traj client.Trajectory
	if err := json.Unmarshal([]byte(h.stdout), &traj); err != nil {
		t.Fatalf("history: %v\n%s", err, h.stderr)
	}
	i := slices.IndexFunc(traj.Steps, func(s client.Step) bool { return s.Name == workflows.ActivityForgePrepare })
	if i < 0 || traj.Steps[i].Attempt != 1 || traj.Steps[i].Outcome != "failed" {
		t.Fatalf("the clone's step in history: %+v", traj.Steps)
	}
}

// TestRepairFromARemoteThatDoesNotAnswer: a clone from a remote where
// nothing listens is tried again, and while it is, jobs show and jobs
// watch say so with the attempt and why the last failed; the record alone
// says preparing.
func TestRepairFromARemoteThatDoesNotAnswer(t *testing.T) {
	gh, _, e := repairEnv(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	remote := "http://" + ln.Addr().String() + "/underpass-ai/calc.git"
	ln.Close()
	jobSettings(e, gh.URL, remote)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r := e.tui(ctx, "--repair", "TestParse fails on empty input", "--detach")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("--detach: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	want := "retrying:     " + workflows.ActivityForgePrepare + ", attempt 2 of 6 "
	for {
		r = e.tui(ctx, "jobs", "show", id)
		if r.code == 0 && strings.Contains(r.stdout, want) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("jobs show never said the clone is tried again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(r.stdout, "status:       preparing") || !strings.Contains(r.stdout, "connection refused") {
		t.Fatalf("jobs show:\n%s", r.stdout)
	}
	// jobs watch tells each attempt after a failed one as it comes.
	wctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	r = e.tui(wctx, "jobs", "watch", id)
	if want := "axlr-tui: retrying " + workflows.ActivityForgePrepare + ", attempt "; !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "connection refused") {
		t.Fatalf("jobs watch: exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
	}
}
