package workflows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/plans"
)

// A plan's workflow (PlanWorkflow) runs axlr_plan 1.0 from the brief to
// the plan's end. It hosts the planner's turn, read-only, in the plan's
// session, and the ceremony driver for the model's one step (decompose);
// it runs the console's steps itself:
//
//   - verify reads the hand-back from the session store and verifies it
//     without a model (ActivityPlanVerify); every defect goes back to the
//     planner, and the third unverified round since the plan began or was
//     last returned ends it BLOCKED. A verified plan's commands wait for
//     the person on the approval card, under plan.auto_approve too, and
//     each runs once as the baseline: one that cannot start is a defect,
//     and commands the person refuses go back to the planner with the
//     reason;
//   - approve takes the person's decision on the plan card (approve,
//     granted through the approver identity; return with a reason, at most
//     twice; decline with a reason) or plan.auto_approve's. The planner is
//     asked nothing after the plan is approved;
//   - run runs the waves in order, the tasks of a wave one after another,
//     each in its own worker (PlanTaskWorkflow, a child workflow whose id
//     names the plan, the task and the round), its first message the
//     task's context pack and the notes earlier tasks left for it; a task
//     that does not finish (its worker put its scope back, and the record
//     lists what it put back and the files it created) skips the tasks
//     that depend on it. After a wave whose tasks all finished, an
//     axlr_sync 1.0 instance runs the plan's end-to-end check; red opens a
//     reconciliation round, a worker for each affected task, and two red
//     rounds end the sync BLOCKED.
//
// The plan ends DONE when every task is done and every wave's sync green,
// else PARTIAL. Cancelling the workflow, or the interrupt decision,
// interrupts it: the workflow keeps its state, marks the running tasks
// pending and waits for the recover decision, which runs it on from where
// it stood. A failure that retries did not cure interrupts it the same
// way, with the failure as the reason. Every piece of work is an activity
// or a child workflow with an idempotent key, so an axlrd restart repeats
// nothing that completed, and the workflow id keeps a plan from running
// twice.

// ActivityPlanVerify reads the planner's decompose hand-back and verifies
// it (activities.Plan, registered with the "plan." prefix).
const ActivityPlanVerify = "plan.Verify"

// Limits of a plan.
const (
	// MaxVerifyRounds is the unverified rounds a plan may have since it
	// began or was last returned: the last ends it BLOCKED.
	MaxVerifyRounds = 3
	// MaxReconcileRounds is the reconciliation rounds of a wave's sync; a
	// red check after the last ends the sync BLOCKED.
	MaxReconcileRounds = 2
	// SyncTailBytes is how much of a red check's output a reconciliation
	// worker reads.
	SyncTailBytes = 2 << 10
)

// Console-step values the plan records for MADE that ceremonies does not
// name.
const (
	// stoppedPlannerBudget stops the plan's ceremony when the planner used
	// every tool-call budget of its step.
	stoppedPlannerBudget = "planner_budget"
	// e2eBaseline is the baseline record's key of the plan's end-to-end
	// check; each task's unit check is under the task's id.
	e2eBaseline = "e2e_check"
)

// PlanActivities are the plan's own activities.
type PlanActivities interface {
	Verify(context.Context, PlanVerifyInput) (plans.Verification, error)
}

// PlanVerifyInput verifies the decompose hand-back that the
// axlr_step_done call under CallKey in the planner's session carries,
// against the workspace at Root, for the plan Plan (which the packs name).
type PlanVerifyInput struct {
	Plan      string `json:"plan"`
	SessionID string `json:"session_id"`
	CallKey   string `json:"call_key"`
	Root      string `json:"root"`
}

// Validate checks a plan's input before it starts, naming the field.
func (in PlanInput) Validate() error {
	r := in.Record
	switch {
	case !plans.ValidID(r.ID):
		return fmt.Errorf("plan: id %q is not a plan's id (plans.ID makes one)", r.ID)
	case strings.TrimSpace(r.Brief) == "":
		return errors.New("plan: the brief is empty")
	case !strings.HasPrefix(r.Root, "/"):
		return fmt.Errorf("plan: root %q is not an absolute path", r.Root)
	case strings.TrimSpace(in.SessionID) == "":
		return errors.New("plan: session_id is empty")
	}
	return nil
}

// planState is what a plan's workflow knows.
type planState struct {
	// HostState holds the planner's turn and the plan's axlr_plan
	// instance (Ceremony); Instance is its id, chosen once.
	HostState
	Instance string
	Record   plans.Record
	// Begun: the planner's session holds the brief. Cut: the planner's
	// turn stopped before its end (the plan was interrupted), so the next
	// continues the step with a fresh budget.
	Begun, Cut bool
	// Round counts the verification rounds since the plan began or was
	// last returned; Returns the person's returns.
	Round, Returns int
	// Told is the next note for the planner: the defects, or the person's
	// reason to return the plan.
	Told string
	// Notes counts the notes appended to the planner's session, for their
	// keys.
	Notes int
	// Approved are the commands the person approved to run, Baseline
	// their runs, both by command (ceremonies.CheckCommand.String).
	Approved []string
	Baseline map[string]contract.CheckRecord
	// Verified is the verification of the plan on its card, and once
	// approved the one it runs: its decomposition, waves and packs.
	Verified *plans.Verification
	// TaskNotes are what the workers left for each other; Handbacks each
	// task's last worker's result.
	TaskNotes []plans.Note
	Handbacks map[string]PlanTaskResult
	// Workers counts the workers started for each task and round, so a
	// task run again gets a fresh session.
	Workers map[string]int
	// Sync is the current wave's axlr_sync instance (SyncWave), SyncMode
	// its driver's mode; SyncRuns counts its end-to-end runs, SyncTail
	// and Affected are what the last red one showed, Responses the
	// current reconciliation round's (ResponsesRound).
	Sync           *CeremonyState
	SyncMode       string
	SyncWave       int
	SyncRuns       int
	SyncTail       string
	Affected       []string
	Responses      []ceremonies.Response
	ResponsesRound int
	// Synced are the waves whose sync ended, green or blocked.
	Synced []int
	// Where is what the plan does now, for an interruption's reason.
	Where string
}

