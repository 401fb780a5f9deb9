package client

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// PlanLaunch is a plan to start: its brief, the workspace it plans in
// (absolute) and the session's model (default: settings.json's).
type PlanLaunch struct {
	Brief string
	Root  string
	Model string
	// Key, when set, names the launch (the service API's idempotency
	// key): the plan's id and its session's derive from it, so a retry
	// returns the plan the first launch started.
	Key string
}

// LaunchPlan starts a plan's workflow, under the client's settings
// (plan.model, plan.auto_approve), and returns its record. Its own code
// runs on the cluster queue and its work on this host's queue.
func (c *Client) LaunchPlan(ctx context.Context, in PlanLaunch) (plans.Record, error) {
	set := c.settings()
	var random [3]byte
	if _, err := rand.Read(random[:]); err != nil {
		return plans.Record{}, fmt.Errorf("start plan: %w", err)
	}
	sid, err := session.NewID()
	if err != nil {
		return plans.Record{}, fmt.Errorf("start plan: %w", err)
	}
	if in.Key != "" {
		sum := sha256.Sum256([]byte("plan\x00" + in.Key))
		copy(random[:], sum[:])
		sid = keyedID("plan-session", in.Key)
	}
	model := cmp.Or(in.Model, set.Model)
	now := time.Now().UTC()
	rec := plans.Record{ID: plans.ID(in.Brief, random), Status: plans.Decomposing, Brief: in.Brief, Root: in.Root,
		PlannerModel: set.PlanModel(model), Created: now, Updated: now}
	_, err = c.tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID:                       workflows.PlanWorkflowID(rec.ID),
		TaskQueue:                workflows.ClusterTaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, workflows.PlanWorkflow, workflows.PlanInput{Record: rec, SessionID: sid, Host: c.hostID,
		Model: rec.PlannerModel, TaskModel: model, AutoApprove: set.Plan.AutoApprove})
	if in.Key != "" && errors.As(err, new(*serviceerror.WorkflowExecutionAlreadyStarted)) {
		// A retried launch: the plan its key started.
		started, perr := c.Plan(ctx, rec.ID)
		if perr == nil && started.Brief != in.Brief {
			return plans.Record{}, &RefusedError{Message: fmt.Sprintf("%s: plan %s was started by another request under the same key", workflows.IdempotencyConflict, rec.ID)}
		}
		return started, perr
	}
	if err != nil {
		return plans.Record{}, c.refused(err)
	}
	return rec, nil
}

// Plan reads a plan's record from its workflow.
func (c *Client) Plan(ctx context.Context, id string) (plans.Record, error) {
	v, err := c.query(ctx, workflows.PlanWorkflowID(id), "", workflows.QueryPlan)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return plans.Record{}, &missing{msg: fmt.Sprintf("no such plan: %s (axlr-tui plans lists the plans)", id), err: err}
	}
	if err != nil {
		return plans.Record{}, c.reached(err)
	}
	var rec plans.Record
	if err := v.Get(&rec); err != nil {
		return plans.Record{}, fmt.Errorf("decode plan %s: %w", id, err)
	}
	return rec, nil
}

// Plans lists every plan, newest first, whatever its status. Only the
// latest run of each plan's workflow is read (a recovered plan has
// several), and a run that has closed is read once per Client: its record
// no longer changes, and a query of a closed workflow replays its history.
func (c *Client) Plans(ctx context.Context) ([]plans.Record, error) {
	out := []plans.Record{}
	seen := map[string]bool{}
	var token []byte
	for {
		resp, err := c.list(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s'", workflows.PlanWorkflow), NextPageToken: token, PageSize: 100,
		})
		if err != nil {
			return nil, fmt.Errorf("list plans: %w", c.reached(err))
		}
		for _, ex := range resp.GetExecutions() {
			wid, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
			if seen[wid] {
				continue
			}
			seen[wid] = true
			closed := ex.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			if rec, ok := c.closedPlans.Load(run); ok && closed {
				out = append(out, rec.(plans.Record))
				continue
			}
			v, err := c.query(ctx, wid, run, workflows.QueryPlan)
			if err != nil {
				return nil, fmt.Errorf("read plan %s: %w", wid, c.reached(err))
			}
			var rec plans.Record
			if err := v.Get(&rec); err != nil {
				return nil, fmt.Errorf("decode plan %s: %w", wid, err)
			}
			if closed {
				c.closedPlans.Store(run, rec)
			}
			out = append(out, rec)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b plans.Record) int { return b.Created.Compare(a.Created) })
	return out, nil
}

