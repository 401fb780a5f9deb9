package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
)

// A job's workflow runs one /repair or /improve from its admission to its
// end: it prepares the clone, hosts the turn and the ceremony driver for
// the model's steps (reproduce, diagnose, repair; or brief, build) in the
// clone's session, and runs the console's steps itself, without the model:
// propose (commit, push, the pull request), watch (its checks, with a
// workflow timer and one read per activity), decide (repair.auto_merge or
// the person's Update) and merge. A red round goes back to the model with
// the failing checks named. Every change of the job's record is signalled
// to the registry and shown in the workflow's search attributes. A job
// that repairs axlr builds its candidate when the merge decision opens (a
// build that fails declines the merge) and, under repair.install, installs
// it right after the merge. When the job ends, the session that asked for
// it hears how.

// Names of a job's workflow.
const (
	JobWorkflow = "axlr.Job"
	// UpdateJobDecide decides what a job waits on: the check command (or
	// call) that needs the person, or the merge. JobDecision names the job
	// and what it decides; the validator refuses any other.
	UpdateJobDecide = "job-decide"
	// QueryJob answers the job's record.
	QueryJob = "job"
)

// JobWorkflowID is the workflow id of a job.
func JobWorkflowID(id string) string { return "axlr-job-" + id }

// Search attributes of a job's workflow, so an operator finds a job in
// the Web UI: its id, kind, repository, pull request (Int) and status
// (the others Keyword). axlrd registers them on its namespace.
const (
	SearchAttributeJob         = "AxlrJob"
	SearchAttributeJobKind     = "AxlrJobKind"
	SearchAttributeRepository  = "AxlrRepository"
	SearchAttributePullRequest = "AxlrPullRequest"
	SearchAttributeJobStatus   = "AxlrJobStatus"
	// SearchAttributeHost is the host a job runs on (Keyword).
	SearchAttributeHost = "AxlrHost"
)

// Changes to a job's workflow in flight, by workflow.GetVersion id.
const (
	// versionJobSearch upserts the job's search attributes as its record
	// changes.
	versionJobSearch = "job-search-attributes"
	// versionJobCandidate builds the candidate when the merge decision
	// opens, and installs it after the merge under repair.install.
	versionJobCandidate = "job-candidate"
	// versionJobOutcome tells the origin session how the job ended.
	versionJobOutcome = "job-origin-outcome"
	// versionJobBehindGreen ends a watch whose checks passed on a head the
	// base moved past again after the round's one update: the merge
	// decision opens, saying so, instead of waiting out the watch.
	versionJobBehindGreen = "job-behind-green"
	// versionJobResume leaves an interrupted job's instance as it stands,
	// and a recovered job takes it over where MADE and the forge left it
	// instead of opening a new one.
	versionJobResume = "job-resume"
	// versionJobMemory wakes memory before the first step, records the
	// cause (a repair's) or the decision (an improvement's) and the
	// outcome.
	versionJobMemory = "job-memory"
)

// candidateReasonBytes bounds the reason a candidate that does not build
// declines the merge with: the decide step's reason is at most 2000 bytes.
const candidateReasonBytes = 2000

// jobSearch is what a job's search attributes show.
type jobSearch struct {
	id, kind, repository, status, host string
	pullRequest                        int
}

func searchOf(r jobs.Record) jobSearch {
	return jobSearch{id: r.ID, kind: string(r.Kind), repository: r.Repository, status: string(r.Status), host: r.Host, pullRequest: r.PullRequest}
}

func (s jobSearch) updates() []temporal.SearchAttributeUpdate {
	u := []temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(SearchAttributeJob).ValueSet(s.id),
		temporal.NewSearchAttributeKeyKeyword(SearchAttributeJobKind).ValueSet(s.kind),
		temporal.NewSearchAttributeKeyKeyword(SearchAttributeJobStatus).ValueSet(s.status),
	}
	if s.repository != "" {
		u = append(u, temporal.NewSearchAttributeKeyKeyword(SearchAttributeRepository).ValueSet(s.repository))
	}
	if s.pullRequest > 0 {
		u = append(u, temporal.NewSearchAttributeKeyInt64(SearchAttributePullRequest).ValueSet(int64(s.pullRequest)))
	}
	if s.host != "" { // a placed job's (versionJobPlacement)
		u = append(u, temporal.NewSearchAttributeKeyKeyword(SearchAttributeHost).ValueSet(s.host))
	}
	return u
}

// JobSettings are the repair settings a job runs under, taken when it was
// admitted.
type JobSettings struct {
	Remote    string `json:"remote"`
	Directory string `json:"directory"`
	About     string `json:"about,omitempty"`
	// AutoMerge merges a repair whose checks are green without asking
	// (repair.auto_merge); an improvement always asks.
	AutoMerge bool          `json:"auto_merge,omitempty"`
	Watch     time.Duration `json:"watch"`
	Poll      time.Duration `json:"poll"`
	// Candidate builds axlrd and axlr-tui from the pull request's head
	// when the merge decision opens: the job repairs this project.
	Candidate bool `json:"candidate,omitempty"`
	// Install installs a merged job's candidate right after the merge
	// (repair.install).
	Install bool `json:"install,omitempty"`
	// Autonomous runs the job's session under --approve all rather than
	// --approve local (repair.autonomous): its other tools run without a
	// card too. The destructive list and a check command the person has
	// not approved still ask.
	Autonomous bool `json:"autonomous,omitempty"`
	// HostLost is how long the job's host may go unseen, after one of its
	// activities found no worker there, before the job moves to another
	// host (cluster.host_lost_seconds; 0: DefaultHostLost).
	HostLost time.Duration `json:"host_lost,omitempty"`
}

