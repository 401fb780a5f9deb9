package client

import (
	"context"
	"reflect"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// PlanTaskStep asks the running worker of the plan's task; a task with no
// worker running has no step.
func TestPlanTaskStep(t *testing.T) {
	const running = "WorkflowType = 'axlr.PlanTask' AND AxlrPlan = 'p-1a2b3c' AND AxlrPlanTask = 'parser' AND ExecutionStatus = 'Running'"
	f := &fakeTemporal{
		listed: map[string][]*workflowpb.WorkflowExecutionInfo{running: {{Execution: &commonpb.WorkflowExecution{WorkflowId: "axlr-plan-p-1a2b3c-parser", RunId: "r1"}}}},
		query: func(_ int, wid, queryType string, _ []any) (any, error) {
			if wid != "axlr-plan-p-1a2b3c-parser" || queryType != workflows.QueryTaskStep {
				t.Errorf("query %s %s", wid, queryType)
			}
			return workflows.TaskStep{Plan: "p-1a2b3c", Task: "parser", Step: "green", Iteration: 2, Limit: 3}, nil
		},
	}
	c := newTestClient(t, f)
	got, err := c.PlanTaskStep(context.Background(), "p-1a2b3c", "parser")
	if want := (workflows.TaskStep{Plan: "p-1a2b3c", Task: "parser", Step: "green", Iteration: 2, Limit: 3}); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("step %+v %v, want %+v", got, err, want)
	}
	got, err = c.PlanTaskStep(context.Background(), "p-1a2b3c", "lexer")
	if err != nil || got.Step != "" || f.queries != 1 {
		t.Fatalf("a task with no worker running: %+v %v after %d queries", got, err, f.queries)
	}
}

// Plans reads each plan's latest run only, and a closed run once: its
// record no longer changes, and a query of it replays its history.
func TestPlansReadClosedRunsOnce(t *testing.T) {
	const list = "WorkflowType = 'axlr.Plan'"
	run := func(wid, id string, status enumspb.WorkflowExecutionStatus) *workflowpb.WorkflowExecutionInfo {
		return &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: wid, RunId: id}, Status: status}
	}
	var asked []string
	f := &fakeTemporal{
		listed: map[string][]*workflowpb.WorkflowExecutionInfo{list: {
			run("axlr-plan-a", "a2", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING),
			run("axlr-plan-a", "a1", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED),
			run("axlr-plan-b", "b1", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED),
		}},
		query: func(_ int, wid, _ string, _ []any) (any, error) {
			asked = append(asked, wid)
			return plans.Record{ID: strings.TrimPrefix(wid, "axlr-plan-")}, nil
		},
	}
	c := newTestClient(t, f)
	for range 2 {
		recs, err := c.Plans(context.Background())
		if err != nil || len(recs) != 2 {
			t.Fatalf("plans %+v %v", recs, err)
		}
	}
	if want := []string{"axlr-plan-a", "axlr-plan-b", "axlr-plan-a"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("queried %q, want %q: the running plan each time, the closed one once, no older run", asked, want)
	}
}
