package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// TaskWorkflow is the workflow type of a one-shot task: a fresh session in
// a workspace, one prompt, autonomous local tools under a policy and,
// optionally, one ceremony, run to its result; then the workflow completes
// with that result. Plan tasks run as these.
const TaskWorkflow = "axlr.Task"

// TaskWorkflowID is the workflow id of the task that runs in a session.
func TaskWorkflowID(sessionID string) string { return "axlr-task-" + sessionID }

// TaskInput starts a task.
type TaskInput struct {
	// ExecutionID names the task's one execution; the client chooses it,
	// and an interrupt names it.
	ExecutionID string `json:"execution_id"`
	// SessionID is the fresh session the task works in.
	SessionID string `json:"session_id"`
	// Host is the host id whose task queue the workflow runs on.
	Host string `json:"host"`
	// Root is the workspace, an absolute path.
	Root   string `json:"root"`
	Prompt string `json:"prompt"`
	// Model, empty: settings.json's.
	Model string `json:"model,omitempty"`
	// Mode is normal (the default), a work mode (review, writer,
	// research) or a ceremony's mode.
	Mode string `json:"mode,omitempty"`
	// Policy narrows the task's tools; the approval level is local: the
	// workspace's tools run without asking, the destructive list still asks,
	// and a call that asks ends the task needs_decision.
	Policy *policy.Policy `json:"policy,omitempty"`
	// ApprovedChecks are the check commands approved with the task: a
	// ceremony step that hands one back runs it without asking; any other
	// command ends the task needs_decision.
	ApprovedChecks []ceremonies.CheckCommand `json:"approved_checks,omitempty"`
}

// Validate checks a task's input before it starts, naming the field.
func (in TaskInput) Validate() error {
	switch {
	case strings.TrimSpace(in.ExecutionID) == "":
		return errors.New("task: execution_id is empty")
	case strings.TrimSpace(in.SessionID) == "":
		return errors.New("task: session_id is empty")
	case strings.TrimSpace(in.Prompt) == "":
		return errors.New("task: the prompt is empty")
	case !strings.HasPrefix(in.Root, "/"):
		return fmt.Errorf("task: root %q is not an absolute path", in.Root)
	}
	if in.Mode != "" && !slices.Contains(SupportedModes, in.Mode) {
		return fmt.Errorf("task: unknown mode %q: this axlrd supports %s", in.Mode, strings.Join(SupportedModes, ", "))
	}
	if in.Policy != nil {
		if err := in.Policy.Validate(); err != nil {
			return fmt.Errorf("task: %w", err)
		}
	}
	for i, c := range in.ApprovedChecks {
		if strings.TrimSpace(c.Program) == "" {
			return fmt.Errorf("task: approved_checks[%d] has no program", i)
		}
	}
	return nil
}

// TaskState is everything a task knows.
type TaskState struct {
	// HostState holds the task's ceremony, when its mode runs one.
	HostState
}

// Task is the one-shot task workflow: it begins a fresh session with the
// prompt, runs one turn with the workspace's tools approved (under the
// policy, the destructive list still asking) and, in a ceremony's mode,
// that ceremony, then completes with the execution's result. A call that
// needs the person ends it needs_decision; the interrupt update (or a
// cancellation of the workflow) ends it interrupted.
func Task(ctx workflow.Context, in TaskInput) (*contract.Result, error) {
	if err := in.Validate(); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRequest, err)
	}
	r := newTaskRun(in)
	if err := r.registerHandlers(ctx); err != nil {
		return nil, err
	}
	upsertSessions(ctx, r.st.SessionIDs)
	turnCtx, cancel := workflow.WithCancel(ctx)
	r.cancel = cancel
	err := r.run(turnCtx)
	if ctx.Err() != nil && r.interrupted == "" {
		r.interrupted = "the task was cancelled"
	}
	status, msg := endedAs(err, r.interrupted)
	res := r.finish(ctx, status, msg)
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return res, err
	}
	return res, nil
}

type taskRun struct {
	Host
	in          TaskInput
	st          TaskState
	cancel      workflow.CancelFunc
	interrupted string
}

func newTaskRun(in TaskInput) *taskRun {
	r := &taskRun{in: in}
	r.st = TaskState{HostState: newHostState(in.SessionID, cmp.Or(in.Mode, "normal"), in.ExecutionID)}
	r.st.Root, r.st.Policy, r.st.Approval = in.Root, in.Policy, policy.ApproveLocal
	r.Host = newHost(&r.st.HostState, hostOptions{approved: in.ApprovedChecks})
	return r
}

func (r *taskRun) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateInterrupt, r.interrupt,
		workflow.UpdateHandlerOptions{Validator: r.validateInterrupt}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateInterrupt, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, r.progress); err != nil {
		return fmt.Errorf("register %s: %w", QueryProgress, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryResult, r.result); err != nil {
		return fmt.Errorf("register %s: %w", QueryResult, err)
	}
	return nil
}

// run begins the session, starts the mode's ceremony and runs the turn.
func (r *taskRun) run(ctx workflow.Context) error {
	if err := r.turn.Begin(ctx, BeginTurnInput{
		SessionID:   r.in.SessionID,
		ExecutionID: r.in.ExecutionID,
		Prompt:      r.in.Prompt,
		Model:       r.in.Model,
		Root:        r.in.Root,
		Mode:        r.st.Mode,
	}); err != nil {
		return err
	}
	if def, ok := ceremonies.ForMode(r.st.Mode); ok {
		if err := r.driver.Open(ctx, def.Name, def.Version, Opening{Brief: r.in.Prompt, Execution: r.in.ExecutionID}, nil); err != nil {
			return err
		}
	}
	return r.turn.Run(ctx, nil)
}

func (r *taskRun) validateInterrupt(ctx workflow.Context, req InterruptRequest) error {
	if r.st.Execution.Result != nil {
		return fmt.Errorf("interrupt: task %s has ended %s", r.in.ExecutionID, r.st.Execution.Result.Status)
	}
	if req.ExecutionID != "" && req.ExecutionID != r.in.ExecutionID {
		return fmt.Errorf("interrupt: execution %s is not this task's; the task runs execution %s", req.ExecutionID, r.in.ExecutionID)
	}
	return nil
}

func (r *taskRun) interrupt(ctx workflow.Context, req InterruptRequest) (Accepted, error) {
	r.interrupted = cmp.Or(req.Reason, "interrupted by the person")
	r.cancel()
	return Accepted{ExecutionID: r.in.ExecutionID, SessionID: r.st.Current()}, nil
}

func (r *taskRun) progress(q ProgressQuery) (Progress, error) {
	if q.ExecutionID != "" && q.ExecutionID != r.in.ExecutionID {
		return Progress{}, refuse("execution %s is not this task's; the task runs execution %s", q.ExecutionID, r.in.ExecutionID)
	}
	return r.st.page(r.st.Execution, r.st.Current(), q.After), nil
}

func (r *taskRun) result() (*contract.Result, error) {
	if r.st.Execution.Result == nil {
		return nil, refuse("task %s has not ended yet", r.in.ExecutionID)
	}
	return r.st.Execution.Result, nil
}
