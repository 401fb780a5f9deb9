package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// ErrNoPendingCall is a session whose last execution waits for no
// decision.
var ErrNoPendingCall = errors.New("no call waits for a decision")

// queryTimeout bounds a progress query; resultTimeout a result query.
const (
	queryTimeout  = 10 * time.Second
	resultTimeout = 30 * time.Second
)

// Execution is one execution axlrd admitted: the workflow that runs it and
// the id it goes by.
type Execution struct {
	WorkflowID  string
	ExecutionID string
	// SessionID is the session the execution started in.
	SessionID string
}

// Start opens a new session on this host and runs the prompt in it: the
// session workflow is started with the execute update (update-with-start).
// req.Root must be the workspace's absolute path; an empty
// req.ExecutionID gets a new id.
func (c *Client) Start(ctx context.Context, req workflows.ExecuteRequest) (Execution, error) {
	sid, err := session.NewID()
	if err != nil {
		return Execution{}, fmt.Errorf("start session: %w", err)
	}
	if req.ExecutionID == "" {
		if req.ExecutionID, err = session.NewID(); err != nil {
			return Execution{}, fmt.Errorf("start session %s: %w", sid, err)
		}
	}
	wid := workflows.SessionWorkflowID(sid)
	start := c.tc.NewWithStartWorkflowOperation(sdkclient.StartWorkflowOptions{
		ID:                       wid,
		TaskQueue:                c.taskQueue(),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.SessionWorkflow, workflows.SessionInput{SessionID: sid, Host: c.hostID})
	h, err := c.tc.UpdateWithStartWorkflow(ctx, sdkclient.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: sdkclient.UpdateWorkflowOptions{
			UpdateID: req.ExecutionID, UpdateName: workflows.UpdateExecute,
			WaitForStage: sdkclient.WorkflowUpdateStageCompleted, Args: []any{req},
		},
	})
	return c.accepted(ctx, wid, h, err)
}

// Execute runs a prompt in an existing session. An empty req.Root
// continues in the session's workspace; an empty req.ExecutionID gets a
// new id.
func (c *Client) Execute(ctx context.Context, sessionID string, req workflows.ExecuteRequest) (Execution, error) {
	var err error
	if req.ExecutionID == "" {
		if req.ExecutionID, err = session.NewID(); err != nil {
			return Execution{}, fmt.Errorf("execute in session %s: %w", sessionID, err)
		}
	}
	return c.update(ctx, sessionID, req.ExecutionID, workflows.UpdateExecute, req)
}

// Decide decides the call a session waits on and continues it in a new
// execution. req.CallID names the call (PendingCall finds it); the
// workflow refuses a decision for any other. An empty req.ExecutionID gets
// a new id.
func (c *Client) Decide(ctx context.Context, sessionID string, req workflows.DecideRequest) (Execution, error) {
	var err error
	if req.ExecutionID == "" {
		if req.ExecutionID, err = session.NewID(); err != nil {
			return Execution{}, fmt.Errorf("decide in session %s: %w", sessionID, err)
		}
	}
	return c.update(ctx, sessionID, req.ExecutionID, workflows.UpdateDecide, req)
}

// StopCeremony stops the ceremony a session runs, in a new execution that
// makes no model request: its open step is cancelled and the instance ends
// in CANCELLED. req.InstanceID names the ceremony (the session's last
// result shows it); the workflow refuses a stop for any other. An empty
// req.ExecutionID gets a new id.
func (c *Client) StopCeremony(ctx context.Context, sessionID string, req workflows.StopCeremonyRequest) (Execution, error) {
	var err error
	if req.ExecutionID == "" {
		if req.ExecutionID, err = session.NewID(); err != nil {
			return Execution{}, fmt.Errorf("stop the ceremony of session %s: %w", sessionID, err)
		}
	}
	return c.update(ctx, sessionID, req.ExecutionID, workflows.UpdateStopCeremony, req)
}

func (c *Client) update(ctx context.Context, sessionID, updateID, name string, arg any) (Execution, error) {
	wid, err := c.FindSession(ctx, sessionID)
	if err != nil {
		return Execution{}, err
	}
	h, err := c.tc.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: wid, UpdateID: updateID, UpdateName: name,
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted, Args: []any{arg},
	})
	return c.accepted(ctx, wid, h, err)
}

// accepted waits for an execute or decide update's answer.
func (c *Client) accepted(ctx context.Context, wid string, h sdkclient.WorkflowUpdateHandle, err error) (Execution, error) {
	if err != nil {
		return Execution{}, c.refused(err)
	}
	var acc workflows.Accepted
	if err := h.Get(ctx, &acc); err != nil {
		return Execution{}, c.refused(err)
	}
	return Execution{WorkflowID: wid, ExecutionID: acc.ExecutionID, SessionID: acc.SessionID}, nil
}

