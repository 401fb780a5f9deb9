package workflows

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/plans"
)

// A plan task's worker (PlanTaskWorkflow) runs one task of an approved
// plan in a fresh session with the session's model and the workspace's
// local tools, approved without asking, on axlr_task 1.0:
//
//   - start (AXLR's): the digests of the task's scope, its protected files
//     and the files already changed (the plan's earlier tasks', and what
//     git status shows), and the unit check run once as the baseline;
//   - red (test-first tasks): the model writes the failing test, its writes
//     reaching only the scope's test files; AXLR checks that the test files
//     it names changed and that the unit check fails, then freezes them;
//   - green: the model makes the unit check pass; AXLR checks that the
//     frozen and protected files are intact and every change is inside the
//     scope (git status; without Git, the digests), then that the unit
//     check passes and ran a test;
//   - handback (AXLR's): the changed files, the revision, the notes and
//     the questions.
//
// The unit check was approved with the plan: it never asks. A call that
// would ask the person, the rounds of a step used up, or an answer without
// a tool call after BackgroundReminders reminders ends the task BLOCKED
// with the reason.
//
// The start also keeps the content of the scope files, outside history
// (ActivityPlanTaskKeepScope). A worker that ends without a hand-back,
// blocked or cancelled, puts them back as they were at its start before
// it returns, so the next task starts on them; a scope file it created is
// left in place and listed (PlanTaskResult.Created). Files outside the
// scope are not put back: the green step refuses changes there, and the
// result lists those that stay.

// Activity names of a plan task's worker, registered with the "plantask."
// prefix by activities.PlanTask.
const (
	ActivityPlanTaskDigests      = "plantask.Digests"
	ActivityPlanTaskStatus       = "plantask.Status"
	ActivityPlanTaskHandBack     = "plantask.HandBack"
	ActivityPlanTaskKeepScope    = "plantask.KeepScope"
	ActivityPlanTaskRestoreScope = "plantask.RestoreScope"
	ActivityPlanTaskDropScope    = "plantask.DropScope"
)

// versionKeepScope guards keeping a task's scope files at its start, and
// putting them back when it ends without a hand-back: a worker whose
// start ran before keeps none, and restores nothing.
const versionKeepScope = "plan-task-keep-scope"

// PlanTaskActivities are what a plan task's worker needs beside the
// session's and the ceremony driver's activities: the workspace's facts
// its checks compare, and the fields of the model's red and green
// hand-backs.
type PlanTaskActivities interface {
	// Digests are the SHA-256 digests, in hex, of workspace files by path;
	// "" for a file that does not exist.
	Digests(context.Context, DigestsInput) (map[string]string, error)
	// Status is the workspace's git status.
	Status(context.Context, StatusInput) (WorkspaceStatus, error)
	// HandBack reads a red or green hand-back (an axlr_step_done call)
	// from the transcript.
	HandBack(context.Context, HandBackInput) (TaskHandBack, error)
	// KeepScope keeps the content of the scope files under the key, out of
	// history, for RestoreScope; a key kept before stays as it was kept.
	KeepScope(context.Context, KeepScopeInput) error
	// RestoreScope puts the kept files back as they were kept; a scope
	// file that did not exist then and exists now is listed as created,
	// not deleted. A second call writes the same files and answers what
	// the first did.
	RestoreScope(context.Context, ScopeKey) (ScopeRestore, error)
	// DropScope forgets what the key kept; one not kept is no error.
	DropScope(context.Context, ScopeKey) error
}

// ScopeKey names what a task's worker kept of its scope: the workspace,
// the plan, the task and the worker's own session, so every worker of a
// task keeps its own.
type ScopeKey struct {
	Root    string `json:"root"`
	Plan    string `json:"plan"`
	Task    string `json:"task"`
	Session string `json:"session"`
}

// KeepScopeInput keeps the files Paths (the task's scope) under the key.
type KeepScopeInput struct {
	ScopeKey
	Paths []string `json:"paths"`
}

// ScopeRestore is what putting a task's scope back did: Restored are the
// files written back as they were kept (changed or deleted since),
// Created the scope files that did not exist then and exist now, left in
// place; both sorted.
type ScopeRestore struct {
	Restored []string `json:"restored,omitempty"`
	Created  []string `json:"created,omitempty"`
}

// DigestsInput names workspace files, relative to its root.
type DigestsInput struct {
	Root  string   `json:"root"`
	Paths []string `json:"paths"`
}

// StatusInput names a workspace.
type StatusInput struct {
	Root string `json:"root"`
}

