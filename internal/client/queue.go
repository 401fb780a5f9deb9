package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// QueueJob queues a job's merge in the merge queue of its repository and
// base, starting the queue when it does not run yet: the queue lands it
// when its turn comes, exactly as jobs approve would. Only a job that waits
// for its merge decision is queued; an interrupted one is recovered
// first. It answers the queue as it is then.
func (c *Client) QueueJob(ctx context.Context, id string) (workflows.QueueView, error) {
	rec, err := c.JobNow(ctx, id)
	if err != nil {
		if rec, err = c.Job(ctx, id); err != nil {
			return workflows.QueueView{}, err
		}
	}
	switch {
	case rec.Status == jobs.Interrupted:
		return workflows.QueueView{}, &RefusedError{Message: fmt.Sprintf("job %s is interrupted: recover it first with axlr-tui jobs recover %s, then queue it", id, id)}
	case rec.Pending == nil || rec.Pending.Kind != jobs.PendingMerge:
		return workflows.QueueView{}, &RefusedError{Message: fmt.Sprintf("job %s is %s: only a job that waits for its merge decision is queued", id, rec.Status)}
	case rec.Base == "":
		return workflows.QueueView{}, &RefusedError{Message: fmt.Sprintf("job %s does not name its base branch (it was admitted by an older axlrd): approve it with axlr-tui jobs approve %s", id, id)}
	}
	rid, err := session.NewID()
	if err != nil {
		return workflows.QueueView{}, fmt.Errorf("queue job %s: %w", id, err)
	}
	set := c.settings()
	start := c.tc.NewWithStartWorkflowOperation(sdkclient.StartWorkflowOptions{
		ID:                       workflows.QueueWorkflowID(rec.Repository, rec.Base),
		TaskQueue:                c.taskQueue(),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.QueueWorkflow, workflows.QueueInput{Repository: rec.Repository, Base: rec.Base, Poll: set.RepairPoll(), Watch: set.RepairWatch()})
	h, err := c.tc.UpdateWithStartWorkflow(ctx, sdkclient.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: sdkclient.UpdateWorkflowOptions{
			UpdateID: rid, UpdateName: workflows.UpdateQueueAdd, WaitForStage: sdkclient.WorkflowUpdateStageCompleted,
			Args: []any{workflows.QueueAddRequest{RequestID: rid, Job: id, PullRequest: rec.PullRequest, HeadSHA: rec.Pending.HeadSHA}},
		},
	})
	var view workflows.QueueView
	if err == nil {
		err = h.Get(ctx, &view)
	}
	if err != nil {
		return workflows.QueueView{}, c.refused(err)
	}
	return view, nil
}

// UnqueueJob takes a job off its merge queue; the job goes on waiting for
// its merge decision.
func (c *Client) UnqueueJob(ctx context.Context, id, reason string) (workflows.QueueView, error) {
	rec, err := c.Job(ctx, id)
	if err != nil {
		return workflows.QueueView{}, err
	}
	if rec.Queue == nil || rec.Queue.State == jobs.QueueEjected {
		return workflows.QueueView{}, &RefusedError{Message: fmt.Sprintf("job %s is not queued", id)}
	}
	rid, err := session.NewID()
	if err != nil {
		return workflows.QueueView{}, fmt.Errorf("unqueue job %s: %w", id, err)
	}
	h, err := c.tc.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: workflows.QueueWorkflowID(rec.Repository, rec.Base), UpdateID: rid, UpdateName: workflows.UpdateQueueRemove,
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted,
		Args:         []any{workflows.QueueRemoveRequest{RequestID: rid, Job: id, Reason: cmp.Or(strings.TrimSpace(reason), "taken off by the person")}},
	})
	var view workflows.QueueView
	if err == nil {
		err = h.Get(ctx, &view)
	}
	if err != nil {
		return workflows.QueueView{}, c.refused(err)
	}
	return view, nil
}

// Queues reads every merge queue the jobs' repositories and bases have, in
// repository then base order; a queue that never started is left out.
func (c *Client) Queues(ctx context.Context) ([]workflows.QueueView, error) {
	all, err := c.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range all {
		if r.Base != "" {
			ids = append(ids, workflows.QueueWorkflowID(r.Repository, r.Base))
		}
	}
	slices.Sort(ids)
	out := []workflows.QueueView{}
	for _, id := range slices.Compact(ids) {
		v, err := c.query(ctx, id, "", workflows.QueryQueue)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			return nil, c.reached(err)
		}
		var q workflows.QueueView
		if err := v.Get(&q); err != nil {
			return nil, fmt.Errorf("decode merge queue %s: %w", id, err)
		}
		out = append(out, q)
	}
	return out, nil
}
