package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// AdmitJob asks the job registry to admit a job, starting the registry on
// the cluster queue when it is not running yet. The registry applies its rules to
// every client's jobs at once; a refusal is a *workflows.JobRefusedError. An empty
// req.RequestID gets a new id; a retried request gets the same record.
func (c *Client) AdmitJob(ctx context.Context, req workflows.AdmitRequest) (jobs.Record, error) {
	if req.RequestID == "" {
		id, err := session.NewID()
		if err != nil {
			return jobs.Record{}, fmt.Errorf("admit job: %w", err)
		}
		req.RequestID = id
	}
	start := c.tc.NewWithStartWorkflowOperation(sdkclient.StartWorkflowOptions{
		ID:                       workflows.RegistryWorkflowID,
		TaskQueue:                workflows.ClusterTaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.RegistryWorkflow, workflows.RegistryInput{})
	h, err := c.tc.UpdateWithStartWorkflow(ctx, sdkclient.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: sdkclient.UpdateWorkflowOptions{
			UpdateID: req.RequestID, UpdateName: workflows.UpdateAdmit,
			WaitForStage: sdkclient.WorkflowUpdateStageCompleted, Args: []any{req},
		},
	})
	var rec jobs.Record
	if err == nil {
		err = h.Get(ctx, &rec)
	}
	if err != nil {
		return jobs.Record{}, c.jobRefused(err)
	}
	return rec, nil
}

// jobRefused is the registry's refusal as a *workflows.JobRefusedError, or err as
// refused makes it.
func (c *Client) jobRefused(err error) error {
	var app *sdktemporal.ApplicationError
	if errors.As(err, &app) && app.Type() == workflows.ErrTypeJobRefused {
		var ref jobs.Refusal
		if app.Details(&ref) == nil {
			return &workflows.JobRefusedError{Refusal: ref}
		}
	}
	return c.refused(err)
}

// Jobs lists every job the registry holds, newest first; none when the
// registry has not started yet.
func (c *Client) Jobs(ctx context.Context) ([]jobs.Record, error) {
	v, err := c.query(ctx, workflows.RegistryWorkflowID, "", workflows.QueryJobs)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return []jobs.Record{}, nil
	}
	if err != nil {
		return nil, c.reached(err)
	}
	out := []jobs.Record{}
	if err := v.Get(&out); err != nil {
		return nil, fmt.Errorf("decode the job registry's records: %w", err)
	}
	return out, nil
}

// Job returns one job's record.
func (c *Client) Job(ctx context.Context, id string) (jobs.Record, error) {
	all, err := c.Jobs(ctx)
	if err != nil {
		return jobs.Record{}, err
	}
	return jobs.Find(all, id)
}

// StartJob starts an admitted job's workflow on the cluster queue, placed
// on the host the registry chose (this host when it chose none). A
// retried start attaches to the job's workflow instead of starting a
// second one.
// The workflow sets its search attributes itself: an attribute the
// namespace has just registered may not be known to the frontend yet, and
// a start that carried it would be refused.
func (c *Client) StartJob(ctx context.Context, in workflows.JobInput) error {
	if in.Host == "" {
		in.Host = c.hostID
	}
	_, err := c.tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID:                       workflows.JobWorkflowID(in.Record.ID),
		TaskQueue:                workflows.ClusterTaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.JobWorkflow, in)
	if err != nil {
		return c.refused(err)
	}
	return nil
}

// JobNow reads a job's record from its workflow, as it is now.
func (c *Client) JobNow(ctx context.Context, id string) (jobs.Record, error) {
	v, err := c.query(ctx, workflows.JobWorkflowID(id), "", workflows.QueryJob)
	if err != nil {
		return jobs.Record{}, c.reached(err)
	}
	var rec jobs.Record
	if err := v.Get(&rec); err != nil {
		return jobs.Record{}, fmt.Errorf("decode job %s: %w", id, err)
	}
	return rec, nil
}

// Retry is an activity of a job's workflow whose last attempt failed and
// that is tried again: a clone on a network that does not answer, a forge
// call answered 502, a model request answered 429.
type Retry struct {
	// ID is the activity's id in its workflow; Activity is its type
	// (forge.Prepare, session.ModelRequest).
	ID, Activity string
	// Attempt is the attempt running or next; MaxAttempts bounds them (0:
	// no bound).
	Attempt, MaxAttempts int32
	// Failure is why the last attempt failed.
	Failure string
	// Next is when the next attempt starts; zero while one runs.
	Next time.Time
}

