package e2e

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// fleetFiles is the calc module with n functions N1…Nn that each return
// 0 instead of their number, one per file with a test of its own, so that
// their repairs' pull requests never touch the same file.
func fleetFiles(n int) map[string]string {
	files := maps.Clone(calcFiles)
	for k := 1; k <= n; k++ {
		files[fmt.Sprintf("n%d.go", k)] = fmt.Sprintf("package calc\n\n// N%d returns %d.\nfunc N%d() int { return 0 }\n", k, k, k)
		files[fmt.Sprintf("n%d_test.go", k)] = fmt.Sprintf(
			"package calc\n\nimport \"testing\"\n\nfunc TestN%d(t *testing.T) {\n\tif N%d() != %d {\n\t\tt.Fatal(\"N%d() is not %d\")\n\t}\n}\n", k, k, k, k, k)
	}
	return files
}

// fleetBrief is the brief of a fleet repair: "TestN3 fails".
var fleetBrief = regexp.MustCompile(`TestN([0-9]+) fails`)

// fleetRepair is the number of the function a fleet repair's request is
// about, from its brief in any of the user's messages (a moved job's new
// session opens with the note saying why), or "".
func fleetRepair(req agenttest.Request) string {
	for _, m := range req.Messages {
		if sub := fleetBrief.FindStringSubmatch(m.Content); m.Role == "user" && sub != nil {
			return sub[1]
		}
	}
	return ""
}

// fleetLatency is how long the fleet's scripted model takes to answer.
const fleetLatency = 300 * time.Millisecond

// fleetReply plays a model that takes fleetLatency to answer, through
// axlr_repair 1.0's model steps for a fleet repair: reproduce with the
// function's test, diagnose, make the function return its number with
// local_edit, hand back the repair.
func fleetReply(req agenttest.Request) agenttest.Reply { return fleetScript(req, false) }

// fleetGrepReply is fleetReply with a check that reads the function's
// line with grep instead of running its test: for the benchmarks of many
// hosts on one machine, where each go test's link would cost the machine
// more CPU than the hosts' orchestration does.
func fleetGrepReply(req agenttest.Request) agenttest.Reply { return fleetScript(req, true) }

func fleetScript(req agenttest.Request, grep bool) agenttest.Reply {
	time.Sleep(fleetLatency)
	k := fleetRepair(req)
	if k == "" {
		return repairReply(req)
	}
	r, isReply, last, next := turnAt(req)
	switch {
	case isReply && r.NextStep != "" && strings.Contains(last.Content, "AXLR's own"):
		return agenttest.Reply{Text: "Repaired; AXLR proposes the change."}
	case next == "reproduce" && grep:
		return stepDone("r1", `{"check_command": {"program": "grep", "args": ["-qxF", "func N`+k+`() int { return `+k+` }", "n`+k+`.go"]}, "expected": "the line", "observed": "N`+k+` returns 0"}`)
	case next == "reproduce":
		return stepDone("r1", `{"check_command": {"program": "go", "args": ["test", "-run", "TestN`+k+`$", "./..."]}, "expected": "ok", "observed": "N`+k+`() is not `+k+`"}`)
	case next == "diagnose":
		return stepDone("d1", `{"root_cause": "N`+k+` returns 0", "evidence": "n`+k+`.go", "proposed_fix": "return `+k+`"}`)
	case next == "repair":
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "e1", Name: "local_edit",
			Arguments: `{"path": "n` + k + `.go", "old_text": "return 0", "new_text": "return ` + k + `"}`}}}
	case !isReply && last.Role == "tool":
		return stepDone("p1", `{"summary": "N`+k+` returns `+k+`", "summary_en": "N`+k+` returns its number."}`)
	}
	return agenttest.Reply{Text: "nothing to do"}
}

