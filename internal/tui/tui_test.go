package tui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/card"
	"github.com/underpass-ai/axlr/internal/tui/jobs"
	planpanel "github.com/underpass-ai/axlr/internal/tui/plans"
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
	// published is the last definition published.
	published string
	// reqs are the prompts' requests, Start's and Execute's in order;
	// refuse, when set, is what Execute answers them.
	reqs   []workflows.ExecuteRequest
	refuse error
	// launched are the jobs asked for; launchErr refuses them.
	launched  []workflows.LaunchRequest
	launchErr error
	// closeErr, when set, is what CloseSession answers.
	closeErr error
	// watchAfter, when set, holds Watch until it is closed.
	watchAfter chan struct{}
}

func (f *fakeClient) Jobs(context.Context) ([]jobrec.Record, error) {
	f.calls = append(f.calls, "jobs")
	return nil, nil
}
func (f *fakeClient) DecideJob(_ context.Context, dec workflows.JobDecision) (jobrec.Record, error) {
	f.calls = append(f.calls, fmt.Sprintf("decide job %s %s approve=%v at %s", dec.Job, dec.Kind, dec.Approve, dec.HeadSHA))
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
func (f *fakeClient) LaunchJob(_ context.Context, req workflows.LaunchRequest) (jobrec.Record, error) {
	f.calls = append(f.calls, "launch "+string(req.Kind)+" "+req.Brief)
	f.launched = append(f.launched, req)
	if f.launchErr != nil {
		return jobrec.Record{}, f.launchErr
	}
	return jobrec.Record{ID: "parse-empty-1a2b3c", Kind: req.Kind}, nil
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
func (f *fakeClient) LaunchPlan(_ context.Context, in client.PlanLaunch) (plans.Record, error) {
	f.calls = append(f.calls, "plan "+in.Brief+" in "+in.Root)
	return plans.Record{ID: "add-a-retry-6a7b8c"}, nil
}
func (f *fakeClient) Start(_ context.Context, req workflows.ExecuteRequest) (client.Execution, error) {
	f.calls = append(f.calls, "start "+req.Prompt+" in "+req.Root)
	f.reqs = append(f.reqs, req)
	return client.Execution{SessionID: "s1", ExecutionID: "e1"}, nil
}
func (f *fakeClient) Execute(_ context.Context, id string, req workflows.ExecuteRequest) (client.Execution, error) {
	f.calls = append(f.calls, "execute "+id+" "+req.Prompt)
	f.reqs = append(f.reqs, req)
	if f.refuse != nil {
		return client.Execution{}, f.refuse
	}
	return client.Execution{SessionID: id, ExecutionID: "e2"}, nil
}
func (f *fakeClient) Decide(_ context.Context, id string, req workflows.DecideRequest) (client.Execution, error) {
	f.calls = append(f.calls, "decide "+id+" "+req.CallID+" "+string(req.Decision))
	return client.Execution{SessionID: id, ExecutionID: "e1"}, nil
}
func (f *fakeClient) Watch(context.Context, client.Execution, client.Watcher) (*contract.Result, error) {
	if f.watchAfter != nil {
		<-f.watchAfter
	}
	return &contract.Result{Status: contract.Completed}, nil
}
func (f *fakeClient) StopCeremony(_ context.Context, id string, req workflows.StopCeremonyRequest) (client.Execution, error) {
	f.calls = append(f.calls, "stop "+id+" "+req.InstanceID+" "+req.Reason)
	return client.Execution{SessionID: id, ExecutionID: "e3"}, nil
}
func (f *fakeClient) Definitions(context.Context) ([]workflows.DefinitionSummary, error) {
	return []workflows.DefinitionSummary{
		{Name: "axlr_debug", Versions: []string{"2.0", "2.1"}, Starts: "/debug mode", BuiltIn: true},
		{Name: "team_note", Versions: []string{"1.0"}, Starts: "/ceremony team_note", Description: "Draft a note."},
	}, nil
}
func (f *fakeClient) PublishDefinition(_ context.Context, yaml []byte) (workflows.PublishDefinitionResult, error) {
	f.published = string(yaml)
	return workflows.PublishDefinitionResult{Outcome: "published", Name: "team_note", Version: "1.0", Digest: "d1"}, nil
}
func (f *fakeClient) Sessions(context.Context) ([]client.SessionSummary, error) {
	f.calls = append(f.calls, "sessions")
	return []client.SessionSummary{{SessionID: "s-old", Status: "running", Started: time.Unix(1, 0), Updated: time.Unix(2, 0)}}, nil
}
func (f *fakeClient) History(_ context.Context, id string) (*client.Trajectory, error) {
	f.calls = append(f.calls, "history "+id)
	return &client.Trajectory{WorkflowID: "axlr-session-" + id, Runs: []string{"r1"},
		Steps: []client.Step{{Time: time.Unix(1, 0), Kind: "update", Name: "execute", Outcome: "completed"}}}, nil
}
func (f *fakeClient) Result(_ context.Context, id string) (*contract.Result, error) {
	f.calls = append(f.calls, "result "+id)
	return &contract.Result{Status: contract.NeedsDecision, SessionID: id, Answer: "I need to run go test.", Mode: "review",
		Pending: &contract.PendingCall{CallID: "c9", Tool: "local_exec", Arguments: json.RawMessage(`{"program":"go"}`)}}, nil
}
func (f *fakeClient) PlanTaskStep(_ context.Context, plan, task string) (workflows.TaskStep, error) {
	f.calls = append(f.calls, "step "+plan+" "+task)
	return workflows.TaskStep{Plan: plan, Task: task, Step: "green", Iteration: 1, Limit: 3}, nil
}
func (f *fakeClient) CloseSession(ctx context.Context, id, reason string) (client.Execution, error) {
	f.calls = append(f.calls, "close "+id+": "+reason)
	if _, ok := ctx.Deadline(); !ok {
		return client.Execution{}, errors.New("a close without a deadline could hold the TUI")
	}
	if f.closeErr != nil {
		return client.Execution{}, f.closeErr
	}
	return client.Execution{SessionID: id, ExecutionID: "x-close"}, nil
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
	// J is text in the composer; after Esc it is the jobs panel's key.
	m, _ = step(t, m, tuitest.Key("J"))
	if m.view != sessionView {
		t.Fatal("J typed in the composer opened the jobs panel")
	}
	m, _ = step(t, m, tuitest.Key("backspace"))
	m, _ = step(t, m, tuitest.Key("esc"))
	if !strings.Contains(m.View().Content, "J jobs · P plans") {
		t.Errorf("esc shows no shortcuts in the footer:\n%s", m.View().Content)
	}
	m, _ = step(t, m, tuitest.Key("J"))
	if m.view != jobsView {
		t.Error("esc J did not open the panel")
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

// send types text in the composer and sends it: the model after the
// prompt or the slash command reached it, and the command it returned.
func send(t *testing.T, m Model, text string) (Model, tea.Cmd) {
	t.Helper()
	for _, k := range tuitest.Type(text) {
		m, _ = step(t, m, k)
	}
	m, cmd := step(t, m, tuitest.Key("enter"))
	if cmd == nil {
		t.Fatalf("the composer sent nothing for %q:\n%s", text, m.View().Content)
	}
	return step(t, m, cmd())
}

// The footer follows the ceremony from the session's events, and
// /stop-ceremony names the instance they named.
func TestCeremonyStepAndStop(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Model: "m", Root: "/w"})
	m, _ = send(t, m, "/stop-ceremony")
	if view := m.View().Content; !strings.Contains(view, "no ceremony runs in this session") {
		t.Fatalf("/stop-ceremony without a ceremony:\n%s", view)
	}
	m, cmd := send(t, m, "/debug TestParse fails")
	m, _ = step(t, m, cmd())
	if f.reqs[0].Mode != "debug" || f.calls[0] != "start TestParse fails in /w" {
		t.Fatalf("mode %s, calls %q", f.reqs[0].Mode, f.calls)
	}
	m, _ = step(t, m, eventMsg{msg: session.EventMsg{Event: contract.Event{Type: contract.EventStepClaimed, Instance: "axlr-debug-1", Step: "diagnose", Iteration: 2, Limit: 3}}})
	if footer := m.footer.View(); !strings.Contains(footer, "m · debug · step diagnose 2/3 · approve local") {
		t.Fatalf("footer %q", footer)
	}
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Completed}})
	m, cmd = send(t, m, "/stop-ceremony the fix is known")
	cmd()
	if last := f.calls[len(f.calls)-1]; last != "stop s1 axlr-debug-1 the fix is known" {
		t.Fatalf("calls %q", f.calls)
	}
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Completed, Ceremony: &contract.CeremonyOutcome{Ended: true, Stopped: "the person stopped it"}}})
	if footer := m.footer.View(); strings.Contains(footer, "step") {
		t.Errorf("the footer still shows the step after the ceremony ended: %q", footer)
	}
}