// JobRetries lists a job's activities that failed and are tried again, as
// its workflow's pending activities show them: the record says only where
// the job stands ("preparing"), not that its clone failed three times.
func (c *Client) JobRetries(ctx context.Context, id string) ([]Retry, error) {
	var resp *workflowservice.DescribeWorkflowExecutionResponse
	err := c.bounded(ctx, func(ctx context.Context) (err error) {
		resp, err = c.tc.DescribeWorkflowExecution(ctx, workflows.JobWorkflowID(id), "")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retries of job %s: %w", id, err)
	}
	var out []Retry
	for _, p := range resp.GetPendingActivities() {
		if p.GetAttempt() < 2 || p.GetLastFailure() == nil {
			continue
		}
		r := Retry{ID: p.GetActivityId(), Activity: p.GetActivityType().GetName(), Attempt: p.GetAttempt(), MaxAttempts: p.GetMaximumAttempts(),
			Failure: p.GetLastFailure().GetMessage()}
		if p.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED && p.GetNextAttemptScheduleTime() != nil {
			r.Next = p.GetNextAttemptScheduleTime().AsTime()
		}
		out = append(out, r)
	}
	return out, nil
}

// DecideJob sends the person's decision on what a job waits for; the
// job's workflow refuses a decision for another job or another wait. An
// empty dec.RequestID gets a new id.
func (c *Client) DecideJob(ctx context.Context, dec workflows.JobDecision) (jobs.Record, error) {
	if dec.RequestID == "" {
		id, err := session.NewID()
		if err != nil {
			return jobs.Record{}, fmt.Errorf("decide job %s: %w", dec.Job, err)
		}
		dec.RequestID = id
	}
	h, err := c.tc.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: workflows.JobWorkflowID(dec.Job), UpdateID: dec.RequestID, UpdateName: workflows.UpdateJobDecide,
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted, Args: []any{dec},
	})
	var rec jobs.Record
	if err == nil {
		err = h.Get(ctx, &rec)
	}
	if err != nil {
		return jobs.Record{}, c.refused(err)
	}
	return rec, nil
}

// RecoverJob runs an interrupted job again: the registry takes it back
// into a free slot (a refusal is a *workflows.JobRefusedError), and its
// workflow starts again in the job's session and clone, its brief whole,
// and goes on with the job's MADE instance from what MADE and the forge
// recorded (the record's Recovery says how it went). A job that was
// admitted and whose workflow never started is started.
func (c *Client) RecoverJob(ctx context.Context, id, model string) (jobs.Record, error) {
	full, nowErr := c.JobNow(ctx, id)
	reg, err := c.Job(ctx, id)
	if err != nil {
		return jobs.Record{}, err
	}
	var nf *serviceerror.NotFound
	if reg.Status == jobs.Preparing && errors.As(nowErr, &nf) {
		in, err := c.jobInput(reg, model)
		if err != nil {
			return jobs.Record{}, err
		}
		return reg, c.StartJob(ctx, in)
	}
	if nowErr != nil {
		full = reg
	}
	rid, err := session.NewID()
	if err != nil {
		return jobs.Record{}, fmt.Errorf("recover job %s: %w", id, err)
	}
	h, err := c.tc.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: workflows.RegistryWorkflowID, UpdateID: rid, UpdateName: workflows.UpdateRecover,
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted,
		Args:         []any{workflows.RecoverRequest{RequestID: rid, Job: id, Limits: c.settings().JobLimits()}},
	})
	if err == nil {
		err = h.Get(ctx, &reg)
	}
	if err != nil {
		return jobs.Record{}, c.jobRefused(err)
	}
	why := cmp.Or(full.Reason, "interrupted")
	moved := full.Host != "" && reg.Host != full.Host
	full.Status, full.Pending, full.Reason, full.Updated, full.Recoveries = reg.Status, nil, "", reg.Updated, reg.Recoveries
	if moved {
		full.Moves = append(full.Moves, fmt.Sprintf("recovered on host %s; host %s, where it ran, is not live", reg.Host, full.Host))
	}
	full.Host = reg.Host
	in, err := c.jobInput(full, model)
	if err != nil {
		return full, err
	}
	in.Recovered = why
	if !moved {
		// Its session and clone are on its host: it goes on in them.
		in.SessionID = full.Session
	}
	if err := c.StartJob(ctx, in); err != nil {
		return full, fmt.Errorf("job %s was taken back but its workflow did not start (try axlr-tui jobs recover %s again): %w", id, id, err)
	}
	return full, nil
}
