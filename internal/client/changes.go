package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// Change is one durable change of a job's or a plan's status, as its
// workflow's history records it. ID is stable: "<run id>:<event id>" of
// the history event that records it, so a reader that saw a change can
// ask for the ones after it, after any restart.
type Change struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Job is the job's record as the job reported it (a job's change).
	Job *jobs.Record `json:"job,omitempty"`
	// Plan and Status are a plan's id and status; Host the host whose
	// directory it works in (a plan's change).
	Plan   string       `json:"plan,omitempty"`
	Status plans.Status `json:"status,omitempty"`
	Host   string       `json:"host,omitempty"`
}

// ErrCursorGone is a change id whose run axlrd no longer holds (its
// history passed the namespace's retention) or never held.
var ErrCursorGone = errors.New("no such change: its run is not in the job's or plan's history")

// ChangesFollowWait is how often a follow looks for a newer run once the
// last one closed: a job's recovery starts one.
const ChangesFollowWait = 2 * time.Second

// FollowJob calls emit with each change of job id's status, from its first
// run on, in order; a change is a report whose status, step, pending
// decision, pull request, head, host, queue place or reason differs from
// the one before. after, when set, is the id of the last change the
// caller has: only the ones after it are emitted. With follow it waits
// for more until ctx ends or emit fails; without, it returns once it
// read every run.
func (c *Client) FollowJob(ctx context.Context, id, after string, follow bool, emit func(Change) error) error {
	var last *jobs.Record
	return c.followRuns(ctx, workflows.JobWorkflowID(id), after, follow, func(ev *historypb.HistoryEvent) (*Change, error) {
		a := ev.GetSignalExternalWorkflowExecutionInitiatedEventAttributes()
		if a == nil || a.GetSignalName() != workflows.SignalJobRecord {
			return nil, nil
		}
		var r jobs.Record
		if err := decodeFirst(a.GetInput(), &r); err != nil {
			return nil, fmt.Errorf("decode job %s's record at event %d: %w", id, ev.GetEventId(), err)
		}
		if last != nil && sameStatus(*last, r) {
			return nil, nil
		}
		last = &r
		return &Change{Job: &r}, nil
	}, emit)
}

// FollowPlan is FollowJob for a plan: a change is a new status (or host)
// the plan showed in its search attributes.
func (c *Client) FollowPlan(ctx context.Context, id, after string, follow bool, emit func(Change) error) error {
	var status plans.Status
	var host string
	return c.followRuns(ctx, workflows.PlanWorkflowID(id), after, follow, func(ev *historypb.HistoryEvent) (*Change, error) {
		a := ev.GetUpsertWorkflowSearchAttributesEventAttributes()
		if a == nil {
			return nil, nil
		}
		fields := a.GetSearchAttributes().GetIndexedFields()
		var s, h string
		if p, ok := fields[workflows.SearchAttributePlanStatus]; ok {
			if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
				return nil, fmt.Errorf("decode plan %s's status at event %d: %w", id, ev.GetEventId(), err)
			}
		}
		if p, ok := fields[workflows.SearchAttributeHost]; ok {
			_ = converter.GetDefaultDataConverter().FromPayload(p, &h)
		}
		if s == "" || plans.Status(s) == status && (h == "" || h == host) {
			return nil, nil
		}
		status, host = plans.Status(s), cmp.Or(h, host)
		return &Change{Plan: id, Status: status, Host: host}, nil
	}, emit)
}

// sameStatus reports whether two reports of a job show the same status.
func sameStatus(a, b jobs.Record) bool {
	pa, pb := a.Pending, b.Pending
	samePending := pa == nil && pb == nil || pa != nil && pb != nil && pa.Kind == pb.Kind && pa.Command == pb.Command && pa.HeadSHA == pb.HeadSHA && pa.Behind == pb.Behind
	qa, qb := a.Queue, b.Queue
	sameQueue := qa == nil && qb == nil || qa != nil && qb != nil && qa.State == qb.State && qa.Position == qb.Position
	return a.Status == b.Status && a.Step == b.Step && a.StepAttempt == b.StepAttempt && samePending && sameQueue &&
		a.PullRequest == b.PullRequest && a.HeadSHA == b.HeadSHA && a.MergeSHA == b.MergeSHA && a.Host == b.Host &&
		a.Reason == b.Reason && a.Recoveries == b.Recoveries
}

// decodeFirst decodes the first payload of ps.
func decodeFirst(ps *commonpb.Payloads, v any) error {
	if len(ps.GetPayloads()) == 0 {
		return errors.New("no payload")
	}
	return converter.GetDefaultDataConverter().FromPayload(ps.GetPayloads()[0], v)
}

// runRef is one run of a workflow id.
type runRef struct {
	id    string
	start time.Time
}

