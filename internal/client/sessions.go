package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/underpass-ai/axlr/workflows"
)

// sessionsPageSize is how many executions one page of Sessions' list
// holds: Temporal's default cap on a visibility page.
const sessionsPageSize = 1000

// SessionSummary is one session of this host as Temporal's visibility
// lists it: no query reaches its workflow.
type SessionSummary struct {
	// SessionID is the workflow's current session (its latest successor
	// once it continued past the context cap): what --session takes and
	// Execute resumes.
	SessionID string `json:"session_id"`
	// WorkflowID is the session workflow's id.
	WorkflowID string `json:"workflow_id"`
	// Started is when the workflow's first run started.
	Started time.Time `json:"started"`
	// Updated is when its latest run closed or, while it runs, started:
	// the list holds no time of a running workflow's last prompt, so a
	// session idle between prompts shows its latest continue-as-new.
	Updated time.Time `json:"updated"`
	// Status is the latest run's: running, completed, failed, cancelled,
	// terminated, timed out, paused, or continued as new while the list
	// does not show its successor yet.
	Status string `json:"status"`
}

// Open reports whether the session's workflow still runs, so a prompt can
// reach it; a closed one refuses updates.
func (s SessionSummary) Open() bool {
	return s.Status == "running" || s.Status == "paused" || s.Status == "continued as new"
}

// Sessions lists this host's session workflows, newest started first,
// from one paged visibility list: a thousand sessions cost a page, and no
// workflow is queried. A workflow that continued as new is one summary.
func (c *Client) Sessions(ctx context.Context) ([]SessionSummary, error) {
	query := fmt.Sprintf("WorkflowType = '%s' AND TaskQueue = '%s'", workflows.SessionWorkflow, c.taskQueue())
	// latest is each workflow's newest run; first its earliest start.
	latest := map[string]*workflowpb.WorkflowExecutionInfo{}
	first := map[string]time.Time{}
	var token []byte
	for {
		resp, err := c.list(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: query, NextPageToken: token, PageSize: sessionsPageSize,
		})
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", c.reached(err))
		}
		for _, ex := range resp.GetExecutions() {
			wid, start := ex.GetExecution().GetWorkflowId(), ex.GetStartTime().AsTime()
			if at, ok := first[wid]; !ok || start.Before(at) {
				first[wid] = start
			}
			if l, ok := latest[wid]; !ok || start.After(l.GetStartTime().AsTime()) {
				latest[wid] = ex
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	out := make([]SessionSummary, 0, len(latest))
	for wid, ex := range latest {
		updated := ex.GetStartTime().AsTime()
		if ex.GetCloseTime() != nil {
			updated = ex.GetCloseTime().AsTime()
		}
		out = append(out, SessionSummary{SessionID: currentSession(ex), WorkflowID: wid,
			Started: first[wid], Updated: updated, Status: runStatus(ex.GetStatus())})
	}
	slices.SortFunc(out, func(a, b SessionSummary) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(a.WorkflowID, b.WorkflowID)
	})
	return out, nil
}

// currentSession is the last id of the run's AxlrSessions (the workflow
// appends each successor). Before its first task has set them, or if
// they do not decode, it is the id the workflow id was made of, which
// FindSession resolves as well.
func currentSession(ex *workflowpb.WorkflowExecutionInfo) string {
	var ids []string
	if p := ex.GetSearchAttributes().GetIndexedFields()[workflows.SearchAttributeSessions]; p != nil {
		// Search attributes travel as plain JSON, never through the codec.
		_ = converter.GetDefaultDataConverter().FromPayload(p, &ids)
	}
	if len(ids) > 0 {
		return ids[len(ids)-1]
	}
	return strings.TrimPrefix(ex.GetExecution().GetWorkflowId(), workflows.SessionWorkflowID(""))
}

func runStatus(s enumspb.WorkflowExecutionStatus) string {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return "running"
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "failed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "cancelled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued as new"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed out"
	case enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED:
		return "paused"
	}
	return "unknown"
}
