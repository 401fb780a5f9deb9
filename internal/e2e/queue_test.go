package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// addFunc reads the function an improvement's brief asks for: "add Triple
// to calc".
var addFunc = regexp.MustCompile(`add ([A-Z][a-z]+) to calc`)

// queueReply plays the model of improvements that each add a function and
// its test in a file of their own, so their pull requests never conflict:
// the brief's check runs that test (none yet), the build writes it.
func queueReply(req agenttest.Request) agenttest.Reply {
	m := addFunc.FindStringSubmatch(firstUser(req))
	if m == nil {
		return repairReply(req)
	}
	name := m[1]
	r, isReply, last, next := turnAt(req)
	switch {
	case isReply && r.NextStep != "" && strings.Contains(last.Content, "AXLR's own"):
		return agenttest.Reply{Text: "Built; AXLR proposes the change."}
	case next == "brief":
		return stepDone("b1", fmt.Sprintf(`{"criteria": "%s exists, and a test says so", "scope": "%s_test.go", "check_command": {"program": "go", "args": ["test", "-run", "Test%s", "./..."]}}`,
			name, strings.ToLower(name), name))
	case next == "build":
		content := fmt.Sprintf("package calc\n\nimport \"testing\"\n\n// %s returns n.\nfunc %s(n int) int { return n }\n\nfunc Test%s(t *testing.T) {\n\tif %s(2) != 2 {\n\t\tt.Fatal(\"%s(2)\")\n\t}\n}\n", name, name, name, name, name)
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write",
			Arguments: fmt.Sprintf(`{"path": %q, "mode": "create", "content": %q}`, strings.ToLower(name)+"_test.go", content)}}}
	case !isReply && last.Role == "tool":
		return stepDone("p1", fmt.Sprintf(`{"summary": "Add %s to calc.", "summary_en": "Adds %s."}`, name, name))
	}
	return agenttest.Reply{Text: "nothing to do"}
}

// queueEnv is a world of three improvements on a base branch under strict
// protection: a merge needs the head up to date with main and its checks
// green.
func queueEnv(t *testing.T, afterReads int) (*githubtest.Server, *githubtest.Repository, *env) {
	t.Helper()
	return queueEnvWith(t, afterReads, queueReply)
}

// queueEnvWith is queueEnv with the model's replies.
func queueEnvWith(t *testing.T, afterReads int, reply func(agenttest.Request) agenttest.Reply) (*githubtest.Server, *githubtest.Repository, *env) {
	t.Helper()
	gh, repo, e := repairEnvWith(t, afterReads, reply)
	repo.SetProtection("main", githubtest.Protection{Strict: true})
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "jobs": {"max_active": 3}, "repair": {"repository": "underpass-ai/calc", "remote": "` +
		repo.Path() + `", "poll_seconds": 1, "watch_minutes": 2}}`)
	return gh, repo, e
}