// runs lists every run of workflowID that axlrd holds, the first started
// first: the runs visibility lists, with the current one, which it may
// not list yet.
func (c *Client) runs(ctx context.Context, workflowID string) ([]runRef, error) {
	var out []runRef
	var token []byte
	for {
		resp, err := c.list(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = '%s'", workflowID), PageSize: 100, NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, ex := range resp.GetExecutions() {
			out = append(out, runRef{id: ex.GetExecution().GetRunId(), start: ex.GetStartTime().AsTime()})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	desc, err := c.tc.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil && !errors.As(err, new(*serviceerror.NotFound)) {
		return nil, c.reached(err)
	}
	if info := desc.GetWorkflowExecutionInfo(); err == nil {
		cur := runRef{id: info.GetExecution().GetRunId(), start: info.GetStartTime().AsTime()}
		if !slices.ContainsFunc(out, func(r runRef) bool { return r.id == cur.id }) {
			out = append(out, cur)
		}
	}
	slices.SortStableFunc(out, func(a, b runRef) int { return a.start.Compare(b.start) })
	return out, nil
}

// followRuns reads every run of workflowID in order, hands each history
// event to pick, and emits the changes it makes, with their ids, after
// the one named after. The open run is read as it grows; once the last
// run closed, with follow, it looks for a newer one every
// ChangesFollowWait.
func (c *Client) followRuns(ctx context.Context, workflowID, after string, follow bool, pick func(*historypb.HistoryEvent) (*Change, error), emit func(Change) error) error {
	afterRun, afterEvent, err := parseChangeID(after)
	if err != nil {
		return err
	}
	passed := after == ""
	done := map[string]bool{}
	for {
		runs, err := c.runs(ctx, workflowID)
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			return &serviceerror.NotFound{Message: "no workflow " + workflowID}
		}
		if !passed && !slices.ContainsFunc(runs, func(r runRef) bool { return r.id == afterRun }) {
			return fmt.Errorf("change %s of %s: %w", after, workflowID, ErrCursorGone)
		}
		read := false
		for _, r := range runs {
			if done[r.id] {
				continue
			}
			read = true
			closed, err := c.readRun(ctx, workflowID, r.id, func(ev *historypb.HistoryEvent) error {
				if !passed && r.id == afterRun && ev.GetEventId() > afterEvent {
					passed = true
				}
				// Every event goes through pick, which compares each
				// report with the one before it.
				ch, err := pick(ev)
				if err != nil || ch == nil || !passed {
					return err
				}
				ch.ID, ch.At = fmt.Sprintf("%s:%d", r.id, ev.GetEventId()), ev.GetEventTime().AsTime()
				return emit(*ch)
			})
			if err != nil {
				return err
			}
			if r.id == afterRun {
				passed = true
			}
			if !closed {
				break
			}
			done[r.id] = true
		}
		if !follow {
			return nil
		}
		if !read && !sleep(ctx, ChangesFollowWait) {
			return ctx.Err()
		}
	}
}

// readRun hands every event of one run to visit; an open run is read as
// it grows (a long poll), until it closes (true) or ctx ends.
func (c *Client) readRun(ctx context.Context, workflowID, runID string, visit func(*historypb.HistoryEvent) error) (bool, error) {
	it := c.tc.GetWorkflowHistory(ctx, workflowID, runID, true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	closed := false
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, fmt.Errorf("history of %s run %s: %w", workflowID, runID, c.reached(err))
		}
		if err := visit(ev); err != nil {
			return false, err
		}
		closed = closed || closes(ev.GetEventType())
	}
	return closed, ctx.Err()
}

// closes reports whether an event ends its run.
func closes(t enumspb.EventType) bool {
	switch t {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// parseChangeID splits "<run id>:<event id>"; "" is no change.
func parseChangeID(id string) (string, int64, error) {
	if id == "" {
		return "", 0, nil
	}
	runID, ev, ok := strings.Cut(id, ":")
	n, err := strconv.ParseInt(ev, 10, 64)
	if !ok || runID == "" || err != nil || n < 1 {
		return "", 0, &BadCursorError{Cursor: id, Want: "<run id>:<event id>, the id of a change"}
	}
	return runID, n, nil
}

// BadCursorError is a cursor that does not parse.
type BadCursorError struct {
	Cursor, Want string
}

func (e *BadCursorError) Error() string {
	return fmt.Sprintf("cursor %q: want %s", e.Cursor, e.Want)
}

// CheckChangeID refuses a change id that does not parse ("" is none).
func CheckChangeID(id string) error {
	_, _, err := parseChangeID(id)
	return err
}

// Exists reports a workflow id axlrd holds no run of as a NotFound.
func (c *Client) Exists(ctx context.Context, workflowID string) error {
	_, err := c.tc.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return c.reached(err)
	}
	return nil
}
