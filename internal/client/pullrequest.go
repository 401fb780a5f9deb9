package client

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	sdkclient "go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// ErrNoPullRequest: the job has not opened its pull request yet.
var ErrNoPullRequest = errors.New("no pull request yet")

// PullRequestView is a job's pull request as the forge reports it now.
type PullRequestView struct {
	// Job is the job's id, Repository its repository (owner/name).
	Job        string
	Repository string
	// PullRequest carries the state (open or closed, Merged), GitHub's
	// mergeable_state and the head SHA.
	PullRequest pull.Request
	// Checks are the head SHA's check runs and commit statuses, each
	// passed, pending or failed.
	Checks pull.Checks
}

// State is "merged", "closed" or "open".
func (v PullRequestView) State() string {
	if v.PullRequest.Merged {
		return "merged"
	}
	return v.PullRequest.State
}

// PullRequest reads the job's record from the registry, then has axlrd
// read its pull request and the checks of its head once, with axlrd's own
// forge client (workflows.PullRead), so the client needs no forge token.
// A job without a pull request yet is ErrNoPullRequest; a forge that
// could not be read, or that axlrd cannot reach (no GitHub client), is an
// error that names the job, the pull request and the forge's reason.
func (c *Client) PullRequest(ctx context.Context, jobID string) (PullRequestView, error) {
	rec, err := c.Job(ctx, jobID)
	if err != nil {
		return PullRequestView{}, err
	}
	if rec.PullRequest == 0 {
		return PullRequestView{}, fmt.Errorf("job %s (%s): %w", rec.ID, rec.Status, ErrNoPullRequest)
	}
	about := fmt.Sprintf("job %s, pull request #%d", rec.ID, rec.PullRequest)
	rid, err := session.NewID()
	if err != nil {
		return PullRequestView{}, fmt.Errorf("%s: %w", about, err)
	}
	run, err := c.tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID:        workflows.PullReadWorkflowID(rec.ID, rid),
		TaskQueue: c.taskQueue(),
		// A start retried after a lost answer attaches to its read.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowExecutionTimeout: workflows.PullReadTimeout,
	}, workflows.PullReadWorkflow, workflows.PullReadInput{Job: rec.ID, Read: workflows.ReadInput{Repository: rec.Repository, Number: rec.PullRequest}})
	if err != nil {
		return PullRequestView{}, fmt.Errorf("%s: %w", about, c.reached(err))
	}
	var res workflows.ReadResult
	if err := run.Get(ctx, &res); err != nil {
		var app *sdktemporal.ApplicationError
		if errors.As(err, &app) {
			return PullRequestView{}, &RefusedError{Message: app.Message(), Err: err}
		}
		return PullRequestView{}, fmt.Errorf("%s: %w", about, c.reached(err))
	}
	if res.Error != "" {
		return PullRequestView{}, fmt.Errorf("%s: %s", about, res.Error)
	}
	return PullRequestView{Job: rec.ID, Repository: rec.Repository, PullRequest: res.PullRequest, Checks: res.Checks}, nil
}
