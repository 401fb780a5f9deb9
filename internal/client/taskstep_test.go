package client

import (
	"context"
	"reflect"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

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