// /repair and /improve with a brief admit a job and open the jobs panel;
// /plan with one starts a plan and opens the plans panel.
func TestSlashLaunches(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Root: "/w"})
	m, cmd := send(t, m, "/repair TestParse fails on empty input")
	msg := cmd()
	if m.view != jobsView || f.calls[0] != "launch repair TestParse fails on empty input" {
		t.Fatalf("view %d, calls %q", m.view, f.calls)
	}
	m, _ = step(t, m, msg)
	if !strings.Contains(m.View().Content, "repair parse-empty-1a2b3c admitted") {
		t.Errorf("the panel does not say the job was admitted:\n%s", m.View().Content)
	}
	m, _ = step(t, m, tuitest.Key("esc"))
	m, cmd = send(t, m, "/plan add a retry")
	cmd()
	if m.view != plansView || f.calls[len(f.calls)-1] != "plan add a retry in /w" {
		t.Fatalf("view %d, calls %q", m.view, f.calls)
	}
}

// A job the person starts from the TUI, with /repair or the panel's n,
// belongs to the session prompts go to: it is asked from that session,
// with its model, as the person's. A refused /repair leaves its brief on
// the panel's prompt to fix.
func TestJobFromTheSession(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Model: "m", Root: "/w"})
	m, cmd := send(t, m, "hi")
	m, _ = step(t, m, cmd())
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Completed}})
	m, cmd = send(t, m, "/improve show the step's budget")
	m, _ = step(t, m, cmd())
	m, _ = step(t, m, tuitest.Key("esc"))
	m, cmd = send(t, m, "/jobs")
	m, _ = step(t, m, cmd())
	m, _ = step(t, m, tuitest.Key("n"))
	m, _ = step(t, m, tuitest.Key("tab")) // n keeps the kind last started
	for _, k := range tuitest.Type("TestParse fails") {
		m, _ = step(t, m, k)
	}
	m, cmd = step(t, m, tuitest.Key("enter"))
	m, _ = step(t, m, cmd())
	want := []workflows.LaunchRequest{
		{Kind: jobrec.Improve, Brief: "show the step's budget", Model: "m", OriginSession: "s1", Person: true},
		{Kind: jobrec.Repair, Brief: "TestParse fails", Model: "m", OriginSession: "s1", Person: true},
	}
	if !slices.Equal(f.launched, want) {
		t.Fatalf("launched %+v\nwant %+v", f.launched, want)
	}

	f.launchErr = &workflows.JobRefusedError{Refusal: jobrec.Refusal{Code: jobrec.RefuseMaxActive, Reason: "another job is active (2 of 2 allowed by jobs.max_active)"}}
	m, _ = step(t, m, tuitest.Key("esc"))
	m, cmd = send(t, m, "/repair exec hangs")
	m, _ = step(t, m, cmd())
	view := m.View().Content
	if m.view != jobsView || !m.jobs.Editing() || !strings.Contains(view, "another job is active") || !strings.Contains(view, "exec hangs") {
		t.Errorf("a refused /repair: view %d, editing %v:\n%s", m.view, m.jobs.Editing(), view)
	}
}