// TestSixRepairsOnThreeHosts runs three hosts on one Temporal namespace
// (the server on PostgreSQL) and one database, two jobs' capacity each.
// Six repairs are started with --repair, two from each host, against a
// base branch under strict protection, with the model answering in
// 300 ms. The registry spreads them over the hosts; each, approved, is
// queued, and the merge queue lands them one at a time in the order they
// were queued: six pull requests, six merges, main's history in queue
// order. Then host-z, the host that started the registry and the queue,
// is killed with SIGKILL for good, and host-b admits a seventh repair
// whose merge the queue lands while host-z stays down.
func TestSixRepairsOnThreeHosts(t *testing.T) {
	gh, repo, e := repairWorld(t, fleetFiles(7), 1, fleetReply)
	repo.SetProtection("main", githubtest.Protection{Strict: true})
	e.onCluster(t)
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "jobs": {"max_active_per_host": 2},
		"repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() + `", "poll_seconds": 1, "watch_minutes": 3},
		"cluster": {"host_lost_seconds": 10}}`)
	e.vars["AXLR_HOST_ID"] = "host-z"
	z := e.spawnReady(t)
	hosts := []*env{e, e.host("host-b"), e.host("host-c")}
	for _, h := range hosts[1:] {
		h.spawnReady(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	waitHosts(ctx, t, e, "host-z", "host-b", "host-c")

	start := time.Now()
	var ids []string
	for i := range 6 {
		ids = append(ids, startFleetRepair(ctx, t, hosts[i%3], i+1))
	}
	order := landThroughQueue(ctx, t, dialAxlrd(t, e), ids)
	c := dialAxlrd(t, hosts[1])
	mergedInOrder(ctx, t, c, repo, order)
	ran := map[string]int{}
	for _, id := range ids {
		rec := waitJob(ctx, t, c, id, jobs.Completed)
		ran[rec.Host]++
	}
	t.Logf("six repairs merged through the queue in %.1f s, on hosts %v", time.Since(start).Seconds(), ran)
	if len(ran) < 2 {
		t.Fatalf("the six repairs ran on %v, want at least two hosts", ran)
	}
	if calls := gh.Calls(); calls.PullRequestsOpened != 6 || calls.Merges != 6 || calls.BranchUpdates == 0 {
		t.Fatalf("forge calls %+v, want six pull requests, six merges and the queue's branch updates", calls)
	}

	// host-z started the registry and the merge queue; with it down for
	// good, host-b admits a repair and the queue lands it.
	queue := workflows.QueueWorkflowID("underpass-ai/calc", "main")
	for _, id := range []string{workflows.RegistryWorkflowID, queue} {
		if first := workedBy(ctx, t, e, id, true); first != "host-z" {
			t.Fatalf("%s's first workflow task ran on %q, want host-z", id, first)
		}
	}
	z.kill()
	down := time.Now()
	t.Log("killed host-z, the host that started the registry, for good")
	id := startFleetRepair(ctx, t, hosts[1], 7)
	landThroughQueue(ctx, t, c, []string{id})
	rec := waitJob(ctx, t, c, id, jobs.Completed)
	t.Logf("with host-z down, job %s ran on %s and merged %.1f s after the kill", id, rec.Host, time.Since(down).Seconds())
	if rec.Host == "host-z" || len(rec.Moves) != 0 {
		t.Fatalf("the seventh job ran on %s, moves %q", rec.Host, rec.Moves)
	}
	mergedInOrder(ctx, t, c, repo, append(order, id))
	for _, id := range []string{workflows.RegistryWorkflowID, queue} {
		if last := workedBy(ctx, t, e, id, false); last == "host-z" || last == "" {
			t.Fatalf("%s's last workflow task ran on %q, with host-z down", id, last)
		}
	}
	if calls := gh.Calls(); calls.PullRequestsOpened != 7 || calls.Merges != 7 {
		t.Fatalf("forge calls %+v, want seven pull requests and seven merges", calls)
	}
}

// startFleetRepair starts the fleet repair of Nk with --repair from host
// h, detached, and returns its job id.
func startFleetRepair(ctx context.Context, t *testing.T, h *env, k int) string {
	t.Helper()
	r := h.tui(ctx, "--repair", fmt.Sprintf("TestN%d fails", k), "--detach")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("--repair TestN%d from %s: exit %d\n%s%s", k, h.vars["AXLR_HOST_ID"], r.code, r.stdout, r.stderr)
	}
	return id
}

// landThroughQueue approves each job's check and, once its pull request
// is green and it waits for its merge decision, puts it in the merge
// queue; it returns the jobs in the order they were queued, once every
// one has merged. It never approves a merge itself: each merge is the
// queue's.
func landThroughQueue(ctx context.Context, t *testing.T, c *client.Client, ids []string) []string {
	t.Helper()
	var order []string
	queued := map[string]bool{}
	for {
		done := 0
		for _, id := range ids {
			rec, err := c.JobNow(ctx, id)
			switch {
			case err != nil:
			case rec.Status == jobs.Completed:
				done++
			case rec.Terminal():
				t.Fatalf("job %s ended %s: %s", id, rec.Status, rec.Reason)
			case rec.Pending != nil && rec.Pending.Kind == jobs.PendingCheck:
				if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: id, Kind: jobs.PendingCheck, Approve: true}); err != nil {
					t.Logf("approve %s's check: %v", id, err)
				}
			case rec.Status == jobs.AwaitingMerge && !queued[id]:
				if _, err := c.QueueJob(ctx, id); err != nil {
					t.Logf("queue %s: %v", id, err)
					continue
				}
				queued[id] = true
				order = append(order, id)
			}
		}
		if done == len(ids) {
			return order
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d jobs merged: %v", done, len(ids), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// workedBy names the host whose worker ran the first workflow task of a
// workflow's first run (first), or the last of its current run.
func workedBy(ctx context.Context, t *testing.T, e *env, id string, first bool) string {
	t.Helper()
	run := ""
	if first {
		d, err := dialSDK(t, e).DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		run = d.GetWorkflowExecutionInfo().GetFirstRunId()
	}
	hosts, _ := runHosts(ctx, t, e, id, run)
	switch {
	case len(hosts) == 0:
		return ""
	case first:
		return hosts[0]
	}
	return hosts[len(hosts)-1]
}

// runHosts names the host of each workflow task a run completed and of
// each activity attempt it started, in order: the host part of axlrd's
// worker identity, axlrd@HOST:PID:RANDOM.
func runHosts(ctx context.Context, t *testing.T, e *env, id, run string) (tasks, activities []string) {
	t.Helper()
	host := func(identity string) string {
		rest, _ := strings.CutPrefix(identity, "axlrd@")
		h, _, _ := strings.Cut(rest, ":")
		return h
	}
	it := dialSDK(t, e).GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			tasks = append(tasks, host(a.GetIdentity()))
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			activities = append(activities, host(a.GetIdentity()))
		}
	}
	return tasks, activities
}