// PlanTaskStep reads the step a plan's task works: its running worker (of
// any round) answers workflows.QueryTaskStep. A task with no worker
// running has no step.
func (c *Client) PlanTaskStep(ctx context.Context, plan, task string) (workflows.TaskStep, error) {
	none := workflows.TaskStep{Plan: plan, Task: task}
	resp, err := c.list(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1, Query: fmt.Sprintf(
		"WorkflowType = '%s' AND %s = '%s' AND %s = '%s' AND ExecutionStatus = 'Running'",
		workflows.PlanTaskWorkflow, workflows.SearchAttributePlan, plan, workflows.SearchAttributePlanTask, task)})
	if err != nil {
		return none, fmt.Errorf("find task %s of plan %s: %w", task, plan, err)
	}
	if len(resp.GetExecutions()) == 0 {
		return none, nil
	}
	ex := resp.GetExecutions()[0].GetExecution()
	v, err := c.query(ctx, ex.GetWorkflowId(), ex.GetRunId(), workflows.QueryTaskStep)
	if err != nil {
		return none, fmt.Errorf("step of task %s of plan %s: %w", task, plan, err)
	}
	var ts workflows.TaskStep
	if err := v.Get(&ts); err != nil {
		return none, fmt.Errorf("decode the step of task %s of plan %s: %w", task, plan, err)
	}
	return ts, nil
}

// DecidePlan sends the person's decision on what a plan waits for; the
// plan's workflow refuses a decision for another plan or another wait. An
// empty dec.RequestID gets a new id.
func (c *Client) DecidePlan(ctx context.Context, dec workflows.PlanDecision) (plans.Record, error) {
	if dec.RequestID == "" {
		id, err := session.NewID()
		if err != nil {
			return plans.Record{}, fmt.Errorf("decide plan %s: %w", dec.Plan, err)
		}
		dec.RequestID = id
	}
	h, err := c.tc.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: workflows.PlanWorkflowID(dec.Plan), UpdateID: dec.RequestID, UpdateName: workflows.UpdatePlanDecide,
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted, Args: []any{dec},
	})
	var rec plans.Record
	if err == nil {
		err = h.Get(ctx, &rec)
	}
	if err != nil {
		return plans.Record{}, c.refused(err)
	}
	return rec, nil
}

// InterruptPlan interrupts a plan: its running task's worker is
// cancelled, the plan keeps its state, and axlr-tui plans recover runs it
// on from where it stood. It is a decision rather than a cancellation of
// the workflow, so a recovered plan can be interrupted again.
func (c *Client) InterruptPlan(ctx context.Context, id string) error {
	_, err := c.DecidePlan(ctx, workflows.PlanDecision{Plan: id, Kind: workflows.PlanDecideInterrupt, Decision: workflows.PlanApprove,
		Reason: "interrupted from axlr-tui"})
	return err
}

// WatchPlan follows a plan until it next needs the person or ends, handing
// each event of its execution to w; it outlives an axlrd restart as Watch
// does.
func (c *Client) WatchPlan(ctx context.Context, id string, w Watcher) (PlanEnd, error) {
	ex := Execution{WorkflowID: workflows.PlanWorkflowID(id), ExecutionID: id}
	return follow(ctx, c, ex, w, "watch plan "+id, func(ctx context.Context, wt *watch) (PlanEnd, bool, error) {
		rec, done, err := record(ctx, wt, c.Plan)
		if err != nil {
			return PlanEnd{}, false, err
		}
		end := done != nil || rec.Status.Terminal() || rec.Status == plans.Interrupted || rec.NeedsPerson()
		return PlanEnd{Record: rec, Result: done}, end, nil
	})
}

// PlanEnd is where a plan's watch stopped: the plan waits for the person
// or it ended. Result is its planner's execution result once the workflow
// finished, else nil.
type PlanEnd struct {
	Record plans.Record
	Result *contract.Result
}

// RecoverPlan runs an interrupted plan again from where it stood: its
// workflow kept its state when it was interrupted, and waits for this.
func (c *Client) RecoverPlan(ctx context.Context, id string) (plans.Record, error) {
	rec, err := c.Plan(ctx, id)
	if err != nil {
		return plans.Record{}, err
	}
	if rec.Status != plans.Interrupted {
		return plans.Record{}, &RefusedError{Message: fmt.Sprintf("plan %s is %s: only an interrupted plan is recovered", id, rec.Status)}
	}
	return c.DecidePlan(ctx, workflows.PlanDecision{Plan: id, Kind: workflows.PlanDecideRecover, Decision: workflows.PlanApprove})
}
