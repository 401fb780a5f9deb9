package jobs

import (
	"fmt"
	"strings"
)

// Defaults and bounds of the registry's rules.
const (
	// DefaultMaxActive is jobs.max_active when settings leave it out.
	DefaultMaxActive = 2
	// DefaultMaxAttempts is repair.max_attempts when settings leave it out.
	DefaultMaxAttempts = 2
	// MaxImprovementsPerBuild bounds the improvements agents of one build
	// may start; more are the person's to start.
	MaxImprovementsPerBuild = 3
	// MaxBrief bounds a job's brief in bytes.
	MaxBrief = 8 << 10
)

// RefusalCode names why a job, a recovery or a request was refused. The
// registry uses it as the type of the Temporal application error it
// returns, so clients can tell the refusals apart.
type RefusalCode string

// The refusals.
const (
	// Admission and recovery.
	RefuseInvalid          RefusalCode = "invalid"
	RefuseJobSession       RefusalCode = "job_session"
	RefuseDuplicate        RefusalCode = "duplicate"
	RefuseInterrupted      RefusalCode = "interrupted"
	RefuseMerged           RefusalCode = "already_merged"
	RefuseSessionLimit     RefusalCode = "session_improvement"
	RefuseBuildLimit       RefusalCode = "build_improvements"
	RefuseMaxActive        RefusalCode = "max_active"
	RefuseAttempts         RefusalCode = "attempts_exhausted"
	RefuseNotInterrupted   RefusalCode = "not_interrupted"
	RefuseNothingToRecover RefusalCode = "nothing_to_recover"
	// Requests from a session (ValidateRepairRequest,
	// ValidateImprovementRequest).
	RefuseMode      RefusalCode = "mode"
	RefuseArguments RefusalCode = "arguments"
	RefuseExternal  RefusalCode = "external_cause"
	RefuseCall      RefusalCode = "call"
	RefuseIsolated  RefusalCode = "isolated"
)

// Refusal is a job, recovery or request the rules refuse. Reason is the
// sentence that says why and what to do instead; Error adds, for a request
// from a session (FromSession), the session's most recent citable calls, so
// a model that could not read the IDs can still cite them next time.
type Refusal struct {
	Code RefusalCode `json:"code"`
	// Job is the record the refusal points at, when one does.
	Job string `json:"job,omitempty"`
	// Call is the cited call refused, when one is.
	Call   string `json:"call,omitempty"`
	Reason string `json:"reason"`
	// FromSession: the refusal answers a session's request; Recent holds
	// up to five of its most recent citable calls, newest first.
	FromSession bool          `json:"from_session,omitempty"`
	Recent      []CallOutcome `json:"recent,omitempty"`
}

func (r *Refusal) Error() string {
	if !r.FromSession {
		return r.Reason
	}
	return r.Reason + " " + recentText(r.Recent)
}

// InSession marks the refusal as an answer to a session whose calls are
// calls, and names its most recent citable ones. It returns r.
func (r *Refusal) InSession(calls []CallOutcome) *Refusal {
	r.FromSession, r.Recent = true, Citable(calls)
	return r
}

func refuse(code RefusalCode, job, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Job: job, Reason: fmt.Sprintf(format, args...)}
}

// Admission is a job asked of the registry.
type Admission struct {
	Kind Kind `json:"kind"`
	// Repository is repair.repository (owner/name).
	Repository string `json:"repository"`
	// Signature is the job's: RepairSignature or ImprovementSignature for
	// an agent's request, JobSignature for the person's.
	Signature string `json:"signature"`
	// Brief is the job's brief; its first words (SlugWords) are the
	// duplicate rule's.
	Brief string `json:"brief"`
	// OriginSession is the session the job is asked from: the one whose
	// agent asks, or the one the person starts it in from the TUI (Person);
	// empty when the person starts it from the command line. That session
	// receives the job's outcome.
	OriginSession string `json:"origin_session,omitempty"`
	// Person: the person starts the job, from OriginSession when it is
	// set. Only an agent's improvements count against the limits of one
	// per session and MaxImprovementsPerBuild per build. False with an
	// origin session is an agent's request, which admissions made before
	// the field were.
	Person bool `json:"person,omitempty"`
}

// agents reports whether the admission is an agent's request: an origin
// session that did not come from the person.
func (a Admission) agents() bool { return a.OriginSession != "" && !a.Person }

// Limits are the settings the registry applies; a zero field takes its
// default.
type Limits struct {
	// MaxActive is jobs.max_active (default DefaultMaxActive).
	MaxActive int `json:"max_active,omitempty"`
	// MaxAttempts is repair.max_attempts (default DefaultMaxAttempts).
	MaxAttempts int `json:"max_attempts,omitempty"`
}

func (l Limits) maxActive() int {
	if l.MaxActive > 0 {
		return l.MaxActive
	}
	return DefaultMaxActive
}

func (l Limits) maxAttempts() int {
	if l.MaxAttempts > 0 {
		return l.MaxAttempts
	}
	return DefaultMaxAttempts
}