// JobInput starts a job's workflow with the record the registry admitted.
type JobInput struct {
	Record    jobs.Record `json:"record"`
	SessionID string      `json:"session_id"`
	Host      string      `json:"host"`
	Model     string      `json:"model,omitempty"`
	Settings  JobSettings `json:"settings"`
	// Issue is the issue a "#123" brief names: the job reads it into its
	// brief before it clones.
	Issue int `json:"issue,omitempty"`
	// Recovered is why the job's earlier run stopped, when the person
	// recovered it: the first prompt says so.
	Recovered string `json:"recovered,omitempty"`
}

// JobDecision is the person's decision on what a job waits for.
type JobDecision struct {
	// RequestID is the update's id.
	RequestID string           `json:"request_id"`
	Job       string           `json:"job"`
	Kind      jobs.PendingKind `json:"kind"`
	Approve   bool             `json:"approve"`
	Reason    string           `json:"reason,omitempty"`
	// HeadSHA, on a merge's approval, is the head the approver saw green
	// (the merge queue's, after it updated the branch): the merge is
	// guarded by it. Empty: the head the job's watch saw.
	HeadSHA string `json:"head_sha,omitempty"`
	// By is the identity that decided (the service API's caller).
	By string `json:"by,omitempty"`
}

// MaxRedRounds is how many red check rounds go back to the model; the
// next one ends the job BLOCKED.
const MaxRedRounds = 2

// JobState is what a job's workflow knows.
type JobState struct {
	HostState
	Record jobs.Record `json:"record"`
	Base   string      `json:"base,omitempty"`
	// Round counts the proposals; Red holds the failing checks of each
	// watch that went red, for the model's note and the pull request's
	// body.
	Round int      `json:"round"`
	Red   []string `json:"red,omitempty"`
	// RerunOf is the failure whose jobs were rerun: until the forge shows
	// the rerun (for at most MaxStaleReads reads), a read that shows it
	// again is not a new red round.
	RerunOf string `json:"rerun_of,omitempty"`
	// Behind: the last watch ended with its checks green on a head the
	// base had moved past again after its update (jobs.Pending.Behind).
	Behind bool `json:"behind,omitempty"`
}

// MaxStaleReads is how many reads after a rerun may still show the failed
// runs it replaces.
const MaxStaleReads = 3

type jobRun struct {
	Host
	in       JobInput
	st       JobState
	decision *JobDecision
	// searched is what the search attributes show, once upserted.
	searched *jobSearch
	// installed lists what the install after the merge replaced.
	installed []jobs.Installed
}

