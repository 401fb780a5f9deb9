package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/card"
	"github.com/underpass-ai/axlr/internal/tui/session"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
	jobrec "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// fakeClient answers the app's calls; the issue asks for a fake client in
// the model tests.
type fakeClient struct {
	calls []string
}

func (f *fakeClient) Jobs(context.Context) ([]jobrec.Record, error) { return nil, nil }
func (f *fakeClient) JobNow(context.Context, string) (jobrec.Record, error) {
	return jobrec.Record{}, nil
}
func (f *fakeClient) DecideJob(context.Context, workflows.JobDecision) (jobrec.Record, error) {
	return jobrec.Record{}, nil
}
func (f *fakeClient) RecoverJob(context.Context, string, string) (jobrec.Record, error) {
	return jobrec.Record{}, nil
}
func (f *fakeClient) InstallJob(context.Context, string, string) (jobrec.Record, error) {
	return jobrec.Record{}, nil
}
func (f *fakeClient) QueueJob(context.Context, string) (workflows.QueueView, error) {
	return workflows.QueueView{}, nil
}
func (f *fakeClient) UnqueueJob(context.Context, string, string) (workflows.QueueView, error) {
	return workflows.QueueView{}, nil
}
func (f *fakeClient) LaunchJob(context.Context, client.LaunchRequest) (jobrec.Record, error) {
	return jobrec.Record{}, nil
}
func (f *fakeClient) Plans(context.Context) ([]plans.Record, error) {
	f.calls = append(f.calls, "plans")
	return []plans.Record{{ID: "add-a-retry-6a7b8c", Status: plans.AwaitingApproval, Brief: "add a retry"}}, nil
}
func (f *fakeClient) DecidePlan(context.Context, workflows.PlanDecision) (plans.Record, error) {
	return plans.Record{}, nil
}
func (f *fakeClient) RecoverPlan(context.Context, string) (plans.Record, error) {
	return plans.Record{}, nil
}
func (f *fakeClient) LaunchPlan(context.Context, client.PlanLaunch) (plans.Record, error) {
	return plans.Record{}, nil
}
func (f *fakeClient) Start(_ context.Context, req workflows.ExecuteRequest) (client.Execution, error) {
	f.calls = append(f.calls, "start "+req.Prompt+" in "+req.Root)
	return client.Execution{SessionID: "s1", ExecutionID: "e1"}, nil
}
func (f *fakeClient) Execute(_ context.Context, id string, req workflows.ExecuteRequest) (client.Execution, error) {
	f.calls = append(f.calls, "execute "+id+" "+req.Prompt)
	return client.Execution{SessionID: id, ExecutionID: "e2"}, nil
}
func (f *fakeClient) Decide(_ context.Context, id string, req workflows.DecideRequest) (client.Execution, error) {
	f.calls = append(f.calls, "decide "+id+" "+req.CallID+" "+string(req.Decision))
	return client.Execution{SessionID: id, ExecutionID: "e1"}, nil
}
func (f *fakeClient) Watch(context.Context, client.Execution, client.Watcher) (*contract.Result, error) {
	return &contract.Result{Status: contract.Completed}, nil
}
func (f *fakeClient) Interrupt(_ context.Context, ex client.Execution, _ string) error {
	f.calls = append(f.calls, "interrupt "+ex.ExecutionID)
	return nil
}

func step(t *testing.T, m Model, msg tea.Msg) (Model, tea.Cmd) {
	t.Helper()
	tm, cmd := m.Update(msg)
	return tm.(Model), cmd
}

func TestSlashJobsAndEsc(t *testing.T) {
	m := New(context.Background(), &fakeClient{}, Options{NoColor: true, MaxActive: 2})
	for _, k := range tuitest.Type("/jobs") {
		m, _ = step(t, m, k)
	}
	m, cmd := step(t, m, tuitest.Key("enter"))
	m, _ = step(t, m, cmd())
	if m.view != jobsView || !strings.Contains(m.View().Content, "Jobs · 0/2 active") {
		t.Fatalf("/jobs did not open the panel:\n%s", m.View().Content)
	}
	m, _ = step(t, m, tuitest.Key("esc"))
	if m.view != sessionView {
		t.Error("esc did not go back")
	}
	m, _ = step(t, m, tuitest.Key("J"))
	if m.view != jobsView {
		t.Error("J did not open the panel")
	}
}

func TestSlashPlansAndEsc(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true})
	for _, k := range tuitest.Type("/plans") {
		m, _ = step(t, m, k)
	}
	m, cmd := step(t, m, tuitest.Key("enter"))
	m, cmd = step(t, m, cmd())
	m, _ = step(t, m, cmd())
	view := m.View().Content
	if m.view != plansView || !strings.Contains(view, "Plans · 1 wait for you") || !strings.Contains(view, "add-a-retry-6a7b8c") {
		t.Fatalf("/plans did not open the panel with its rows (calls %q):\n%s", f.calls, view)
	}
	if strings.Contains(view, "not in this TUI yet") {
		t.Errorf("/plans still notes it is missing:\n%s", view)
	}
	m, _ = step(t, m, tuitest.Key("n"))
	m, _ = step(t, m, tuitest.Key("esc"))
	if m.view != plansView {
		t.Fatal("esc while typing a brief left the panel")
	}
	m, _ = step(t, m, tuitest.Key("esc"))
	if m.view != sessionView {
		t.Error("esc did not go back")
	}
}

func TestPromptCardAndCtrlC(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Root: "/w"})
	m, cmd := step(t, m, session.PromptMsg{Text: "hi"})
	m, _ = step(t, m, cmd())
	if m.running == nil || f.calls[0] != "start hi in /w" {
		t.Fatalf("no execution runs after the start: calls %q", f.calls)
	}
	m, cmd = step(t, m, tuitest.Key("ctrl+c"))
	if msg := cmd(); msg == nil || len(f.calls) != 2 || f.calls[1] != "interrupt e1" {
		t.Errorf("first ctrl+c: calls %q", f.calls)
	}
	pending := &contract.PendingCall{CallID: "c1", Tool: "local_exec", Arguments: json.RawMessage(`{}`)}
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.NeedsDecision, Pending: pending}})
	if m.view != cardView {
		t.Fatal("a pending call opened no card")
	}
	m, cmd = step(t, m, tuitest.Key("a"))
	m, cmd = step(t, m, cmd().(card.DecisionMsg))
	cmd()
	if f.calls[len(f.calls)-1] != "decide s1 c1 approve" || m.view != sessionView {
		t.Errorf("calls %q, view %d", f.calls, m.view)
	}
	_, cmd = step(t, m, tuitest.Key("ctrl+c"))
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("ctrl+c with nothing running did not leave")
	}
}
