package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A job's pull request, as the jobs panel's g shows it, is read by axlrd:
// a short workflow runs the forge's read activity with axlrd's GitHub
// client, so the TUI holds no forge token and reads no forge itself.
//
// It is its own workflow, not an Update on the job's workflow, for two
// reasons. A job that ended (merged, blocked, failed) has no workflow
// left to take an Update, and its pull request is still worth a look.
// And every g would add an Update and an activity to the job's history,
// which is long-lived and replayed. A short workflow leaves the job's
// history as it is and needs no version guard in the job's code.

// PullReadWorkflow is the workflow type of one read of a job's pull
// request.
const PullReadWorkflow = "axlr.PullRead"

// PullReadWorkflowID is the workflow id of read request of job's pull
// request: each g is its own read; a start retried with the same request
// gets the same one.
func PullReadWorkflowID(job, request string) string {
	return "axlr-pull-" + job + "-" + request
}

// PullReadTimeout bounds a read's workflow, as its client starts it: the
// person waits for it, so a forge or a worker that does not answer
// becomes an error rather than a wait with no end.
const PullReadTimeout = 2 * time.Minute

// PullReadOptions: one read; an unreachable forge is tried three times,
// within PullReadTimeout.
var PullReadOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeForgeRefused},
	},
}

// ErrTypePullRead is a read that failed: axlrd's forge refused it (no
// GitHub client) or did not answer within PullReadOptions.
const ErrTypePullRead = "PullReadFailed"

// PullReadInput names the job whose pull request Read reads.
type PullReadInput struct {
	Job  string    `json:"job"`
	Read ReadInput `json:"read"`
}

// PullRead reads in.Job's pull request and its head's checks once, merged
// or closed as well as open. A forge that could not be read is the
// result's Error, as the watch gets it; axlrd without a GitHub client
// fails the read with an ErrTypePullRead error that says so.
func PullRead(ctx workflow.Context, in PullReadInput) (ReadResult, error) {
	r := in.Read
	if r.Repository == "" || r.Number <= 0 {
		return ReadResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("read the pull request of job %s: it names no repository (%q) or no number (%d)", in.Job, r.Repository, r.Number), ErrTypeBadRequest, nil)
	}
	r.ClosedChecks = true
	var res ReadResult
	if err := executeActivity(ctx, PullReadOptions, ActivityForgeRead, r, &res); err != nil {
		// The person reads this sentence in the panel: the activity's own
		// reason, not the SDK's chain of wrappers around it.
		return ReadResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("read pull request #%d of %s for job %s: %s", r.Number, r.Repository, in.Job, failureMessage(err)), ErrTypePullRead, nil)
	}
	return res, nil
}
