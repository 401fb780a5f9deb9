package workflows

import (
	"strings"
	"time"

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
)

// QueueWorkflowID is the workflow id of the queue of repository (owner/name)
// and base branch.
func QueueWorkflowID(repository, base string) string {
	return "axlr-queue-" + strings.ReplaceAll(repository, "/", ".") + "-" + base
}

// QueueInput starts (or continues as new) a merge queue: its repository
// and base, how often it reads a pull request (repair.poll_seconds) and
// how long checks may take to settle (repair.watch_minutes), with the
// state it carries.
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
}

// QueueEntry is a queued job: its pull request as it was queued, when,
// what the queue is doing with it and the branch updates it used.
type QueueEntry struct {
	Job         string          `json:"job"`
	PullRequest int             `json:"pull_request"`
	HeadSHA     string          `json:"head_sha"`
	Queued      time.Time       `json:"queued"`
	State       jobs.QueueState `json:"state"`
	Note        string          `json:"note"`
	Updates     int             `json:"updates"`
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
