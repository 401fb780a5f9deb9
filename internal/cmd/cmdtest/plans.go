package cmdtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	domain "github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// Plans is axlrd as the plans commands see it: it answers from Records,
// keeps what it is asked to do, and plays a watch that tells one session
// event, then ends with End (or with its context, under Block).
type Plans struct {
	Records []domain.Record
	End     client.PlanEnd
	Block   bool
	// Watched, when set, is closed once the watch has told its event.
	Watched chan struct{}

	Closed      bool
	Launched    []client.PlanLaunch
	Decisions   []workflows.PlanDecision
	Interrupted []string

	mu sync.Mutex
}

// CheckWorker finds a worker.
func (f *Plans) CheckWorker(context.Context) error { return nil }

// Plans returns Records.
func (f *Plans) Plans(context.Context) ([]domain.Record, error) { return f.Records, nil }

// Plan finds id in Records.
func (f *Plans) Plan(_ context.Context, id string) (domain.Record, error) {
	return domain.Find(f.Records, id)
}

// LaunchPlan starts a decomposing plan.
func (f *Plans) LaunchPlan(_ context.Context, in client.PlanLaunch) (domain.Record, error) {
	f.Launched = append(f.Launched, in)
	return domain.Record{ID: "add-a-flag-0a1b2c", Status: domain.Decomposing, Brief: in.Brief, Root: in.Root}, nil
}

// WatchPlan tells a session event, then ends with End (or with its
// context, under Block).
func (f *Plans) WatchPlan(ctx context.Context, _ string, w client.Watcher) (client.PlanEnd, error) {
	w.Event(contract.Event{Type: contract.EventSession, SessionID: "s1"})
	if f.Watched != nil {
		close(f.Watched)
	}
	if f.Block {
		<-ctx.Done()
		return client.PlanEnd{}, ctx.Err()
	}
	return f.End, nil
}

// InterruptPlan keeps id.
func (f *Plans) InterruptPlan(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Interrupted = append(f.Interrupted, id)
	return nil
}

// DecidePlan keeps the decision; the plan runs again.
func (f *Plans) DecidePlan(_ context.Context, dec workflows.PlanDecision) (domain.Record, error) {
	f.Decisions = append(f.Decisions, dec)
	r, err := domain.Find(f.Records, dec.Plan)
	r.Status, r.Pending = domain.Running, nil
	return r, err
}

// RecoverPlan returns an interrupted plan and refuses any other.
func (f *Plans) RecoverPlan(ctx context.Context, id string) (domain.Record, error) {
	r, err := f.Plan(ctx, id)
	if err == nil && r.Status != domain.Interrupted {
		return domain.Record{}, fmt.Errorf("plan %s is %s: only an interrupted plan is recovered", id, r.Status)
	}
	return r, err
}

// Close marks the client closed.
func (f *Plans) Close() { f.Closed = true }

// PlanRecords are three plans: one whose card waits, one whose commands
// wait, and one done, with a task's questions and a sync.
func PlanRecords() []domain.Record {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	exit0 := 0
	return []domain.Record{
		{ID: "card", Status: domain.AwaitingApproval, Pending: &domain.Pending{Kind: domain.PendingApproval}, Waves: 2, Created: at, Updated: at,
			Tasks: []domain.Task{{ID: "add-flag", Wave: 1, Status: domain.TaskPending}, {ID: "doc-flag", Wave: 2, Status: domain.TaskPending}}},
		{ID: "cmds", Status: domain.AwaitingApproval, Pending: &domain.Pending{Kind: domain.PendingCommand, Commands: []string{"go test ./..."}}, Created: at.Add(-time.Hour), Updated: at},
		{ID: "done", Status: domain.Done, Waves: 1, Root: "/w", Created: at.Add(-2 * time.Hour), Updated: at,
			Tasks: []domain.Task{{ID: "add-flag", Wave: 1, Status: domain.TaskDone, Session: "s-1", Changed: []string{"main.go", "main_test.go"},
				Questions: []string{"Should --flag be documented in the man page too?"}}},
			Syncs: []domain.Sync{{Wave: 1, Check: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}, Exit: &exit0, Round: 1}}},
	}
}