// Job is a job's workflow. It returns the job's last record.
func Job(ctx workflow.Context, in JobInput) (jobs.Record, error) {
	j := newJobRun(in)
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateJobDecide, j.decide,
		workflow.UpdateHandlerOptions{Validator: j.validateDecide}); err != nil {
		return j.st.Record, fmt.Errorf("register %s: %w", UpdateJobDecide, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryJob, func() (jobs.Record, error) { return j.view(), nil }); err != nil {
		return j.st.Record, fmt.Errorf("register %s: %w", QueryJob, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func(q ProgressQuery) (Progress, error) {
		return j.st.page(j.st.Execution, j.st.Current(), q.After), nil
	}); err != nil {
		return j.st.Record, fmt.Errorf("register %s: %w", QueryProgress, err)
	}
	// A job started on the cluster queue runs its host-bound activities
	// on its host's queue, and moves when the host is lost.
	placed := ctx
	if in.Host != "" && workflow.GetInfo(ctx).TaskQueueName == ClusterTaskQueue &&
		workflow.GetVersion(ctx, versionJobPlacement, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		placed = withPlacement(ctx, placement{host: in.Host, queue: HostTaskQueue(in.Host), lost: cmp.Or(in.Settings.HostLost, DefaultHostLost)})
		j.st.Record.Host = in.Host
	}
	err := j.run(placed)
	cancelled := ctx.Err() != nil || temporal.IsCanceledError(err)
	if lost := (*HostLostError)(nil); !cancelled && errors.As(err, &lost) {
		return j.move(ctx, lost)
	}
	ctx = placed
	if cancelled {
		// Record how it ended even though the workflow is cancelled.
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	switch {
	case err == nil:
	case cancelled:
		// Where the ceremony stood, not where the record was last set.
		j.st.Record = j.view()
		j.end(jobs.Interrupted, "interrupted while "+j.where())
		if c := j.st.Ceremony; c.Active() && workflow.GetVersion(ctx, versionJobTexts, workflow.DefaultVersion, 1) != workflow.DefaultVersion &&
			workflow.GetVersion(ctx, versionJobResume, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			// Before versionJobResume a recovery started a new instance:
			// this one ended CANCELLED rather than wait in its step for
			// ever. Since, the recovery takes it over.
			if err := j.driver.cancel(ctx); err != nil {
				workflow.GetLogger(ctx).Warn("the interrupted job's ceremony was not cancelled", "job", j.st.Record.ID, "error", err)
			}
		}
	default:
		j.end(jobs.Failed, failureMessage(err))
	}
	if j.st.Record.Terminal() {
		if err := j.remember(ctx); err != nil {
			workflow.GetLogger(ctx).Warn("the job's outcome was not recorded in memory", "job", j.st.Record.ID, "error", err)
		}
	}
	status, msg := endedAs(err, "")
	j.finish(ctx, status, msg)
	j.report(ctx)
	j.tellOrigin(ctx)
	return j.st.Record, nil
}

// move places the job on another live host and continues as new there:
// the new run clones again (checking out the branch it pushed), opens a
// new session whose first prompt says why, and takes over the ceremony
// instance where MADE recorded it, under the next recovery's keys.
func (j *jobRun) move(ctx workflow.Context, lost *HostLostError) (jobs.Record, error) {
	r := j.view()
	req := PlaceInput{RequestID: fmt.Sprintf("%s:move:%d", JobWorkflowID(r.ID), r.Recoveries), Job: r.ID, Lost: lost.Host}
	var to PlaceResult
	if err := executeActivity(ctx, ClusterOptions, ActivityPlace, req, &to); err != nil {
		j.st.Record = r
		j.end(jobs.Interrupted, fmt.Sprintf("%s, and no other host took the job: %s", lost.Error(), failureMessage(err)))
		j.report(ctx)
		return j.st.Record, nil
	}
	note := fmt.Sprintf(movedFrom+"%s to host %s at %s: %s", lost.Host, to.Host, cmp.Or(r.Step, string(r.Status)), lost.Why)
	workflow.GetLogger(ctx).Warn("job moved", "job", r.ID, "from", lost.Host, "to", to.Host, "why", lost.Why)
	r.Moves = append(r.Moves, note)
	r.Host, r.Status, r.Pending = to.Host, jobs.Preparing, nil
	r.Recoveries++
	j.st.Record = r
	j.report(ctx)
	next := j.in
	next.Record, next.Host = j.st.Record, to.Host
	next.SessionID = movedSession(r.ID, r.Recoveries)
	next.Recovered = note
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return j.st.Record, err
	}
	return j.st.Record, workflow.NewContinueAsNewError(ctx, JobWorkflow, next)
}

func newJobRun(in JobInput) *jobRun {
	j := &jobRun{in: in}
	j.st = JobState{HostState: newHostState(in.SessionID, string(in.Record.Kind), runID(in.Record)), Record: in.Record}
	j.st.Approval = policy.ApproveLocal
	if in.Settings.Autonomous {
		j.st.Approval = policy.ApproveAll
	}
	j.Host = newHost(&j.st.HostState, hostOptions{reminders: BackgroundReminders, stallFails: true})
	return j
}

// runID is the execution id of a run of the job: the job's id, and past
// the first run the recovery's, so that a recovered run's prompt and
// result are its own in the session it shares with the earlier runs.
func runID(r jobs.Record) string {
	if r.Recoveries > 0 {
		return fmt.Sprintf("%s-r%d", r.ID, r.Recoveries)
	}
	return r.ID
}

// where says what the job was doing, for an interruption's reason.
func (j *jobRun) where() string {
	r := j.st.Record
	if r.Step == "" {
		return string(r.Status)
	}
	return fmt.Sprintf("step %s of %s (%s)", r.Step, r.Kind.Definition(), r.Status)
}

// set updates the record with what the ceremony shows and stamps it.
func (j *jobRun) set(ctx workflow.Context, status jobs.Status) {
	r := &j.st.Record
	r.Status = status
	j.st.Record = j.view()
	r.Updated = workflow.Now(ctx).UTC()
}

// lastCheck is the check command the ceremony ran last: its command, its
// exit code (nil when it did not exit) and the last line it printed.
// view is the job's record with where its ceremony stands now: the open
// step with its iteration and limit, and the last check. The job reports
// its record at each wait and console step; a Query answers the view, so
// a step the model works through in one turn shows too.
func (j *jobRun) view() jobs.Record {
	r := j.st.Record
	if c := j.st.Ceremony; c != nil {
		r.Step, r.State, r.Instance = c.Step, c.State, c.InstanceID
		r.StepAttempt, r.StepLimit = c.Iteration, c.Limits[c.Step]
		if ch := lastCheck(c); ch != nil {
			r.Check = ch
		}
		if c.Memory != nil {
			r.Memory = c.Memory.Reports
		}
	}
	return r
}

func lastCheck(c *CeremonyState) *jobs.Check {
	ch := lastRun(c)
	if ch == nil {
		return nil
	}
	cmd := ceremonies.CheckCommand{Program: ch.Program, Args: ch.Args}
	lines := strings.Split(strings.TrimRight(ch.OutputTail, "\n"), "\n")
	last := lines[len(lines)-1]
	if ch.StartError != "" {
		last = ch.StartError
	}
	return &jobs.Check{Command: cmd.String(), ExitCode: ch.ExitCode, LastLine: jobs.Bound(last, 200)}
}

func (j *jobRun) end(status jobs.Status, reason string) {
	j.st.Record.Status = status
	j.st.Record.Pending = nil
	if reason != "" {
		j.st.Record.Reason = reason
	}
}

// report sends the record to the registry and shows it in the search
// attributes. A registry that is not running does not stop the job.
func (j *jobRun) report(ctx workflow.Context) {
	j.st.Record.Updated = workflow.Now(ctx).UTC()
	j.upsertSearch(ctx)
	err := workflow.SignalExternalWorkflow(ctx, RegistryWorkflowID, "", SignalJobRecord, j.st.Record).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("job record not reported to the registry", "job", j.st.Record.ID, "error", err)
	}
}

// upsertSearch upserts the search attributes when what they show changed.
func (j *jobRun) upsertSearch(ctx workflow.Context) {
	s := searchOf(j.st.Record)
	if j.searched != nil && *j.searched == s {
		return
	}
	if workflow.GetVersion(ctx, versionJobSearch, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, s.updates()...); err != nil {
		workflow.GetLogger(ctx).Warn("job search attributes not set", "job", s.id, "error", err)
		return
	}
	j.searched = &s
}

