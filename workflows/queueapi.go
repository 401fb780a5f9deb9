package workflows

import (
	"context"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
)

// The merge queue lands the pull requests of the jobs the person queued,
// one at a time, on a base that must be up to date before a merge: one
// long-lived workflow per repository and base branch. These are its names
// and the shapes its clients and the registry share.

// Names of the merge queue.
const (
	QueueWorkflow = "axlr.MergeQueue"
	// UpdateQueueAdd queues a job's merge (QueueAddRequest); its
	// validator refuses a job already queued. It answers the view.
	UpdateQueueAdd = "queue-add"
	// UpdateQueueRemove takes a job off the queue (QueueRemoveRequest),
	// answered with the view.
	UpdateQueueRemove = "queue-remove"
	// QueryQueue answers the queue's QueueView.
	QueryQueue = "queue"
	// SignalQueuePlace carries a job's place in its queue to the job
	// registry (QueuePlaceSignal), which shows it in the job's record.
	SignalQueuePlace = "queue-place"
)

// Bounds of the queue.
const (
	// MaxQueueUpdates is how many times the queue updates a job's branch
	// behind its base before it gives the job up.
	MaxQueueUpdates = 3
	// MaxQueueEjections bounds the ejections the queue remembers.
	MaxQueueEjections = 50
	// QueueBlockedReads is how many reads with green checks the forge may
	// still block the merge on before the queue gives the job up.
	QueueBlockedReads = 3
	// QueueMergeWait bounds the wait for a job to end once the queue has
	// handed it the approval.
	QueueMergeWait = 10 * time.Minute
	// QueueSettlePoll is how often the queue reads a job it handed the
	// approval to (or repair.poll_seconds, when that is shorter).
	QueueSettlePoll = 5 * time.Second
	// DefaultQueuePoll and DefaultQueueWatch stand for a QueueInput's
	// zero Poll and Watch.
	DefaultQueuePoll  = 30 * time.Second
	DefaultQueueWatch = 45 * time.Minute
)

// QueueWorkflowID is the workflow id of the queue of repository (owner/name)
// and base branch.
func QueueWorkflowID(repository, base string) string {
	return "axlr-queue-" + strings.ReplaceAll(repository, "/", ".") + "-" + base
}

// QueueInput starts (or continues as new) a merge queue: its repository
// and base, how often it reads a pull request (repair.poll_seconds) and
// how long checks may take to settle (repair.watch_minutes), with the
// state it carries. A zero Poll is DefaultQueuePoll, a zero Watch
// DefaultQueueWatch.
type QueueInput struct {
	Repository string        `json:"repository"`
	Base       string        `json:"base"`
	Poll       time.Duration `json:"poll"`
	Watch      time.Duration `json:"watch"`
	State      *QueueState   `json:"state,omitempty"`
}

// QueueState is what a queue carries over continue-as-new.
type QueueState struct {
	Entries []QueueEntry    `json:"entries,omitempty"`
	Ejected []QueueEjection `json:"ejected,omitempty"`
	// Applied are the last requests applied, so a retried one applies once.
	Applied []string `json:"applied,omitempty"`
	// Seq is the sequence number of the last entry queued.
	Seq int `json:"seq,omitempty"`
}

// QueueEntry is a queued job: its pull request, when it was queued, what
// the queue is doing with it and the branch updates it used. HeadSHA is
// the head as it was queued, then as the queue last read it.
type QueueEntry struct {
	Job         string          `json:"job"`
	PullRequest int             `json:"pull_request"`
	HeadSHA     string          `json:"head_sha"`
	Queued      time.Time       `json:"queued"`
	State       jobs.QueueState `json:"state"`
	Note        string          `json:"note"`
	Updates     int             `json:"updates"`
	// Seq tells this entry from an earlier one of the same job; the
	// approval's request id carries it.
	Seq int `json:"seq"`
	// Since is when the watch of the head began: when it became the head
	// or its branch was last updated; checks_stalled counts from it.
	Since time.Time `json:"since,omitempty"`
	// UpdatedFrom is the head before the last branch update, while the
	// forge still shows it.
	UpdatedFrom string `json:"updated_from,omitempty"`
	// BlockedReads counts the reads of HeadSHA with green checks that the
	// forge blocks.
	BlockedReads int `json:"blocked_reads,omitempty"`
	// Approval is the request id of the approval handed to the job, and
	// Handed when; once set the queue waits for the job to end and never
	// hands it again.
	Approval string    `json:"approval,omitempty"`
	Handed   time.Time `json:"handed,omitempty"`
}

