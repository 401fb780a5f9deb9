package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
)

// A running session asks for jobs through three host tools:
// axlr_request_repair and axlr_request_improvement ask the job registry
// for a repair or an improvement, and axlr_repair_status reads the jobs the
// session asked for. The turn runs each call as ActivityRequestJob, which
// validates a request against the session's own transcript (jobs.Validate…)
// before it asks the registry, and answers the model with the admitted job
// or the refusal. A request needs no decision of the person: the job's check
// command and its merge wait for them. A job's own session (its mode is the
// job's kind) is not offered the tools.
//
// When a job ends, its workflow signals the origin session's workflow with
// SignalJobOutcome. The session keeps the last MaxJobOutcomes outcomes, and
// its next prompt carries one [AXLR] note per outcome, once.

// ActivityRequestJob runs a call of a job request tool; it is a method of
// activities.Session, registered with the "session." prefix.
const ActivityRequestJob = "session.RequestJob"

// JobRequestActivities are the activities of the job request tools.
type JobRequestActivities interface {
	RequestJob(context.Context, JobRequestInput) (ToolCallResult, error)
}

// JobRequestInput runs one call of axlr_request_repair,
// axlr_request_improvement or axlr_repair_status. The arguments are read
// from the transcript by Key.
type JobRequestInput struct {
	// SessionID is the session the call was made in.
	SessionID string `json:"session_id"`
	// Sessions are the workflow's sessions, first to current (SessionID):
	// the transcripts a request's cited calls are looked up in. The first
	// is the origin session a job records, whose workflow
	// (SessionWorkflowID) receives the job's outcome.
	Sessions []string          `json:"sessions"`
	Key      string            `json:"key"`
	CallID   string            `json:"call_id"`
	Tool     string            `json:"tool"`
	Decision contract.Decision `json:"decision,omitempty"`
	// Mode is the asking session's mode: a job's own (repair, improve)
	// cannot ask.
	Mode string `json:"mode"`
	// Root is the session's workspace: a job's clone cannot ask.
	Root string `json:"root"`
	// Model is the session's model, which runs the job's steps.
	Model string `json:"model,omitempty"`
}

// JobRequestAttempts is how many times a job request is tried. The
// registry admits a request once by its id (the call's), so a retry admits
// nothing twice; the last attempt answers the model with what went wrong
// instead of failing the turn.
const JobRequestAttempts = 5

// JobRequestOptions: the registry answers in milliseconds; a request that
// cannot reach it is tried for about half a minute.
var JobRequestOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	HeartbeatTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        15 * time.Second,
		MaximumAttempts:        JobRequestAttempts,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeSessionDiverged},
	},
}

// JobRequestTool reports whether a tool is one through which a session
// asks for jobs or reads them.
func JobRequestTool(name string) bool {
	return name == jobs.ToolRequestRepair || name == jobs.ToolRequestImprovement || name == jobs.ToolRepairStatus
}

// jobMode reports whether a mode is a job's own session's (the job's
// kind), which asks for no job.
func jobMode(mode string) bool {
	return jobs.Kind(mode).Valid()
}

// Bounds of the outcomes a session keeps.
const (
	// MaxJobOutcomes is how many outcomes a session keeps: those its next
	// prompt has not carried yet and the last it did, by which an outcome
	// sent twice is told apart.
	MaxJobOutcomes = 8
	// MaxOutcomeReason bounds an outcome's reason, in bytes.
	MaxOutcomeReason = 1 << 10
)

// versionJobNotes guards appending job outcome notes to a prompt: a run
// that received an outcome under code without the signal's handler ran
// its next prompt without the note. Such a run keeps its outcomes and
// delivers their notes after it continues as new.
const versionJobNotes = "job-outcome-notes"

// JobOutcomeState is an outcome a session received, and whether a prompt
// has carried its note.
type JobOutcomeState struct {
	JobOutcome
	Noted bool `json:"noted,omitempty"`
}

// keepOutcome adds an outcome to those a session keeps. An outcome the
// session already keeps is not added again; a reason is cut to
// MaxOutcomeReason bytes; past MaxJobOutcomes the oldest noted outcome
// goes first, else the oldest.
func keepOutcome(kept []JobOutcomeState, o JobOutcome) []JobOutcomeState {
	o.Reason = cutText(o.Reason, MaxOutcomeReason)
	if slices.ContainsFunc(kept, func(k JobOutcomeState) bool { return k.JobOutcome == o }) {
		return kept
	}
	kept = append(kept, JobOutcomeState{JobOutcome: o})
	for len(kept) > MaxJobOutcomes {
		i := slices.IndexFunc(kept, func(k JobOutcomeState) bool { return k.Noted })
		if i < 0 {
			i = 0
		}
		kept = slices.Delete(kept, i, i+1)
	}
	return kept
}

// JobOutcomeNote is the note a session's next prompt carries for a job's
// outcome.
func JobOutcomeNote(o JobOutcome) string {
	head := fmt.Sprintf("[AXLR] Job %s (%s)", o.Job, o.Kind)
	pr := ""
	if o.PullRequest > 0 {
		pr = fmt.Sprintf("pull request #%d", o.PullRequest)
		if o.URL != "" {
			pr += " (" + o.URL + ")"
		}
	}
	reason := strings.TrimSuffix(strings.TrimSpace(o.Reason), ".")
	if reason == "" {
		reason = "no reason was recorded"
	}
	switch jobs.Status(o.Status) {
	case jobs.Completed:
		text := head + " ended completed"
		switch {
		case pr != "" && o.MergeSHA != "":
			text += ": " + pr + " merged as " + o.MergeSHA
		case pr != "":
			text += ": " + pr + " merged"
		}
		return text + ". The merge changed the repository, not the axlr that runs this session."
	case jobs.Blocked, jobs.Failed:
		text := fmt.Sprintf("%s ended %s: %s", head, o.Status, reason)
		if pr != "" {
			text += " (" + pr + ")"
		}
		return text + "."
	case jobs.Interrupted:
		return fmt.Sprintf("%s was interrupted: %s. The person can recover it with axlr-tui jobs recover %s.", head, reason, o.Job)
	}
	return fmt.Sprintf("%s is %s.", head, o.Status)
}

// cutText cuts s to at most n bytes at a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