// WorkspaceStatus is what git status shows of a workspace.
type WorkspaceStatus struct {
	// Git: the workspace is inside a Git work tree; without it the rest is
	// empty.
	Git bool `json:"git"`
	// Head is the commit HEAD points at; empty before the first commit.
	Head string `json:"head,omitempty"`
	// Changed are the files git status --porcelain shows inside the
	// workspace (changed, staged, deleted, untracked; not ignored),
	// relative to its root, sorted.
	Changed []string `json:"changed,omitempty"`
}

// TaskHandBack is what AXLR reads of a red or green hand-back.
type TaskHandBack struct {
	// TestFiles and Expected are red's; NotTestable with Observed its
	// declaration that no test the unit check runs can show the goal.
	TestFiles   []string `json:"test_files,omitempty"`
	Expected    string   `json:"expected,omitempty"`
	NotTestable bool     `json:"not_testable,omitempty"`
	Observed    string   `json:"observed,omitempty"`
	// Summary, SummaryEn, Notes (To and Text) and Questions are green's.
	Summary   string       `json:"summary,omitempty"`
	SummaryEn string       `json:"summary_en,omitempty"`
	Notes     []plans.Note `json:"notes,omitempty"`
	Questions []string     `json:"questions,omitempty"`
}

// TaskHandBackOf is a validated red or green hand-back's fields.
func TaskHandBackOf(hb ceremonies.HandBack) TaskHandBack {
	out := TaskHandBack{NotTestable: hb.NotTestable}
	out.TestFiles, _ = hb.Fields["test_files"].([]string)
	out.Expected, _ = hb.Fields["expected"].(string)
	out.Observed, _ = hb.Fields["observed"].(string)
	out.Summary, _ = hb.Fields["summary"].(string)
	out.SummaryEn, _ = hb.Fields["summary_en"].(string)
	out.Questions, _ = hb.Fields["questions"].([]string)
	notes, _ := hb.Fields["notes"].([]ceremonies.Note)
	for _, n := range notes {
		out.Notes = append(out.Notes, plans.Note{To: n.To, Text: n.Text})
	}
	return out
}

// StoppedTaskBlocked: the driver stopped a plan task's instance that its
// worker cannot finish: a call needs the person, a step ran out of tool
// calls, or an activity failed.
const StoppedTaskBlocked = "task_blocked"

// MaxChangedBefore bounds the files a workspace may show changed when a
// task starts: each one's digest is kept in the task's history.
const MaxChangedBefore = 1000

// PlanTaskCheck is what the driver checks a plan task's red and green
// steps by: the task as the plan gives it, what its start recorded, what
// its red step froze and what its green step's accepted hand-back left.
type PlanTaskCheck struct {
	Plan string `json:"plan"`
	Task string `json:"task"`
	Wave int    `json:"wave"`
	// Tasks are the plan's task ids, which notes may address.
	Tasks     []string                `json:"tasks,omitempty"`
	Scope     []string                `json:"scope"`
	Protect   []string                `json:"protect,omitempty"`
	UnitCheck ceremonies.CheckCommand `json:"unit_check"`
	TestFirst bool                    `json:"test_first,omitempty"`
	// Earlier are the files the plan's earlier tasks changed.
	Earlier []string `json:"earlier,omitempty"`

	// Git, Digests and ChangedBefore are the start's: whether the
	// workspace is a Git work tree, the digests of the task's files, and
	// what git status showed changed.
	Git           bool              `json:"git,omitempty"`
	Digests       map[string]string `json:"digests,omitempty"`
	ChangedBefore []string          `json:"changed_before,omitempty"`
	// TestFiles and Frozen are red's: the test files it named and their
	// digests once the unit check failed.
	TestFiles []string          `json:"test_files,omitempty"`
	Frozen    map[string]string `json:"frozen,omitempty"`
	// Summary, SummaryEn, Notes and Questions are green's.
	Summary   string       `json:"summary,omitempty"`
	SummaryEn string       `json:"summary_en,omitempty"`
	Notes     []plans.Note `json:"notes,omitempty"`
	Questions []string     `json:"questions,omitempty"`
	// Failure is why the last round or the start failed: the reason of a
	// task that ends BLOCKED.
	Failure string `json:"failure,omitempty"`
}

// files are the task's files whose digests the start records, sorted: its
// scope, its protected files, and those changed before it started.
func (t *PlanTaskCheck) files() []string {
	return sortedUnion(t.Scope, t.Protect, t.Earlier, t.ChangedBefore)
}

// testFiles are the scope's test files.
func (t *PlanTaskCheck) testFiles() []string {
	var out []string
	for _, p := range t.Scope {
		if test, _ := plans.IsTestFile(p); test {
			out = append(out, p)
		}
	}
	return out
}

func sortedUnion(lists ...[]string) []string {
	out := slices.Concat(lists...)
	slices.Sort(out)
	return slices.Compact(out)
}

