package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// dialAxlrd connects internal/client to the test's axlrd.
func dialAxlrd(t testing.TB, e *env) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), client.Options{Address: e.address(), Getenv: e.getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// dialSDK connects Temporal's own client to the test's axlrd.
func dialSDK(t testing.TB, e *env) sdkclient.Client {
	t.Helper()
	c, err := sdkclient.Dial(sdkclient.Options{HostPort: e.address(), Namespace: e.vars["AXLR_NAMESPACE"], Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newTask is a task input for the test's workspace with fresh ids.
func newTask(t *testing.T, e *env, prompt string) workflows.TaskInput {
	t.Helper()
	sid, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	eid, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	return workflows.TaskInput{ExecutionID: eid, SessionID: sid, Root: e.workspace, Prompt: prompt, Model: "test-model"}
}

// events collects what a watch saw.
type events struct {
	mu  sync.Mutex
	evs []contract.Event
}

func (w *events) Event(ev contract.Event) { w.mu.Lock(); w.evs = append(w.evs, ev); w.mu.Unlock() }
func (w *events) Unreachable(error)       {}
func (w *events) Back()                   {}

// TestTaskCompletes runs a one-shot task to COMPLETED: a fresh session
// writes the file with the workspace's tools approved, the workflow
// completes with the execution's result, and the task's session is found
// like any other by the CLI.
func TestTaskCompletes(t *testing.T) {
	model := agenttest.NewServer(t, changelogScript)
	e := newEnv(t, model.URL)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	in := newTask(t, e, "add a CHANGELOG entry for 1.2")
	ex, err := c.StartTask(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	var w events
	res, err := c.Watch(ctx, ex, &w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.Completed || res.SessionID != in.SessionID || res.Answer != "Added a CHANGELOG entry for 1.2." {
		t.Fatalf("result %+v", res)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Decision != contract.AutoApprove || res.ToolCalls[0].Status != contract.CallCompleted {
		t.Fatalf("tool calls %+v", res.ToolCalls)
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "CHANGELOG.md")); err != nil || len(b) == 0 {
		t.Fatalf("CHANGELOG.md: %q %v", b, err)
	}
	if last := w.evs[len(w.evs)-1]; last.Type != contract.EventCompleted {
		t.Fatalf("last event %+v", last)
	}
	desc, err := dialSDK(t, e).DescribeWorkflowExecution(ctx, ex.WorkflowID, "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("task workflow %v: %v", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	// axlr-tui finds the task's session.
	r := e.tui(ctx, "result", in.SessionID, "--json")
	if r.code != 0 {
		t.Fatalf("result: exit %d %s", r.code, r.stderr)
	}
	// A start retried after the end finds the task and runs nothing again.
	again, err := c.StartTask(ctx, in)
	if err != nil || again.WorkflowID != ex.WorkflowID {
		t.Fatalf("retried start: %+v, %v", again, err)
	}
	if res2, err := c.Watch(ctx, again, &events{}); err != nil || res2.Status != contract.Completed || model.Count() != 2 {
		t.Fatalf("retried start: result %+v, %v, %d model requests", res2, err, model.Count())
	}
	captureWorkflow(t, e, ex.WorkflowID, "task_completed")
}

// TestTaskThroughKill kills axlrd (SIGKILL) while the task's second model
// request is in flight: the restarted axlrd runs it again at once, and the
// task completes without sending the first request again or writing the
// file twice.
func TestTaskThroughKill(t *testing.T) {
	second := make(chan struct{})
	var mu sync.Mutex
	seen := map[int]int{}
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		n := toolResults(req)
		mu.Lock()
		seen[n]++
		arrival := seen[n]
		mu.Unlock()
		if n == 1 && arrival == 1 {
			close(second)
			return agenttest.Reply{Delay: 10 * time.Minute, Text: "too late"}
		}
		return changelogScript(req)
	})
	e := newEnv(t, model.URL)
	d := e.spawn()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	in := newTask(t, e, "add a CHANGELOG entry for 1.2")
	ex, err := c.StartTask(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-second:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no second request; axlrd:\n%s", d.stderr)
	}
	d.kill()
	d2 := e.spawn()
	res, err := c.Watch(ctx, ex, &events{})
	if err != nil {
		t.Fatalf("watch: %v\naxlrd:\n%s", err, d2.stderr)
	}
	if res.Status != contract.Completed || res.Answer != "Added a CHANGELOG entry for 1.2." {
		t.Fatalf("result %+v\naxlrd:\n%s", res, d2.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("requests by position: %v; want the first once and the second twice", seen)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Status != contract.CallCompleted {
		t.Fatalf("tool calls %+v", res.ToolCalls)
	}
	captureWorkflow(t, e, ex.WorkflowID, "task_worker_lost")
}