// tellOrigin signals the session that asked for the job how it ended. A
// session whose workflow is gone is logged, and the job ends all the same.
func (j *jobRun) tellOrigin(ctx workflow.Context) {
	r := j.st.Record
	if r.OriginSession == "" || workflow.GetVersion(ctx, versionJobOutcome, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	note := ""
	if len(j.installed) > 0 {
		note = InstallNote(r.Candidate.Version, j.installed)
	}
	signalOutcome(ctx, r, note)
}

// signalOutcome signals a job's outcome to its origin session; note, when
// set, stands for a reason the record does not give.
func signalOutcome(ctx workflow.Context, r jobs.Record, note string) {
	out := JobOutcome{Job: r.ID, Kind: string(r.Kind), Status: string(r.Status), PullRequest: r.PullRequest,
		URL: r.URL, MergeSHA: r.MergeSHA, Reason: cmp.Or(r.Reason, note)}
	err := workflow.SignalExternalWorkflow(ctx, SessionWorkflowID(r.OriginSession), "", SignalJobOutcome, out).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("job outcome not signalled to its origin session", "job", r.ID, "session", r.OriginSession, "error", err)
	}
}

func (j *jobRun) run(ctx workflow.Context) error {
	r := &j.st.Record
	if n := j.in.Issue; n > 0 {
		var is pull.Issue
		if err := executeActivity(ctx, ForgeOptions, ActivityForgeIssue, IssueInput{Repository: r.Repository, Number: n}, &is); err != nil {
			return fmt.Errorf("read issue #%d of %s: %w", n, r.Repository, err)
		}
		r.Brief = jobs.IssueBrief(r.Repository, n, is.Title, is.Body, is.URL)
	}
	var prep PrepareResult
	if err := executeActivity(ctx, ForgeOptions, ActivityForgePrepare, PrepareInput{
		Job: r.ID, Kind: string(r.Kind), Repository: r.Repository, Remote: j.in.Settings.Remote, Directory: j.in.Settings.Directory,
		Brief: r.Brief, OriginSession: r.OriginSession, Build: r.Build, About: j.in.Settings.About, Created: r.Created, Issue: j.in.Issue,
		Branch: j.pushBranch(), Placed: r.Host != "",
	}, &prep); err != nil {
		return fmt.Errorf("prepare the clone: %w", err)
	}
	j.st.Root, j.st.Base = prep.Clone, prep.Base
	r.Clone, r.Session, r.Sessions, r.Base = prep.Clone, j.in.SessionID, []string{j.in.SessionID}, prep.Base
	exec := j.st.Execution.ID
	resume := j.in.Recovered != "" && r.Instance != "" &&
		workflow.GetVersion(ctx, versionJobResume, workflow.DefaultVersion, 1) != workflow.DefaultVersion
	if resume {
		// What the forge steps counted, as the record kept it.
		j.st.Round, j.st.Red = r.Rounds, r.RedRounds
	}
	j.set(ctx, jobs.Running)
	j.report(ctx)
	prompt := r.Brief
	var memory *CeremonyMemory
	if workflow.GetVersion(ctx, versionJobMemory, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		m, recall, err := wake(ctx, j.about(), r.Brief, false, j.labels())
		if err != nil {
			return err
		}
		memory, r.Memory = m, m.Reports
		if recall != "" {
			prompt += "\n\n" + recall
		}
	}
	switch {
	case resume && strings.HasPrefix(j.in.Recovered, movedFrom) &&
		workflow.GetVersion(ctx, versionMovedNote, workflow.DefaultVersion, 1) == 1:
		prompt += "\n\n" + MovedNote(j.in.Recovered)
	case resume:
		prompt += "\n\n" + ResumedNote(j.in.Recovered)
	case j.in.Recovered != "":
		prompt += "\n\n" + RecoveredNote(j.in.Recovered)
	}
	if err := j.turn.Begin(ctx, BeginTurnInput{SessionID: j.in.SessionID, ExecutionID: exec, Prompt: prompt,
		Model: j.in.Model, Root: prep.Clone, Mode: string(r.Kind)}); err != nil {
		return err
	}
	def, ok := ceremonies.ForJob(string(r.Kind))
	if !ok {
		return fmt.Errorf("start job: no definition for %q", r.Kind)
	}
	if err := j.openCeremony(ctx, def, exec, resume, memory); err != nil {
		return err
	}
	for {
		if _, console := j.driver.ConsoleStep(); !console {
			// A resumed job may stand at a console step: the model has
			// nothing to do until a red round.
			j.set(ctx, jobs.Running)
			j.report(ctx)
			if err := j.model(ctx); err != nil {
				return err
			}
		}
		for {
			st, ok := j.driver.ConsoleStep()
			if !ok {
				return j.ended(ctx)
			}
			j.set(ctx, jobs.Running)
			if err := j.console(ctx, st.ID); err != nil {
				return err
			}
			if c := j.st.Ceremony; c.Active() && c.Step != "" && !c.step().Console {
				// A red round: the model's step again.
				break
			}
		}
	}
}

// pushBranch is the branch a recovered (or moved) job has pushed, for a
// new clone to check out; "" for a job's first run.
func (j *jobRun) pushBranch() string {
	if j.in.Recovered == "" {
		return ""
	}
	return fmt.Sprintf("%s/%s", j.st.Record.Kind, j.st.Record.ID)
}