// A job that waits for the person opens its card on its own when nothing
// else is on screen, once; a decides it through the job's workflow.
func TestJobCardOpensOnItsOwn(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, MaxActive: 2})
	waiting := jobrec.Record{ID: "parse-empty-1a2b3c", Kind: jobrec.Repair, Status: jobrec.AwaitingMerge,
		Pending: &jobrec.Pending{Kind: jobrec.PendingMerge, PullRequest: 42, HeadSHA: "abc123"}}
	m, _ = step(t, m, tuitest.Key("x")) // typing: the card waits
	m, _ = step(t, m, jobs.RecordsMsg{Records: []jobrec.Record{waiting}})
	if m.view != sessionView {
		t.Fatal("the card opened over a prompt being typed")
	}
	if footer := m.footer.View(); !strings.Contains(footer, "repair parse-empty-1a2b3c · awaiting_merge") {
		t.Errorf("footer %q", footer)
	}
	m, _ = step(t, m, tuitest.Key("backspace"))
	m, _ = step(t, m, jobs.RecordsMsg{Records: []jobrec.Record{waiting}})
	if m.view != cardView || !strings.Contains(m.View().Content, "Merge parse-empty-1a2b3c's pull request?") {
		t.Fatalf("no merge card:\n%s", m.View().Content)
	}
	m, cmd := step(t, m, tuitest.Key("a"))
	m, cmd = step(t, m, cmd().(card.DecisionMsg))
	cmd()
	if f.calls[len(f.calls)-1] != "decide job parse-empty-1a2b3c merge approve=true at abc123" || m.view != sessionView {
		t.Fatalf("calls %q, view %d", f.calls, m.view)
	}
	m, _ = step(t, m, jobs.RecordsMsg{Records: []jobrec.Record{waiting}})
	if m.view != sessionView {
		t.Error("the card of the same wait opened twice")
	}
}

