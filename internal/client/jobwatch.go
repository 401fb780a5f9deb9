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

// JobEnd is where a job's watch stopped: the job waits for the person
// (Record.Pending is set) or it ended. Result is the job's execution
// result when its workflow has finished, else nil.
type JobEnd struct {
	Record jobs.Record
	Result *contract.Result
}

// WatchJob follows a job's session until the job next waits for the
// person or ends, handing each event of its execution to w. Like Watch it
// outlives an axlrd restart: while axlrd does not answer it tells w once
// and asks again every RetryInterval. A job whose workflow does not exist
// (it was admitted and never started) is an error that says to recover
// it.
func (c *Client) WatchJob(ctx context.Context, id string, w Watcher) (JobEnd, error) {
	ex := Execution{WorkflowID: workflows.JobWorkflowID(id), ExecutionID: id}
	after := 0
	link := &link{w: w}
	var unanswered unanswered
	pc := c.pace(ctx, ex.WorkflowID)
	defer pc.stop()
	// events hands w the events after the last it saw; done is the
	// execution's result once the workflow has finished.
	events := func() (done *contract.Result, err error) {
		p, err := c.progress(ctx, ex, after)
		if err != nil {
			return nil, err
		}
		for _, ev := range p.Events {
			w.Event(ev)
		}
		after = p.Next
		return p.Result, nil
	}
	for {
		if err := pc.wait(ctx); err != nil {
			return JobEnd{}, err
		}
		done, err := events()
		var rec jobs.Record
		if err == nil {
			rec, err = c.JobNow(ctx, id)
		}
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return JobEnd{}, fmt.Errorf("job %s has no workflow in axlrd (it was admitted but not started, or its history is gone): axlr-tui jobs recover %s starts it", id, id)
		}
		if msg, end := unanswered.final(err); end {
			return JobEnd{}, fmt.Errorf("watch job %s: %s", id, msg)
		}
		if err != nil {
			if ctx.Err() != nil {
				return JobEnd{}, ctx.Err()
			}
			link.lost(err)
			pc.failed()
			continue
		}
		link.back()
		switch {
		case done != nil:
			return JobEnd{Record: rec, Result: done}, nil
		case rec.Pending != nil:
			// The events up to the wait, then stop.
			if _, err := events(); err != nil && ctx.Err() != nil {
				return JobEnd{}, ctx.Err()
			}
			return JobEnd{Record: rec}, nil
		}
		pc.answered()
	}
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
