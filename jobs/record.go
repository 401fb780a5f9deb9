package jobs

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kind is what a job does: repair a failure or make an improvement.
type Kind string

// The kinds of job.
const (
	Repair  Kind = "repair"
	Improve Kind = "improve"
)

// Valid reports whether k is a kind of job.
func (k Kind) Valid() bool { return k == Repair || k == Improve }

// Noun is how a message names a job of the kind: "repair" or
// "improvement".
func (k Kind) Noun() string {
	if k == Improve {
		return "improvement"
	}
	return "repair"
}

// Definition is the MADE definition a job of the kind runs (at
// DefinitionVersion): axlr_repair or axlr_improve.
func (k Kind) Definition() string {
	if k == Improve {
		return "axlr_improve"
	}
	return "axlr_repair"
}

// DefinitionVersion is the pinned version of axlr_repair and axlr_improve.
const DefinitionVersion = "1.0"

// Status is where a job stands.
type Status string

// The statuses of a job. Completed, blocked and failed are terminal;
// interrupted waits for the person's recover.
const (
	Preparing        Status = "preparing"
	Running          Status = "running"
	AwaitingApproval Status = "awaiting_approval"
	AwaitingMerge    Status = "awaiting_merge"
	Completed        Status = "completed"
	Blocked          Status = "blocked"
	Failed           Status = "failed"
	Interrupted      Status = "interrupted"
)

// StepText is the open step with its attempt and limit ("repair 2/3"),
// or "-" when no step is open.
func (r Record) StepText() string {
	if r.Step == "" {
		return "-"
	}
	if r.StepLimit > 0 {
		return fmt.Sprintf("%s %d/%d", r.Step, r.StepAttempt, r.StepLimit)
	}
	return r.Step
}

// Terminal reports whether the job ended: completed, blocked or failed.
func (s Status) Terminal() bool { return s == Completed || s == Blocked || s == Failed }

// Active reports whether the job takes one of the jobs.max_active slots:
// neither ended nor interrupted.
func (s Status) Active() bool { return !s.Terminal() && s != Interrupted }