// openCeremony opens the job's instance; a recovered job (resume) takes
// over the one its earlier run left, and opens a new one only when that
// one cannot go on, saying why in the record and to the model.
func (j *jobRun) openCeremony(ctx workflow.Context, def ceremonies.Definition, exec string, resume bool, memory *CeremonyMemory) error {
	r := &j.st.Record
	if resume {
		earlier := r.Instance
		ended, err := j.driver.Resume(ctx, def.Name, def.Version, Resuming{InstanceID: earlier, Brief: r.Brief, Execution: exec, Epoch: r.Recoveries, Memory: memory}, nil)
		if err != nil {
			return err
		}
		if ended == "" {
			r.Recovery = fmt.Sprintf("recovery %d continued instance %s at %s", r.Recoveries, earlier, cmp.Or(j.st.Ceremony.Step, j.st.Ceremony.State))
			j.report(ctx)
			return nil
		}
		r.Recovery = fmt.Sprintf("recovery %d started a new instance from the first step: %s", r.Recoveries, ended)
		if err := j.turn.AppendConsole(ctx, ActivityAppendNote, fmt.Sprintf("recovered:%d", r.Recoveries), fmt.Sprintf(
			"[AXLR] The earlier run's instance %s cannot go on (%s): the ceremony starts again from its first step in a new instance. The clone holds what the earlier run changed.", earlier, ended)); err != nil {
			return err
		}
	}
	if j.in.Recovered != "" {
		// The new instance's id names the session and the second it starts
		// in: wait out the second the earlier run's instance took.
		if wait := instanceClash(r.Instance, j.st.Current(), workflow.Now(ctx)); wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	return j.driver.Open(ctx, def.Name, def.Version, Opening{
		Brief: r.Brief, Inputs: map[string]any{"repository": r.Repository}, Execution: exec, Memory: memory,
	}, nil)
}

// model runs the model's turn of the open step, taking the person's
// decision whenever a check command or a call waits for one.
func (j *jobRun) model(ctx workflow.Context) error {
	var queue []ModelCall
	for {
		err := j.turn.Run(ctx, queue)
		if !errors.Is(err, errPending) {
			return err
		}
		p := j.st.Pending
		what := p.Call.Tool + " " + string(p.Call.Preview)
		if p.Check != nil {
			what = p.Check.String()
		}
		j.st.Record.Pending = &jobs.Pending{Kind: jobs.PendingCheck, Command: what}
		j.set(ctx, jobs.AwaitingApproval)
		j.report(ctx)
		dec, err := j.await(ctx, jobs.PendingCheck)
		if err != nil {
			return err
		}
		j.st.Pending, j.st.Record.Pending = nil, nil
		j.set(ctx, jobs.Running)
		j.report(ctx)
		req := &DecideRequest{ExecutionID: dec.RequestID, CallID: p.Call.CallID, Decision: contract.Deny, Reason: dec.Reason}
		if dec.Approve {
			req.Decision = contract.Approve
		}
		if err := j.decidePending(ctx, p, req); err != nil {
			return err
		}
		queue = p.Queue
	}
}

// await waits for the person's decision of a kind.
func (j *jobRun) await(ctx workflow.Context, kind jobs.PendingKind) (JobDecision, error) {
	if err := workflow.Await(ctx, func() bool { return j.decision != nil && j.decision.Kind == kind }); err != nil {
		return JobDecision{}, err
	}
	d := *j.decision
	j.decision = nil
	return d, nil
}

func (j *jobRun) validateDecide(ctx workflow.Context, d JobDecision) error {
	r := j.st.Record
	switch {
	case strings.TrimSpace(d.RequestID) == "":
		return errors.New("decide: request_id is empty")
	case d.Job != r.ID:
		return fmt.Errorf("decide: this is job %s, not %s", r.ID, d.Job)
	case r.Pending == nil:
		return fmt.Errorf("decide: job %s waits for no decision (it is %s)", r.ID, r.Status)
	case d.Kind != r.Pending.Kind:
		return fmt.Errorf("decide: job %s waits for its %s, not its %s", r.ID, r.Pending.Kind, d.Kind)
	case d.HeadSHA != "" && (d.Kind != jobs.PendingMerge || !d.Approve):
		return fmt.Errorf("decide: a head SHA goes with a merge's approval only")
	case !d.Approve && strings.TrimSpace(d.Reason) == "":
		return fmt.Errorf("decide: refusing the %s of job %s needs a reason", d.Kind, r.ID)
	case j.decision != nil:
		return fmt.Errorf("decide: job %s already has a decision to apply", r.ID)
	}
	return nil
}

func (j *jobRun) decide(ctx workflow.Context, d JobDecision) (jobs.Record, error) {
	j.decision = &d
	if workflow.GetVersion(ctx, versionJobTexts, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		// Answer the record once the job has taken the decision, so the
		// person reads where it went.
		if err := workflow.Await(ctx, func() bool { return j.decision == nil }); err != nil {
			return j.st.Record, err
		}
	}
	return j.st.Record, nil
}

// versionJobTexts guards what the job's commands changed in flight: the
// pull request's title and body from the model's hand-backs, a rerun
// waited for, the decision answered once taken, and an interrupted job's
// instance cancelled.
const versionJobTexts = "job-texts"

// RecoveredNote is what the first prompt of a job recovered before
// versionJobResume adds to its brief.
func RecoveredNote(why string) string {
	return "[AXLR] The person recovered this job: its earlier run stopped (" + why +
		"). The clone holds what that run changed; the ceremony starts again from its first step."
}

// ResumedNote is what the first prompt of a recovered job adds to its
// brief: the ceremony goes on from what MADE and the forge recorded, and
// the next note says where.
func ResumedNote(why string) string {
	return "[AXLR] The person recovered this job: its earlier run stopped (" + why +
		"). The clone holds what that run changed, and the ceremony goes on from what MADE and the forge recorded."
}

// movedFrom begins the note of a job's move: "moved from host A to host
// B at STEP: why".
const movedFrom = "moved from host "

// versionMovedNote tells a moved job's new session that AXLR moved it,
// where before it said the person recovered it.
const versionMovedNote = "moved-note"

// MovedNote is what the first prompt of a job moved to another host adds
// to its brief: why it moved, and that it goes on from what MADE and the
// forge recorded in a fresh clone.
func MovedNote(move string) string {
	return "[AXLR] AXLR moved this job " + strings.TrimPrefix(move, "moved ") +
		". Its earlier run's host is gone: this is a fresh clone (with the job's branch, if it was pushed), and the ceremony goes on from what MADE and the forge recorded."
}

// title is the pull request's: the first sentence of the model's summary
// of its change, else the brief's first line.
func (j *jobRun) title(ctx workflow.Context) string {
	r := j.st.Record
	summary := ""
	if workflow.GetVersion(ctx, versionJobTexts, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		step := "repair"
		if r.Kind == jobs.Improve {
			step = "build"
		}
		summary = j.handedBack(step, "summary")
	}
	return jobs.Title(r.Kind, summary, r.Brief, r.ID)
}

// handedBack is a field of the model's last accepted hand-back of a step.
func (j *jobRun) handedBack(step, field string) string {
	c := j.st.Ceremony
	if c == nil {
		return ""
	}
	for i := len(c.Records) - 1; i >= 0; i-- {
		if r := c.Records[i]; r.Step == step && r.Status == "completed" {
			s, _ := r.Output[field].(string)
			return s
		}
	}
	return ""
}

// console runs a console step and completes it with what it recorded.
func (j *jobRun) console(ctx workflow.Context, step string) error {
	var recorded map[string]any
	var grant *GrantInput
	var err error
	switch step {
	case "propose":
		recorded, err = j.propose(ctx)
	case "watch":
		recorded, err = j.watch(ctx)
	case "decide":
		recorded, grant, err = j.decideMerge(ctx)
	case "merge":
		recorded, err = j.merge(ctx)
	default:
		return fmt.Errorf("the job has no console step %q", step)
	}
	if err != nil {
		return err
	}
	out, err := j.driver.CompleteConsole(ctx, recorded, grant)
	if err != nil {
		return err
	}
	if step == "watch" && recorded["verdict"] == ceremonies.VerdictRed && out.Step != "" {
		// Back to the model, with the failing checks named.
		failed, _ := recorded["failed"].([]string)
		return j.turn.AppendConsole(ctx, ActivityAppendNote, fmt.Sprintf("red:%d", len(j.st.Red)), fmt.Sprintf(
			"[AXLR] Check round %d: the pull request's checks failed on %s: %s. Fix the cause in step %s and hand the step back; AXLR pushes the change to the same pull request.",
			len(j.st.Red), shortHead(j.st.Record.HeadSHA), strings.Join(failed, "; "), out.Step))
	}
	return nil
}

// instanceClash is how long a recovered job waits before it starts its
// new instance so that its id, axlr-<session>-<unix second>, is not the
// earlier run's (earlier) in the same session.
func instanceClash(earlier, session string, now time.Time) time.Duration {
	sec, err := strconv.ParseInt(strings.TrimPrefix(earlier, "axlr-"+session+"-"), 10, 64)
	if err != nil || now.Unix() > sec {
		return 0
	}
	return time.Unix(sec+1, 0).Sub(now)
}

// branchMoved reads an activity's refusal of a branch the forge moved
// where the clone cannot follow it.
func branchMoved(ctx workflow.Context, err error) (string, bool) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == ErrTypeBranchMoved &&
		workflow.GetVersion(ctx, versionBranchMoved, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		return app.Message(), true
	}
	return "", false
}

