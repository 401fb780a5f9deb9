package activities

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	updatepb "go.temporal.io/api/update/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/grpc"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// jobsFrontend is a Temporal frontend holding jobs' workflows, as far as
// the queue's activities reach it: Describe, Query, the close event of a
// completed one and the job-decide Update, over gRPC.
type jobsFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu sync.Mutex
	// status and records are by workflow id; a workflow not in status is
	// not found.
	status  map[string]enumspb.WorkflowExecutionStatus
	records map[string]jobs.Record
	// refuse is the job-decide validator's refusal, by workflow id;
	// deny a frontend error every Update gets.
	refuse map[string]string
	deny   error
	// updates are the Updates received.
	updates []*workflowservice.UpdateWorkflowExecutionRequest
	queries []*workflowservice.QueryWorkflowRequest
}

func (f *jobsFrontend) payloads(v any) *commonpb.Payloads {
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		panic(err)
	}
	return p
}

func (f *jobsFrontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{Capabilities: &workflowservice.GetSystemInfoResponse_Capabilities{}}, nil
}

func (f *jobsFrontend) DescribeWorkflowExecution(_ context.Context, r *workflowservice.DescribeWorkflowExecutionRequest) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.status[r.GetExecution().GetWorkflowId()]
	if !ok {
		return nil, wire(serviceerror.NewNotFound("workflow not found for ID: " + r.GetExecution().GetWorkflowId()))
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: r.GetExecution(), Status: st}}, nil
}

func (f *jobsFrontend) QueryWorkflow(_ context.Context, r *workflowservice.QueryWorkflowRequest) (*workflowservice.QueryWorkflowResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, r)
	return &workflowservice.QueryWorkflowResponse{QueryResult: f.payloads(f.records[r.GetExecution().GetWorkflowId()])}, nil
}

func (f *jobsFrontend) GetWorkflowExecutionHistory(_ context.Context, r *workflowservice.GetWorkflowExecutionHistoryRequest) (*workflowservice.GetWorkflowExecutionHistoryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.records[r.GetExecution().GetWorkflowId()]
	return &workflowservice.GetWorkflowExecutionHistoryResponse{History: &historypb.History{Events: []*historypb.HistoryEvent{{
		EventId: 9, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes{
			WorkflowExecutionCompletedEventAttributes: &historypb.WorkflowExecutionCompletedEventAttributes{Result: f.payloads(rec)}},
	}}}}, nil
}

func (f *jobsFrontend) UpdateWorkflowExecution(_ context.Context, r *workflowservice.UpdateWorkflowExecutionRequest) (*workflowservice.UpdateWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, r)
	if f.deny != nil {
		return nil, wire(f.deny)
	}
	id := r.GetWorkflowExecution().GetWorkflowId()
	if f.status[id] != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, wire(serviceerror.NewNotFound("workflow execution already completed"))
	}
	ref := &updatepb.UpdateRef{WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-1"}, UpdateId: r.GetRequest().GetMeta().GetUpdateId()}
	out := &updatepb.Outcome{}
	if msg := f.refuse[id]; msg != "" {
		out.Value = &updatepb.Outcome_Failure{Failure: &failurepb.Failure{Message: msg, Source: "GoSDK",
			FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{Type: "*errors.errorString"}}}}
	} else {
		rec := f.records[id]
		rec.Status, rec.Pending = jobs.Running, nil
		f.records[id] = rec
		out.Value = &updatepb.Outcome_Success{Success: f.payloads(rec)}
	}
	return &workflowservice.UpdateWorkflowExecutionResponse{UpdateRef: ref, Outcome: out,
		Stage: enumspb.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED}, nil
}

// wire is a service error as the frontend sends it: a gRPC status with
// its details.
func wire(err error) error { return serviceerror.ToStatus(err).Err() }

