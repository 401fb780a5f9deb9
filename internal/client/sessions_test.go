package client

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/underpass-ai/axlr/workflows"
)

// run is one run of a session workflow as the visibility list answers it;
// sessions are its AxlrSessions (none: not set yet) and a zero closed a
// run still open.
func run(wid, runID string, status enumspb.WorkflowExecutionStatus, started, closed time.Time, sessions ...string) *workflowpb.WorkflowExecutionInfo {
	ex := &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: wid, RunId: runID},
		Type:      &commonpb.WorkflowType{Name: workflows.SessionWorkflow},
		StartTime: timestamppb.New(started), Status: status, TaskQueue: "axlr-host-h",
	}
	if !closed.IsZero() {
		ex.CloseTime = timestamppb.New(closed)
	}
	if len(sessions) > 0 {
		// A keyword list as the frontend returns it.
		ex.SearchAttributes = &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{
			workflows.SearchAttributeSessions: {
				Metadata: map[string][]byte{"encoding": []byte("json/plain"), "type": []byte("KeywordList")},
				Data:     []byte(`["` + strings.Join(sessions, `","`) + `"]`),
			},
		}}
	}
	return ex
}

func TestSessions(t *testing.T) {
	const (
		running  = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		done     = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		failed   = enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
		canNew   = enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
		fresh    = "1d2c3b4a-0000-4000-8000-000000000001"
		finished = "2d2c3b4a-0000-4000-8000-000000000002"
	)
	day := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		pages [][]*workflowpb.WorkflowExecutionInfo
		want  []SessionSummary
	}{
		{
			name: "two pages",
			pages: [][]*workflowpb.WorkflowExecutionInfo{
				{
					// The session that continued as new past its context
					// cap: its latest run on this page, its first on the next.
					run(sessionWID, "r2", running, day.Add(3*time.Hour), time.Time{}, sid, successor),
					run(workflows.SessionWorkflowID(finished), "r1", done, day.Add(time.Hour), day.Add(90*time.Minute), finished),
				},
				{
					run(sessionWID, "r1", canNew, day, day.Add(3*time.Hour), sid),
					// Listed before its first workflow task set AxlrSessions.
					run(workflows.SessionWorkflowID(fresh), "r1", running, day.Add(4*time.Hour), time.Time{}),
					run(workflows.SessionWorkflowID("3d2c3b4a-0000-4000-8000-000000000003"), "r1", failed, day.Add(2*time.Hour), day.Add(2*time.Hour+time.Minute),
						"3d2c3b4a-0000-4000-8000-000000000003"),
				},
			},
			want: []SessionSummary{
				{SessionID: fresh, WorkflowID: workflows.SessionWorkflowID(fresh), Started: day.Add(4 * time.Hour), Updated: day.Add(4 * time.Hour), Status: "running"},
				{SessionID: "3d2c3b4a-0000-4000-8000-000000000003", WorkflowID: workflows.SessionWorkflowID("3d2c3b4a-0000-4000-8000-000000000003"),
					Started: day.Add(2 * time.Hour), Updated: day.Add(2*time.Hour + time.Minute), Status: "failed"},
				{SessionID: finished, WorkflowID: workflows.SessionWorkflowID(finished), Started: day.Add(time.Hour), Updated: day.Add(90 * time.Minute), Status: "completed"},
				{SessionID: successor, WorkflowID: sessionWID, Started: day, Updated: day.Add(3 * time.Hour), Status: "running"},
			},
		},
		{name: "none", pages: nil, want: []SessionSummary{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pagedTemporal{fakeTemporal: &fakeTemporal{t: t}, pages: tt.pages}
			// No QueryWorkflow is scripted: a query per session fails the test.
			got, err := newClient(p, "127.0.0.1:7233", "h").Sessions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sessions\n%+v\nwant\n%+v", got, tt.want)
			}
			if want := max(len(tt.pages), 1); len(p.lists) != want {
				t.Fatalf("%d list calls, want %d", len(p.lists), want)
			}
			for i, req := range p.lists {
				if req.GetQuery() != "WorkflowType = 'axlr.Session' AND TaskQueue = 'axlr-host-h'" || req.GetPageSize() != sessionsPageSize {
					t.Errorf("list %d: query %q, page size %d", i, req.GetQuery(), req.GetPageSize())
				}
				if wantTok := map[bool]string{true: "", false: "1"}[i == 0]; string(req.GetNextPageToken()) != wantTok {
					t.Errorf("list %d: token %q, want %q", i, req.GetNextPageToken(), wantTok)
				}
			}
		})
	}
}

func TestSessionsListFails(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		unreachable bool
		msg         string
	}{
		{name: "axlrd down", err: serviceerror.NewUnavailable("connection refused"), unreachable: true,
			msg: `list sessions: axlrd not reachable at 127.0.0.1:7233: start it with "go run ./cmd/axlrd" (or "axlrd"), or pass --temporal-address (connection refused)`},
		{name: "refused", err: serviceerror.NewInvalidArgument("invalid query"), msg: "list sessions: invalid query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pagedTemporal{fakeTemporal: &fakeTemporal{t: t, listErr: tt.err}}
			got, err := newClient(p, "127.0.0.1:7233", "h").Sessions(context.Background())
			if got != nil || err == nil || err.Error() != tt.msg || errors.As(err, new(*UnreachableError)) != tt.unreachable {
				t.Fatalf("%v, error %v, want %q", got, err, tt.msg)
			}
		})
	}
}

func TestSessionSummaryOpen(t *testing.T) {
	for status, open := range map[string]bool{
		"running": true, "paused": true, "continued as new": true,
		"completed": false, "failed": false, "cancelled": false, "terminated": false, "timed out": false, "unknown": false,
	} {
		if got := (SessionSummary{Status: status}).Open(); got != open {
			t.Errorf("a %s session open: %v, want %v", status, got, open)
		}
	}
}