// versionBranchMoved ends a job BLOCKED, rather than failed, on a branch
// the forge moved where its clone cannot follow.
const versionBranchMoved = "branch-moved"

func shortHead(sha string) string { return sha[:min(len(sha), 12)] }

// propose commits and pushes the clone's change and opens (or finds) the
// pull request. A later round with no change reruns the failed jobs
// instead: the model judged the red checks flaky.
func (j *jobRun) propose(ctx workflow.Context) (map[string]any, error) {
	r := &j.st.Record
	j.st.Round++
	branch := fmt.Sprintf("%s/%s", r.Kind, r.ID)
	title := j.title(ctx)
	var check string
	if c := j.st.Ceremony; c != nil && c.Command != nil {
		check = c.Command.String()
	}
	summary := r.Brief
	texts := workflow.GetVersion(ctx, versionJobTexts, workflow.DefaultVersion, 1) != workflow.DefaultVersion
	var body string
	if r.Kind == jobs.Improve {
		t := jobs.ImprovementText{Instance: r.Instance, Summary: summary, Check: check, RedRounds: j.st.Red}
		if texts {
			t.Criteria, t.Scope = j.handedBack("brief", "criteria"), j.handedBack("brief", "scope")
			t.Summary = cmp.Or(j.handedBack("build", "summary"), summary)
		}
		body = jobs.ImprovementBody(t)
	} else {
		t := jobs.RepairText{Instance: r.Instance, Summary: summary, Check: check, RedRounds: j.st.Red}
		if texts {
			t.Cause, t.Fix = j.handedBack("diagnose", "root_cause"), j.handedBack("diagnose", "proposed_fix")
			t.Summary = cmp.Or(j.handedBack("repair", "summary"), summary)
		}
		body = jobs.RepairBody(t)
	}
	var res ProposeResult
	if err := executeActivity(ctx, ForgeOptions, ActivityForgePropose, ProposeInput{
		Clone: r.Clone, Repository: r.Repository, Branch: branch, Base: j.st.Base,
		Commit: pull.CommitMessage{Title: title, Body: body, Trailer: jobs.CommitTrailer(r.Kind, r.Instance)},
		Title:  title, Body: body,
	}, &res); err != nil {
		msg, moved := branchMoved(ctx, err)
		if !moved {
			return nil, fmt.Errorf("propose: %w", err)
		}
		j.st.Record.Reason = msg
		return map[string]any{"round": j.st.Round, "proposed": false, "error": msg}, nil
	}
	rec := map[string]any{"round": j.st.Round}
	switch {
	case res.NothingChanged && j.st.Round == 1:
		rec["proposed"], rec["error"] = false, pull.ErrNothingChanged.Error()
		j.st.Record.Reason = pull.ErrNothingChanged.Error()
		return rec, nil
	case res.NothingChanged:
		var n int
		if err := executeActivity(ctx, ForgeOptions, ActivityForgeRerun, RerunInput{Repository: r.Repository, HeadSHA: r.HeadSHA}, &n); err != nil {
			return nil, fmt.Errorf("rerun the failed jobs: %w", err)
		}
		rec["rerun"] = true
		if len(j.st.Red) > 0 {
			j.st.RerunOf = j.st.Red[len(j.st.Red)-1]
		}
	default:
		r.PullRequest, r.URL, r.HeadSHA = res.PullRequest, res.URL, res.HeadSHA
		if len(res.Files) > 0 {
			r.Files = res.Files
		}
	}
	rec["proposed"], rec["pull_request"], rec["url"], rec["head_sha"] = true, r.PullRequest, r.URL, r.HeadSHA
	// The round counts once its proposal is made: a recovered job counts
	// on from it.
	r.Rounds = j.st.Round
	j.report(ctx)
	return rec, nil
}

