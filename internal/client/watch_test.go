package client

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"go.temporal.io/api/serviceerror"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// progressOf answers a progress query with the events after its cursor
// among evs, and ends with res once the cursor passed them all.
func progressOf(args []any, res *contract.Result, evs ...contract.Event) workflows.Progress {
	after := args[0].(workflows.ProgressQuery).After
	p := workflows.Progress{Running: true, Events: evs[min(after, len(evs)):min(after+1, len(evs))], Next: min(after+1, len(evs))}
	if after >= len(evs) {
		p.Running, p.Result = false, res
	}
	return p
}

// A job's watch hands each turn's events before it reads the job, tells
// w axlrd is back once both answered, and stops at the job's wait with
// the events up to it, after telling w.
func TestWatchJob(t *testing.T) {
	evs := []contract.Event{{Type: contract.EventSession}, {Type: contract.EventText}, {Type: contract.EventCompleted}}
	var jobReads int
	f := &fakeTemporal{query: func(_ int, wid, queryType string, args []any) (any, error) {
		if wid != workflows.JobWorkflowID("j1") {
			t.Errorf("query of %s", wid)
		}
		if queryType == workflows.QueryProgress {
			return progressOf(args, nil, evs...), nil
		}
		if jobReads++; jobReads == 1 {
			return nil, serviceerror.NewUnavailable("connection refused")
		}
		return jobs.Record{ID: "j1", Pending: &jobs.Pending{Kind: jobs.PendingCheck}}, nil
	}}
	w := &recorder{}
	end, err := newTestClient(t, f).WatchJob(context.Background(), "j1", w)
	if err != nil || end.Record.Pending == nil || end.Result != nil {
		t.Fatalf("end %+v, error %v", end, err)
	}
	want := []string{"event session", "unreachable", "event text", "back", "event completed"}
	for i, s := range w.seen {
		if strings.HasPrefix(s, "unreachable: axlrd not reachable") {
			w.seen[i] = "unreachable"
		}
	}
	if !reflect.DeepEqual(w.seen, want) {
		t.Errorf("seen %q, want %q", w.seen, want)
	}

	f = &fakeTemporal{query: func(int, string, string, []any) (any, error) {
		return nil, serviceerror.NewNotFound("workflow not found")
	}}
	_, err = newTestClient(t, f).WatchJob(context.Background(), "j2", &recorder{})
	if want := "job j2 has no workflow in axlrd (it was admitted but not started, or its history is gone): axlr-tui jobs recover j2 starts it"; err == nil || err.Error() != want {
		t.Errorf("a job without a workflow: %v", err)
	}
}

// A plan's watch ends when the plan needs the person, or with its
// planner's result.
func TestWatchPlan(t *testing.T) {
	res := &contract.Result{Status: contract.Completed}
	for _, tt := range []struct {
		name   string
		record plans.Record
		result *contract.Result
		seen   int
	}{
		{"waits for the person", plans.Record{ID: "p1", Status: plans.AwaitingApproval}, nil, 1},
		{"planner done", plans.Record{ID: "p1", Status: plans.Decomposing}, res, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeTemporal{query: func(_ int, wid, queryType string, args []any) (any, error) {
				if wid != workflows.PlanWorkflowID("p1") {
					t.Errorf("query of %s", wid)
				}
				if queryType == workflows.QueryProgress {
					return progressOf(args, res, contract.Event{Type: contract.EventSession}, contract.Event{Type: contract.EventText}), nil
				}
				return tt.record, nil
			}}
			w := &recorder{}
			end, err := newTestClient(t, f).WatchPlan(context.Background(), "p1", w)
			if err != nil || end.Record.Status != tt.record.Status || !reflect.DeepEqual(end.Result, tt.result) || len(w.seen) != tt.seen {
				t.Fatalf("end %+v, error %v, seen %q", end, err, w.seen)
			}
		})
	}
}
