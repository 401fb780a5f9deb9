package workflows

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
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
	// ActivityForgeBuildCandidate and ActivityForgeInstall are
	// CandidateActivities.
	ActivityForgeBuildCandidate = "forge.BuildCandidate"
	ActivityForgeInstall        = "forge.Install"
)

// ErrTypeForgeRefused is a forge's refusal that a retry cannot change (a
// stale head, a protection rule, a request GitHub refuses).
const ErrTypeForgeRefused = "ForgeRefused"

// ErrTypeBranchMoved is a job's branch that moved on the forge in a way
// its clone cannot follow (an update changed files the round changes too,
// or the branch was force-pushed, or the clone is not at the pull
// request's head): a retry finds the same, and the job ends BLOCKED with
// the reason.
const ErrTypeBranchMoved = "BranchMoved"

// ErrTypeInstallRefused is an install that cannot be done as asked (no
// candidate, a job not merged, a backup that exists, a directory that
// cannot be written): a retry cannot change it.
const ErrTypeInstallRefused = "InstallRefused"

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
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeForgeRefused, ErrTypeBranchMoved},
	},
}

// CandidateBuildTimeout bounds one candidate build activity: the forge's
// go build runs at most 10 minutes (forge.BuildLimit, which
// activities.TestCandidateOutlastsTheBuild holds below it), and the
// activity has 2 more to report how it ended.
const CandidateBuildTimeout = 12 * time.Minute

// CandidateOptions: one candidate build, which heartbeats while go build
// runs; a build that fails is the result's, not retried.
var CandidateOptions = workflow.ActivityOptions{
	StartToCloseTimeout: CandidateBuildTimeout,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        2 * time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeBranchMoved},
	},
}

// InstallOptions: one install, a few copies and renames on this host; a
// refusal is final.
var InstallOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        2 * time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeInstallRefused},
	},
}

// ForgeActivities are the activities of a job's forge.
type ForgeActivities interface {
	Prepare(context.Context, PrepareInput) (PrepareResult, error)
	Issue(context.Context, IssueInput) (pull.Issue, error)
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
	// Branch, on a recovered or moved job, is the branch it pushes: a new
	// clone checks it out when the forge has it, so the job goes on from
	// what it pushed.
	Branch string `json:"branch,omitempty"`
	// Placed: the job was placed on this host by the registry, so the
	// clone goes in this host's own jobs directory, not the client's.
	Placed bool `json:"placed,omitempty"`
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
	Clone      string             `json:"clone"`
	Repository string             `json:"repository"`
	Branch     string             `json:"branch"`
	Base       string             `json:"base"`
	Commit     pull.CommitMessage `json:"commit"`
	Title      string             `json:"title"`
	Body       string             `json:"body"`
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
	// Files are the files the head changes from the base.
	Files []string `json:"files,omitempty"`
}

// ReadInput reads a pull request and the checks of its head, once.
type ReadInput struct {
	Repository string `json:"repository"`
	Number     int    `json:"number"`
	// ClosedChecks reads the head's checks of a merged or closed pull
	// request too, for the person's g (PullRead); the watch and the queue
	// stop at a closed one and leave it false.
	ClosedChecks bool `json:"closed_checks,omitempty"`
}

// ReadResult is one read; Error says why the forge could not be read (the
// watch decides what that means), and is empty otherwise.
type ReadResult struct {
	PullRequest pull.Request `json:"pull_request"`
	Checks      pull.Checks  `json:"checks"`
	Error       string       `json:"error,omitempty"`
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

// CandidateActivities build a job's candidate (the axlrd and axlr-tui of
// its pull request's head) and install it over the running executables.
// They run on the job's host, where its clone and axlrd are.
type CandidateActivities interface {
	BuildCandidate(context.Context, BuildCandidateInput) (BuildCandidateResult, error)
	Install(context.Context, InstallInput) (InstallResult, error)
}

// BuildCandidateInput builds the candidate of job Job from its clone, at
// the head the clone holds (the pull request's, which HeadSHA names), into
// <Clone>.bin, stamped with CandidateVersion(Job, <the clone's HEAD>).
type BuildCandidateInput struct {
	Job     string `json:"job"`
	Clone   string `json:"clone"`
	HeadSHA string `json:"head_sha,omitempty"`
}

// BuildCandidateResult is the candidate built (or built already for that
// commit by an earlier attempt); NothingToBuild when the clone has no
// cmd/axlrd nor cmd/axlr-tui; Failed, with the end of go build's output,
// when it does not build.
type BuildCandidateResult struct {
	Path     string   `json:"path,omitempty"`
	Version  string   `json:"version,omitempty"`
	Commit   string   `json:"commit,omitempty"`
	Binaries []string `json:"binaries,omitempty"`

	NothingToBuild bool   `json:"nothing_to_build,omitempty"`
	Failed         string `json:"failed,omitempty"`
}

// CandidateVersion is the version a job's candidate is stamped with:
// repair-<job>-<the first 12 hex digits of the commit>.
func CandidateVersion(job, commit string) string {
	return "repair-" + job + "-" + commit[:min(len(commit), 12)]
}

// InstallInput installs the candidate of a merged job: the axlrd and
// axlr-tui in the directory Candidate, over axlrd's own executable
// (symbolic links resolved), the axlr-tui beside it when there is one, and
// TUIPath, the axlr-tui the caller runs, when it is set.
type InstallInput struct {
	Job       string `json:"job"`
	Candidate string `json:"candidate"`
	// MergeSHA is the job's merge: only a merged job is installed.
	MergeSHA string `json:"merge_sha"`
	TUIPath  string `json:"tui_path,omitempty"`
}

// InstallResult lists the executables replaced, axlrd's first, each with
// the hard link that keeps the one it replaced.
type InstallResult struct {
	Installed []jobs.Installed `json:"installed"`
}
