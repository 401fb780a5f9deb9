package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	axlrclient "github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/daemon"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// Benchmarks of orchestration on the embedded server. Run them with
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/e2e/
//
// with AXLR_BENCH_SERVER_DEFAULTS=1 to compare with the server's default
// rate limits (the ~45 ms floor), and AXLR_BENCH_SQLITE_SYNC=full for the
// power-loss-safe database mode. They print figures; they assert nothing
// about time.

// serverDefaults restores the Temporal defaults Tuning changes.
var serverDefaults = map[string]any{
	"history.transferProcessorMaxPollRPS":   20,
	"history.timerProcessorMaxPollRPS":      20,
	"history.visibilityProcessorMaxPollRPS": 20,
	"matching.numTaskqueueReadPartitions":   4,
	"matching.numTaskqueueWritePartitions":  4,
	"matching.forwarderMaxRatePerSecond":    10,
}

func benchEnv(b *testing.B, script agenttest.Script) (*env, *inProcess, client.Client) {
	model := agenttest.NewServer(b, script)
	e := newEnv(b, model.URL)
	e.writeSettings(`{"model": "bench-model", "provider": {"stream": false}}`)
	opts := func(o *daemon.Options) {
		if os.Getenv("AXLR_BENCH_SERVER_DEFAULTS") == "1" {
			o.DynamicConfig = serverDefaults
		}
		o.SQLiteSync = os.Getenv("AXLR_BENCH_SQLITE_SYNC")
	}
	d := e.startWith(opts)
	c, err := client.Dial(client.Options{HostPort: d.info.Frontend, Namespace: d.info.Namespace, Logger: quiet{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return e, d, c
}

func noopActivity(context.Context) error { return nil }

func noopWorkflow(ctx workflow.Context, n int, local bool) error {
	for range n {
		var f workflow.Future
		if local {
			f = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute}), "bench.Noop")
		} else {
			f = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute}), "bench.Noop")
		}
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func benchmarkNoop(b *testing.B, local bool) {
	_, _, c := benchEnv(b, agenttest.Queue())
	w := worker.New(c, "bench", worker.Options{})
	w.RegisterWorkflowWithOptions(noopWorkflow, workflow.RegisterOptions{Name: "bench.NoopWorkflow"})
	w.RegisterActivityWithOptions(noopActivity, activity.RegisterOptions{Name: "bench.Noop"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	ctx := context.Background()
	// Warm up the task queue and the sticky cache.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "bench"}, "bench.NoopWorkflow", 3, local)
	if err != nil || run.Get(ctx, nil) != nil {
		b.Fatalf("warm up: %v", err)
	}
	b.ResetTimer()
	start := time.Now()
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "bench"}, "bench.NoopWorkflow", b.N, local)
	if err != nil {
		b.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/activity")
}

// BenchmarkNoopActivity is the floor of a regular activity on this server.
func BenchmarkNoopActivity(b *testing.B) { benchmarkNoop(b, false) }

// BenchmarkNoopLocalActivity is the floor of a local activity.
func BenchmarkNoopLocalActivity(b *testing.B) { benchmarkNoop(b, true) }

// startSession opens a new session on the e2e host with a prompt in a
// work mode (update-with-start of its execute update) and returns its
// workflow id and the execution's id.
func startSession(ctx context.Context, c client.Client, root, prompt, mode string) (string, string, error) {
	sid, _ := session.NewID()
	eid, _ := session.NewID()
	wid := workflows.SessionWorkflowID(sid)
	start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: wid, TaskQueue: workflows.HostTaskQueue("e2e"),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}, workflows.SessionWorkflow, workflows.SessionInput{SessionID: sid, Host: "e2e"})
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: start, UpdateOptions: client.UpdateWorkflowOptions{
		UpdateID: eid, UpdateName: workflows.UpdateExecute, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.ExecuteRequest{ExecutionID: eid, Prompt: prompt, Root: root, Mode: mode, Approval: policy.ApproveLocal}},
	}})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return "", "", fmt.Errorf("execute %q: %w", prompt, err)
	}
	return wid, eid, nil
}