// Interrupt stops the execution ex, and only it: the workflow refuses an
// interrupt that names another, so a late one never stops the next
// execution.
func (c *Client) Interrupt(ctx context.Context, ex Execution, reason string) error {
	id, err := session.NewID()
	if err != nil {
		return fmt.Errorf("interrupt execution %s: %w", ex.ExecutionID, err)
	}
	h, err := c.tc.UpdateWorkflow(ctx, sdkclient.UpdateWorkflowOptions{
		WorkflowID: ex.WorkflowID, UpdateID: id, UpdateName: workflows.UpdateInterrupt,
		WaitForStage: sdkclient.WorkflowUpdateStageCompleted,
		Args:         []any{workflows.InterruptRequest{ExecutionID: ex.ExecutionID, Reason: reason}},
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return c.refused(err)
	}
	return nil
}

// StartTask starts a one-shot task (workflows.TaskWorkflow) in the fresh
// session in.SessionID, on the task queue of in.Host (default: this
// host). It refuses an input whose Validate fails. A retried start of a
// running task attaches to it; a task that has ended does not run again.
func (c *Client) StartTask(ctx context.Context, in workflows.TaskInput) (Execution, error) {
	if in.Host == "" {
		in.Host = c.hostID
	}
	if err := in.Validate(); err != nil {
		return Execution{}, fmt.Errorf("start task in session %s: %w", in.SessionID, err)
	}
	run, err := c.tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID:                       workflows.TaskWorkflowID(in.SessionID),
		TaskQueue:                workflows.HostTaskQueue(in.Host),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.TaskWorkflow, in)
	if err != nil {
		return Execution{}, fmt.Errorf("start task in session %s: %w", in.SessionID, c.reached(err))
	}
	return Execution{WorkflowID: run.GetID(), ExecutionID: in.ExecutionID, SessionID: in.SessionID}, nil
}

// FindSession returns the id of the workflow that holds a session: the
// session's own, else the one whose AxlrSessions search attribute lists it
// (a successor opened past the context cap, or a task's session).
func (c *Client) FindSession(ctx context.Context, sessionID string) (string, error) {
	id := workflows.SessionWorkflowID(sessionID)
	_, err := c.tc.DescribeWorkflowExecution(ctx, id, "")
	if err == nil {
		return id, nil
	}
	if !errors.As(err, new(*serviceerror.NotFound)) {
		return "", fmt.Errorf("look up session %s: %w", sessionID, c.reached(err))
	}
	resp, err := c.list(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:    fmt.Sprintf("%s = '%s'", workflows.SearchAttributeSessions, sessionID),
		PageSize: 1,
	})
	if err != nil {
		return "", fmt.Errorf("look up session %s: %w", sessionID, c.reached(err))
	}
	if len(resp.GetExecutions()) == 0 {
		return "", &NotFoundError{SessionID: sessionID}
	}
	return resp.GetExecutions()[0].GetExecution().GetWorkflowId(), nil
}

// Result returns the result of a session's last execution.
func (c *Client) Result(ctx context.Context, sessionID string) (*contract.Result, error) {
	wid, err := c.FindSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, resultTimeout)
	defer cancel()
	v, err := c.tc.QueryWorkflow(qctx, wid, "", workflows.QueryResult)
	if err != nil {
		return nil, fmt.Errorf("result of session %s: %w", sessionID, c.reached(err))
	}
	var r contract.Result
	if err := v.Get(&r); err != nil {
		return nil, fmt.Errorf("decode result of session %s: %w", sessionID, err)
	}
	return &r, nil
}

// PendingCall returns the call a session's last execution waits on, or an
// error wrapping ErrNoPendingCall.
func (c *Client) PendingCall(ctx context.Context, sessionID string) (*contract.PendingCall, error) {
	r, err := c.Result(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if r.Status != contract.NeedsDecision || r.Pending == nil {
		return nil, fmt.Errorf("%w in session %s: its last execution ended %s", ErrNoPendingCall, sessionID, r.Status)
	}
	return r.Pending, nil
}

// Progress asks once for an execution's events from the cursor after, and
// its result once it has ended.
func (c *Client) Progress(ctx context.Context, ex Execution, after int) (workflows.Progress, error) {
	p, err := c.progress(ctx, ex, after)
	if err != nil {
		return workflows.Progress{}, fmt.Errorf("progress of execution %s: %w", ex.ExecutionID, c.reached(err))
	}
	return p, nil
}

func (c *Client) progress(ctx context.Context, ex Execution, after int) (workflows.Progress, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := c.tc.QueryWorkflow(qctx, ex.WorkflowID, "", workflows.QueryProgress, workflows.ProgressQuery{ExecutionID: ex.ExecutionID, After: after})
	if err != nil {
		return workflows.Progress{}, err
	}
	var p workflows.Progress
	if err := v.Get(&p); err != nil {
		return workflows.Progress{}, err
	}
	return p, nil
}
