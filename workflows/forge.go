package workflows

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/forge"
)

// The forge activities are a job's reach into git and GitHub: each one is
// one read or one change, idempotent on what it changes, so a retry after
// a crash finds what the first attempt did (the commit it made, the branch
// it pushed, the pull request it opened, the merge it landed) instead of
// doing it twice.

// Activity names of the forge.
const (
	ActivityForgePrepare = "forge.Prepare"
	ActivityForgeIssue   = "forge.Issue"
	ActivityForgePropose = "forge.Propose"
	ActivityForgeRead    = "forge.Read"
	ActivityForgeUpdate  = "forge.UpdateBranch"
	ActivityForgeRerun   = "forge.RerunFailed"
	ActivityForgeMerge   = "forge.Merge"
)

// ErrTypeForgeRefused is a forge's refusal that a retry cannot change (a
// stale head, a protection rule, a request GitHub refuses).
const ErrTypeForgeRefused = "ForgeRefused"

// ForgeOptions: one forge call; an unreachable forge is retried for a few
// minutes, a refusal is not.
var ForgeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        2 * time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        6,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeForgeRefused},
	},
}

// ForgeActivities are the activities of a job's forge.
type ForgeActivities interface {
	Prepare(context.Context, PrepareInput) (PrepareResult, error)
	Issue(context.Context, IssueInput) (forge.Issue, error)
	Propose(context.Context, ProposeInput) (ProposeResult, error)
	Read(context.Context, ReadInput) (ReadResult, error)
	UpdateBranch(context.Context, UpdateBranchInput) (UpdateBranchResult, error)
	RerunFailed(context.Context, RerunInput) (int, error)
	Merge(context.Context, MergeInput) (MergeResult, error)
}

// PrepareInput makes a job's clone: repository's remote cloned into
// Directory/ID with the job's marker, or the clone an earlier attempt
// made.
type PrepareInput struct {
	Job           string `json:"job"`
	Kind          string `json:"kind"`
	Repository    string `json:"repository"`
	Remote        string `json:"remote"`
	Directory     string `json:"directory"`
	Brief         string `json:"brief"`
	Issue         int    `json:"issue,omitempty"`
	OriginSession string `json:"origin_session,omitempty"`
	Build         string `json:"build,omitempty"`
	About         string `json:"about,omitempty"`
	// Created is the job's creation time, written in the marker.
	Created time.Time `json:"created"`
}

// PrepareResult is the clone.
type PrepareResult struct {
	Clone string `json:"clone"`
	Base  string `json:"base"`
	Head  string `json:"head"`
}

// IssueInput reads issue Number of Repository for a "#123" brief.
type IssueInput struct {
	Repository string `json:"repository"`
	Number     int    `json:"number"`
}

// ProposeInput commits the clone's changes on Branch, pushes it and finds
// or opens its pull request against Base.
type ProposeInput struct {
	Clone      string              `json:"clone"`
	Repository string              `json:"repository"`
	Branch     string              `json:"branch"`
	Base       string              `json:"base"`
	Commit     forge.CommitMessage `json:"commit"`
	Title      string              `json:"title"`
	Body       string              `json:"body"`
}

// ProposeResult is the pull request, or NothingChanged when the clone
// holds no change to propose.
type ProposeResult struct {
	NothingChanged bool   `json:"nothing_changed,omitempty"`
	PullRequest    int    `json:"pull_request,omitempty"`
	URL            string `json:"url,omitempty"`
	HeadSHA        string `json:"head_sha,omitempty"`
	// Opened: this call opened the pull request (false: it found it).
	Opened bool `json:"opened,omitempty"`
}

// ReadInput reads a pull request and the checks of its head, once.
type ReadInput struct {
	Repository string `json:"repository"`
	Number     int    `json:"number"`
}

// ReadResult is one read; Error says why the forge could not be read (the
// watch decides what that means), and is empty otherwise.
type ReadResult struct {
	PullRequest forge.PullRequest `json:"pull_request"`
	Checks      forge.Checks      `json:"checks"`
	Error       string            `json:"error,omitempty"`
}

// UpdateBranchInput updates a branch behind its base, guarded by the head
// the watch saw.
type UpdateBranchInput struct {
	Repository      string `json:"repository"`
	Number          int    `json:"number"`
	ExpectedHeadSHA string `json:"expected_head_sha"`
}

// UpdateBranchResult: Stale when the head had moved (nothing updated; read
// again).
type UpdateBranchResult struct {
	Stale bool `json:"stale,omitempty"`
}

// RerunInput reruns the failed jobs of the workflow runs of a head.
type RerunInput struct {
	Repository string `json:"repository"`
	HeadSHA    string `json:"head_sha"`
}

// MergeInput squash-merges a pull request guarded by the head the merge
// decision named, then deletes its branch.
type MergeInput struct {
	Repository string `json:"repository"`
	Number     int    `json:"number"`
	SHA        string `json:"sha"`
	Branch     string `json:"branch"`
	Title      string `json:"title"`
	Message    string `json:"message"`
}

// MergeResult is the squash commit, or why the forge refused the merge
// (a head that moved, a protection rule), which the job records.
type MergeResult struct {
	MergeSHA string `json:"merge_sha,omitempty"`
	Refused  string `json:"refused,omitempty"`
	// BranchKept says why the merged branch could not be deleted.
	BranchKept string `json:"branch_kept,omitempty"`
}
