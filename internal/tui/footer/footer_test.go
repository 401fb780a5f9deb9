package footer

import (
	"flag"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
)

var update = flag.Bool("update", false, "rewrite the golden views")

func TestFooterParts(t *testing.T) {
	plan := &plans.Record{ID: "p-1a2b3c", Status: plans.Running, Waves: 3, Tasks: []plans.Task{
		{ID: "lexer", Wave: 1, Status: plans.TaskDone}, {ID: "parser", Wave: 2, Status: plans.TaskRunning}, {ID: "cli", Wave: 3, Status: plans.TaskPending}}}
	tests := []struct {
		name  string
		state State
		want  string
	}{
		{"empty", State{}, ""},
		{"model and mode", State{Model: "glm-5", Mode: "normal"}, "glm-5 · normal"},
		{"approval", State{Model: "glm-5", Mode: "review", Approval: "all"}, "glm-5 · review · approve all"},
		{"step with attempt", State{Mode: "repair", Step: "repair", StepAttempt: 2, StepLimit: 3}, "repair · step repair 2/3"},
		{"step without limit", State{Step: "triage"}, "step triage"},
		{"job", State{Job: &jobs.Record{ID: "grep-tool-slow", Kind: jobs.Repair, Status: jobs.Running}}, "repair grep-tool-slow · running"},
		{"plan", State{Plan: plan}, "plan p-1a2b3c · wave 2/3 · parser running"},
		{"plan with its task's step", State{Plan: plan, TaskStep: "green 2/3"}, "plan p-1a2b3c · wave 2/3 · parser green 2/3"},
		{"plan not started", State{Plan: &plans.Record{ID: "p-2", Status: plans.AwaitingApproval, Waves: 2}}, "plan p-2 · awaiting_approval"},
		{"reconnecting", State{Model: "glm-5", Reconnecting: true}, "glm-5 · reconnecting"},
		{"keys", State{Model: "glm-5", Keys: "J jobs", Reconnecting: true}, "glm-5 · J jobs · reconnecting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(tt.state.Parts(), " · "); got != tt.want {
				t.Errorf("footer %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFooterView(t *testing.T) {
	full := State{Model: "claude-haiku-5.5", Mode: "repair", Approval: "local", Step: "repair", StepAttempt: 2, StepLimit: 3,
		Job:  &jobs.Record{ID: "hello-probe-fails", Kind: jobs.Repair, Status: jobs.Running},
		Plan: &plans.Record{ID: "p-1a2b3c", Status: plans.Running, Waves: 3, Tasks: []plans.Task{{ID: "parser", Wave: 2, Status: plans.TaskRunning}}}}
	cut := full
	cut.Reconnecting = true
	keys := full
	keys.Keys = "J jobs · P plans · Esc back"
	for _, tt := range []struct {
		name  string
		state State
	}{
		{"short", State{Model: "glm-5", Mode: "normal", Approval: "local"}},
		{"full", full},
		{"cut keeps reconnecting", cut},
		{"cut keeps the keys", keys},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := New(common.New(80, 1, false))
			m.State = tt.state
			view := m.View()
			if w := len([]rune(view)); w != 80 {
				t.Errorf("footer is %d cells wide, want 80", w)
			}
			tuitest.Golden(t, view, *update)
		})
	}
}

// The footer's job is the newest one still active, its plan the newest
// one not ended nor interrupted.
func TestActiveJobAndRunningPlan(t *testing.T) {
	recs := []jobs.Record{{ID: "j3", Status: jobs.Interrupted}, {ID: "j2", Status: jobs.AwaitingMerge}, {ID: "j1", Status: jobs.Running}}
	if got := ActiveJob(recs); got == nil || got.ID != "j2" {
		t.Errorf("active job %+v, want j2", got)
	}
	if got := ActiveJob(recs[:1]); got != nil {
		t.Errorf("active job %+v among interrupted ones", got)
	}
	ps := []plans.Record{{ID: "p3", Status: plans.Done}, {ID: "p2", Status: plans.Interrupted}, {ID: "p1", Status: plans.AwaitingApproval}}
	if got := RunningPlan(ps); got == nil || got.ID != "p1" {
		t.Errorf("running plan %+v, want p1", got)
	}
	if got := RunningPlan(ps[:2]); got != nil {
		t.Errorf("running plan %+v among ended ones", got)
	}
}