// readyToMerge starts the improvement named and takes it to its merge
// decision: its check approved, its pull request green.
func readyToMerge(ctx context.Context, t *testing.T, e *env, name string) string {
	t.Helper()
	r := e.tui(ctx, "--improve", "add "+name+" to calc", "--detach")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("--improve %s: exit %d %s", name, r.code, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "watch", id); r.code != 3 {
		t.Fatalf("%s to its check: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 {
		t.Fatalf("approve %s's check: exit %d %s", name, r.code, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "watch", id); r.code != 3 || !strings.Contains(r.stdout, "waits for your merge decision") {
		t.Fatalf("%s to its merge: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
	}
	return id
}

// mergedInOrder checks that main's history holds the jobs' merges in the
// order given, one each.
func mergedInOrder(ctx context.Context, t *testing.T, c *client.Client, repo *githubtest.Repository, ids []string) {
	t.Helper()
	want := make([]string, len(ids))
	for i, id := range ids {
		rec := waitJob(ctx, t, c, id, jobs.Completed)
		want[i] = rec.MergeSHA
	}
	head, err := repo.Head("main")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for sha := head; len(got) < len(ids); {
		got = append([]string{sha}, got...)
		parents, err := repo.Parents(sha)
		if err != nil || len(parents) == 0 {
			t.Fatalf("main's history ends at %s: %v", sha, err)
		}
		sha = parents[0]
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("main's last commits %v, want the merges of %v in queue order: %v", got, ids, want)
	}
}

// TestMergeQueue: three improvements wait for their merge decisions, their
// pull requests opened on the same base under strict protection; queued in
// an order, the queue lands them one at a time in that order: each merge
// moves main, so the next is behind and the queue updates its branch,
// waits for its checks on the new head and hands the approval to the job.
// Three pull requests, three merges, each job within its three updates.
func TestMergeQueue(t *testing.T) {
	gh, repo, e := queueEnv(t, 1)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var ids []string
	for _, name := range []string{"Triple", "Quad", "Penta"} {
		ids = append(ids, readyToMerge(ctx, t, e, name))
	}
	// Queued in another order than they were made.
	order := []string{ids[1], ids[0], ids[2]}
	for i, id := range order {
		r := e.tui(ctx, "jobs", "queue", id)
		if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("#%d in the merge queue of underpass-ai/calc (main)", i+1)) {
			t.Fatalf("queue %s: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
		}
	}
	if r := e.tui(ctx, "jobs", "queue", order[0]); r.code != 1 || !strings.Contains(r.stderr, "queued") {
		t.Fatalf("queue twice: exit %d %s", r.code, r.stderr)
	}
	mergedInOrder(ctx, t, c, repo, order)
	captureWorkflow(t, e, workflows.QueueWorkflowID("underpass-ai/calc", "main"), "queue_three")
	calls := gh.Calls()
	if calls.PullRequestsOpened != 3 || calls.Merges != 3 || calls.BranchUpdates < 2 || calls.BranchUpdates > 3*3 {
		t.Fatalf("forge calls %+v", calls)
	}
	// The queue sees the last merge at its next read of the job.
	for {
		r := e.tui(ctx, "queue")
		if r.code == 0 && strings.Contains(r.stdout, "underpass-ai/calc (main): 0 queued") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("queue: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitPlace polls a job's record in the registry until its queue place
// satisfies ok.
func waitPlace(ctx context.Context, t *testing.T, c *client.Client, id string, what string, ok func(*jobs.QueuePlace) bool) {
	t.Helper()
	for {
		rec, err := c.Job(ctx, id)
		if err == nil && rec.Queue != nil && ok(rec.Queue) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s never %s: %+v, %v", id, what, rec.Queue, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMergeQueueThroughCrashes kills axlrd with SIGKILL while the queue
// lands three jobs: between the hand-off of the first's approval and its
// merge (the forge refusing the first merges), during the second's branch
// update (the forge refusing the first updates), and while the queue waits
// for the third's checks. After each restart the queue goes on in its
// order, and each job merges once.
func TestMergeQueueThroughCrashes(t *testing.T) {
	gh, repo, e := queueEnv(t, 3)
	k := spawnKillable(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var ids []string
	for _, name := range []string{"Triple", "Quad", "Penta"} {
		ids = append(ids, readyToMerge(ctx, t, e, name))
	}
	gh.Fail("/merge", 502, 2)
	gh.Fail("/update-branch", 502, 3)
	for _, id := range ids {
		if r := e.tui(ctx, "jobs", "queue", id); r.code != 0 {
			t.Fatalf("queue %s: exit %d %s", id, r.code, r.stderr)
		}
	}
	for gh.Calls().MergeAttempts == 0 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	k.restart("between the first approval's hand-off and its merge")

	waitPlace(ctx, t, k.c, ids[1], "updating", func(p *jobs.QueuePlace) bool { return p.State == jobs.QueueUpdating })
	k.restart("during the second's branch update")

	waitPlace(ctx, t, k.c, ids[2], "waiting for its checks", func(p *jobs.QueuePlace) bool {
		return p.Position == 1 && p.State == jobs.QueueChecks && strings.HasPrefix(p.Note, "waiting for checks")
	})
	k.restart("while the queue waits for the third's checks")

	mergedInOrder(ctx, t, k.c, repo, ids)
	if calls := gh.Calls(); calls.PullRequestsOpened != 3 || calls.Merges != 3 {
		t.Fatalf("forge calls %+v", calls)
	}
	captureWorkflow(t, e, workflows.QueueWorkflowID("underpass-ai/calc", "main"), "queue_crashes")
}

// TestJobBehindAgain: main moves while an improvement's checks are
// watched, and moves again right after the job updated its branch: its
// checks pass on the updated head, but the base must be up to date. The
// job does not wait out its watch: its merge decision opens at once,
// saying the branch is behind and that the queue lands it; queued, the
// queue updates the branch again and the job merges once.
func TestJobBehindAgain(t *testing.T) {
	gh, repo, e := queueEnv(t, 3)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--improve", "add Triple to calc", "--detach")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("--improve: exit %d %s", r.code, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "watch", id); r.code != 3 {
		t.Fatalf("to its check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 {
		t.Fatalf("approve its check: exit %d %s", r.code, r.stderr)
	}
	waitBranch(ctx, t, repo, "improve/"+id)
	for len(repo.PullRequests()) == 0 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	moveMain := func(file string) {
		t.Helper()
		if _, err := repo.Commit("main", "main moves: "+file+"\n", map[string]string{file: "moved\n"}); err != nil {
			t.Fatal(err)
		}
	}
	moveMain("NEWS")
	for gh.Calls().BranchUpdates == 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	moveMain("AUTHORS")

	r = e.tui(ctx, "jobs", "watch", id)
	if r.code != 3 || !strings.Contains(r.stdout, "waits for your merge decision") || !strings.Contains(r.stderr, "axlr-tui jobs queue "+id+" updates it") {
		t.Fatalf("to its merge decision: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rec, err := c.JobNow(ctx, id)
	if err != nil || rec.Pending == nil || !rec.Pending.Behind {
		t.Fatalf("pending %+v, %v", rec.Pending, err)
	}
	if r := e.tui(ctx, "jobs", "queue", id); r.code != 0 {
		t.Fatalf("queue: exit %d %s", r.code, r.stderr)
	}
	done := waitJob(ctx, t, c, id, jobs.Completed)
	if calls := gh.Calls(); calls.PullRequestsOpened != 1 || calls.Merges != 1 || calls.BranchUpdates != 2 || done.MergeSHA == "" {
		t.Fatalf("forge calls %+v, record %+v", calls, done)
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(id), "job_behind_again")
}