// taskDigests reads the digests of workspace files.
func (r *planTaskRun) taskDigests(ctx workflow.Context, paths []string) (map[string]string, error) {
	var out map[string]string
	err := executeLocal(ctx, LocalOptions, ActivityPlanTaskDigests,
		DigestsInput{Root: r.st.Root, Paths: paths}).Get(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read the digests of %s: %w", strings.Join(paths, ", "), err)
	}
	return out, nil
}

// workspaceStatus reads the workspace's git status.
func (r *planTaskRun) workspaceStatus(ctx workflow.Context) (WorkspaceStatus, error) {
	var out WorkspaceStatus
	err := executeLocal(ctx, LocalOptions, ActivityPlanTaskStatus,
		StatusInput{Root: r.st.Root}).Get(ctx, &out)
	if err != nil {
		return out, fmt.Errorf("read the git status of %s: %w", r.st.Root, err)
	}
	return out, nil
}

// taskWork is the task's work as the workspace shows it now.
type taskWork struct {
	status WorkspaceStatus
	// now are the digests of the task's files and of every file git
	// status shows.
	now map[string]string
	// changed are the files changed since the start, sorted: those git
	// status shows that it did not show then, and those whose digest
	// differs from the start's.
	changed []string
}

// taskChanges reads what the task changed since its start.
func (r *planTaskRun) taskChanges(ctx workflow.Context, t *PlanTaskCheck) (taskWork, error) {
	var w taskWork
	files := t.files()
	paths := files
	if t.Git {
		s, err := r.workspaceStatus(ctx)
		if err != nil {
			return w, err
		}
		w.status = s
		paths = sortedUnion(files, s.Changed)
	}
	now, err := r.taskDigests(ctx, paths)
	if err != nil {
		return w, err
	}
	w.now = now
	var changed []string
	for _, p := range w.status.Changed {
		if !slices.Contains(t.ChangedBefore, p) {
			changed = append(changed, p)
		}
	}
	for _, p := range files {
		if now[p] != t.Digests[p] {
			changed = append(changed, p)
		}
	}
	w.changed = sortedUnion(changed)
	return w, nil
}

// revision is the workspace's revision for a task's result: with Git, the
// commit HEAD points at and, when the work tree has changes, "+" and the
// first 12 hex digits of the SHA-256 of the changed files' paths and
// digests; without Git, "sha256:" and the SHA-256 of the task's files'
// paths and digests.
func (w taskWork) revision(t *PlanTaskCheck) string {
	paths := t.files()
	if t.Git {
		if len(w.status.Changed) == 0 {
			return w.status.Head
		}
		paths = w.status.Changed
	}
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%s\x00", p, w.now[p])
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if t.Git {
		return cmp.Or(w.status.Head, "unborn") + "+" + sum[:12]
	}
	return "sha256:" + sum
}

var _ CeremonyHooks = (*planTaskRun)(nil)

// CheckStep is the check of a plan task's red and green steps: it reads
// the hand-back's fields, checks the files the step names or must leave
// intact, and runs the task's unit check when they hold. It fills what
// AXLR records and tells the model how the round went; a refusal leaves
// MADE unchanged.
func (r *planTaskRun) CheckStep(ctx workflow.Context, step *StepHandBack) (string, error) {
	cer, t := r.st.Ceremony, r.st.Task
	if t == nil {
		return "", fmt.Errorf("step %s checks a plan's task, and ceremony %s runs none", step.Step.ID, cer.InstanceID)
	}
	var hb TaskHandBack
	err := executeLocal(ctx, LocalOptions, ActivityPlanTaskHandBack, HandBackInput{
		SessionID: r.st.Current(), CallKey: step.Call.Key, Definition: cer.Definition, Version: cer.Version, Step: cer.Step, Compact: cer.Compact,
	}).Get(ctx, &hb)
	if err != nil {
		return "", fmt.Errorf("read the hand-back of %s: %w", step.Step.ID, err)
	}
	if step.Step.Check == ceremonies.CheckRed {
		return "", r.redCheck(ctx, t, hb, step)
	}
	return r.greenCheck(ctx, t, hb, step)
}

// TestFiles narrows the writes of the red step to the task's test files.
func (r *planTaskRun) TestFiles() ([]string, bool) {
	if r.st.Task == nil {
		return nil, false
	}
	return r.st.Task.testFiles(), true
}

