package workflows

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Many hosts share one Temporal namespace. Each axlrd polls two task
// queues: ClusterTaskQueue, which every host polls, and its own
// HostTaskQueue. The job registry, the merge queues and the jobs' own
// workflow code run on the cluster queue, so they go on while any host is
// up. A job is placed on a host by the registry; every activity of the job
// that touches the host's disk (its clone, its session log, its checks,
// its MADE and memory calls, which run where the session store is) goes to
// that host's queue, in the worker-specific task queue pattern, and the
// forge's API calls stay on the cluster queue. Sessions and plans work in
// a person's own directory. A session runs on its host's queue. A plan's
// own code runs on the cluster queue, so any host answers for it and takes
// its decisions, and all of its work (its activities, its task workers)
// runs on the queue of the host it was started on, and stays there: while
// that host is down the work waits for it, and goes on when it is back.
//
// A host is lost for a job when an activity on its queue fails for want
// of its worker (a heartbeat or schedule-to-start timeout) and nothing of
// the host has been seen (a poll of its queue, an announcement to the
// registry) for the job's HostLost bound. The job then continues as new on
// the live host the registry names, from the steps MADE recorded.

// ClusterTaskQueue is the task queue every axlrd polls.
const ClusterTaskQueue = "axlr-cluster"

// Changes in flight for the cluster, by workflow.GetVersion id.
const (
	// versionJobPlacement runs a job started on the cluster queue on its
	// host's queue, and moves it when that host is lost.
	versionJobPlacement = "job-placement"
	// versionClusterQueue moves the registry and the merge queues, started
	// on a host's queue before, onto the cluster queue.
	versionClusterQueue = "cluster-queue"
	// versionHostProbe first waits hostProbe, not the whole bound, for a
	// placed job's activity to be taken, then asks when its host was seen:
	// a host lost mid-activity is then lost host_lost_seconds after its
	// last poll, not that long after the activity's heartbeat timed out.
	versionHostProbe = "host-probe"
	// versionPlanPlacement runs a plan started on the cluster queue with its
	// work on its host's queue.
	versionPlanPlacement = "plan-placement"
)

// hostProbe is how long a placed job's activity first waits in its host's
// queue before the job asks when the host was last seen.
const hostProbe = 2 * time.Second

// Activities of the cluster, run on the cluster queue.
const (
	// ActivityHostAlive says when a host was last seen: HostAliveInput,
	// HostAliveResult.
	ActivityHostAlive = "cluster.HostAlive"
	// ActivityPlace asks the registry for a host for a job whose host was
	// lost: PlaceInput, PlaceResult.
	ActivityPlace = "cluster.Place"
)

// HostAliveInput asks about a host.
type HostAliveInput struct {
	Host string `json:"host"`
}

// HostAliveResult is when the host was last seen: the last poll of its
// queue or its last announcement, whichever is later (zero: never).
type HostAliveResult struct {
	Seen time.Time `json:"seen"`
}

// PlaceInput asks the registry to place a job again, on another host than
// Lost. RequestID makes a retried request place it once.
type PlaceInput struct {
	RequestID string `json:"request_id"`
	Job       string `json:"job"`
	Lost      string `json:"lost"`
}

// PlaceResult is the job's new host.
type PlaceResult struct {
	Host string `json:"host"`
}

// ClusterOptions run the cluster's own activities: quick calls of the
// Temporal frontend, retried while it does not answer.
var ClusterOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
}

// DefaultHostLost is how long a host goes unseen before its jobs move,
// when a job's settings name no bound (cluster.host_lost_seconds).
const DefaultHostLost = 60 * time.Second

// placement is where a placed workflow's host-bound activities run. A
// job's moves when its host is lost for lost; a plan's stays, and its work
// waits for the host as long as the host is away.
type placement struct {
	host  string
	queue string
	lost  time.Duration
	stays bool
}

type placementKey struct{}

func withPlacement(ctx workflow.Context, p placement) workflow.Context {
	return workflow.WithValue(ctx, placementKey{}, p)
}

func placedOn(ctx workflow.Context) (placement, bool) {
	p, ok := ctx.Value(placementKey{}).(placement)
	return p, ok
}