// /ceremony lists what axlrd runs; /ceremony NAME VERSION brief sends the
// brief in ceremony mode naming the definition, and the prompt after it
// sends neither; /ceremony publish FILE publishes the workspace's file.
func TestCeremonyCommand(t *testing.T) {
	f := &fakeClient{}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.yaml"), []byte("name: team_note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := New(context.Background(), f, Options{NoColor: true, Root: root})
	m, cmd := send(t, m, "/ceremony")
	m, _ = step(t, m, cmd())
	view := m.View().Content
	for _, want := range []string{"axlr_debug 2.0, 2.1 · /debug mode", "team_note 1.0 · /ceremony team_note · Draft a note."} {
		if !strings.Contains(view, want) {
			t.Errorf("/ceremony does not list %q:\n%s", want, view)
		}
	}
	m, cmd = send(t, m, "/ceremony team_note 1.0 Write the note.")
	m, _ = step(t, m, cmd())
	if r := f.reqs[len(f.reqs)-1]; r.Mode != "ceremony" || r.Ceremony != "team_note@1.0" || r.Prompt != "Write the note." {
		t.Fatalf("sent %+v", r)
	}
	m, cmd = send(t, m, "and then?")
	m, _ = step(t, m, cmd())
	if r := f.reqs[len(f.reqs)-1]; r.Mode != "" || r.Ceremony != "" {
		t.Fatalf("the next prompt sent %+v", r)
	}
	m, cmd = send(t, m, "/ceremony publish note.yaml")
	m, _ = step(t, m, cmd())
	if view := m.View().Content; f.published != "name: team_note\n" || !strings.Contains(view, "team_note 1.0 published; digest d1") {
		t.Fatalf("published %q:\n%s", f.published, view)
	}
	m, _ = step(t, m, eventMsg{msg: session.EventMsg{Event: contract.Event{Type: contract.EventCeremonyWaiting, Instance: "i-1", State: "SHORT", Reason: "SHORT has no enabled transition and no claimable step"}}})
	if footer, view := m.footer.View(), m.View().Content; !strings.Contains(footer, "waiting in SHORT") || !strings.Contains(view, "ceremony i-1: SHORT has no enabled transition") {
		t.Fatalf("footer %q:\n%s", footer, view)
	}
	m, _ = send(t, m, "/ceremony axlr_debug")
	if view := m.View().Content; !strings.Contains(view, "--mode debug runs it") {
		t.Fatalf("a built-in one:\n%s", view)
	}
}

// /sessions lists the sessions; Enter resumes one: later prompts go to
// it, and the call it waits on opens its card. /history shows its steps.
func TestSessionsPickerAndHistory(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true})
	m, cmd := send(t, m, "/sessions")
	m, _ = step(t, m, cmd())
	if m.view != sessionsView || !strings.Contains(m.View().Content, "s-old") {
		t.Fatalf("calls %q, view:\n%s", f.calls, m.View().Content)
	}
	m, cmd = step(t, m, tuitest.Key("enter"))
	m, cmd = step(t, m, cmd()) // the pick
	m, cmd = step(t, m, cmd()) // its result
	m, _ = step(t, m, cmd())
	if m.sessionID != "s-old" || m.view != cardView || !strings.Contains(m.View().Content, "Approve call c9?") {
		t.Fatalf("session %q, view %d, calls %q:\n%s", m.sessionID, m.view, f.calls, m.View().Content)
	}
	// The footer shows the resumed session's mode, from its result.
	if footer := m.footer.View(); !strings.HasPrefix(footer, "review · approve local") {
		t.Errorf("footer %q, want the resumed session's mode", footer)
	}
	m, cmd = step(t, m, tuitest.Key("a"))
	m, cmd = step(t, m, cmd())
	cmd()
	if last := f.calls[len(f.calls)-1]; last != "decide s-old c9 approve" {
		t.Fatalf("calls %q", f.calls)
	}
	m, cmd = send(t, m, "/history")
	m, _ = step(t, m, cmd())
	if m.view != historyView || f.calls[len(f.calls)-1] != "history s-old" || !strings.Contains(m.View().Content, "execute") {
		t.Fatalf("calls %q, view:\n%s", f.calls, m.View().Content)
	}
	m, _ = step(t, m, tuitest.Key("esc"))
	if m.view != sessionView {
		t.Error("esc did not leave the history")
	}
}