// Admit applies the registry's rules to a job asked of it, against every
// record the registry holds, for the axlr build that runs: nil admits it.
// The rules, in the order they are applied:
//
//   - the admission names a kind, a repository, a signature and a brief of
//     at most MaxBrief bytes;
//   - a job's own session does not start another job;
//   - no second active or interrupted job for the same signature, or with
//     the same repository, kind and first words of the brief (duplicate,
//     or recover the interrupted one);
//   - a signature this build already merged is refused with the pull
//     request and a reminder to update;
//   - an agent starts at most one improvement per origin session and
//     MaxImprovementsPerBuild per build; the person's improvements, from a
//     session or not, neither count nor are counted;
//   - at most Limits.MaxActive jobs are active;
//   - a repair signature starts at most Limits.MaxAttempts sessions.
//
// A refusal is a *Refusal.
func Admit(records []Record, req Admission, lim Limits, build string) error {
	if r := invalid(req); r != nil {
		return r
	}
	if req.OriginSession != "" {
		for _, r := range records {
			if r.ranIn(req.OriginSession) {
				return refuse(RefuseJobSession, r.ID, "this session is the %s session of job %s; a job's own session cannot start another job", r.Kind.Noun(), r.ID)
			}
		}
	}
	words := SlugWords(req.Brief)
	for _, r := range records {
		same := r.Signature == req.Signature || r.Repository == req.Repository && r.Kind == req.Kind && SlugWords(r.Brief) == words
		switch {
		case !same:
		case r.Active():
			return refuse(RefuseDuplicate, r.ID, "duplicate: %s %s is already %s for the same %s; follow it with axlr-tui jobs watch %s or axlr_repair_status instead of starting another", r.Kind.Noun(), r.ID, r.Status, subject(r.Kind), r.ID)
		case r.Status == Interrupted:
			return refuse(RefuseInterrupted, r.ID, "%s %s for the same %s was interrupted; recover it with axlr-tui jobs recover %s instead of starting another", r.Kind.Noun(), r.ID, subject(r.Kind), r.ID)
		}
	}
	for _, r := range records {
		if r.Signature == req.Signature && r.Status == Completed && build != "" && r.Build == build {
			past := "repaired"
			if r.Kind == Improve {
				past = "improved"
			}
			return refuse(RefuseMerged, r.ID, "already %s: pull request #%d (%s) merged %s %s as %s, but this axlr still runs build %s; install the candidate (axlr-tui jobs install %s) or update axlr, and restart axlrd instead of asking again", past, r.PullRequest, r.URL, r.Kind.Noun(), r.ID, r.MergeSHA, build, r.ID)
		}
	}
	if req.Kind == Improve && req.agents() {
		started := 0
		for _, r := range records {
			if r.Kind != Improve || !r.agents() || !r.reachedSession() {
				continue
			}
			if r.OriginSession == req.OriginSession {
				return refuse(RefuseSessionLimit, r.ID, "this session already started improvement %s (%s); a session asks for at most one improvement", r.ID, r.Status)
			}
			if r.Build == build {
				started++
			}
		}
		if started >= MaxImprovementsPerBuild {
			return refuse(RefuseBuildLimit, "", "this axlr build (%s) already started %d improvements that agents asked for, the most it starts; tell the person, who can start more with axlr-tui --improve \"<brief>\"", build, started)
		}
	}
	if err := freeSlot(records, lim); err != nil {
		return err
	}
	if req.Kind == Repair {
		if attempts := NextAttempt(records, req.Signature) - 1; attempts >= lim.maxAttempts() {
			return refuse(RefuseAttempts, "", "attempts exhausted: %d repair sessions already ran for this failure (repair.max_attempts is %d); repair it by hand or raise repair.max_attempts", attempts, lim.maxAttempts())
		}
	}
	return nil
}

// invalid refuses an admission that is missing what the rules need.
func invalid(req Admission) *Refusal {
	switch {
	case !req.Kind.Valid():
		return refuse(RefuseInvalid, "", "a job is a repair or an improve, not %q", req.Kind)
	case req.Repository == "":
		return refuse(RefuseInvalid, "", "the job names no repository: set repair.repository (owner/name)")
	case req.Signature == "":
		return refuse(RefuseInvalid, "", "the job has no signature")
	case strings.TrimSpace(req.Brief) == "":
		return refuse(RefuseInvalid, "", "the brief is empty: say what the %s must achieve", req.Kind.Noun())
	case len(req.Brief) > MaxBrief:
		return refuse(RefuseInvalid, "", "the brief takes at most %d bytes (8 KiB); this one has %d", MaxBrief, len(req.Brief))
	}
	return nil
}

// subject is what two jobs of the kind have in common when one duplicates
// the other.
func subject(k Kind) string {
	if k == Improve {
		return "improvement"
	}
	return "failure"
}

// freeSlot refuses when the active records take every jobs.max_active slot.
func freeSlot(records []Record, lim Limits) error {
	active := 0
	for _, r := range records {
		if r.Active() {
			active++
		}
	}
	if limit := lim.maxActive(); active >= limit {
		return refuse(RefuseMaxActive, "", "another job is active (%d of %d allowed by jobs.max_active); wait for one to end (axlr-tui jobs lists them) or raise jobs.max_active", active, limit)
	}
	return nil
}

// NextAttempt is the attempt a new job of the signature would be: 1 + the
// records of that signature that reached a session.
func NextAttempt(records []Record, signature string) int {
	n := 1
	for _, r := range records {
		if r.Signature == signature && r.reachedSession() {
			n++
		}
	}
	return n
}

// Recoverable reports whether axlr-tui jobs recover may continue r, given
// every record the registry holds: r must be interrupted, have the session
// and the clone to continue in, and find a free jobs.max_active slot. A
// refusal is a *Refusal.
func Recoverable(r Record, records []Record, lim Limits) error {
	switch {
	case r.Status != Interrupted:
		return refuse(RefuseNotInterrupted, r.ID, "%s %s is %s; only an interrupted job is recovered", r.Kind.Noun(), r.ID, r.Status)
	case r.Session == "" || r.Clone == "":
		return refuse(RefuseNothingToRecover, r.ID, "%s %s has no session or clone to continue: it stopped before they were ready; start it again", r.Kind.Noun(), r.ID)
	}
	return freeSlot(records, lim)
}