// clusterActivities run on the cluster queue even for a placed job: they
// need no host's disk (the forge's API calls) or are the cluster's own.
var clusterActivities = map[string]bool{
	ActivityForgeIssue:  true,
	ActivityForgeRead:   true,
	ActivityForgeUpdate: true,
	ActivityForgeRerun:  true,
	ActivityForgeMerge:  true,
	ActivityHostAlive:   true,
	ActivityPlace:       true,
}

// HostLostError ends a placed job's run: its host is gone, and the job
// moves.
type HostLostError struct {
	Host string
	// Why is the activity that could not reach it, and since when the
	// host was not seen.
	Why string
}

func (e *HostLostError) Error() string { return fmt.Sprintf("host %s lost: %s", e.Host, e.Why) }

// executeLocal runs a short activity next to the workflow, as a local
// activity; for a placed job, whose workflow runs on any host, as a
// regular activity on its host's queue. The future's Get must be called
// with a context placed the same way (the caller's).
func executeLocal(ctx workflow.Context, opts workflow.LocalActivityOptions, name string, in any) workflow.Future {
	if _, placed := placedOn(ctx); !placed {
		return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), name, in)
	}
	return &hostFuture{name: name, in: in, opts: workflow.ActivityOptions{
		StartToCloseTimeout: cmp.Or(opts.StartToCloseTimeout, opts.ScheduleToCloseTimeout, 2*time.Minute),
		RetryPolicy:         opts.RetryPolicy,
	}}
}

// hostFuture is a local activity of a placed job, run on its host's queue
// when its result is asked for.
type hostFuture struct {
	name string
	in   any
	opts workflow.ActivityOptions
}

func (f *hostFuture) Get(ctx workflow.Context, out any) error {
	return executeActivity(ctx, f.opts, f.name, f.in, out)
}

func (f *hostFuture) IsReady() bool { return false }

// onHost runs a placed job's activity on its host's queue, and when the
// host does not take it within hostProbe, asks when the host was seen:
// seen within the bound, the activity is scheduled again for the rest of
// it (the host may be restarting); not seen, the host is lost.
func onHost(ctx workflow.Context, p placement, opts workflow.ActivityOptions, name string, in, out any) error {
	opts.TaskQueue = p.queue
	opts.ScheduleToStartTimeout = p.lost
	if workflow.GetVersion(ctx, versionHostProbe, workflow.DefaultVersion, 1) == 1 {
		opts.ScheduleToStartTimeout = min(p.lost, hostProbe)
	}
	for losses := 0; ; losses++ {
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), name, in).Get(ctx, out)
		if err == nil || !hostTrouble(err) {
			return err
		}
		if losses >= MaxWorkerLosses {
			return fmt.Errorf("%s lost its worker %d times: %w", name, losses, err)
		}
		var seen HostAliveResult
		cctx := workflow.WithActivityOptions(ctx, ClusterOptions)
		if err := workflow.ExecuteActivity(cctx, ActivityHostAlive, HostAliveInput{Host: p.host}).Get(cctx, &seen); err != nil {
			return fmt.Errorf("ask whether host %s is up: %w", p.host, err)
		}
		left := seen.Seen.Add(p.lost).Sub(workflow.Now(ctx))
		if left <= 0 {
			since := "the host was never seen"
			if !seen.Seen.IsZero() {
				since = "the host was not seen since " + seen.Seen.UTC().Format(time.RFC3339)
			}
			workflow.GetLogger(ctx).Warn("the job's host is lost", "activity", name, "host", p.host, "error", err)
			return &HostLostError{Host: p.host, Why: fmt.Sprintf("%s found no worker on %s; %s", name, p.queue, since)}
		}
		workflow.GetLogger(ctx).Warn("the job's host did not take an activity; trying it again while the host may come back",
			"activity", name, "host", p.host, "seen", seen.Seen, "error", err)
		opts.ScheduleToStartTimeout = max(left+time.Second, 2*time.Second)
	}
}

// hostTrouble reports an activity that failed for want of its host's
// worker: lost mid-run, or never taken.
func hostTrouble(err error) bool {
	if workerLost(err) {
		return true
	}
	var timeout *temporal.TimeoutError
	return errors.As(err, &timeout) && (timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START ||
		timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_START_TO_CLOSE)
}

// movedSession is the session a job opens on the host it moves to: a
// UUID (version 8) derived from the job and its move, so the workflow
// names it deterministically.
func movedSession(job string, recoveries int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "axlr moved session %s %d", job, recoveries))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