// execute runs one execution of a new session to its result, polling the
// progress query.
func execute(b *testing.B, c client.Client, root string, prompt string) (string, *contract.Result) {
	b.Helper()
	ctx := context.Background()
	wid, eid, err := startSession(ctx, c, root, prompt, "normal")
	if err != nil {
		b.Fatal(err)
	}
	for {
		v, err := c.QueryWorkflow(ctx, wid, "", workflows.QueryProgress, workflows.ProgressQuery{ExecutionID: eid, After: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		var p workflows.Progress
		if err := v.Get(&p); err != nil {
			b.Fatal(err)
		}
		if p.Result != nil {
			if p.Result.Status != contract.Completed {
				b.Fatalf("execution %s: %s", p.Result.Status, p.Result.Error)
			}
			return wid, p.Result
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readsThenAnswer answers with one local_read call per request until n
// calls were made, then with text.
func readsThenAnswer(n func() int, path string) agenttest.Script {
	return func(req agenttest.Request) agenttest.Reply {
		done := toolResults(req)
		if done >= n() {
			return agenttest.Reply{Text: "done", Usage: &agenttest.Usage{PromptTokens: 10, CompletionTokens: 1}}
		}
		return agenttest.Reply{Usage: &agenttest.Usage{PromptTokens: 10, CompletionTokens: 1},
			ToolCalls: []agenttest.ToolCall{{ID: fmt.Sprintf("r%d", done), Name: "local_read", Arguments: `{"path":"` + path + `","max_bytes":1048576}`}}}
	}
}

// BenchmarkModelRequest measures a turn of b.N model requests with a
// zero-latency provider, each answered with one local_read, and reports the
// time per request with the read's share (measured by
// BenchmarkReadToolCall) included; both figures are printed.
func BenchmarkModelRequest(b *testing.B) {
	n := 0
	e, _, c := benchEnv(b, readsThenAnswer(func() int { return n }, "small.txt"))
	writeFile(b, e.workspace, "small.txt", "hello\n")
	n = 2
	execute(b, c, e.workspace, "warm up")
	n = b.N
	b.ResetTimer()
	start := time.Now()
	wid, _ := execute(b, c, e.workspace, "read small.txt again and again")
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N+1), "ms/request+read")
	b.StopTimer()
	reportBreakdown(b, c, wid)
}

// reportBreakdown reads where a model request's time went from the
// workflow history: the ModelRequest activity itself (store, transcript,
// provider round trip), the dispatch of the next workflow task, and the
// workflow task (the local_read local activity and the workflow code).
func reportBreakdown(b *testing.B, c client.Client, wid string) {
	it := c.GetWorkflowHistory(context.Background(), wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	phase := map[string]time.Duration{}
	count := map[string]int{}
	var last time.Time
	var prev enumspb.EventType
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		at := ev.GetEventTime().AsTime()
		name := ""
		switch {
		case prev == enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED && ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			name = "ms/activity-run"
		case prev == enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED && ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			name = "ms/task-dispatch"
		case prev == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED && ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			name = "ms/task-run"
		}
		if name != "" {
			phase[name] += at.Sub(last)
			count[name]++
		}
		last, prev = at, ev.GetEventType()
	}
	for name, d := range phase {
		b.ReportMetric(float64(d.Microseconds())/1000/float64(count[name]), name)
	}
}

// BenchmarkReadToolCall measures local_read calls: one response carries
// b.N of them.
func BenchmarkReadToolCall(b *testing.B) {
	n := 0
	e, _, c := benchEnv(b, func(req agenttest.Request) agenttest.Reply {
		if toolResults(req) > 0 {
			return agenttest.Reply{Text: "done"}
		}
		calls := make([]agenttest.ToolCall, n)
		for i := range calls {
			calls[i] = agenttest.ToolCall{ID: fmt.Sprintf("r%d", i), Name: "local_read", Arguments: `{"path":"small.txt"}`}
		}
		return agenttest.Reply{ToolCalls: calls}
	})
	writeFile(b, e.workspace, "small.txt", "hello\n")
	n = 2
	execute(b, c, e.workspace, "warm up")
	n = b.N
	b.ResetTimer()
	start := time.Now()
	execute(b, c, e.workspace, "read small.txt many times")
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/read")
}

// BenchmarkHistoryBytes reports the workflow history bytes per model request
// when the transcript holds 10 KB and 1 MB: the first request reads a file of
// that size, so the transcript grows by it while history only records the
// compact results. b.N model requests follow.
func BenchmarkHistoryBytes(b *testing.B) {
	for _, size := range []int{10 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("transcript=%dKB", size>>10), func(b *testing.B) {
			n := 0
			e, _, c := benchEnv(b, func(req agenttest.Request) agenttest.Reply {
				done := toolResults(req)
				switch {
				case done == 0:
					return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "big", Name: "local_read", Arguments: `{"path":"big.txt","max_bytes":1048576}`}}}
				case done <= n:
					return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: fmt.Sprintf("s%d", done), Name: "local_read", Arguments: `{"path":"small.txt"}`}}}
				}
				return agenttest.Reply{Text: "done"}
			})
			writeFile(b, e.workspace, "big.txt", strings.Repeat("0123456789abcde\n", size/16))
			writeFile(b, e.workspace, "small.txt", "hello\n")
			n = b.N
			wid, _ := execute(b, c, e.workspace, "read big.txt, then small.txt")
			total := historyBytes(b, c, wid)
			// The execution made b.N+2 model requests.
			b.ReportMetric(float64(total)/float64(b.N+2), "history-B/request")
			b.ReportMetric(float64(total), "history-B")
		})
	}
}

