package client

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// WatchJob follows a job's session until the job next waits for the
// person or ends, handing each event of its execution to w. Like Watch it
// outlives an axlrd restart: while axlrd does not answer it tells w once
// and asks again every RetryInterval. A job whose workflow does not exist
// (it was admitted and never started) is an error that says to recover
// it.
func (c *Client) WatchJob(ctx context.Context, id string, w Watcher) (JobEnd, error) {
	ex := Execution{WorkflowID: workflows.JobWorkflowID(id), ExecutionID: id}
	return follow(ctx, c, ex, w, "watch job "+id, func(ctx context.Context, wt *watch) (JobEnd, bool, error) {
		rec, done, err := record(ctx, wt, c.JobNow)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			return JobEnd{}, true, fmt.Errorf("job %s has no workflow in axlrd (it was admitted but not started, or its history is gone): axlr-tui jobs recover %s starts it", id, id)
		case err != nil:
			return JobEnd{}, false, err
		case done != nil:
			return JobEnd{Record: rec, Result: done}, true, nil
		case rec.Pending != nil:
			// The events up to the wait (follow hands them), then stop.
			if _, err := wt.progress(ctx); err != nil && ctx.Err() != nil {
				return JobEnd{}, true, ctx.Err()
			}
			return JobEnd{Record: rec}, true, nil
		}
		return JobEnd{}, false, nil
	})
}

// JobEnd is where a job's watch stopped: the job waits for the person
// (Record.Pending is set) or it ended. Result is the job's execution
// result when its workflow has finished, else nil.
type JobEnd struct {
	Record jobs.Record
	Result *contract.Result
}

// InterruptJob cancels a job's workflow: the job ends interrupted, its
// clone and pull request left as they are, and axlr-tui jobs recover runs
// it again.
func (c *Client) InterruptJob(ctx context.Context, id string) error {
	if err := c.tc.CancelWorkflow(ctx, workflows.JobWorkflowID(id), ""); err != nil {
		return c.refused(err)
	}
	return nil
}