// watch reads the pull request every poll until its checks settle or the
// watch's time is up: green, red, or blocked with the reason. A branch
// behind its base is updated once per round; behind again with its checks
// passed on the updated head, it is green and behind, and the merge
// decision says so (the merge queue updates it again).
func (j *jobRun) watch(ctx workflow.Context) (map[string]any, error) {
	r := &j.st.Record
	deadline := workflow.Now(ctx).Add(j.in.Settings.Watch)
	var w pull.WatchState
	updated := false
	texts := workflow.GetVersion(ctx, versionJobTexts, workflow.DefaultVersion, 1) != workflow.DefaultVersion
	stale := 0
	rec := map[string]any{"pull_request": r.PullRequest, "round": j.st.Round}
	blocked := func(reason string) (map[string]any, error) {
		rec["verdict"], rec["reason"], rec["head_sha"], rec["updated"] = ceremonies.VerdictBlocked, reason, r.HeadSHA, updated
		r.Reason = reason
		return rec, nil
	}
	for {
		var read ReadResult
		if err := executeActivity(ctx, ForgeOptions, ActivityForgeRead, ReadInput{Repository: r.Repository, Number: r.PullRequest}, &read); err != nil {
			return nil, fmt.Errorf("read pull request #%d: %w", r.PullRequest, err)
		}
		if read.Error != "" {
			return blocked("status unreadable: " + read.Error)
		}
		w.Now = workflow.Now(ctx)
		v := pull.Evaluate(read.PullRequest, read.Checks, w)
		w = v.Next
		if v.Kind != pull.Red {
			j.st.RerunOf = ""
		}
		if v.HeadSHA != "" {
			r.HeadSHA = v.HeadSHA
		}
		switch v.Kind {
		case pull.Green:
			j.st.Behind = false
			rec["verdict"], rec["head_sha"], rec["passed"], rec["updated"] = ceremonies.VerdictGreen, r.HeadSHA, read.Checks.Passed, updated
			return rec, nil
		case pull.Red:
			failed := strings.Join(v.Failed, "; ")
			if texts && j.st.RerunOf != "" && failed == j.st.RerunOf && stale < MaxStaleReads {
				// The failed runs the rerun replaces: the forge does not
				// show the rerun yet.
				stale++
				break
			}
			if len(j.st.Red) >= MaxRedRounds {
				why := v.Reason
				if texts {
					why = failed
				}
				return blocked(fmt.Sprintf("checks failed after %d repair rounds: %s", MaxRedRounds, why))
			}
			j.st.Red = append(j.st.Red, strings.Join(v.Failed, "; "))
			r.RedRounds = j.st.Red
			rec["verdict"], rec["head_sha"], rec["failed"], rec["updated"] = ceremonies.VerdictRed, r.HeadSHA, v.Failed, updated
			return rec, nil
		case pull.Behind:
			if updated && v.Passed > 0 && workflow.GetVersion(ctx, versionJobBehindGreen, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
				j.st.Behind = true
				// The step's record is pinned with axlr_repair 1.0 and
				// axlr_improve 1.0: the job's pending merge says behind.
				rec["verdict"], rec["head_sha"], rec["passed"], rec["updated"] = ceremonies.VerdictGreen, r.HeadSHA, read.Checks.Passed, updated
				return rec, nil
			}
			if !updated {
				var up UpdateBranchResult
				if err := executeActivity(ctx, ForgeOptions, ActivityForgeUpdate, UpdateBranchInput{Repository: r.Repository, Number: r.PullRequest, ExpectedHeadSHA: v.HeadSHA}, &up); err != nil {
					return blocked("the branch could not be updated: " + failureMessage(err))
				}
				if !up.Stale {
					w.UpdatedFrom, updated = v.HeadSHA, true
				}
			}
		case pull.Conflict:
			return blocked("the pull request conflicts with its base")
		case pull.Closed, pull.MergedOutside:
			return blocked(cmp.Or(v.Reason, "the pull request was closed or merged outside the job"))
		case pull.ForgeBlocks, pull.NoChecks:
			return blocked(v.Reason)
		}
		if !workflow.Now(ctx).Before(deadline) {
			return blocked(fmt.Sprintf("checks did not settle within %s", j.in.Settings.Watch))
		}
		if err := workflow.Sleep(ctx, j.in.Settings.Poll); err != nil {
			return nil, err
		}
	}
}