// The footer names the running plan, its wave and its running task's step,
// asked of the task's worker once per plans refresh.
func TestFooterPlanTaskStep(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Model: "m"})
	rec := plans.Record{ID: "p-1a2b3c", Status: plans.Running, Waves: 3, Tasks: []plans.Task{
		{ID: "lexer", Wave: 1, Status: plans.TaskDone}, {ID: "parser", Wave: 2, Status: plans.TaskRunning}}}
	m, cmd := step(t, m, planpanel.RecordsMsg{Records: []plans.Record{rec}})
	if footer := m.footer.View(); !strings.Contains(footer, "plan p-1a2b3c · wave 2/3 · parser running") {
		t.Fatalf("footer %q", footer)
	}
	// The ask comes first in the batch; the panel's timed refresh after
	// it would sleep its 3 s.
	ts, _ := cmd().(tea.BatchMsg)[0]().(workflows.TaskStep)
	if ts.Task != "parser" || f.calls[len(f.calls)-1] != "step p-1a2b3c parser" {
		t.Fatalf("no step asked: calls %q", f.calls)
	}
	m, _ = step(t, m, ts)
	if footer := m.footer.View(); !strings.Contains(footer, "plan p-1a2b3c · wave 2/3 · parser green 1/3") {
		t.Fatalf("footer %q", footer)
	}
}

// At start the TUI reads the jobs and the plans, for the footer, without
// a panel open.
func TestInitReadsJobsAndPlans(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true})
	for _, cmd := range m.Init()().(tea.BatchMsg) {
		m, _ = step(t, m, cmd())
	}
	if !slices.Contains(f.calls, "jobs") || !slices.Contains(f.calls, "plans") {
		t.Fatalf("calls %q", f.calls)
	}
	if footer := m.footer.View(); !strings.Contains(footer, "plan add-a-retry-6a7b8c · awaiting_approval") {
		t.Errorf("footer %q", footer)
	}
}

// The first line says where prompts run and the first keys to know.
func TestWelcome(t *testing.T) {
	view := New(context.Background(), &fakeClient{}, Options{NoColor: true, Root: "/w"}).View().Content
	for _, want := range []string{"prompts run in /w.", "Esc, then J jobs", "Ctrl+C leaves"} {
		if !strings.Contains(view, want) {
			t.Errorf("the first view lacks %q:\n%s", want, view)
		}
	}
}

// A failed execution's error is shown once: its failed event shows it,
// and its result, which carries the same error, adds nothing.
func TestFailureShownOnce(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Root: "/w"})
	m, cmd := send(t, m, "hi")
	m, _ = step(t, m, cmd())
	const why = `no model: pass --model NAME or set "model" in settings.json`
	m, _ = step(t, m, eventMsg{msg: session.EventMsg{Event: contract.Event{Type: contract.EventFailed, Error: why}}})
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Failed, Error: why}})
	if n := strings.Count(m.View().Content, why); n != 1 {
		t.Errorf("the error is shown %d times:\n%s", n, m.View().Content)
	}
	// A result whose error no event showed still says it.
	m, cmd = send(t, m, "again")
	m, _ = step(t, m, cmd())
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Interrupted, Error: "interrupted by the person"}})
	if !strings.Contains(m.View().Content, "interrupted: interrupted by the person") {
		t.Errorf("the result's own error is not shown:\n%s", m.View().Content)
	}
}

// ended is the result of an execution whose ceremony ended: axlrd says the
// session is back in normal mode.
var ended = &contract.Result{Status: contract.Completed, Mode: "normal",
	Ceremony: &contract.CeremonyOutcome{InstanceID: "axlr-debug-1", State: "COMPLETED", Ended: true}}

