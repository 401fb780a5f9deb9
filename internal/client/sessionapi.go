package client

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/google/uuid"

	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// CreateSession starts an idle session on this host with the defaults its
// turns take, and returns its id. The service API creates its sessions
// so; a prompt (Execute) runs in it. A key, when set, names the creation:
// the session's id derives from it, so a retry gets the session the
// first one made (the caller compares its defaults).
func (c *Client) CreateSession(ctx context.Context, d workflows.SessionDefaults, key string) (string, error) {
	sid, err := session.NewID()
	if err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	conflict := enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	if key != "" {
		sid, conflict = keyedID("session", key), enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	}
	_, err = c.tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{
		ID:                       workflows.SessionWorkflowID(sid),
		TaskQueue:                c.taskQueue(),
		WorkflowIDConflictPolicy: conflict,
	}, workflows.SessionWorkflow, workflows.SessionInput{SessionID: sid, Host: c.hostID, Defaults: &d})
	if err != nil {
		return "", fmt.Errorf("create session %s: %w", sid, c.reached(err))
	}
	return sid, nil
}

// SessionView returns a session as the service API shows it.
func (c *Client) SessionView(ctx context.Context, sessionID string) (workflows.SessionView, error) {
	wid, err := c.FindSession(ctx, sessionID)
	if err != nil {
		return workflows.SessionView{}, err
	}
	v, err := c.query(ctx, wid, "", workflows.QuerySession)
	if err != nil {
		return workflows.SessionView{}, fmt.Errorf("read session %s: %w", sessionID, c.reached(err))
	}
	var view workflows.SessionView
	if err := v.Get(&view); err != nil {
		return workflows.SessionView{}, fmt.Errorf("decode session %s: %w", sessionID, err)
	}
	return view, nil
}

// SessionEvents returns the events of the session whose workflow is wid
// (FindSession names it) after cursor after (its events are numbered
// from 1; after 0 is from the first). The current run
// holds the recent ones; older ones are asked of the runs before it,
// which continue-as-new closed. Events that no run holds any more (past
// the journal's bound) are skipped: the page's From then says where it
// starts.
func (c *Client) SessionEvents(ctx context.Context, wid string, after int) (workflows.EventsPage, error) {
	page, err := c.eventsOf(ctx, wid, "", after)
	if err != nil || after >= page.Base {
		return page, err
	}
	// Older than this run: walk back the runs continue-as-new closed.
	base, runID := page.Base, ""
	for after < base {
		if runID, err = c.previousRun(ctx, wid, runID); err != nil {
			return workflows.EventsPage{}, err
		}
		if runID == "" {
			break
		}
		older, err := c.eventsOf(ctx, wid, runID, after)
		if err != nil {
			return workflows.EventsPage{}, err
		}
		if len(older.Events) > 0 {
			return older, nil
		}
		base = older.Base
	}
	return page, nil
}

// eventsOf asks one run of a session's workflow for its events.
func (c *Client) eventsOf(ctx context.Context, wid, runID string, after int) (workflows.EventsPage, error) {
	v, err := c.query(ctx, wid, runID, workflows.QueryEvents, workflows.EventsQuery{After: after})
	if err != nil {
		return workflows.EventsPage{}, fmt.Errorf("events of %s: %w", wid, c.reached(err))
	}
	var page workflows.EventsPage
	if err := v.Get(&page); err != nil {
		return workflows.EventsPage{}, fmt.Errorf("decode the events of %s: %w", wid, err)
	}
	return page, nil
}

// previousRun returns the run that continued as new into runID (""
// names the current run), or "" for the first.
func (c *Client) previousRun(ctx context.Context, wid, runID string) (string, error) {
	if runID == "" {
		desc, err := c.tc.DescribeWorkflowExecution(ctx, wid, "")
		if err != nil {
			return "", c.reached(err)
		}
		runID = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	it := c.tc.GetWorkflowHistory(ctx, wid, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return "", nil
	}
	ev, err := it.Next()
	if errors.As(err, new(*serviceerror.NotFound)) {
		return "", nil
	}
	if err != nil {
		return "", c.reached(err)
	}
	return ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(), nil
}

// ExecuteKeyed runs a prompt in a session under the caller's update id:
// the service API's idempotency key with its request's digest. The same
// request again is the same update, applied once; another request under
// the same execution id reaches the validator, which refuses it
// (workflows.IdempotencyConflict).
func (c *Client) ExecuteKeyed(ctx context.Context, sessionID, updateID string, req workflows.ExecuteRequest) (Execution, error) {
	return c.update(ctx, sessionID, updateID, workflows.UpdateExecute, req)
}

// DecideKeyed is ExecuteKeyed for a decision.
func (c *Client) DecideKeyed(ctx context.Context, sessionID, updateID string, req workflows.DecideRequest) (Execution, error) {
	return c.update(ctx, sessionID, updateID, workflows.UpdateDecide, req)
}

// keyedID is the session id a key names: a name-based (version 5) UUID,
// which the session store takes as it takes a random one.
func keyedID(kind, key string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(kind+"\x00"+key)).String()
}