// Record is one job as the registry keeps it and axlr-tui jobs prints it.
// TestRecordFields pins its JSON names.
type Record struct {
	// ID is the job's slug, with -<4 hex of the signature> on a collision.
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Signature identifies the failure (RepairSignature), the improvement
	// (ImprovementSignature) or the person's brief (JobSignature).
	Signature string `json:"signature"`
	// Repository is repair.repository (owner/name) when the job started.
	Repository string `json:"repository"`
	// OriginSession is the session the job was asked from, which receives
	// its outcome: the one whose agent asked for it, or the one the person
	// started it in from the TUI (Person); empty when the person started it
	// from the command line.
	OriginSession string `json:"origin_session"`
	// Person: the person started the job. Records made before the field
	// have it false, and the person's job among them no origin session.
	Person bool `json:"person"`
	// Session is the job's session now; Sessions every session it ran in,
	// the first one first.
	Session  string   `json:"session"`
	Sessions []string `json:"sessions"`
	// Clone is the job's working copy.
	Clone  string `json:"clone"`
	Brief  string `json:"brief"`
	Status Status `json:"status"`
	// Step, StepAttempt and StepLimit: the ceremony step that runs and its
	// attempt out of the limit; State is the MADE instance's state and
	// Instance its id.
	Step        string `json:"step"`
	StepAttempt int    `json:"step_attempt"`
	StepLimit   int    `json:"step_limit"`
	State       string `json:"state"`
	Instance    string `json:"instance"`
	// Check is the last check command the job ran.
	Check *Check `json:"check"`
	// Pending is what waits for the person, while the status is
	// awaiting_approval or awaiting_merge.
	Pending *Pending `json:"pending"`
	// Base is the branch the job's pull request goes to.
	Base string `json:"base"`
	// PullRequest, URL and HeadSHA: the job's pull request and the head it
	// was last read at; MergeSHA the squash commit once merged.
	PullRequest int    `json:"pull_request"`
	URL         string `json:"url"`
	HeadSHA     string `json:"head_sha"`
	MergeSHA    string `json:"merge_sha"`
	// Files are the files the pull request's head changes.
	Files []string `json:"files,omitempty"`
	// Reason says why the job is blocked, failed or interrupted.
	Reason string `json:"reason"`
	// Rounds counts the job's proposals of its pull request, and
	// RedRounds holds the failing checks of each watch that went red: a
	// recovered job goes on counting from them.
	Rounds    int      `json:"rounds,omitempty"`
	RedRounds []string `json:"red_rounds,omitempty"`
	// Recoveries counts the person's recoveries of the job, and Recovery
	// says how the last one went: the instance it continued and where, or
	// why it had to start a new one.
	// Memory says what the job recalled and recorded in memory, or why
	// not, one line each.
	Memory     []string `json:"memory,omitempty"`
	Recoveries int      `json:"recoveries,omitempty"`
	Recovery   string   `json:"recovery,omitempty"`
	// Host is the host the job runs on (its workspace, clone and session
	// log), as the registry placed it; empty for a job of one host.
	Host string `json:"host,omitempty"`
	// Moves says each time the job moved from a lost host, from where to
	// where and why, oldest first.
	Moves []string `json:"moves,omitempty"`
	// Attempt is 1 + the records of the same signature that reached a
	// session when this one was admitted (NextAttempt).
	Attempt   int        `json:"attempt"`
	Candidate *Candidate `json:"candidate"`
	Installed *Installed `json:"installed"`
	// Queue is the job's place in its repository's merge queue, or why the
	// queue let it go; nil when it was never queued.
	Queue *QueuePlace `json:"queue"`
	// Build is the axlr build that admitted the job: "already repaired by
	// this build" and "three improvements per build" are keyed on it.
	Build   string    `json:"build"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Terminal reports whether the job ended.
func (r Record) Terminal() bool { return r.Status.Terminal() }

// Active reports whether the job takes a jobs.max_active slot.
func (r Record) Active() bool { return r.Status.Active() }

// agents reports whether an agent asked for the job: it has an origin
// session, and the person did not start it there.
func (r Record) agents() bool { return r.OriginSession != "" && !r.Person }

// reachedSession reports whether the job got as far as a session: only those
// count as attempts and against the improvement limits.
func (r Record) reachedSession() bool { return r.Session != "" }

// ranIn reports whether session is one of the job's own sessions.
func (r Record) ranIn(session string) bool {
	return r.Session == session || slices.Contains(r.Sessions, session)
}

// Check is a check command the job ran and how it ended. ExitCode is null
// unless the command exited: no exit code is invented for a command that
// did not run to its end.
type Check struct {
	Command  string `json:"command"`
	ExitCode *int   `json:"exit_code"`
	LastLine string `json:"last_line"`
}

// PendingKind is what the person is asked: the check command or the merge.
type PendingKind string

// The decisions a job waits for.
const (
	PendingCheck PendingKind = "check"
	PendingMerge PendingKind = "merge"
)

// Pending is the decision a job waits for: for a check, the command to
// approve once for the ceremony; for a merge, the pull request and the head
// SHA the merge is guarded by.
type Pending struct {
	Kind        PendingKind `json:"kind"`
	Command     string      `json:"command,omitempty"`
	PullRequest int         `json:"pull_request,omitempty"`
	HeadSHA     string      `json:"head_sha,omitempty"`
	// Behind, on a merge, says that the checks passed on HeadSHA but the
	// base moved again after the watch's one update of this round: a
	// base that must be up to date refuses the merge until the branch is
	// updated, which the merge queue does.
	Behind bool `json:"behind,omitempty"`
}

// Candidate is the axlrd and axlr-tui the job built from the pull
// request's head: the directory they are in, their stamped version
// (repair-<slug>-<commit>) and the commit.
type Candidate struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// Installed is where the candidate was installed and the hard link that
// keeps the executable it replaced.
type Installed struct {
	Path   string `json:"path"`
	Backup string `json:"backup"`
}

// ErrNotFound is returned when no record has the ID asked for.
var ErrNotFound = errors.New("no such job")

// Find returns the record with the ID, or an error wrapping ErrNotFound.
func Find(records []Record, id string) (Record, error) {
	for _, r := range records {
		if r.ID == id {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("%w: %s (axlr-tui jobs lists the jobs)", ErrNotFound, id)
}

// QueueState is what the merge queue is doing with a job.
type QueueState string

// The states of a queued job.
const (
	// QueueWaiting: queued behind others.
	QueueWaiting QueueState = "queued"
	// QueueUpdating: its branch is being updated with its base.
	QueueUpdating QueueState = "updating"
	// QueueChecks: the head of the queue, waiting for its checks.
	QueueChecks QueueState = "checking"
	// QueueMerging: the approval was handed to the job; it merges.
	QueueMerging QueueState = "merging"
	// QueueEjected: off the queue with Note as the reason; the job still
	// waits for its merge decision.
	QueueEjected QueueState = "ejected"
)

// QueuePlace is a job's place in its merge queue: its position (1 is the
// head; 0 once off the queue), what the queue is doing with it, and a note
// (why, once ejected).
type QueuePlace struct {
	Position int        `json:"position"`
	State    QueueState `json:"state"`
	Note     string     `json:"note"`
}