// startFrontend serves f on 127.0.0.1 and returns a Queue whose client
// reaches it.
func startFrontend(t *testing.T, f *jobsFrontend) *Queue {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(s, f)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	c, err := client.NewLazyClient(client.Options{HostPort: l.Addr().String(), Namespace: "axlr"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &Queue{Client: c}
}

// runQueueActivity runs the activity name of q with in, as the worker
// registers it.
func runQueueActivity(t *testing.T, q *Queue, name string, in, out any) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(q, activity.RegisterOptions{Name: "queue."})
	v, err := env.ExecuteActivity(name, in)
	if err != nil {
		return err
	}
	return v.Get(out)
}

func awaitingMerge(id string) jobs.Record {
	return jobs.Record{ID: id, Status: jobs.AwaitingMerge, PullRequest: 11, HeadSHA: "h0",
		Pending: &jobs.Pending{Kind: jobs.PendingMerge, PullRequest: 11, HeadSHA: "h0"}}
}

// TestQueueJobNow: a running job is read by its Query, a completed one
// from its result; no workflow, or one that ended without a result, is
// Missing rather than an error.
func TestQueueJobNow(t *testing.T) {
	f := &jobsFrontend{
		status: map[string]enumspb.WorkflowExecutionStatus{
			"axlr-job-waiting":    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
			"axlr-job-merged":     enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
			"axlr-job-terminated": enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		},
		records: map[string]jobs.Record{
			"axlr-job-waiting": awaitingMerge("waiting"),
			"axlr-job-merged":  {ID: "merged", Status: jobs.Completed, MergeSHA: "m1"},
		},
	}
	q := startFrontend(t, f)
	cases := []struct {
		job     string
		status  jobs.Status
		missing string
	}{
		{"waiting", jobs.AwaitingMerge, ""},
		{"merged", jobs.Completed, ""},
		{"terminated", "", "job terminated's workflow ended terminated, without a record"},
		{"gone", "", "job gone has no workflow (axlr-job-gone)"},
	}
	for _, tc := range cases {
		t.Run(tc.job, func(t *testing.T) {
			var res workflows.QueueJobResult
			if err := runQueueActivity(t, q, workflows.ActivityQueueJob, workflows.QueueJobInput{Job: tc.job}, &res); err != nil {
				t.Fatal(err)
			}
			if res.Missing != tc.missing || res.Record.Status != tc.status || (tc.status != "" && res.Record.ID != tc.job) {
				t.Fatalf("result %+v, want status %q missing %q", res, tc.status, tc.missing)
			}
		})
	}
	if len(f.queries) != 1 || f.queries[0].GetQuery().GetQueryType() != workflows.QueryJob || f.queries[0].GetNamespace() != "axlr" {
		t.Fatalf("queries %v", f.queries)
	}
	var res workflows.QueueJobResult
	err := runQueueActivity(t, q, workflows.ActivityQueueJob, workflows.QueueJobInput{}, &res)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeBadRequest || !app.NonRetryable() {
		t.Fatalf("an empty job id: %v", err)
	}
}

// TestQueueApprove: the approval is the job-decide Update under the
// queue's request id, waited for until completed, carrying a merge
// approval for the head the queue saw green; the job's refusal and a
// workflow that is not running are Refused, a frontend that refuses the
// call an error.
func TestQueueApprove(t *testing.T) {
	f := &jobsFrontend{
		status: map[string]enumspb.WorkflowExecutionStatus{
			"axlr-job-waiting": enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
			"axlr-job-busy":    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
			"axlr-job-merged":  enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		},
		records: map[string]jobs.Record{"axlr-job-waiting": awaitingMerge("waiting"), "axlr-job-busy": awaitingMerge("busy")},
		refuse:  map[string]string{"axlr-job-busy": "decide: job busy already has a decision to apply"},
	}
	q := startFrontend(t, f)
	cases := []struct {
		job     string
		status  jobs.Status
		refused string
	}{
		{"waiting", jobs.Running, ""},
		{"busy", "", "decide: job busy already has a decision to apply"},
		{"merged", "", "job merged's workflow is not running"},
	}
	for _, tc := range cases {
		t.Run(tc.job, func(t *testing.T) {
			var res workflows.QueueApproveResult
			in := workflows.QueueApproveInput{RequestID: "queue:axlr-queue-o.r-main:" + tc.job + ":3", Job: tc.job, HeadSHA: "h1", Reason: "merge queue"}
			if err := runQueueActivity(t, q, workflows.ActivityQueueApprove, in, &res); err != nil {
				t.Fatal(err)
			}
			if res.Refused != tc.refused || res.Record.Status != tc.status {
				t.Fatalf("result %+v, want status %q refused %q", res, tc.status, tc.refused)
			}
		})
	}
	u := f.updates[0]
	if u.GetWorkflowExecution().GetWorkflowId() != "axlr-job-waiting" || u.GetRequest().GetMeta().GetUpdateId() != "queue:axlr-queue-o.r-main:waiting:3" ||
		u.GetRequest().GetInput().GetName() != workflows.UpdateJobDecide ||
		u.GetWaitPolicy().GetLifecycleStage() != enumspb.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED {
		t.Fatalf("update %v", u)
	}
	var sent map[string]any
	if err := converter.GetDefaultDataConverter().FromPayloads(u.GetRequest().GetInput().GetArgs(), &sent); err != nil {
		t.Fatal(err)
	}
	if sent["request_id"] != "queue:axlr-queue-o.r-main:waiting:3" || sent["job"] != "waiting" || sent["kind"] != string(jobs.PendingMerge) ||
		sent["approve"] != true || sent["head_sha"] != "h1" || sent["reason"] != "merge queue" {
		t.Fatalf("decision sent %v", sent)
	}

	f.deny = serviceerror.NewPermissionDenied("namespace axlr: not allowed", "")
	var res workflows.QueueApproveResult
	err := runQueueActivity(t, q, workflows.ActivityQueueApprove, workflows.QueueApproveInput{RequestID: "r", Job: "waiting"}, &res)
	if err == nil || !strings.Contains(err.Error(), "approve the merge of job waiting") || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("a frontend that refuses the call: %v", err)
	}
}
