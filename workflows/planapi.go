package workflows

import (
	"fmt"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/plans"
)

// A plan (/plan) is one workflow: it asks the planner model for a
// decomposition (axlr_plan 1.0), verifies it without a model, runs the
// commands it names once as a baseline after the person approved them,
// takes the person's approval of the plan, then runs its waves in the
// background: each task in a fresh one-shot task worker (axlr_task 1.0),
// the tasks of a wave one after another in the workspace, and after each
// wave whose tasks all finished the sync (axlr_sync 1.0). These are the
// names and shapes the plan workflow, its task workers and its clients
// share.

// Names of a plan.
const (
	PlanWorkflow = "axlr.Plan"
	// UpdatePlanDecide takes the person's decision on what the plan waits
	// for (PlanDecision): the commands to run as the baseline, or the plan
	// itself (approve, return with a reason, decline with a reason). It
	// answers the record once the plan has taken the decision.
	UpdatePlanDecide = "plan-decide"
	// QueryPlan answers the plan's plans.Record.
	QueryPlan = "plan"
	// PlanTaskWorkflow is a plan task's worker: one task of a plan in a
	// fresh session, run to its hand-back.
	PlanTaskWorkflow = "axlr.PlanTask"
	// QueryTaskStep answers a plan task's worker's TaskStep: the axlr_task
	// step it works, for the TUI's footer.
	QueryTaskStep = "task-step"
)

// TaskStep is the step a plan task's worker works: its axlr_task step
// (start, red, green, handback), the step's iteration and its limit.
// Step is empty before the ceremony started and after it ended.
type TaskStep struct {
	Plan      string `json:"plan"`
	Task      string `json:"task"`
	Step      string `json:"step,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// PlanWorkflowID is the workflow id of a plan.
func PlanWorkflowID(id string) string { return "axlr-plan-" + id }

// PlanTaskWorkflowID is the workflow id of a plan task's worker (round 0:
// the task's run; later rounds: a sync's reconciliation of it).
func PlanTaskWorkflowID(plan, task string, round int) string {
	id := "axlr-plan-" + plan + "-" + task
	if round > 0 {
		id += fmt.Sprintf("-r%d", round)
	}
	return id
}

// PlanInput starts a plan.
type PlanInput struct {
	Record    plans.Record `json:"record"`
	SessionID string       `json:"session_id"`
	Host      string       `json:"host"`
	// Model is the planner's (plan.model, default the session's); TaskModel
	// the task workers' (the session's).
	Model     string `json:"model,omitempty"`
	TaskModel string `json:"task_model,omitempty"`
	// AutoApprove approves a verified plan without the person
	// (plan.auto_approve); the baseline commands still ask.
	AutoApprove bool `json:"auto_approve,omitempty"`
}

// PlanDecision is the person's decision on what a plan waits for.
type PlanDecision struct {
	RequestID string `json:"request_id"`
	Plan      string `json:"plan"`
	// Kind is what it decides: "commands" (the baseline commands) or
	// "plan" (the plan itself).
	Kind string `json:"kind"`
	// Decision: approve or deny for commands; approve, return or decline
	// for the plan.
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// By is the identity that decided (the service API's caller).
	By string `json:"by,omitempty"`
}

// The kinds and decisions of a PlanDecision.
const (
	PlanDecideCommands = "commands"
	PlanDecidePlan     = "plan"
	PlanApprove        = "approve"
	PlanDeny           = "deny"
	PlanReturn         = "return"
	PlanDecline        = "decline"
	// PlanDecideInterrupt interrupts a plan that runs or waits, as
	// cancelling its workflow does the first time: Temporal takes a
	// workflow's cancellation once, so a recovered plan is interrupted
	// with this. It takes Decision approve, as PlanDecideRecover does;
	// Reason is the interruption's.
	PlanDecideInterrupt = "interrupt"
)

// PlanTaskInput starts a plan task's worker.
type PlanTaskInput struct {
	Plan string `json:"plan"`
	// Task is the task as the verified decomposition gives it.
	Task ceremonies.PlanTask `json:"task"`
	Wave int                 `json:"wave"`
	// Round is 0 for the task's run, and from 1 a sync's reconciliation
	// round of it (the prompt says what the round asks; TestFirst is then
	// false): the round of PlanTaskWorkflowID.
	Round int `json:"round,omitempty"`
	// Prompt is the worker's first message: the task's context pack and
	// the notes earlier tasks left for it.
	Prompt    string `json:"prompt"`
	SessionID string `json:"session_id"`
	Host      string `json:"host"`
	Root      string `json:"root"`
	Model     string `json:"model,omitempty"`
	// Changed are the files earlier tasks of the plan changed, whose
	// digests start records.
	Changed []string `json:"changed,omitempty"`
	// Tasks are the ids of the plan's tasks, which the worker's notes may
	// address (besides all).
	Tasks []string `json:"tasks,omitempty"`
}

// PlanTaskResult is how a task's worker ended.
type PlanTaskResult struct {
	// Status is plans.TaskDone or plans.TaskBlocked.
	Status    plans.TaskStatus `json:"status"`
	SessionID string           `json:"session_id"`
	Changed   []string         `json:"changed,omitempty"`
	Revision  string           `json:"revision,omitempty"`
	Summary   string           `json:"summary,omitempty"`
	// SummaryEn is the green step's one English sentence.
	SummaryEn string       `json:"summary_en,omitempty"`
	Notes     []plans.Note `json:"notes,omitempty"`
	Questions []string     `json:"questions,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	// Restored and Created are a worker's that ended without a hand-back:
	// the scope files it had changed, put back as they were at its start,
	// and those it created, left in place. Changed is what stays changed
	// after that.
	Restored []string `json:"restored,omitempty"`
	Created  []string `json:"created,omitempty"`
}

// Search attributes of a plan's workflows, so an operator finds a plan and
// its tasks in the Web UI and axlr-tui history: the plan's id and status
// on the plan's workflow; the plan's id, the task's id and its wave (Int)
// on each task's worker (the others Keyword). axlrd registers them on its
// namespace.
const (
	SearchAttributePlan       = "AxlrPlan"
	SearchAttributePlanTask   = "AxlrPlanTask"
	SearchAttributePlanWave   = "AxlrPlanWave"
	SearchAttributePlanStatus = "AxlrPlanStatus"
)

// PlanDecideRecover is the kind of the decision that recovers an
// interrupted plan: the plan's workflow keeps its state when interrupted,
// and the decision runs it on from where it stood.
const PlanDecideRecover = "recover"
