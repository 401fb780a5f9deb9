package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// repairReply plays a model through axlr_repair 1.0's model steps on the
// calc module: reproduce with go test, diagnose, fix Parse with
// local_edit, hand back the repair; and through axlr_improve 1.0's: brief
// with a go test that runs no test yet, build Double and its test with
// local_write. Then it answers in words.
func repairReply(req agenttest.Request) agenttest.Reply {
	r, isReply, last, next := turnAt(req)
	if !isReply && last.Role == "user" {
		if _, after, ok := strings.Cut(last.Content, "Fix the cause in step "); ok {
			// A red round: back to the step named.
			next, _, _ = strings.Cut(after, " ")
		}
	}
	switch {
	case isReply && r.NextStep != "" && strings.Contains(last.Content, "AXLR's own"):
		return agenttest.Reply{Text: "Repaired; AXLR proposes the change."}
	case next == "reproduce":
		return stepDone("r1", `{"check_command": {"program": "go", "args": ["test", "./..."]}, "expected": "ok", "observed": "panic: slice bounds out of range"}`)
	case next == "diagnose":
		return stepDone("d1", `{"root_cause": "Parse slices s[:1] without checking that s is empty", "evidence": "calc.go", "proposed_fix": "return an error for empty input"}`)
	case next == "brief":
		return stepDone("b1", `{"criteria": "Double(n) returns 2n, and a test says so", "scope": "double_test.go", "check_command": {"program": "go", "args": ["test", "-run", "TestDouble", "./..."]}}`)
	case next == "build":
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write",
			Arguments: `{"path": "double_test.go", "mode": "create", "content": "package calc\n\nimport \"testing\"\n\n// Double returns twice n.\nfunc Double(n int) int { return 2 * n }\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(\"Double(2) is not 4\")\n\t}\n}\n"}`}}}
	case next == "repair":
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "e1", Name: "local_edit",
			Arguments: `{"path": "calc.go", "old_text": "\treturn strconv.Atoi(s[:1])", "new_text": "\tif s == \"\" {\n\t\treturn 0, strconv.ErrSyntax\n\t}\n\treturn strconv.Atoi(s[:1])"}`}}}
	case !isReply && last.Role == "tool":
		return stepDone("p1", `{"summary": "Parse returns ErrSyntax for empty input", "summary_en": "Parse returns an error for empty input."}`)
	}
	return agenttest.Reply{Text: "nothing to do"}
}

// repairEnv sets up a repair job's world: the GitHub fake with the calc
// module as underpass-ai/calc (its CI passes, registering after
// afterReads reads), the scripted model, and an env whose axlrd reaches
// both and runs go test with this process's build cache.
func repairEnv(t *testing.T, afterReads int) (*githubtest.Server, *githubtest.Repository, *env) {
	t.Helper()
	return repairEnvWith(t, afterReads, repairReply)
}

// repairEnvWith is repairEnv with the model's replies.
func repairEnvWith(t *testing.T, afterReads int, reply func(agenttest.Request) agenttest.Reply) (*githubtest.Server, *githubtest.Repository, *env) {
	t.Helper()
	return repairWorld(t, calcFiles, afterReads, reply)
}