// claimed is the step.claimed event of the ceremony's first step.
var claimed = eventMsg{msg: session.EventMsg{Event: contract.Event{Type: contract.EventStepClaimed, Instance: "axlr-debug-1", Step: "reproduce", Iteration: 1, Limit: 3}}}

// A ceremony's end returns the session to normal in the TUI too: the
// prompt that starts it sends debug, the prompts after send no mode (the
// session keeps its own), and once a result says the ceremony ended the
// footer reads normal and the next prompt opens no ceremony. The same
// after /parar, the seed's /stop-ceremony.
func TestCeremonyEndReturnsToNormal(t *testing.T) {
	for _, tt := range []struct {
		name string
		// end ends the ceremony that runs and returns its result.
		end func(t *testing.T, f *fakeClient, m Model) Model
	}{
		{"completed", func(t *testing.T, f *fakeClient, m Model) Model {
			m, cmd := send(t, m, "go on")
			m, _ = step(t, m, cmd())
			if req := f.reqs[len(f.reqs)-1]; req.Mode != "" {
				t.Fatalf("a prompt within the ceremony sent mode %q", req.Mode)
			}
			m, _ = step(t, m, resultMsg{res: ended})
			return m
		}},
		{"parar", func(t *testing.T, f *fakeClient, m Model) Model {
			m, cmd := send(t, m, "/parar")
			m, _ = step(t, m, cmd())
			if last := f.calls[len(f.calls)-1]; last != "stop s1 axlr-debug-1 stopped by the person from the TUI" {
				t.Fatalf("/parar: calls %q", f.calls)
			}
			stopped := *ended
			stopped.Ceremony = &contract.CeremonyOutcome{InstanceID: "axlr-debug-1", State: "CANCELLED", Ended: true, Stopped: "stopped_by_person"}
			m, _ = step(t, m, resultMsg{res: &stopped})
			return m
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{}
			m := New(context.Background(), f, Options{NoColor: true, Model: "m", Root: "/w"})
			m, cmd := send(t, m, "/debug TestParse fails")
			if footer := m.footer.View(); !strings.HasPrefix(footer, "m · debug ") {
				t.Fatalf("footer after /debug: %q", footer)
			}
			m, _ = step(t, m, cmd())
			m, _ = step(t, m, claimed)
			m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Completed, Mode: "debug",
				Ceremony: &contract.CeremonyOutcome{InstanceID: "axlr-debug-1", State: "REPRODUCE", Step: "reproduce"}}})
			if f.reqs[0].Mode != "debug" {
				t.Fatalf("the brief sent mode %q", f.reqs[0].Mode)
			}
			m = tt.end(t, f, m)
			if footer := m.footer.View(); !strings.HasPrefix(footer, "m · normal ") || strings.Contains(footer, "step") {
				t.Fatalf("footer after the ceremony ended: %q", footer)
			}
			if view := m.View().Content; !strings.Contains(view, "ceremony axlr-debug-1 ended in ") || !strings.Contains(view, "the session is back in normal mode") {
				t.Fatalf("no line says the ceremony ended:\n%s", view)
			}
			m, cmd = send(t, m, "and now?")
			m, _ = step(t, m, cmd())
			if req := f.reqs[len(f.reqs)-1]; req.Prompt != "and now?" || req.Mode != "" {
				t.Fatalf("the prompt after the ceremony sent mode %q: it would open a new instance", req.Mode)
			}
			if footer := m.footer.View(); !strings.HasPrefix(footer, "m · normal ") {
				t.Errorf("footer while the plain prompt runs: %q", footer)
			}
		})
	}
}

