package client

import (
	"context"
	"fmt"

	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// CloseSession leaves a session (workflows.UpdateCloseSession): its
// record's closing turn, with the session's summary, and the record's
// closed. It waits for the closing execution's answer like Execute does;
// a session that runs an execution refuses it (wait, or interrupt).
func (c *Client) CloseSession(ctx context.Context, sessionID, reason string) (Execution, error) {
	id, err := session.NewID()
	if err != nil {
		return Execution{}, fmt.Errorf("close session %s: %w", sessionID, err)
	}
	return c.update(ctx, sessionID, id, workflows.UpdateCloseSession, workflows.CloseSessionRequest{RequestID: id, Reason: reason})
}

// SessionRecord returns where a session's record stands: its instance,
// its turns, whether it is closed (workflows.QuerySessionRecord).
func (c *Client) SessionRecord(ctx context.Context, sessionID string) (workflows.SessionRecord, error) {
	wid, err := c.FindSession(ctx, sessionID)
	if err != nil {
		return workflows.SessionRecord{}, err
	}
	v, err := c.query(ctx, wid, "", workflows.QuerySessionRecord)
	if err != nil {
		return workflows.SessionRecord{}, fmt.Errorf("read the record of session %s: %w", sessionID, c.reached(err))
	}
	var rec workflows.SessionRecord
	if err := v.Get(&rec); err != nil {
		return workflows.SessionRecord{}, fmt.Errorf("read the record of session %s: %w", sessionID, err)
	}
	return rec, nil
}

// SessionTurns reads the turn records a session's log keeps, oldest first
// (workflows.SessionTurnsRead): a session not in axlrd's store is a
// *RefusedError.
func (c *Client) SessionTurns(ctx context.Context, sessionID string) ([]workflows.TurnRecord, error) {
	return runShort[[]workflows.TurnRecord](ctx, c, shortRun{
		prefix:       "axlr-session-turns",
		what:         "read the turns of session " + sessionID,
		workflowType: workflows.SessionTurnsWorkflow,
		timeout:      workflows.DefinitionTimeout,
	}, workflows.SessionTurnsInput{SessionID: sessionID})
}