// redCheck: the named test files must be test files of the scope that
// changed since the start, and then the unit check must fail; their
// digests are frozen. A declaration that the goal is not testable settles
// the step without a run.
func (r *planTaskRun) redCheck(ctx workflow.Context, t *PlanTaskCheck, hb TaskHandBack, step *StepHandBack) error {
	recorded, round := step.Recorded, step.Round()
	if hb.NotTestable {
		recorded["red"], recorded["settled"], recorded["testable"] = false, true, false
		t.Failure = "red: the worker found that no test the unit check runs can show the goal: " + hb.Observed
		return nil
	}
	recorded["red"], recorded["settled"] = false, false
	var files, outside, notTests []string
	for _, raw := range hb.TestFiles {
		p, ok := plans.CleanPath(raw)
		test := false
		if ok {
			test, _ = plans.IsTestFile(p)
		}
		switch {
		case !ok || !slices.Contains(t.Scope, p):
			outside = append(outside, raw)
		case !test:
			notTests = append(notTests, p)
		default:
			files = append(files, p)
		}
	}
	files = sortedUnion(files)
	var problems []string
	if len(outside) > 0 {
		problems = append(problems, "not in the task's scope: "+strings.Join(outside, ", "))
	}
	if len(notTests) > 0 {
		problems = append(problems, "not test files: "+strings.Join(notTests, ", "))
	}
	var now map[string]string
	if len(problems) == 0 {
		var err error
		if now, err = r.taskDigests(ctx, files); err != nil {
			return err
		}
		var unchanged []string
		for _, p := range files {
			if now[p] == t.Digests[p] {
				unchanged = append(unchanged, p)
			}
		}
		if len(unchanged) > 0 {
			problems = append(problems, "unchanged since the task started: "+strings.Join(unchanged, ", "))
		}
	}
	if len(problems) > 0 {
		why := "the test files handed back do not hold (" + strings.Join(problems, "; ") + ")"
		t.Failure = round + ": " + why
		step.Tell(fmt.Sprintf("The unit check did not run: %s. Write the failing test in the task's test files (%s), then hand back the ones you changed. ",
			why, strings.Join(t.testFiles(), ", ")))
		return nil
	}
	check, err := r.driver.runCheck(ctx, step.Key, &t.UnitCheck)
	if err != nil {
		return err
	}
	step.Checked(check)
	red := check.Exited() && ceremonies.CheckRed.Holds(*check.ExitCode, check.OutputTail)
	recorded["red"], recorded["settled"] = red, red
	if red {
		t.TestFiles, t.Frozen = files, map[string]string{}
		for _, p := range files {
			t.Frozen[p] = now[p]
		}
		step.Tell(fmt.Sprintf("The unit check %s %s: the test fails, and %s are frozen now. ", t.UnitCheck, check.Ending(), strings.Join(files, ", ")))
		return nil
	}
	why := fmt.Sprintf("the unit check %s %s, which is not a failing test", t.UnitCheck, check.Ending())
	t.Failure = round + ": " + why
	step.Tell("The " + why + ": the test must fail until the code exists. Change the test so that it shows the goal is not met, then hand the step back. ")
	return nil
}

// greenCheck: the notes and questions must hold (else the hand-back is
// refused); the frozen and protected files must be intact and every change
// inside the scope, and then the unit check must pass and run a test.
func (r *planTaskRun) greenCheck(ctx workflow.Context, t *PlanTaskCheck, hb TaskHandBack, step *StepHandBack) (string, error) {
	recorded, round := step.Recorded, step.Round()
	notes, questions, err := plans.ValidateHandback(t.Task, hb.Notes, hb.Questions, t.Tasks)
	if err != nil {
		return fmt.Sprintf("%s. MADE is unchanged; fix the notes or questions and hand the step back again.", err), nil
	}
	recorded["green"] = false
	w, err := r.taskChanges(ctx, t)
	if err != nil {
		return "", err
	}
	var frozen, protected, outside []string
	for _, p := range t.TestFiles {
		if w.now[p] != t.Frozen[p] {
			frozen = append(frozen, p)
		}
	}
	for _, p := range t.Protect {
		if w.now[p] != t.Digests[p] {
			protected = append(protected, p)
		}
	}
	for _, p := range w.changed {
		if !slices.Contains(t.Scope, p) {
			outside = append(outside, p)
		}
	}
	var problems []string
	if len(frozen) > 0 {
		problems = append(problems, "test files the red step froze changed: "+strings.Join(frozen, ", "))
	}
	if len(protected) > 0 {
		problems = append(problems, "protected files changed: "+strings.Join(protected, ", "))
	}
	if len(outside) > 0 {
		problems = append(problems, "files outside the task's scope changed: "+strings.Join(outside, ", "))
	}
	if len(problems) > 0 {
		why := strings.Join(problems, "; ")
		t.Failure = round + ": " + why
		step.Tell(fmt.Sprintf("The unit check did not run: %s. Restore them; only the task's scope (%s) may change, and the frozen and protected files stay as they are. Then hand the step back. ",
			why, strings.Join(t.Scope, ", ")))
		return "", nil
	}
	check, err := r.driver.runCheck(ctx, step.Key, &t.UnitCheck)
	if err != nil {
		return "", err
	}
	step.Checked(check)
	green := check.Exited() && ceremonies.CheckGreen.Holds(*check.ExitCode, check.OutputTail)
	recorded["green"] = green
	if green {
		t.Summary, t.SummaryEn, t.Notes, t.Questions = hb.Summary, hb.SummaryEn, notes, questions
		return "", nil
	}
	why := fmt.Sprintf("the unit check %s %s", t.UnitCheck, check.Ending())
	if check.Passed() {
		why += " but ran no test ([no tests to run])"
	}
	t.Failure = round + ": " + why
	step.Tell("The " + why + ": the task is not done. ")
	return "", nil
}