// The work modes are commands as the ceremonies are: every mode --mode
// takes has its command, which the next prompt sends once; the session
// keeps it after, as its results say.
func TestModeCommands(t *testing.T) {
	for _, mode := range workflows.SupportedModes {
		if !slices.Contains(session.Commands, "/"+mode) {
			t.Errorf("--mode %s has no /%s", mode, mode)
		}
	}
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Model: "m", Root: "/w", Mode: "writer"})
	if footer := m.footer.View(); !strings.HasPrefix(footer, "m · writer") {
		t.Fatalf("footer with --mode writer: %q", footer)
	}
	m, cmd := send(t, m, "document it")
	m, _ = step(t, m, cmd())
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Completed, Mode: "writer"}})
	m, _ = send(t, m, "/review")
	if footer := m.footer.View(); !strings.HasPrefix(footer, "m · review") {
		t.Fatalf("footer after /review: %q", footer)
	}
	m, cmd = send(t, m, "review the parser")
	m, _ = step(t, m, cmd())
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Completed, Mode: "review"}})
	m, cmd = send(t, m, "and the lexer?")
	m, _ = step(t, m, cmd())
	var modes []string
	for _, req := range f.reqs {
		modes = append(modes, cmp.Or(req.Mode, "-"))
	}
	if got := strings.Join(modes, " "); got != "writer review -" {
		t.Fatalf("the prompts sent modes %s, want writer review -", got)
	}
	if footer := m.footer.View(); !strings.HasPrefix(footer, "m · review") {
		t.Errorf("footer after the session kept review: %q", footer)
	}
	// A refused prompt leaves the mode chosen for the next one.
	f.refuse = errors.New("session s1 is running execution e2: wait for it to end or interrupt it")
	m, _ = send(t, m, "/research")
	m, cmd = send(t, m, "find the RFC")
	m, _ = step(t, m, cmd())
	f.refuse = nil
	if footer := m.footer.View(); !strings.HasPrefix(footer, "m · research") || !strings.Contains(m.View().Content, "is running execution e2") {
		t.Fatalf("after a refused prompt, footer %q:\n%s", footer, m.View().Content)
	}
	m, cmd = send(t, m, "find the RFC")
	cmd()
	if req := f.reqs[len(f.reqs)-1]; req.Mode != "research" {
		t.Errorf("the prompt after the refusal sent mode %q, want research", req.Mode)
	}
}

// /approve sets the approval level of the next prompts, which the footer
// shows; a level it does not know is a note naming the three.
func TestSlashApprove(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true, Model: "m", Root: "/w"})
	m, _ = send(t, m, "/approve all")
	if footer := m.footer.View(); !strings.HasPrefix(footer, "m · normal · approve all") {
		t.Fatalf("footer after /approve all: %q", footer)
	}
	m, _ = send(t, m, "/approve most")
	if view := m.View().Content; !strings.Contains(view, `unknown approval level "most": use none, local or all`) {
		t.Fatalf("/approve most:\n%s", view)
	}
	m, cmd := send(t, m, "clean the build")
	cmd()
	m, _ = send(t, m, "/approve")
	if view := m.View().Content; !strings.Contains(view, "prompts run with approval all: /approve none|local|all") {
		t.Errorf("/approve alone:\n%s", view)
	}
	if len(f.reqs) != 1 || f.reqs[0].Approval != "all" {
		t.Fatalf("requests %+v", f.reqs)
	}
}

// TestWatchShowsDeltas: while an execution is watched, its live deltas
// reach the transcript, and they stop before the watch's result, so the
// completed text that follows replaces them.
func TestWatchShowsDeltas(t *testing.T) {
	streamed := make(chan struct{})
	f := &fakeClient{watchAfter: streamed}
	deltas := func(ctx context.Context, sessionID string, fn func(contract.Event)) error {
		if sessionID != "s1" {
			t.Errorf("deltas of session %s", sessionID)
		}
		fn(contract.Event{Type: contract.EventTextDelta, Text: "Hel"})
		fn(contract.Event{Type: contract.EventTextDelta, Text: "lo"})
		close(streamed)
		<-ctx.Done()
		return nil
	}
	m := New(context.Background(), f, Options{NoColor: true, Root: "/w", Deltas: deltas})
	ch := make(chan tea.Msg, 8)
	go m.watch(client.Execution{SessionID: "s1", ExecutionID: "e1"}, ch)()
	var got []tea.Msg
	for msg := range ch {
		got = append(got, msg)
		if _, ok := msg.(resultMsg); ok {
			break
		}
	}
	if len(got) != 3 {
		t.Fatalf("messages %+v, want two deltas and the result", got)
	}
	for _, msg := range got[:2] {
		m, _ = step(t, m, eventMsg{msg: msg})
	}
	m, _ = step(t, m, eventMsg{msg: session.EventMsg{Event: contract.Event{Type: contract.EventText, Text: "Hello"}}})
	tr := m.session.Transcript()
	if tr[len(tr)-1] != "Hello" || strings.Count(strings.Join(tr, "|"), "Hel") != 1 {
		t.Fatalf("transcript %q, want the completed text once, last", tr)
	}
}