type planRun struct {
	Host
	in       PlanInput
	st       planState
	syncer   *Driver
	decision *PlanDecision
	// cancel interrupts the work; interrupting is the interruption's
	// reason; recovering is the recover decision, taken.
	cancel       workflow.CancelFunc
	interrupting string
	recovering   bool
	searched     *planSearch
}

// planSearch is what a plan's search attributes show.
type planSearch struct{ id, status, host string }

// Plan is a plan's workflow. It returns the plan's last record.
func Plan(ctx workflow.Context, in PlanInput) (plans.Record, error) {
	if err := in.Validate(); err != nil {
		return in.Record, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	p := newPlanRun(in)
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePlanDecide, p.decide,
		workflow.UpdateHandlerOptions{Validator: p.validateDecide}); err != nil {
		return p.st.Record, fmt.Errorf("register %s: %w", UpdatePlanDecide, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryPlan, func() (plans.Record, error) { return p.st.Record, nil }); err != nil {
		return p.st.Record, fmt.Errorf("register %s: %w", QueryPlan, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, p.progress); err != nil {
		return p.st.Record, fmt.Errorf("register %s: %w", QueryProgress, err)
	}
	// A plan started on the cluster queue does its work on its host's
	// queue, and waits there for the host while it is away.
	base := ctx
	if in.Host != "" && workflow.GetInfo(ctx).TaskQueueName == ClusterTaskQueue &&
		workflow.GetVersion(ctx, versionPlanPlacement, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		base = withPlacement(ctx, placement{host: in.Host, queue: HostTaskQueue(in.Host), stays: true})
		p.st.Record.Host = in.Host
	}
	for {
		work, cancel := workflow.WithCancel(base)
		p.cancel = cancel
		err := p.run(work)
		cancelled := work.Err() != nil
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			// Cancelled: the plan waits for the recover decision all the
			// same, and works on after it.
			base, _ = workflow.NewDisconnectedContext(base)
		}
		reason := "stopped while " + p.st.Where + ": " + failureMessage(err)
		if cancelled {
			reason = cmp.Or(p.interrupting, "interrupted while "+p.st.Where)
		}
		p.interrupted(base, reason)
		if err := workflow.Await(base, func() bool { return p.recovering }); err != nil {
			return p.st.Record, err
		}
		p.recovering, p.interrupting = false, ""
		p.st.Record.Reason = ""
	}
	p.finish(base, contract.Completed, "")
	p.report(base)
	if err := workflow.Await(base, func() bool { return workflow.AllHandlersFinished(base) }); err != nil {
		return p.st.Record, err
	}
	return p.st.Record, nil
}

func newPlanRun(in PlanInput) *planRun {
	p := &planRun{in: in}
	p.st = planState{
		HostState: newHostState(in.SessionID, "", in.Record.ID),
		Record:    in.Record,
		Baseline:  map[string]contract.CheckRecord{},
		Handbacks: map[string]PlanTaskResult{},
		Workers:   map[string]int{},
		Where:     "decomposing",
	}
	// The planner reads and changes nothing: its one step hands back a
	// proposal the console verifies.
	p.st.Approval, p.st.Policy = policy.ApproveLocal, &policy.Policy{Level: policy.Observe}
	p.Host = newHost(&p.st.HostState, hostOptions{})
	// The sync's instance has console steps only: its driver shares the
	// planner's turn for its journal and never asks the model.
	p.syncer = p.secondDriver(&p.st.Sync, &p.st.SyncMode)
	return p
}

// run drives the plan's instance from where it stands to its end.
func (p *planRun) run(ctx workflow.Context) error {
	r := &p.st.Record
	if !p.st.Begun {
		p.set(ctx, plans.Decomposing)
		p.report(ctx)
		if err := p.turn.Begin(ctx, BeginTurnInput{SessionID: p.in.SessionID, ExecutionID: r.ID, Prompt: r.Brief,
			Model: p.in.Model, Root: r.Root, Mode: ceremonies.PartPlan}); err != nil {
			return err
		}
		r.PlannerModel = cmp.Or(r.PlannerModel, p.st.Model)
		p.st.Begun = true
	}
	if p.st.Ceremony == nil {
		if p.st.Instance == "" {
			p.st.Instance = fmt.Sprintf("axlr-%s-%d", r.ID, workflow.Now(ctx).Unix())
		}
		inputs := map[string]any{}
		if r.PlannerModel != "" {
			inputs["planner_model"] = r.PlannerModel
		}
		def, _ := ceremonies.ForPlan(ceremonies.PartPlan)
		mem, recall, err := p.wakePlan(ctx)
		if err != nil {
			return err
		}
		if err := p.driver.Open(ctx, def.Name, def.Version, Opening{InstanceID: p.st.Instance, Brief: r.Brief, Inputs: inputs, Execution: r.ID,
			Memory: mem, Recall: recall}, nil); err != nil {
			return err
		}
	}
	for {
		if p.driver.stepOpen() {
			if err := p.model(ctx); err != nil {
				return err
			}
			continue
		}
		st, ok := p.driver.ConsoleStep()
		if !ok {
			p.ended(ctx)
			p.rememberOutcome(ctx)
			return nil
		}
		if err := p.console(ctx, st.ID); err != nil {
			return err
		}
	}
}

// model runs the planner's turn of the decompose step. A turn cut short by
// an interruption continues with a fresh budget.
func (p *planRun) model(ctx workflow.Context) error {
	r := &p.st.Record
	p.st.Where = "decomposing"
	p.set(ctx, plans.Decomposing)
	p.report(ctx)
	if p.st.Cut {
		if err := p.turn.Begin(ctx, BeginTurnInput{SessionID: p.turn.Current(), ExecutionID: r.ID, Model: p.st.Model,
			Root: r.Root, Mode: ceremonies.PartPlan}); err != nil {
			return err
		}
		if err := p.driver.Continue(ctx, r.ID); err != nil {
			return err
		}
	}
	p.st.Cut = true
	err := p.turn.Run(ctx, nil)
	if errors.Is(err, errPaused) {
		p.st.Cut = false
		// No person continues a planner: the plan is blocked.
		return p.driver.stop(ctx, stoppedPlannerBudget, err.Error(), "failed")
	}
	if err != nil {
		return err
	}
	p.st.Cut = false
	return nil
}

// console runs a console step of the plan and completes it with what it
// recorded. A step that sends the plan back to the planner tells it why.
func (p *planRun) console(ctx workflow.Context, step string) error {
	var recorded map[string]any
	var grant *GrantInput
	var err error
	switch step {
	case "verify":
		recorded, err = p.verify(ctx)
	case "approve":
		recorded, grant, err = p.approve(ctx)
	case "run":
		recorded, err = p.runWaves(ctx)
	default:
		return fmt.Errorf("the plan has no console step %q", step)
	}
	if err != nil {
		return err
	}
	out, err := p.driver.CompleteConsole(ctx, recorded, grant)
	if err != nil {
		return err
	}
	if out.Step == "" || !p.driver.stepOpen() {
		return nil
	}
	p.st.Notes++
	key := fmt.Sprintf("plan:%s:%s:%d", p.st.Instance, step, p.st.Notes)
	return p.turn.AppendConsole(ctx, ActivityAppendNote, key, p.st.Told)
}

// verify verifies the planner's last hand-back, and when it holds runs its
// commands once, after the person approved them.
func (p *planRun) verify(ctx workflow.Context) (map[string]any, error) {
	r := &p.st.Record
	p.st.Where = "verifying"
	p.set(ctx, plans.Decomposing)
	session, key := p.handBack()
	if key == "" {
		return nil, errors.New("verify: the planner's session holds no accepted decompose hand-back")
	}
	var v plans.Verification
	err := executeLocal(ctx, LocalOptions, ActivityPlanVerify,
		PlanVerifyInput{Plan: r.ID, SessionID: session, CallKey: key, Root: r.Root}).Get(ctx, &v)
	if err != nil {
		return nil, fmt.Errorf("verify the plan: %w", err)
	}
	p.st.Round++
	rec := map[string]any{"round": p.st.Round}
	defects := v.Defects
	if len(defects) == 0 {
		if defects, err = p.baseline(ctx, v.Decomposition); err != nil {
			return nil, err
		}
	}
	if len(defects) > 0 {
		msgs := defects.Messages()
		rec["defects"] = msgs
		if p.st.Round >= MaxVerifyRounds {
			rec["verdict"] = ceremonies.VerdictBlocked
			r.Reason = fmt.Sprintf("%d verification rounds found defects; the last: %s", p.st.Round, strings.Join(msgs, "; "))
			return rec, nil
		}
		rec["verdict"] = ceremonies.VerdictDefects
		p.st.Told = fmt.Sprintf("[AXLR] Verification round %d of %d found defects in the plan. Fix every one and hand step decompose back with %s, the whole plan again:\n- %s",
			p.st.Round, MaxVerifyRounds, StepDoneTool, strings.Join(msgs, "\n- "))
		return rec, nil
	}
	d := v.Decomposition
	base := map[string]contract.CheckRecord{e2eBaseline: p.st.Baseline[d.E2ECheck.String()]}
	for _, t := range d.Tasks {
		base[t.ID] = p.st.Baseline[t.UnitCheck.String()]
	}
	rec["verdict"], rec["waves"], rec["baseline"] = ceremonies.VerdictVerified, len(v.Waves), base
	p.st.Verified = &v
	r.Tasks, r.Waves, r.Syncs = plans.NewTasks(d, v.Waves), len(v.Waves), []plans.Sync{}
	return rec, nil
}

// handBack is the session and key of the planner's last accepted
// axlr_step_done call: the decompose hand-back verify reads.
func (p *planRun) handBack() (string, string) {
	for i := len(p.st.Calls) - 1; i >= 0; i-- {
		if c := p.st.Calls[i]; c.Tool == StepDoneTool && c.Status == contract.CallCompleted {
			return c.Session, c.Key
		}
	}
	return "", ""
}

// baseline asks the person to run the decomposition's commands it has not
// approved before, under plan.auto_approve too, and runs each command not
// run before once. It returns the defects: the commands refused, or those
// that could not start.
func (p *planRun) baseline(ctx workflow.Context, d plans.Decomposition) (plans.Defects, error) {
	r := &p.st.Record
	cmds := d.Commands()
	var ask []string
	for _, c := range cmds {
		if s := c.String(); !slices.Contains(p.st.Approved, s) {
			ask = append(ask, s)
		}
	}
	if len(ask) > 0 {
		p.st.Where = "waiting for the person to approve the plan's commands"
		r.Pending = &plans.Pending{Kind: plans.PendingCommand, Commands: ask}
		p.set(ctx, plans.AwaitingApproval)
		p.report(ctx)
		dec, err := p.await(ctx, PlanDecideCommands)
		if err != nil {
			return nil, err
		}
		r.Pending = nil
		p.st.Where = "verifying"
		p.set(ctx, plans.Decomposing)
		p.report(ctx)
		if dec.Decision == PlanDeny {
			return plans.Defects{{Text: fmt.Sprintf("the person refused to run %s: %s; propose checks the person accepts",
				strings.Join(ask, ", "), dec.Reason)}}, nil
		}
		p.st.Approved = append(p.st.Approved, ask...)
	}
	for _, c := range cmds {
		s := c.String()
		if _, ran := p.st.Baseline[s]; ran {
			continue
		}
		var rec contract.CheckRecord
		if err := executeActivity(ctx, CheckOptions, ActivityCeremonyRunCheck, RunCheckInput{
			SessionID: p.turn.Current(), Root: r.Root, Key: fmt.Sprintf("%s:verify:baseline:%d", p.st.Instance, len(p.st.Baseline)),
			Command: ceremonies.CheckCommand{Program: c.Program, Args: c.Args},
		}, &rec); err != nil {
			return nil, fmt.Errorf("run %s as the baseline: %w", s, err)
		}
		p.st.Baseline[s] = rec
	}
	var ds plans.Defects
	if rec := p.st.Baseline[d.E2ECheck.String()]; rec.StartError != "" {
		ds = append(ds, plans.E2ECheckDidNotRun(rec.StartError))
	}
	for _, t := range d.Tasks {
		if rec := p.st.Baseline[t.UnitCheck.String()]; rec.StartError != "" {
			ds = append(ds, plans.UnitCheckDidNotRun(t.ID, rec.StartError))
		}
	}
	return ds, nil
}

// approve takes the decision on the verified plan: plan.auto_approve's, or
// the person's on the plan card.
func (p *planRun) approve(ctx workflow.Context) (map[string]any, *GrantInput, error) {
	r := &p.st.Record
	if p.in.AutoApprove {
		p.set(ctx, plans.Ready)
		p.report(ctx)
		return map[string]any{"decision": ceremonies.DecisionAutomatic, "returns": p.st.Returns}, nil, nil
	}
	p.st.Where = "waiting for the person on the plan card"
	var cmds []string
	for _, c := range p.st.Verified.Decomposition.Commands() {
		cmds = append(cmds, c.String())
	}
	r.Pending = &plans.Pending{Kind: plans.PendingApproval, Commands: cmds}
	p.set(ctx, plans.AwaitingApproval)
	p.report(ctx)
	dec, err := p.await(ctx, PlanDecidePlan)
	if err != nil {
		return nil, nil, err
	}
	r.Pending = nil
	switch dec.Decision {
	case PlanApprove:
		p.set(ctx, plans.Ready)
		p.report(ctx)
		return map[string]any{"decision": ceremonies.DecisionApprove, "returns": p.st.Returns},
			&GrantInput{Guard: ceremonies.PlanApprovalGuard, Role: ceremonies.ApproverRole}, nil
	case PlanReturn:
		p.st.Returns++
		p.st.Round, p.st.Verified = 0, nil
		r.Tasks, r.Waves = nil, 0
		p.st.Told = fmt.Sprintf("[AXLR] The person returned the plan (return %d of %d): %s\nRevise it and hand step decompose back with %s, the whole plan again.",
			p.st.Returns, ceremonies.MaxReturns, dec.Reason, StepDoneTool)
		p.set(ctx, plans.Decomposing)
		p.report(ctx)
		return map[string]any{"decision": ceremonies.DecisionReturn, "reason": dec.Reason, "returns": p.st.Returns}, nil, nil
	}
	r.Reason = "the person declined the plan: " + dec.Reason
	p.set(ctx, plans.Declined)
	return map[string]any{"decision": ceremonies.DecisionDecline, "reason": dec.Reason, "returns": p.st.Returns}, nil, nil
}

// runWaves runs the approved plan's waves in order, each wave's pending
// tasks one after another and, once its tasks all finished, its sync. It
// returns the run step's record.
func (p *planRun) runWaves(ctx workflow.Context) (map[string]any, error) {
	r := &p.st.Record
	p.st.Where = "running"
	p.set(ctx, plans.Running)
	p.report(ctx)
	for w, ids := range p.st.Verified.Waves {
		wave := w + 1
		for _, id := range ids {
			if t := r.Task(id); t.Status == plans.TaskPending {
				if err := p.runTask(ctx, wave, id); err != nil {
					return nil, err
				}
			}
		}
		if slices.Contains(p.st.Synced, wave) || slices.ContainsFunc(ids, func(id string) bool { return r.Task(id).Status != plans.TaskDone }) {
			continue
		}
		if err := p.syncWave(ctx, wave); err != nil {
			return nil, err
		}
	}
	return p.runRecord(ctx)
}

// runTask runs one task's worker to its end and records how it ended; a
// task that did not finish skips the tasks that depend on it. An
// interruption puts the task back to pending, unless it was done.
func (p *planRun) runTask(ctx workflow.Context, wave int, id string) error {
	r := &p.st.Record
	t := r.Task(id)
	spec, _ := p.st.Verified.Decomposition.Task(id)
	prompt := p.pack(id)
	if notes := plans.NotesText(plans.NotesFor(p.st.TaskNotes, id)); notes != "" {
		prompt += "\n" + notes
	}
	recall, err := p.wakeTask(ctx, spec.Goal)
	if err != nil {
		return err
	}
	if recall != "" {
		prompt += "\n\n" + recall
	}
	in := p.workerInput(ctx, spec, wave, 0, prompt)
	p.st.Where = fmt.Sprintf("running task %s of wave %d", id, wave)
	t.Status, t.Session, t.Reason = plans.TaskRunning, in.SessionID, ""
	p.report(ctx)
	res, err := p.worker(ctx, in)
	if ctx.Err() != nil && (err != nil || res.Status != plans.TaskDone) {
		t.Status, t.Session = plans.TaskPending, ""
		if err != nil {
			res = cancelledWorker(err)
		}
		t.Restored, t.Created = unionOf(t.Restored, res.Restored), unionOf(t.Created, res.Created)
		return cmp.Or(err, ctx.Err())
	}
	switch {
	case err != nil:
		t.Status, t.Reason = plans.TaskBlocked, "its worker failed: "+failureMessage(err)
	case res.Status == plans.TaskDone || res.Status == plans.TaskBlocked:
		t.Status, t.Reason = res.Status, res.Reason
	default:
		t.Status, t.Reason = plans.TaskBlocked, fmt.Sprintf("its worker ended %q: %s", res.Status, res.Reason)
	}
	if t.Status == plans.TaskBlocked && t.Reason == "" {
		t.Reason = "its worker did not finish"
	}
	t.Session = cmp.Or(res.SessionID, t.Session)
	t.Changed = slices.Clone(res.Changed)
	t.Questions = slices.Clone(res.Questions)
	t.Restored, t.Created = unionOf(t.Restored, res.Restored), unionOf(t.Created, res.Created)
	p.st.Handbacks[id] = res
	p.keepNotes(id, res.Notes)
	p.rememberHandback(ctx, wave, id, res)
	if t.Status != plans.TaskDone {
		r.SkipDependents()
	}
	p.report(ctx)
	return nil
}

// cancelledWorker is the result a cancelled worker carried in its
// cancellation's details (since versionKeepScope, what it restored and
// left), or none.
func cancelledWorker(err error) PlanTaskResult {
	var res PlanTaskResult
	var reason string
	var ce *temporal.CanceledError
	if !errors.As(err, &ce) || !ce.HasDetails() || ce.Details(&reason, &res) != nil {
		return PlanTaskResult{}
	}
	return res
}

// unionOf is the files of a and then those of b not in a, nil for none.
func unionOf(a, b []string) []string {
	out := slices.Clone(a)
	for _, f := range b {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// pack is the context pack of a task, as its verification built it.
func (p *planRun) pack(id string) string {
	v := p.st.Verified
	i := slices.IndexFunc(v.Decomposition.Tasks, func(t ceremonies.PlanTask) bool { return t.ID == id })
	return v.Packs[i]
}

// workerInput is the input of a worker of a task: a fresh session (each
// worker's own, a replay names it the same), the task model, the files
// the plan's tasks changed so far.
func (p *planRun) workerInput(ctx workflow.Context, spec ceremonies.PlanTask, wave, round int, prompt string) PlanTaskInput {
	r := &p.st.Record
	key := PlanTaskWorkflowID(r.ID, spec.ID, round)
	p.st.Workers[key]++
	name := fmt.Sprintf("%s/%s/%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, key, p.st.Workers[key])
	ids := make([]string, 0, len(r.Tasks))
	for _, t := range r.Tasks {
		ids = append(ids, t.ID)
	}
	return PlanTaskInput{Plan: r.ID, Task: spec, Wave: wave, Round: round, Prompt: prompt,
		SessionID: uuid.NewSHA1(uuid.NameSpaceURL, []byte("axlr-plan-worker:"+name)).String(),
		Host:      p.in.Host, Root: r.Root, Model: p.in.TaskModel, Changed: p.changed(), Tasks: ids}
}

// worker runs a task's worker as a child workflow. Its id names the plan,
// the task and the round, so a start retried after a restart finds the
// one that runs. The child is terminated when the plan's workflow closes:
// a worker edits the workspace, and one whose plan is gone must not go on
// under a plan started again there, nor keep its id from the worker that
// plan starts. Cancelling the plan cancels it and waits for it to stop.
func (p *planRun) worker(ctx workflow.Context, in PlanTaskInput) (PlanTaskResult, error) {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          PlanTaskWorkflowID(in.Plan, in.Task.ID, in.Round),
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		WaitForCancellation: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttributePlan).ValueSet(in.Plan),
			temporal.NewSearchAttributeKeyKeyword(SearchAttributePlanTask).ValueSet(in.Task.ID),
			temporal.NewSearchAttributeKeyInt64(SearchAttributePlanWave).ValueSet(int64(in.Wave)),
		),
	}
	if at, placed := placedOn(ctx); placed {
		opts.TaskQueue = at.queue
	}
	var res PlanTaskResult
	err := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), PlanTaskWorkflow, in).Get(ctx, &res)
	return res, err
}