// repairWorld is repairEnvWith with the repository's files.
func repairWorld(t testing.TB, files map[string]string, afterReads int, reply func(agenttest.Request) agenttest.Reply) (*githubtest.Server, *githubtest.Repository, *env) {
	t.Helper()
	gh, err := githubtest.Start(githubtest.Config{Token: "gh-test-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gh.Close)
	repo, err := gh.CreateRepository("underpass-ai/calc", files)
	if err != nil {
		t.Fatal(err)
	}
	repo.SetCI(func(githubtest.Commit) []githubtest.CheckRun {
		return []githubtest.CheckRun{{Name: "test", Conclusion: "success", AfterReads: afterReads}}
	})
	model := agenttest.NewServer(t, reply)
	e := newEnv(t, model.URL)
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		e.vars[k] = strings.TrimSpace(string(out))
	}
	e.vars["GOTOOLCHAIN"], e.vars["GOFLAGS"], e.vars["GH_TOKEN"] = "local", "-count=1", "gh-test-token"
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}}`)
	return gh, repo, e
}

// waitJob polls a job's record until it reaches one of the statuses.
func waitJob(ctx context.Context, t *testing.T, c *client.Client, id string, want ...jobs.Status) jobs.Record {
	t.Helper()
	for {
		rec, err := c.JobNow(ctx, id)
		if err == nil {
			for _, w := range want {
				if rec.Status == w {
					return rec
				}
			}
			if rec.Terminal() {
				t.Fatalf("job %s ended %s (%s), want %v", id, rec.Status, rec.Reason, want)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s: %v; last error %v", id, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestRepairJob runs a repair from its admission to a merged pull request
// on the real server, a scripted model, a local bare repository as origin
// and the GitHub fake: the first check waits for the person, the fix is
// committed as AXLR and pushed, the pull request's checks go green, the
// person approves the merge, and exactly one pull request and one merge
// happen; the registry ends with the job completed.
func TestRepairJob(t *testing.T) {
	gh, repo, e := repairEnv(t, 1)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	rec := admitRepair(ctx, t, c)
	sid, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	in := workflows.JobInput{Record: rec, SessionID: sid, Model: "m", Settings: workflows.JobSettings{
		Remote: repo.Path(), Directory: e.dir + "/repairs", Watch: 2 * time.Minute, Poll: time.Second}}
	if err := c.StartJob(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := c.StartJob(ctx, in); err != nil {
		t.Fatalf("a retried start: %v", err)
	}
	waiting := waitJob(ctx, t, c, rec.ID, jobs.AwaitingApproval)
	if waiting.Pending == nil || waiting.Pending.Kind != jobs.PendingCheck || waiting.Pending.Command != "go test ./..." {
		t.Fatalf("pending %+v", waiting.Pending)
	}
	if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingMerge, Approve: true}); err == nil {
		t.Fatal("a merge decision while the check waits was taken")
	}
	if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingCheck, Approve: true}); err != nil {
		t.Fatal(err)
	}
	merge := waitJob(ctx, t, c, rec.ID, jobs.AwaitingMerge)
	if merge.Pending == nil || merge.Pending.PullRequest == 0 || merge.Pending.HeadSHA == "" || merge.URL == "" {
		t.Fatalf("awaiting merge %+v", merge)
	}
	if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingMerge, Approve: true}); err != nil {
		t.Fatal(err)
	}
	done := waitJob(ctx, t, c, rec.ID, jobs.Completed)
	calls := gh.Calls()
	if calls.PullRequestsOpened != 1 || calls.Merges != 1 || done.MergeSHA == "" {
		t.Fatalf("forge calls %+v, record %+v", calls, done)
	}
	head, err := repo.Head("main")
	if err != nil {
		t.Fatal(err)
	}
	files, err := repo.Files(head)
	if err != nil || !strings.Contains(files["calc.go"], "strconv.ErrSyntax") {
		t.Fatalf("main after the merge: %v\n%s", err, files["calc.go"])
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(rec.ID), "job_repair")
	for range 50 {
		if r, err := c.Job(ctx, rec.ID); err == nil && r.Status == jobs.Completed {
			captureWorkflow(t, e, workflows.RegistryWorkflowID, "job_registry")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the registry never saw the job completed")
}

// TestRepairJobThroughCrashes kills axlrd with SIGKILL three times during
// a repair: between the push and the pull request's opening (the forge
// refusing the first opens), while the checks are watched, and between
// the merge's approval and the merge (the forge refusing the first
// merges). After each restart the job goes on where it stood, and in the
// end exactly one pull request was opened and one merge made.
func TestRepairJobThroughCrashes(t *testing.T) {
	gh, repo, e := repairEnv(t, 4)
	k := spawnKillable(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	rec := admitRepair(ctx, t, k.c)
	sid, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.c.StartJob(ctx, workflows.JobInput{Record: rec, SessionID: sid, Model: "m", Settings: workflows.JobSettings{
		Remote: repo.Path(), Directory: e.dir + "/repairs", Watch: 3 * time.Minute, Poll: time.Second}}); err != nil {
		t.Fatal(err)
	}
	waitJob(ctx, t, k.c, rec.ID, jobs.AwaitingApproval)
	// The branch is pushed, then the forge refuses to open the pull
	// request for a while: axlrd dies in between.
	gh.Fail("POST /repos/underpass-ai/calc/pulls", 502, 2)
	if _, err := k.c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingCheck, Approve: true}); err != nil {
		t.Fatal(err)
	}
	waitBranch(ctx, t, repo, "repair/"+rec.ID)
	k.restart("between the push and the pull request")

	for {
		r, err := k.c.JobNow(ctx, rec.ID)
		if err == nil && r.PullRequest != 0 && r.Step == "watch" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no watch: %+v, %v", r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A person follows the job from axlr-tui through the restart: the
	// watch reconnects and ends where the job waits for them.
	watched := make(chan cliResult, 1)
	go func() { watched <- e.tui(ctx, "jobs", "watch", rec.ID, "--json") }()
	time.Sleep(500 * time.Millisecond)
	k.restart("while the checks are watched")

	waitJob(ctx, t, k.c, rec.ID, jobs.AwaitingMerge)
	w := <-watched
	_, _, status, last := jobLines(t, w.stdout)
	if w.code != 3 || status != "needs_decision" || last.Pending == nil || last.Pending.Kind != jobs.PendingMerge {
		t.Fatalf("jobs watch through the restart: exit %d %s %+v\n%s", w.code, status, last.Pending, w.stderr)
	}
	gh.Fail("/merge", 502, 2)
	if _, err := k.c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: jobs.PendingMerge, Approve: true}); err != nil {
		t.Fatal(err)
	}
	for gh.Calls().MergeAttempts == 0 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	k.restart("between the merge's approval and the merge")

	done := waitJob(ctx, t, k.c, rec.ID, jobs.Completed)
	calls := gh.Calls()
	if calls.PullRequestsOpened != 1 || calls.Merges != 1 || done.MergeSHA == "" {
		t.Fatalf("forge calls %+v, record %+v", calls, done)
	}
	if prs := repo.PullRequests(); len(prs) != 1 {
		t.Fatalf("%d pull requests", len(prs))
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(rec.ID), "job_repair_crashes")
}

// waitBranch waits for a branch to reach the origin.
func waitBranch(ctx context.Context, t *testing.T, repo *githubtest.Repository, branch string) {
	t.Helper()
	for {
		if _, err := repo.Head(branch); err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("branch %s never pushed", branch)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killable is an axlrd process a crash test kills with SIGKILL and starts
// again, with a client of the axlrd that runs now.
type killable struct {
	t *testing.T
	e *env
	d *process
	c *client.Client
}

// spawnKillable starts axlrd as a process the test can kill.
func spawnKillable(t *testing.T, e *env) *killable {
	t.Helper()
	k := &killable{t: t, e: e, d: e.spawn()}
	k.c = dialAxlrd(t, e)
	return k
}

// restart kills axlrd with SIGKILL, saying when, and starts it again.
func (k *killable) restart(why string) {
	k.t.Helper()
	k.d.kill()
	k.t.Logf("killed axlrd %s", why)
	k.d = k.e.spawn()
	k.c = dialAxlrd(k.t, k.e)
}

// admitRepair has the registry admit a repair of underpass-ai/calc for
// TestParse failing on empty input, as the person's job.
func admitRepair(ctx context.Context, t *testing.T, c *client.Client) jobs.Record {
	t.Helper()
	brief := "TestParse fails on empty input"
	rec, err := c.AdmitJob(ctx, workflows.AdmitRequest{Admission: jobs.Admission{Kind: jobs.Repair, Repository: "underpass-ai/calc",
		Signature: jobs.JobSignature("underpass-ai/calc", jobs.Repair, brief), Brief: brief}, Build: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
