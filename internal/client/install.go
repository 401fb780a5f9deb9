package client

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	sdkclient "go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// InstallJob installs a merged job's candidate on this host (`jobs
// install`): over axlrd's executable, the axlr-tui beside it and tuiPath,
// the axlr-tui the caller runs, when it is set. It reads the job's record
// from the registry, runs the job's install workflow (a retried call
// attaches to the one running) and returns the record with Installed
// set. axlrd keeps running the build it started from until it is
// restarted. A job that is not merged, has no candidate or was installed
// already, and an install the host refuses, are a *RefusedError that says
// why.
func (c *Client) InstallJob(ctx context.Context, id, tuiPath string) (jobs.Record, error) {
	rec, err := c.Job(ctx, id)
	if err != nil {
		return jobs.Record{}, err
	}
	run, err := c.tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID:                       workflows.JobInstallWorkflowID(id),
		TaskQueue:                c.taskQueue(),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// An install that completed is not run again; one that was refused
		// may be, once what refused it is fixed.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, workflows.JobInstallWorkflow, workflows.JobInstallInput{Record: rec, TUIPath: tuiPath})
	if errors.As(err, new(*serviceerror.WorkflowExecutionAlreadyStarted)) {
		return jobs.Record{}, &RefusedError{Message: fmt.Sprintf("job %s is installed already: restart axlrd to run it", id), Err: err}
	}
	if err != nil {
		return jobs.Record{}, fmt.Errorf("install job %s: %w", id, c.reached(err))
	}
	var out jobs.Record
	if err := run.Get(ctx, &out); err != nil {
		var app *sdktemporal.ApplicationError
		if errors.As(err, &app) {
			return jobs.Record{}, &RefusedError{Message: app.Message(), Err: err}
		}
		return jobs.Record{}, fmt.Errorf("install job %s: %w", id, c.reached(err))
	}
	return out, nil
}