// decideMerge takes the merge decision: automatic for a repair under
// repair.auto_merge, else the person's, whose approval is granted by
// their approver identity. A job that repairs axlr builds its candidate
// first, and one that does not build declines the merge with its output.
func (j *jobRun) decideMerge(ctx workflow.Context) (map[string]any, *GrantInput, error) {
	r := &j.st.Record
	rec := map[string]any{"pull_request": r.PullRequest, "head_sha": r.HeadSHA}
	if j.in.Settings.Candidate && workflow.GetVersion(ctx, versionJobCandidate, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		declined, err := j.candidate(ctx)
		if err != nil {
			return nil, nil, err
		}
		if declined != "" {
			rec["decision"], rec["reason"] = ceremonies.DecisionDecline, declined
			r.Reason = declined
			return rec, nil, nil
		}
	}
	if r.Kind == jobs.Repair && j.in.Settings.AutoMerge {
		rec["decision"] = ceremonies.DecisionAutomatic
		return rec, nil, nil
	}
	r.Pending = &jobs.Pending{Kind: jobs.PendingMerge, PullRequest: r.PullRequest, HeadSHA: r.HeadSHA, Behind: j.st.Behind}
	j.set(ctx, jobs.AwaitingMerge)
	j.report(ctx)
	dec, err := j.await(ctx, jobs.PendingMerge)
	if err != nil {
		return nil, nil, err
	}
	r.Pending = nil
	j.set(ctx, jobs.Running)
	if !dec.Approve {
		rec["decision"], rec["reason"] = ceremonies.DecisionDecline, dec.Reason
		r.Reason = "the person declined the merge: " + dec.Reason
		return rec, nil, nil
	}
	rec["decision"] = ceremonies.DecisionApprove
	if dec.HeadSHA != "" {
		r.HeadSHA = dec.HeadSHA
		rec["head_sha"] = r.HeadSHA
	}
	return rec, &GrantInput{Guard: ceremonies.MergeApprovalGuard, Role: ceremonies.ApproverRole}, nil
}

// candidate builds the job's candidate from its clone at the pull
// request's head and records it. A build that fails gives the reason the
// merge is declined with; a clone with nothing to build, none.
func (j *jobRun) candidate(ctx workflow.Context) (string, error) {
	r := &j.st.Record
	var res BuildCandidateResult
	if err := executeActivity(ctx, CandidateOptions, ActivityForgeBuildCandidate,
		BuildCandidateInput{Job: r.ID, Clone: r.Clone, HeadSHA: r.HeadSHA}, &res); err != nil {
		if msg, moved := branchMoved(ctx, err); moved {
			// Not the code's failure: the merge waits on a head the
			// clone cannot build.
			return "the candidate was not built: " + msg, nil
		}
		return "", fmt.Errorf("build the candidate: %w", err)
	}
	switch {
	case res.NothingToBuild:
		return "", nil
	case res.Failed != "":
		return candidateDeclined(res.Failed), nil
	}
	r.Candidate = &jobs.Candidate{Path: res.Path, Version: res.Version, Commit: res.Commit}
	j.report(ctx)
	return "", nil
}

// candidateDeclined is the reason a candidate that does not build declines
// the merge with: the end of the build's output, within
// candidateReasonBytes.
func candidateDeclined(failed string) string {
	const prefix = "the repaired axlrd/axlr-tui does not build: "
	out := strings.TrimSpace(failed)
	if over := len(prefix) + len(out) - candidateReasonBytes; over > 0 {
		cut := over + len("…")
		for cut < len(out) && !utf8.RuneStart(out[cut]) {
			cut++
		}
		out = "…" + out[cut:]
	}
	return prefix + out
}

// merge squash-merges the pull request guarded by the head the decision
// saw; under repair.install it installs the job's candidate right after.
func (j *jobRun) merge(ctx workflow.Context) (map[string]any, error) {
	r := &j.st.Record
	var res MergeResult
	if err := executeActivity(ctx, ForgeOptions, ActivityForgeMerge, MergeInput{
		Repository: r.Repository, Number: r.PullRequest, SHA: r.HeadSHA, Branch: fmt.Sprintf("%s/%s", r.Kind, r.ID),
		Title: j.title(ctx),
	}, &res); err != nil {
		return nil, fmt.Errorf("merge pull request #%d: %w", r.PullRequest, err)
	}
	rec := map[string]any{"pull_request": r.PullRequest}
	if res.Refused != "" {
		rec["merged"], rec["error"] = false, res.Refused
		r.Reason = "the merge was refused: " + res.Refused
		return rec, nil
	}
	r.MergeSHA = res.MergeSHA
	rec["merged"], rec["merge_sha"] = true, res.MergeSHA
	if j.in.Settings.Install && r.Candidate != nil && workflow.GetVersion(ctx, versionJobCandidate, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		j.install(ctx)
	}
	return rec, nil
}

// install installs the merged job's candidate. The merge stands either
// way: an install that fails is the record's reason.
func (j *jobRun) install(ctx workflow.Context) {
	r := &j.st.Record
	res, err := installCandidate(ctx, *r, "")
	if err != nil {
		r.Reason = "merged, but the candidate was not installed: " + failureMessage(err)
		workflow.GetLogger(ctx).Warn("candidate not installed", "job", r.ID, "error", err)
		return
	}
	r.Installed, j.installed = &res.Installed[0], res.Installed
}

// ended records how the ceremony ended: COMPLETED is the job's
// completion, a model that would not hand its step back fails it, and
// anything else blocks it with the reason.
func (j *jobRun) ended(ctx workflow.Context) error {
	c := j.st.Ceremony
	j.set(ctx, jobs.Running)
	switch {
	case c != nil && c.State == "COMPLETED":
		j.end(jobs.Completed, "")
	case c != nil && strings.HasPrefix(c.Stopped, StoppedStalled+":") &&
		workflow.GetVersion(ctx, versionReminders, workflow.DefaultVersion, 1) != workflow.DefaultVersion:
		j.end(jobs.Failed, c.Stopped)
	case c != nil && c.Stopped != "":
		j.end(jobs.Blocked, c.Stopped)
	default:
		state := "no state"
		if c != nil {
			state = c.State
		}
		j.end(jobs.Blocked, cmp.Or(j.st.Record.Reason, "the ceremony ended "+state))
	}
	return nil
}