// taskHooks are a plan task's turn hooks: the ceremony driver's, offering
// only the workspace's local tools, and ending the turn once the model's
// steps are over (AXLR's handback is open, or the ceremony ended): there
// is no person to answer.
type taskHooks struct{ d *Driver }

var _ TurnHooks = taskHooks{}

// errModelDone ends a plan task's turn when the model's steps are over.
var errModelDone = errors.New("the model's steps of the task are over")

func (h taskHooks) Offer(tools []string) Offer {
	var local []string
	for _, t := range tools {
		if slices.Contains(LocalTools, t) {
			local = append(local, t)
		}
	}
	return h.d.Offer(local)
}

func (h taskHooks) BeforeRequest(ctx workflow.Context) error {
	if !h.d.stepOpen() {
		return errModelDone
	}
	if err := h.d.BeforeRequest(ctx); err != nil {
		return err
	}
	if !h.d.stepOpen() {
		// The step passed its timeout: the driver stopped the ceremony.
		return errModelDone
	}
	return nil
}

func (h taskHooks) OnCall(ctx workflow.Context, c ModelCall, rest []ModelCall) (bool, error) {
	if took, err := h.d.OnCall(ctx, c, rest); took || err != nil {
		return took, err
	}
	switch {
	case !h.d.stepOpen():
		return true, h.d.t.Record(ctx, c, contract.CallFailed, "", "the task's steps are done: AXLR hands the task back now, so change nothing more")
	case !slices.Contains(LocalTools, c.Tool):
		return true, h.d.t.Record(ctx, c, contract.CallFailed, "", c.Tool+" is not offered to a plan's task: only the workspace's local tools are")
	}
	return false, nil
}

func (h taskHooks) OnAnswer(ctx workflow.Context, text string) (bool, error) {
	return h.d.OnAnswer(ctx, text)
}

// Validate checks a task worker's input before it starts, naming the
// field.
func (in PlanTaskInput) Validate() error {
	t := in.Task
	switch {
	case !plans.ValidID(in.Plan):
		return fmt.Errorf("plan task: plan %q is not a plan id (a slug of at most 40 characters)", in.Plan)
	case !plans.ValidID(t.ID):
		return fmt.Errorf("plan task: task id %q is not a slug of at most 40 characters", t.ID)
	case in.Wave < 1:
		return fmt.Errorf("plan task %s: wave %d; waves count from 1", t.ID, in.Wave)
	case strings.TrimSpace(in.SessionID) == "":
		return fmt.Errorf("plan task %s: session_id is empty", t.ID)
	case strings.TrimSpace(in.Prompt) == "":
		return fmt.Errorf("plan task %s: the prompt (its context pack) is empty", t.ID)
	case !strings.HasPrefix(in.Root, "/"):
		return fmt.Errorf("plan task %s: root %q is not an absolute path", t.ID, in.Root)
	case len(t.Scope) == 0:
		return fmt.Errorf("plan task %s: the scope names no file", t.ID)
	case strings.TrimSpace(t.UnitCheck.Program) == "":
		return fmt.Errorf("plan task %s: the unit check has no program", t.ID)
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"scope", t.Scope}, {"protect", t.Protect}, {"changed", in.Changed}} {
		for _, p := range list.paths {
			if c, ok := plans.CleanPath(p); !ok || c != p {
				return fmt.Errorf("plan task %s: %s path %q is not a clean path inside the workspace", t.ID, list.name, p)
			}
		}
	}
	return nil
}

// PlanTaskState is what a plan task's worker knows.
type PlanTaskState struct {
	HostState
	// Task is what the red and green steps are checked by, once the
	// ceremony started.
	Task *PlanTaskCheck `json:"task,omitempty"`
}