// keepNotes keeps the notes a task's worker left, each from the task.
func (p *planRun) keepNotes(from string, notes []plans.Note) {
	for _, n := range notes {
		n.From = from
		p.st.TaskNotes = append(p.st.TaskNotes, n)
	}
}

// changed lists the files the plan's tasks changed, in task order, each
// once.
func (p *planRun) changed() []string {
	var out []string
	for _, t := range p.st.Record.Tasks {
		for _, f := range t.Changed {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// syncWave runs the sync of a wave whose tasks all finished, from where it
// stands to its end.
func (p *planRun) syncWave(ctx workflow.Context, wave int) error {
	r := &p.st.Record
	if c := p.st.Sync; c == nil || p.st.SyncWave != wave {
		id := fmt.Sprintf("axlr-%s-sync%d-%d", r.ID, wave, workflow.Now(ctx).Unix())
		p.st.SyncWave, p.st.SyncRuns, p.st.Responses, p.st.ResponsesRound = wave, 0, nil, 0
		def, _ := ceremonies.ForPlan(ceremonies.PartSync)
		if err := p.syncer.Open(ctx, def.Name, def.Version, Opening{InstanceID: id, Execution: r.ID, Inputs: map[string]any{
			"plan": r.ID, "wave": wave, "tasks": p.st.Verified.Waves[wave-1],
		}}, nil); err != nil {
			return err
		}
	}
	for {
		st, ok := p.syncer.ConsoleStep()
		if !ok {
			p.st.Synced = append(p.st.Synced, wave)
			p.rememberSync(ctx, wave)
			return nil
		}
		var recorded map[string]any
		var err error
		switch st.ID {
		case "integrate":
			recorded, err = p.integrate(ctx, wave)
		case "reconcile":
			recorded, err = p.reconcile(ctx, wave)
		default:
			return fmt.Errorf("the sync has no console step %q", st.ID)
		}
		if err != nil {
			return err
		}
		if _, err := p.syncer.CompleteConsole(ctx, recorded, nil); err != nil {
			return err
		}
	}
}

// integrate runs the plan's end-to-end check over the wave's work.
func (p *planRun) integrate(ctx workflow.Context, wave int) (map[string]any, error) {
	r := &p.st.Record
	round := p.st.SyncRuns
	p.st.Where = fmt.Sprintf("integrating wave %d", wave)
	p.report(ctx)
	e2e := p.st.Verified.Decomposition.E2ECheck
	var check contract.CheckRecord
	if err := executeActivity(ctx, CheckOptions, ActivityCeremonyRunCheck, RunCheckInput{
		SessionID: p.turn.Current(), Root: r.Root, Key: fmt.Sprintf("%s:integrate:s%d", p.st.Sync.InstanceID, round),
		Command: ceremonies.CheckCommand{Program: e2e.Program, Args: e2e.Args},
	}, &check); err != nil {
		return nil, fmt.Errorf("run the end-to-end check of wave %d: %w", wave, err)
	}
	p.st.SyncRuns++
	r.Syncs = append(r.Syncs, plans.Sync{Wave: wave, Check: e2e, Exit: check.ExitCode, Round: round})
	p.report(ctx)
	rec := map[string]any{"round": round + 1, "check": check}
	switch {
	case check.StartError != "":
		rec["verdict"], rec["reason"] = ceremonies.VerdictBlocked, "the end-to-end check did not run: "+check.StartError
	case check.Passed():
		rec["verdict"] = ceremonies.VerdictGreen
	case round >= MaxReconcileRounds:
		rec["verdict"], rec["reason"] = ceremonies.VerdictBlocked,
			fmt.Sprintf("the end-to-end check %s after %d reconciliation rounds", check.Ending(), MaxReconcileRounds)
	default:
		var tasks []plans.Task
		for _, id := range p.st.Verified.Waves[wave-1] {
			tasks = append(tasks, *r.Task(id))
		}
		p.st.SyncTail = lastBytes(check.OutputTail, SyncTailBytes)
		p.st.Affected = plans.Affected(tasks, p.st.SyncTail)
		rec["verdict"], rec["affected"] = ceremonies.VerdictRed, p.st.Affected
	}
	return rec, nil
}

// reconcile runs a reconciliation round: a fresh worker for each affected
// task, one after another, each told its own hand-back, the other tasks'
// of the wave, the notes for it and the failing tail.
func (p *planRun) reconcile(ctx workflow.Context, wave int) (map[string]any, error) {
	r := &p.st.Record
	round := p.st.SyncRuns
	if p.st.ResponsesRound != round {
		p.st.Responses, p.st.ResponsesRound = []ceremonies.Response{}, round
	}
	for _, id := range p.st.Affected {
		if slices.ContainsFunc(p.st.Responses, func(res ceremonies.Response) bool { return res.Task == id }) {
			continue
		}
		spec, _ := p.st.Verified.Decomposition.Task(id)
		spec.TestFirst = false
		in := p.workerInput(ctx, spec, wave, round, p.reconcilePrompt(wave, round, id))
		p.st.Where = fmt.Sprintf("reconciling task %s of wave %d (round %d)", id, wave, round)
		p.report(ctx)
		res, err := p.worker(ctx, in)
		if ctx.Err() != nil {
			if err != nil {
				res = cancelledWorker(err)
			}
			t := r.Task(id)
			t.Restored, t.Created = unionOf(t.Restored, res.Restored), unionOf(t.Created, res.Created)
			return nil, cmp.Or(err, ctx.Err())
		}
		response := ceremonies.Response{Task: id, Changed: slices.Clone(res.Changed), Summary: res.Summary, Notes: []ceremonies.Note{}}
		switch {
		case err != nil:
			response.Summary = "its worker failed: " + failureMessage(err)
		case res.Status != plans.TaskDone:
			response.Summary = "blocked: " + cmp.Or(res.Reason, "its worker did not finish")
		}
		if response.Changed == nil {
			response.Changed = []string{}
		}
		notes := append(slices.Clone(res.Notes), plans.ParseNotes(id, res.Summary)...)
		p.keepNotes(id, notes)
		for _, n := range notes {
			response.Notes = append(response.Notes, ceremonies.Note{To: n.To, Text: n.Text})
		}
		t := r.Task(id)
		for _, f := range res.Changed {
			if !slices.Contains(t.Changed, f) {
				t.Changed = append(t.Changed, f)
			}
		}
		t.Restored, t.Created = unionOf(t.Restored, res.Restored), unionOf(t.Created, res.Created)
		for _, q := range res.Questions {
			if !slices.Contains(t.Questions, q) {
				t.Questions = append(t.Questions, q)
			}
		}
		p.st.Responses = append(p.st.Responses, response)
		p.report(ctx)
	}
	return map[string]any{"reconciled": true, "round": round, "responses": p.st.Responses}, nil
}

// reconcilePrompt is a reconciliation worker's first message.
func (p *planRun) reconcilePrompt(wave, round int, id string) string {
	r := &p.st.Record
	var b strings.Builder
	e2e := p.st.Verified.Decomposition.E2ECheck
	fmt.Fprintf(&b, "[AXLR] Reconciliation round %d of %d, wave %d of plan %s: every task of the wave is done, but the plan's end-to-end check %s failed.\n\n",
		round, MaxReconcileRounds, wave, r.ID, e2e)
	fmt.Fprintf(&b, "Your task:\n%s\n", p.pack(id))
	fmt.Fprintf(&b, "Your task's hand-back: %s\n", handbackLine(p.st.Handbacks[id]))
	var others []string
	for _, o := range p.st.Verified.Waves[wave-1] {
		if o != id {
			others = append(others, fmt.Sprintf("- %s: %s", o, handbackLine(p.st.Handbacks[o])))
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "The other tasks' hand-backs:\n%s\n", strings.Join(others, "\n"))
	}
	if notes := plans.NotesText(plans.NotesFor(p.st.TaskNotes, id)); notes != "" {
		b.WriteString(notes)
	}
	fmt.Fprintf(&b, "\nThe end of the check's output:\n%s\n\n", p.st.SyncTail)
	b.WriteString("Find the cause. If it is in your task's scope, change only those files, until the unit check and the end-to-end check pass. " +
		"If it is in another task's scope, change nothing and leave that task a note: in your hand-back's notes, or as a line NOTE <task>: what it must change (NOTE all: for every task).")
	return b.String()
}

// handbackLine is a worker's hand-back in one line.
func handbackLine(h PlanTaskResult) string {
	changed := "nothing"
	if len(h.Changed) > 0 {
		changed = strings.Join(h.Changed, ", ")
	}
	return fmt.Sprintf("%s (changed: %s)", cmp.Or(strings.Join(strings.Fields(h.Summary), " "), "no summary"), changed)
}

// runRecord is the run step's record once every wave ran: the outcome and
// what makes it.
func (p *planRun) runRecord(ctx workflow.Context) (map[string]any, error) {
	r := &p.st.Record
	done, blocked, skipped := []string{}, []string{}, []string{}
	// why says what keeps the plan from done.
	var why []string
	for _, t := range r.Tasks {
		switch t.Status {
		case plans.TaskDone:
			done = append(done, t.ID)
		case plans.TaskBlocked:
			blocked = append(blocked, t.ID+": "+t.Reason)
			why = append(why, fmt.Sprintf("task %s is blocked: %s", t.ID, t.Reason))
		case plans.TaskSkipped:
			skipped = append(skipped, t.ID+": "+t.Reason)
			why = append(why, fmt.Sprintf("task %s is skipped: %s", t.ID, t.Reason))
		}
	}
	synced := 0
	for w := 1; w <= r.Waves; w++ {
		if last := lastSync(r.Syncs, w); last != nil && last.Green() {
			synced++
		} else if last != nil {
			why = append(why, fmt.Sprintf("the end-to-end check after wave %d is not green", w))
		}
	}
	changed := p.changed()
	if changed == nil {
		changed = []string{}
	}
	rec := map[string]any{"waves": r.Waves, "synced": synced, "done": done, "blocked": blocked, "skipped": skipped, "changed": changed}
	var rev contract.CheckRecord
	if err := executeActivity(ctx, CheckOptions, ActivityCeremonyRunCheck, RunCheckInput{
		SessionID: p.turn.Current(), Root: r.Root, Key: p.st.Instance + ":run",
	}, &rev); err != nil {
		return nil, fmt.Errorf("read the workspace's revision: %w", err)
	}
	if head, _ := ceremonies.ReadRevision(rev.OutputTail); head != "" {
		rec["revision"] = head
	}
	rec["outcome"] = ceremonies.OutcomeDone
	if r.Outcome() == plans.Partial {
		r.Reason = strings.Join(why, "; ")
		rec["outcome"], rec["reason"] = ceremonies.OutcomePartial, r.Reason
	}
	return rec, nil
}

// lastSync is the last end-to-end run after a wave, nil when none ran.
func lastSync(syncs []plans.Sync, wave int) *plans.Sync {
	for i := len(syncs) - 1; i >= 0; i-- {
		if syncs[i].Wave == wave {
			return &syncs[i]
		}
	}
	return nil
}

// ended records how the plan's instance ended.
func (p *planRun) ended(ctx workflow.Context) {
	r := &p.st.Record
	c := p.st.Ceremony
	r.Pending = nil
	switch {
	case c.Stopped != "":
		r.Status, r.Reason = plans.Blocked, c.Stopped
	case c.State == "DONE":
		r.Status, r.Reason = plans.Done, ""
	case c.State == "PARTIAL":
		r.Status = plans.Partial
	case c.State == "BLOCKED":
		r.Status = plans.Blocked
	case c.State == "DECLINED":
		r.Status = plans.Declined
	default:
		r.Status, r.Reason = plans.Blocked, "the plan's ceremony ended "+c.State
	}
	p.set(ctx, r.Status)
}

// interrupted records that the plan stopped before its end, for the
// reason: its running tasks are pending again.
func (p *planRun) interrupted(ctx workflow.Context, reason string) {
	r := &p.st.Record
	for i := range r.Tasks {
		if r.Tasks[i].Status == plans.TaskRunning {
			r.Tasks[i].Status, r.Tasks[i].Session = plans.TaskPending, ""
		}
	}
	p.decision = nil
	r.Pending, r.Reason = nil, reason
	p.set(ctx, plans.Interrupted)
	p.report(ctx)
}

// await waits for the person's decision of a kind.
func (p *planRun) await(ctx workflow.Context, kind string) (PlanDecision, error) {
	if err := workflow.Await(ctx, func() bool { return p.decision != nil && p.decision.Kind == kind }); err != nil {
		return PlanDecision{}, err
	}
	d := *p.decision
	p.decision = nil
	return d, nil
}

func (p *planRun) validateDecide(ctx workflow.Context, d PlanDecision) error {
	r := p.st.Record
	switch {
	case strings.TrimSpace(d.RequestID) == "":
		return errors.New("decide: request_id is empty")
	case d.Plan != r.ID:
		return fmt.Errorf("decide: this is plan %s, not %s", r.ID, d.Plan)
	case r.Status.Terminal():
		return fmt.Errorf("decide: plan %s has ended %s", r.ID, r.Status)
	case p.decision != nil || p.recovering || (p.interrupting != "" && r.Status != plans.Interrupted):
		return fmt.Errorf("decide: plan %s already has a decision to apply", r.ID)
	}
	decisions := map[string][]string{
		PlanDecideCommands: {PlanApprove, PlanDeny}, PlanDecidePlan: {PlanApprove, PlanReturn, PlanDecline},
		PlanDecideRecover: {PlanApprove}, PlanDecideInterrupt: {PlanApprove},
	}
	allowed, known := decisions[d.Kind]
	switch {
	case !known:
		return fmt.Errorf("decide: unknown kind %q: %s, %s, %s or %s", d.Kind, PlanDecideCommands, PlanDecidePlan, PlanDecideRecover, PlanDecideInterrupt)
	case !slices.Contains(allowed, d.Decision):
		return fmt.Errorf("decide: a %s decision is %s, not %q", d.Kind, strings.Join(allowed, ", "), d.Decision)
	case d.Kind == PlanDecideRecover && r.Status != plans.Interrupted:
		return fmt.Errorf("decide: plan %s is %s; only an interrupted plan is recovered", r.ID, r.Status)
	case d.Kind == PlanDecideInterrupt && r.Status == plans.Interrupted:
		return fmt.Errorf("decide: plan %s is interrupted already; recover it to run it on", r.ID)
	case d.Kind == PlanDecideInterrupt:
		return nil
	case d.Kind == PlanDecideRecover:
		return nil
	}
	want := plans.PendingCommand
	if d.Kind == PlanDecidePlan {
		want = plans.PendingApproval
	}
	switch {
	case r.Pending == nil:
		return fmt.Errorf("decide: plan %s waits for no decision (it is %s)", r.ID, r.Status)
	case r.Pending.Kind != want:
		return fmt.Errorf("decide: plan %s waits for the person on its %s, not its %s", r.ID, r.Pending.Kind, want)
	case d.Decision != PlanApprove && strings.TrimSpace(d.Reason) == "":
		return fmt.Errorf("decide: to %s the %s of plan %s needs a reason", d.Decision, d.Kind, r.ID)
	case d.Decision == PlanReturn && p.st.Returns >= ceremonies.MaxReturns:
		return fmt.Errorf("decide: plan %s was returned %d times, the most it may be; approve or decline it", r.ID, p.st.Returns)
	}
	return nil
}

// decide applies the person's decision and answers the record once the
// plan has taken it.
func (p *planRun) decide(ctx workflow.Context, d PlanDecision) (plans.Record, error) {
	// The answer waits on a context the plan's cancellation does not end:
	// the recover decision comes after it.
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	var taken func() bool
	switch d.Kind {
	case PlanDecideInterrupt:
		p.interrupting = cmp.Or(strings.TrimSpace(d.Reason), "interrupted by the person")
		p.cancel()
		taken = func() bool { return p.st.Record.Status == plans.Interrupted }
	case PlanDecideRecover:
		p.recovering = true
		taken = func() bool { return !p.recovering }
	default:
		p.decision = &d
		taken = func() bool { return p.decision == nil }
	}
	if err := workflow.Await(ctx, taken); err != nil {
		return p.st.Record, err
	}
	return p.st.Record, nil
}

func (p *planRun) progress(q ProgressQuery) (Progress, error) {
	if q.ExecutionID != "" && q.ExecutionID != p.st.Record.ID {
		return Progress{}, refuse("execution %s is not this plan's; the plan runs execution %s", q.ExecutionID, p.st.Record.ID)
	}
	return p.st.page(p.st.Execution, p.st.Current(), q.After), nil
}

// set sets the record's status and stamps it.
func (p *planRun) set(ctx workflow.Context, status plans.Status) {
	p.st.Record.Status = status
	p.st.Record.Updated = workflow.Now(ctx).UTC()
}

// report stamps the record and shows it in the search attributes when
// what they show changed. A search attribute that cannot be set is
// logged, and the plan goes on.
func (p *planRun) report(ctx workflow.Context) {
	r := &p.st.Record
	r.Updated = workflow.Now(ctx).UTC()
	s := planSearch{id: r.ID, status: string(r.Status), host: r.Host}
	if p.searched != nil && *p.searched == s {
		return
	}
	u := []temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(SearchAttributePlan).ValueSet(s.id),
		temporal.NewSearchAttributeKeyKeyword(SearchAttributePlanStatus).ValueSet(s.status),
	}
	if s.host != "" {
		u = append(u, temporal.NewSearchAttributeKeyKeyword(SearchAttributeHost).ValueSet(s.host))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, u...); err != nil {
		workflow.GetLogger(ctx).Warn("plan search attributes not set", "plan", s.id, "error", err)
		return
	}
	p.searched = &s
}

// lastBytes keeps the last n bytes of s, from a character's start.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
