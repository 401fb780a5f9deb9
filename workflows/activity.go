package workflows

import (
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A worker lost mid-activity is not a failure of the activity. When axlrd
// dies, the attempts it was running end in a heartbeat timeout, or sooner:
// the next axlrd fails them with ErrTypeWorkerLost as soon as it is ready
// (internal/daemon). Either way the workflow schedules the activity again
// with its whole retry budget, however many times axlrd dies, while the
// activity's own errors keep the bounds of its retry policy. Every regular
// activity of axlr is idempotent on its key, so running it again repeats
// nothing that completed.

// ErrTypeWorkerLost is the failure axlrd gives an attempt that a previous
// axlrd on the same state dir was running when it died.
const ErrTypeWorkerLost = "WorkerLost"

// MaxWorkerLosses bounds how often one activity is scheduled again after
// losing its worker, so a fault that looks like one cannot loop until the
// history is full.
const MaxWorkerLosses = 256

// versionWorkerLost guards scheduling an activity again after a worker
// loss: a run that failed on one before keeps failing there on replay.
const versionWorkerLost = "worker-lost-retry"

// executeActivity runs a regular activity and waits for it, scheduling it
// again when its worker was lost. A placed workflow's activity runs on its
// host's queue (onHost for a job).
func executeActivity(ctx workflow.Context, opts workflow.ActivityOptions, name string, in, out any) error {
	if p, placed := placedOn(ctx); placed && !clusterActivities[name] {
		if !p.stays {
			return onHost(ctx, p, opts, name, in, out)
		}
		opts.TaskQueue = p.queue
	}
	ctx = workflow.WithActivityOptions(ctx, opts)
	err := workflow.ExecuteActivity(ctx, name, in).Get(ctx, out)
	if err == nil || !workerLost(err) {
		return err
	}
	if workflow.GetVersion(ctx, versionWorkerLost, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return err
	}
	for losses := 1; workerLost(err); losses++ {
		if losses >= MaxWorkerLosses {
			return fmt.Errorf("%s lost its worker %d times: %w", name, losses, err)
		}
		workflow.GetLogger(ctx).Warn("worker lost; scheduling the activity again", "activity", name, "losses", losses, "error", err)
		err = workflow.ExecuteActivity(ctx, name, in).Get(ctx, out)
	}
	return err
}

// workerLost reports whether an activity ended because its worker was
// lost: a heartbeat timeout (every regular activity heartbeats from its
// own goroutine, so a silent one has lost its process) or the failure the
// next axlrd gave it.
func workerLost(err error) bool {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_HEARTBEAT {
		return true
	}
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == ErrTypeWorkerLost
}