func historyBytes(b *testing.B, c client.Client, wid string) int {
	it := c.GetWorkflowHistory(context.Background(), wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	total := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		total += proto.Size(ev)
	}
	return total
}

func writeFile(tb testing.TB, dir, name, content string) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

// BenchmarkCeremonyStep measures a ceremony step's orchestration on the
// embedded server — claim, a zero-latency model request that hands the step
// back, the check (`true`), completion and transition — over /delivery's
// three steps, read from workflow history between the approval of the
// first check and the last transition.
func BenchmarkCeremonyStep(b *testing.B) {
	_, _, c := benchEnv(b, func(req agenttest.Request) agenttest.Reply {
		r, isReply := lastReply(req)
		switch {
		case !isReply:
			return stepDone("b", `{"criteria": "c", "scope": "s", "check_command": {"program": "true"}}`)
		case r.NextStep == "build":
			return stepDone("u", `{"summary": "done"}`)
		case r.NextStep == "integrate":
			return stepDone("i", `{"report": "r", "summary_en": "s"}`)
		}
		return agenttest.Reply{Text: "delivered"}
	})
	root := b.TempDir()
	ctx := context.Background()
	var total time.Duration
	steps := 0
	for range b.N {
		wid, eid, err := startSession(ctx, c, root, "deliver", "delivery")
		if err != nil {
			b.Fatal(err)
		}
		waitResult(b, c, wid, eid)
		did, _ := session.NewID()
		dh, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wid, UpdateID: did, UpdateName: workflows.UpdateDecide,
			WaitForStage: client.WorkflowUpdateStageCompleted, Args: []any{workflows.DecideRequest{ExecutionID: did, Decision: contract.Approve}}})
		if err != nil || dh.Get(ctx, nil) != nil {
			b.Fatalf("decide: %v", err)
		}
		if r := waitResult(b, c, wid, did); r.Ceremony == nil || r.Ceremony.State != "COMPLETED" {
			b.Fatalf("ceremony %+v", r.Ceremony)
		}
		from, to := ceremonySpan(b, c, wid)
		total += to.Sub(from)
		steps += 3
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(steps), "ms/step")
}

func waitResult(b *testing.B, c client.Client, wid, eid string) *contract.Result {
	for {
		v, err := c.QueryWorkflow(context.Background(), wid, "", workflows.QueryProgress, workflows.ProgressQuery{ExecutionID: eid, After: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		var p workflows.Progress
		if err := v.Get(&p); err != nil {
			b.Fatal(err)
		}
		if p.Result != nil {
			return p.Result
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ceremonySpan reads, from history, when the decide update was accepted and
// when the last transition was recorded.
func ceremonySpan(b *testing.B, c client.Client, wid string) (time.Time, time.Time) {
	t, err := axlrclient.LoadTrajectory(context.Background(), c, wid)
	if err != nil {
		b.Fatal(err)
	}
	var from, to time.Time
	for _, s := range t.Steps {
		switch {
		case s.Kind == "update" && s.Name == workflows.UpdateDecide:
			from = s.Time
		case s.Name == workflows.ActivityCeremonyTransition:
			to = s.Time
		}
	}
	return from, to
}