// QueueEjection is a job the queue gave up, and why; the job still waits
// for its merge decision.
type QueueEjection struct {
	Job         string    `json:"job"`
	PullRequest int       `json:"pull_request"`
	Code        string    `json:"code"`
	Reason      string    `json:"reason"`
	At          time.Time `json:"at"`
}

// The codes of an ejection.
const (
	EjectFailedChecks     = "failed_checks"
	EjectConflict         = "conflict"
	EjectClosedOutside    = "closed_outside"
	EjectMergedOutside    = "merged_outside"
	EjectForgeBlocks      = "forge_blocks"
	EjectChecksStalled    = "checks_stalled"
	EjectNotMerged        = "not_merged"
	EjectUpdatesExhausted = "updates_exhausted"
	EjectUnreadable       = "unreadable"
	EjectUnqueued         = "unqueued"
	EjectJobLeft          = "job_left"
	EjectUpdateFailed     = "update_failed"
)

// QueueAddRequest queues job's merge: its pull request and the head the
// person's decision would approve.
type QueueAddRequest struct {
	RequestID   string `json:"request_id"`
	Job         string `json:"job"`
	PullRequest int    `json:"pull_request"`
	HeadSHA     string `json:"head_sha"`
}

// QueueRemoveRequest takes job off the queue.
type QueueRemoveRequest struct {
	RequestID string `json:"request_id"`
	Job       string `json:"job"`
	Reason    string `json:"reason,omitempty"`
}

// QueueView is a queue as its Query answers it: the entries in order, the
// head first, and the recent ejections, newest first.
type QueueView struct {
	Repository string          `json:"repository"`
	Base       string          `json:"base"`
	Entries    []QueueEntry    `json:"entries"`
	Ejected    []QueueEjection `json:"ejected"`
}

// QueuePlaceSignal is a job's place in its queue, for the registry; a nil
// Place clears it.
type QueuePlaceSignal struct {
	Job   string           `json:"job"`
	Place *jobs.QueuePlace `json:"place"`
}

// Activity names of the merge queue: its reach into the jobs' workflows,
// through axlrd's Temporal client.
const (
	ActivityQueueJob     = "queue.JobNow"
	ActivityQueueApprove = "queue.Approve"
)

// QueueActivities are the merge queue's activities (besides the forge's
// Read and UpdateBranch).
type QueueActivities interface {
	JobNow(context.Context, QueueJobInput) (QueueJobResult, error)
	Approve(context.Context, QueueApproveInput) (QueueApproveResult, error)
}

// QueueOptions: one call to a job's workflow; a Temporal that does not
// answer is retried for a few minutes.
var QueueOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        2 * time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        6,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest},
	},
}

// QueueJobInput reads job Job's record from its workflow.
type QueueJobInput struct {
	Job string `json:"job"`
}

// QueueJobResult is the job's record as its workflow holds it now (its
// result, once the workflow completed); Missing says why there is none
// (no such workflow, or it ended without a record).
type QueueJobResult struct {
	Record  jobs.Record `json:"record"`
	Missing string      `json:"missing,omitempty"`
}

// QueueApproveInput hands the merge approval of job Job to its workflow:
// the job-decide Update under RequestID (so a retry applies once), for
// the head HeadSHA the queue saw green.
type QueueApproveInput struct {
	RequestID string `json:"request_id"`
	Job       string `json:"job"`
	HeadSHA   string `json:"head_sha"`
	Reason    string `json:"reason,omitempty"`
}

// QueueApproveResult is the job's record once it took the approval, or
// Refused: why its workflow would not take it (it waits for no merge, it
// is not running).
type QueueApproveResult struct {
	Record  jobs.Record `json:"record"`
	Refused string      `json:"refused,omitempty"`
}
