package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// Queue implements workflows.QueueActivities: the merge queue's reads of
// a job's workflow and the approval it hands it, over Temporal. A job
// whose workflow is gone, or that refuses the approval, is a result the
// queue acts on, not an error; an error is a Temporal that did not answer,
// and is retried.
type Queue struct {
	// Client reaches the jobs' workflows. Default: the worker's own
	// client (activity.GetClient).
	Client client.Client
	// HeartbeatEvery is how often a call heartbeats while it waits
	// (default 2 s), well within QueueOptions' heartbeat timeout.
	HeartbeatEvery time.Duration
}

var _ workflows.QueueActivities = (*Queue)(nil)

func (q *Queue) client(ctx context.Context) client.Client { return orWorkerClient(ctx, q.Client) }

// orWorkerClient is c, else the client of the worker running the activity.
func orWorkerClient(ctx context.Context, c client.Client) client.Client {
	if c != nil {
		return c
	}
	return activity.GetClient(ctx)
}

// JobNow reads job in.Job's record: from its workflow's Query while it
// runs, from its result once it completed. No workflow, or one that ended
// without a result (terminated, timed out), gives Missing.
func (q *Queue) JobNow(ctx context.Context, in workflows.QueueJobInput) (workflows.QueueJobResult, error) {
	if strings.TrimSpace(in.Job) == "" {
		return workflows.QueueJobResult{}, temporal.NewNonRetryableApplicationError("read a job: the job id is empty", workflows.ErrTypeBadRequest, nil)
	}
	stop := heartbeat(ctx, q.HeartbeatEvery, func() any { return "read job " + in.Job })
	defer stop()
	c := q.client(ctx)
	id := workflows.JobWorkflowID(in.Job)
	missing := func() (workflows.QueueJobResult, error) {
		return workflows.QueueJobResult{Missing: fmt.Sprintf("job %s has no workflow (%s)", in.Job, id)}, nil
	}
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if isNotFound(err) {
		return missing()
	}
	if err != nil {
		return workflows.QueueJobResult{}, fmt.Errorf("describe the workflow of job %s: %w", in.Job, err)
	}
	var rec jobs.Record
	switch status := d.GetWorkflowExecutionInfo().GetStatus(); status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryJob)
		if isNotFound(err) {
			return missing()
		}
		if err == nil {
			err = v.Get(&rec)
		}
		if err != nil {
			return workflows.QueueJobResult{}, fmt.Errorf("query job %s: %w", in.Job, err)
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &rec); err != nil {
			return workflows.QueueJobResult{}, fmt.Errorf("read the result of job %s: %w", in.Job, err)
		}
	default:
		return workflows.QueueJobResult{Missing: fmt.Sprintf("job %s's workflow ended %s, without a record",
			in.Job, strings.ToLower(status.String()))}, nil
	}
	return workflows.QueueJobResult{Record: rec}, nil
}

// Approve hands job in.Job the merge approval: the job-decide Update under
// in.RequestID, so a retried call, or one repeated after a crash, is
// applied once; it answers once the job has taken the decision. The
// job's refusal (it waits for no merge, or already has a decision) and a
// workflow that no longer runs give Refused.
func (q *Queue) Approve(ctx context.Context, in workflows.QueueApproveInput) (workflows.QueueApproveResult, error) {
	switch {
	case strings.TrimSpace(in.RequestID) == "":
		return workflows.QueueApproveResult{}, temporal.NewNonRetryableApplicationError("approve a job: the request id is empty", workflows.ErrTypeBadRequest, nil)
	case strings.TrimSpace(in.Job) == "":
		return workflows.QueueApproveResult{}, temporal.NewNonRetryableApplicationError("approve a job: the job id is empty", workflows.ErrTypeBadRequest, nil)
	}
	stop := heartbeat(ctx, q.HeartbeatEvery, func() any { return "approve job " + in.Job })
	defer stop()
	// The head the queue saw green: the job merges under it.
	dec := workflows.JobDecision{RequestID: in.RequestID, Job: in.Job, Kind: jobs.PendingMerge, Approve: true, Reason: in.Reason, HeadSHA: in.HeadSHA}
	h, err := q.client(ctx).UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.JobWorkflowID(in.Job), UpdateID: in.RequestID, UpdateName: workflows.UpdateJobDecide,
		WaitForStage: client.WorkflowUpdateStageCompleted, Args: []any{dec},
	})
	var rec jobs.Record
	if err == nil {
		err = h.Get(ctx, &rec)
	}
	var app *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		return workflows.QueueApproveResult{Record: rec}, nil
	case isNotFound(err):
		return workflows.QueueApproveResult{Refused: fmt.Sprintf("job %s's workflow is not running", in.Job)}, nil
	case errors.As(err, &app):
		// The Update's own failure: its validator's refusal, or the
		// handler's error.
		return workflows.QueueApproveResult{Refused: app.Message()}, nil
	case errors.As(err, &canceled):
		return workflows.QueueApproveResult{Refused: fmt.Sprintf("job %s was cancelled before it took the approval", in.Job)}, nil
	}
	return workflows.QueueApproveResult{}, fmt.Errorf("approve the merge of job %s: %w", in.Job, err)
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