type planTaskRun struct {
	Host
	in PlanTaskInput
	st PlanTaskState
	// handedBack is the work the handback step recorded.
	handedBack *taskWork
	// kept: the start kept the scope files' content (versionKeepScope), so
	// an end without a hand-back restores them and every end drops them.
	kept bool
}

// PlanTask is a plan task's worker: it begins the task's fresh session
// with its context pack, runs axlr_task 1.0 to its end, and returns how
// the task ended: done with its hand-back, or blocked with the reason, its
// scope put back and the files that stay changed. A cancelled worker puts
// its scope back too, ends its instance CANCELLED and returns the
// cancellation, its result in the details.
func PlanTask(ctx workflow.Context, in PlanTaskInput) (PlanTaskResult, error) {
	if err := in.Validate(); err != nil {
		return PlanTaskResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	r := newPlanTaskRun(workflow.GetInfo(ctx).WorkflowExecution.ID, in)
	if err := workflow.SetQueryHandler(ctx, QueryProgress, r.progress); err != nil {
		return PlanTaskResult{}, fmt.Errorf("register %s: %w", QueryProgress, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryTaskStep, r.step); err != nil {
		return PlanTaskResult{}, fmt.Errorf("register %s: %w", QueryTaskStep, err)
	}
	upsertSessions(ctx, r.st.SessionIDs)
	r.upsertSearch(ctx, plans.TaskRunning)
	err := r.run(ctx)
	cancelled := ctx.Err() != nil || temporal.IsCanceledError(err)
	endCtx := ctx
	if cancelled {
		endCtx, _ = workflow.NewDisconnectedContext(ctx)
	}
	res := r.result(endCtx, err, cancelled)
	interrupted := ""
	if cancelled {
		interrupted = res.Reason
	}
	status, msg := endedAs(err, interrupted)
	r.finish(endCtx, status, msg)
	r.upsertSearch(endCtx, res.Status)
	if cancelled {
		if r.kept {
			// The plan reads the files put back and left from the details.
			return res, temporal.NewCanceledError(res.Reason, res)
		}
		return res, temporal.NewCanceledError(res.Reason)
	}
	return res, nil
}

func newPlanTaskRun(executionID string, in PlanTaskInput) *planTaskRun {
	r := &planTaskRun{in: in}
	r.st = PlanTaskState{HostState: newHostState(in.SessionID, ceremonies.PartTask, executionID)}
	r.st.Root, r.st.Approval = in.Root, policy.ApproveLocal
	r.Host = newHost(&r.st.HostState, hostOptions{reminders: BackgroundReminders})
	r.plugIn(taskHooks{d: r.driver})
	return r
}

func (r *planTaskRun) progress(q ProgressQuery) (Progress, error) {
	if q.ExecutionID != "" && q.ExecutionID != r.st.Execution.ID {
		return Progress{}, refuse("execution %s is not this task's; the task runs execution %s", q.ExecutionID, r.st.Execution.ID)
	}
	return r.st.page(r.st.Execution, r.st.Current(), q.After), nil
}

// step answers QueryTaskStep.
func (r *planTaskRun) step() (TaskStep, error) {
	ts := TaskStep{Plan: r.in.Plan, Task: r.in.Task.ID}
	if c := r.st.Ceremony; c != nil && c.Active() {
		ts.Step, ts.Iteration, ts.Limit = c.Step, c.Iteration, c.Limits[c.Step]
	}
	return ts, nil
}

// upsertSearch shows the task in the search attributes: its plan, id,
// wave and status. One that cannot be set does not stop the task.
func (r *planTaskRun) upsertSearch(ctx workflow.Context, status plans.TaskStatus) {
	if err := workflow.UpsertTypedSearchAttributes(ctx,
		temporal.NewSearchAttributeKeyKeyword(SearchAttributePlan).ValueSet(r.in.Plan),
		temporal.NewSearchAttributeKeyKeyword(SearchAttributePlanTask).ValueSet(r.in.Task.ID),
		temporal.NewSearchAttributeKeyInt64(SearchAttributePlanWave).ValueSet(int64(r.in.Wave)),
		temporal.NewSearchAttributeKeyKeyword(SearchAttributePlanStatus).ValueSet(string(status)),
	); err != nil {
		workflow.GetLogger(ctx).Warn("plan task search attributes not set", "plan", r.in.Plan, "task", r.in.Task.ID, "error", err)
	}
}

// run begins the session, starts the ceremony and runs its steps: AXLR's
// console steps here, the model's in its turn.
func (r *planTaskRun) run(ctx workflow.Context) error {
	if err := r.turn.Begin(ctx, BeginTurnInput{SessionID: r.in.SessionID, ExecutionID: r.st.Execution.ID, Prompt: r.in.Prompt,
		Model: r.in.Model, Root: r.in.Root, Mode: r.st.Mode}); err != nil {
		return err
	}
	t := r.in.Task
	def, ok := ceremonies.ForPlan(ceremonies.PartTask)
	if !ok {
		return errors.New("start plan task: no definition for a plan's task")
	}
	if err := r.driver.Open(ctx, def.Name, def.Version, Opening{
		Brief: r.in.Prompt, Inputs: map[string]any{"plan": r.in.Plan, "task": t.ID, "wave": r.in.Wave}, Execution: r.st.Execution.ID,
	}, r); err != nil {
		return err
	}
	r.st.Task = &PlanTaskCheck{Plan: r.in.Plan, Task: t.ID, Wave: r.in.Wave, Tasks: r.in.Tasks, Scope: t.Scope, Protect: t.Protect,
		UnitCheck: t.UnitCheck, TestFirst: t.TestFirst, Earlier: r.in.Changed}
	for {
		if st, ok := r.driver.ConsoleStep(); ok {
			if err := r.console(ctx, st.ID); err != nil {
				return err
			}
			continue
		}
		if !r.driver.stepOpen() {
			return nil
		}
		if err := r.turn.Run(ctx, nil); err != nil && !errors.Is(err, errModelDone) {
			return err
		}
	}
}

// console runs AXLR's step and completes it with what it recorded.
func (r *planTaskRun) console(ctx workflow.Context, step string) error {
	var recorded map[string]any
	var err error
	switch step {
	case "start":
		recorded, err = r.start(ctx)
	case "handback":
		recorded, err = r.handback(ctx)
	default:
		return fmt.Errorf("a plan's task has no console step %q", step)
	}
	if err != nil {
		return err
	}
	if _, err := r.driver.CompleteConsole(ctx, recorded, nil); err != nil {
		return err
	}
	if step != "start" || !r.driver.stepOpen() {
		return nil
	}
	c := r.st.Ceremony
	check, _ := recorded["check"].(contract.CheckRecord)
	return r.driver.note(ctx, "began", fmt.Sprintf("%s\nAXLR ran the unit check %s when the task started: it %s.",
		c.stepNote(true), r.st.Task.UnitCheck, check.Ending()))
}

// start records the digests of the task's files and what git status
// shows changed, and runs the unit check once as the baseline. A task
// whose files cannot be read or whose unit check does not run is not
// started, with the reason.
func (r *planTaskRun) start(ctx workflow.Context) (map[string]any, error) {
	t := r.st.Task
	rec := map[string]any{"test_first": t.TestFirst}
	failed := func(why string) (map[string]any, error) {
		t.Failure = "start: " + why
		rec["started"], rec["reason"] = false, why
		return rec, nil
	}
	s, err := r.workspaceStatus(ctx)
	if err != nil {
		if temporal.IsCanceledError(err) {
			return nil, err
		}
		return failed(failureMessage(err))
	}
	if len(s.Changed) > MaxChangedBefore {
		return failed(fmt.Sprintf("git status shows %d changed files in the workspace; a task starts with at most %d", len(s.Changed), MaxChangedBefore))
	}
	t.Git, t.ChangedBefore = s.Git, s.Changed
	rec["changed_before"] = append([]string{}, s.Changed...)
	digests, err := r.taskDigests(ctx, t.files())
	if err != nil {
		if temporal.IsCanceledError(err) {
			return nil, err
		}
		return failed(failureMessage(err))
	}
	t.Digests, rec["digests"] = digests, digests
	if workflow.GetVersion(ctx, versionKeepScope, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		err := executeLocal(ctx, LocalOptions, ActivityPlanTaskKeepScope,
			KeepScopeInput{ScopeKey: r.scopeKey(), Paths: sortedUnion(t.Scope)}).Get(ctx, nil)
		if err != nil {
			if temporal.IsCanceledError(err) {
				return nil, err
			}
			return failed("the scope files were not kept to restore them: " + failureMessage(err))
		}
		r.kept = true
	}
	c := r.st.Ceremony
	check, err := r.driver.runCheck(ctx, ClaimKey(c.InstanceID, c.Step, c.Iteration, c.Round)+":baseline", &t.UnitCheck)
	if err != nil {
		return nil, err
	}
	rec["check"] = check
	if !check.Exited() {
		return failed(fmt.Sprintf("the unit check %s %s", t.UnitCheck, check.Ending()))
	}
	rec["started"] = true
	return rec, nil
}

// handback records the files the task changed, the revision and the
// green step's notes and questions.
func (r *planTaskRun) handback(ctx workflow.Context) (map[string]any, error) {
	t := r.st.Task
	w, err := r.taskChanges(ctx, t)
	if err != nil {
		return nil, err
	}
	r.handedBack = &w
	notes := []ceremonies.Note{}
	for _, n := range t.Notes {
		notes = append(notes, ceremonies.Note{To: n.To, Text: n.Text})
	}
	rec := map[string]any{"done": true, "changed_files": append([]string{}, w.changed...), "scope_checked_by": ceremonies.ScopeByDigests,
		"notes": notes, "questions": append([]string{}, t.Questions...)}
	if t.Git {
		rec["scope_checked_by"] = ceremonies.ScopeByGit
		if w.status.Head != "" {
			rec["revision"] = w.status.Head
		}
	}
	return rec, nil
}

// result is how the task ended. A ceremony still running (a call that
// asks, a step out of tool calls, a failure, a cancellation) is stopped
// first; a task blocked after its start still lists what it changed.
func (r *planTaskRun) result(ctx workflow.Context, err error, cancelled bool) PlanTaskResult {
	res := PlanTaskResult{Status: plans.TaskBlocked, SessionID: r.st.Current()}
	c := r.st.Ceremony
	switch {
	case cancelled:
		res.Reason = "the task was cancelled"
	case errors.Is(err, errPending):
		p := r.st.Pending
		res.Reason = fmt.Sprintf("a call needs the person, and a plan's task runs without one: %s %s (%s)", p.Call.Tool, p.Call.Preview, p.Reason)
	case err != nil:
		res.Reason = failureMessage(err)
	case c == nil:
		res.Reason = "the task's ceremony did not start"
	case c.State == "DONE":
		t := r.st.Task
		res.Status, res.Summary, res.SummaryEn, res.Questions = plans.TaskDone, t.Summary, t.SummaryEn, t.Questions
		for _, n := range t.Notes {
			n.From = t.Task
			res.Notes = append(res.Notes, n)
		}
	case c.Stopped != "":
		res.Reason = c.Stopped
	default:
		res.Reason = cmp.Or(r.st.Task.Failure, "the task's ceremony ended "+c.State)
	}
	if c.Active() {
		var serr error
		if c.Step != "" && !cancelled {
			serr = r.driver.stop(ctx, StoppedTaskBlocked, res.Reason, "cancelled")
		} else if serr = r.driver.cancel(ctx); serr == nil {
			// The step stays claimed in MADE: the instance ended around it.
			c.Ended, c.Stopped = true, StoppedTaskBlocked+": "+res.Reason
		}
		if serr != nil {
			workflow.GetLogger(ctx).Warn("the task's ceremony was not stopped", "plan", r.in.Plan, "task", r.in.Task.ID, "error", serr)
		}
	}
	t := r.st.Task
	if c == nil || t == nil || t.Digests == nil {
		return res
	}
	w := r.handedBack
	// A scope that could not be put back stays kept, for the person.
	if r.kept && (w != nil || r.restoreScope(ctx, &res)) {
		r.dropScope(ctx)
	}
	if w == nil {
		read, werr := r.taskChanges(ctx, t)
		if werr != nil {
			workflow.GetLogger(ctx).Warn("the task's changes were not read", "plan", r.in.Plan, "task", r.in.Task.ID, "error", werr)
			return res
		}
		w = &read
	}
	res.Changed, res.Revision = w.changed, w.revision(t)
	return res
}

// scopeKey is the key the worker keeps its scope under.
func (r *planTaskRun) scopeKey() ScopeKey {
	return ScopeKey{Root: r.st.Root, Plan: r.in.Plan, Task: r.in.Task.ID, Session: r.in.SessionID}
}

// restoreScope puts the scope files of a task that ends without a
// hand-back back as its start kept them, and lists in res what it put
// back and the scope files it left because the task created them. It
// reports whether they were put back; one that was not says so in the
// reason.
func (r *planTaskRun) restoreScope(ctx workflow.Context, res *PlanTaskResult) bool {
	var out ScopeRestore
	err := executeLocal(ctx, LocalOptions, ActivityPlanTaskRestoreScope, r.scopeKey()).Get(ctx, &out)
	if err != nil {
		res.Reason += "; its scope files were not restored: " + failureMessage(err)
		return false
	}
	res.Restored, res.Created = out.Restored, out.Created
	return true
}

// dropScope forgets the kept scope once the task ended. One that cannot
// be dropped is logged, and the task's end stands.
func (r *planTaskRun) dropScope(ctx workflow.Context) {
	err := executeLocal(ctx, LocalOptions, ActivityPlanTaskDropScope, r.scopeKey()).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("the task's kept scope was not dropped", "plan", r.in.Plan, "task", r.in.Task.ID, "error", err)
	}
}
