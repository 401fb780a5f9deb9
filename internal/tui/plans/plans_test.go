package plans

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden views")

// fakeClient records the calls the panel makes; the issue asks for a fake
// client in the components' model tests.
type fakeClient struct {
	records []plans.Record
	calls   []string
	decided []workflows.PlanDecision
	launch  []client.PlanLaunch
	err     error
}

func (f *fakeClient) Plans(context.Context) ([]plans.Record, error) {
	f.calls = append(f.calls, "plans")
	return f.records, f.err
}

func (f *fakeClient) DecidePlan(_ context.Context, dec workflows.PlanDecision) (plans.Record, error) {
	f.calls = append(f.calls, "decide "+dec.Plan)
	f.decided = append(f.decided, dec)
	return plans.Record{}, f.err
}

func (f *fakeClient) RecoverPlan(_ context.Context, id string) (plans.Record, error) {
	f.calls = append(f.calls, "recover "+id)
	return plans.Record{}, f.err
}

func (f *fakeClient) LaunchPlan(_ context.Context, in client.PlanLaunch) (plans.Record, error) {
	f.calls = append(f.calls, "launch")
	f.launch = append(f.launch, in)
	return plans.Record{}, f.err
}

var _ Client = (*client.Client)(nil)

func exit(n int) *int { return &n }

var day = time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)

// sample is four plans, oldest first, so the panel has to sort them:
// one done, one interrupted, one waiting on its card, one on its commands.
func sample() []plans.Record {
	check := ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}
	return []plans.Record{
		{ID: "split-the-parser-0a1b2c", Status: plans.Done, Brief: "split the parser\ninto two files", Root: "/w/axlr", Waves: 2, Created: day,
			Tasks: []plans.Task{
				{ID: "lexer", Wave: 1, Status: plans.TaskDone, Session: "s1", Changed: []string{"lexer.go", "lexer_test.go"}},
				{ID: "parser", Wave: 2, DependsOn: []string{"lexer"}, Status: plans.TaskDone, Session: "s2", Changed: []string{"parser.go"}},
			},
			Syncs: []plans.Sync{{Wave: 1, Check: check, Exit: exit(1), Round: 0}, {Wave: 1, Check: check, Exit: exit(0), Round: 1},
				{Wave: 2, Check: check, Exit: exit(0)}}},
		{ID: "cache-the-index-3d4e5f", Status: plans.Interrupted, Brief: "cache the index", Root: "/w/axlr", Waves: 1, Created: day.Add(time.Hour),
			Reason: "axlrd stopped", Tasks: []plans.Task{
				{ID: "cache", Wave: 1, Status: plans.TaskBlocked, Session: "s3", Reason: "tests time out"},
				{ID: "docs", Wave: 1, Status: plans.TaskSkipped, Reason: "depends on cache, which did not finish"},
			}},
		{ID: "add-a-retry-6a7b8c", Status: plans.AwaitingApproval, Brief: "add a retry", Root: "/w/axlr", Waves: 1, Created: day.Add(2 * time.Hour),
			Pending: &plans.Pending{Kind: plans.PendingApproval}, Tasks: []plans.Task{{ID: "retry", Wave: 1, Status: plans.TaskPending}}},
		{ID: "rename-the-flags-9d0e1f", Status: plans.Decomposing, Brief: "rename the flags", Root: "/w/axlr", Created: day.Add(3 * time.Hour),
			Pending: &plans.Pending{Kind: plans.PendingCommand, Commands: []string{"go test ./...", "go vet ./..."}}},
	}
}

func loaded(t *testing.T, f *fakeClient) Model {
	t.Helper()
	m := New(context.Background(), f, common.New(80, 24, false), Options{Root: "/w/axlr", Model: "m1"})
	msg := m.Init()()
	m, _ = m.Update(msg)
	return m
}

func typed(m Model, s string) Model {
	for _, k := range tuitest.Type(s) {
		m, _ = m.Update(k)
	}
	return m
}

func TestPanelSortsNewestFirst(t *testing.T) {
	m := loaded(t, &fakeClient{records: sample()})
	var ids []string
	for _, r := range m.Rows() {
		ids = append(ids, r.ID)
	}
	want := []string{"rename-the-flags-9d0e1f", "add-a-retry-6a7b8c", "cache-the-index-3d4e5f", "split-the-parser-0a1b2c"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("rows %v, want %v", ids, want)
	}
}

func TestPanelKeys(t *testing.T) {
	const cmds, card = "rename-the-flags-9d0e1f", "add-a-retry-6a7b8c"
	tests := []struct {
		name   string
		keys   []string
		reason string
		calls  []string
		dec    []workflows.PlanDecision
		status string
	}{
		{name: "approve the commands", keys: []string{"a"}, calls: []string{"decide " + cmds},
			dec: []workflows.PlanDecision{{Plan: cmds, Kind: workflows.PlanDecideCommands, Decision: workflows.PlanApprove}}},
		{name: "deny the commands with a reason", keys: []string{"d"}, reason: "too slow", calls: []string{"decide " + cmds},
			dec: []workflows.PlanDecision{{Plan: cmds, Kind: workflows.PlanDecideCommands, Decision: workflows.PlanDeny, Reason: "too slow"}}},
		{name: "approve the card", keys: []string{"down", "a"}, calls: []string{"decide " + card},
			dec: []workflows.PlanDecision{{Plan: card, Kind: workflows.PlanDecidePlan, Decision: workflows.PlanApprove}}},
		{name: "return the card with a reason", keys: []string{"down", "d"}, reason: "one task too many", calls: []string{"decide " + card},
			dec: []workflows.PlanDecision{{Plan: card, Kind: workflows.PlanDecidePlan, Decision: workflows.PlanReturn, Reason: "one task too many"}}},
		{name: "decline the card with a reason", keys: []string{"down", "x"}, reason: "not now", calls: []string{"decide " + card},
			dec: []workflows.PlanDecision{{Plan: card, Kind: workflows.PlanDecidePlan, Decision: workflows.PlanDecline, Reason: "not now"}}},
		{name: "recover the interrupted", keys: []string{"down", "down", "r"}, calls: []string{"recover cache-the-index-3d4e5f"}},
		{name: "x on commands refused", keys: []string{"x"}, status: "d denies them"},
		{name: "nothing to approve", keys: []string{"pgdown", "a"}, status: "waits for no decision"},
		{name: "nothing to deny", keys: []string{"pgdown", "d"}, status: "waits for no decision"},
		{name: "recover refused unless interrupted", keys: []string{"pgdown", "r"}, status: "only an interrupted plan is recovered"},
		{name: "deny cancelled with esc", keys: []string{"d", "n", "o", "esc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{records: sample()}
			m := loaded(t, f)
			f.calls = nil
			m, cmd := tuitest.Press(m, tt.keys...)
			if tt.reason != "" {
				m, cmd = tuitest.Press(typed(m, tt.reason), "enter")
			}
			if len(tt.calls) > 0 {
				if cmd == nil {
					t.Fatal("no command")
				}
				m, _ = m.Update(cmd())
			}
			if !reflect.DeepEqual(f.calls, tt.calls) {
				t.Errorf("calls %q, want %q", f.calls, tt.calls)
			}
			if !reflect.DeepEqual(f.decided, tt.dec) {
				t.Errorf("decisions %+v, want %+v", f.decided, tt.dec)
			}
			if m.Editing() {
				t.Error("still editing")
			}
			if !strings.Contains(m.View(), tt.status) {
				t.Errorf("view lacks %q:\n%s", tt.status, m.View())
			}
		})
	}
}

func TestPanelRefuseNeedsReason(t *testing.T) {
	for _, key := range []string{"d", "x"} {
		t.Run(key, func(t *testing.T) {
			f := &fakeClient{records: sample()}
			m, cmd := tuitest.Press(loaded(t, f), "down", key, "enter")
			if cmd != nil || !m.Editing() || !strings.Contains(m.View(), "a reason is needed") {
				t.Errorf("an empty reason was not refused in place: editing %v, view:\n%s", m.Editing(), m.View())
			}
		})
	}
}

func TestPanelNewPlan(t *testing.T) {
	f := &fakeClient{records: sample()}
	m, cmd := tuitest.Press(loaded(t, f), "n", "enter")
	if cmd != nil || !strings.Contains(m.View(), "a brief is needed") {
		t.Fatalf("an empty brief was not refused:\n%s", m.View())
	}
	m, cmd = tuitest.Press(typed(m, "add a flag"), "enter")
	if cmd == nil {
		t.Fatal("no command")
	}
	m, _ = m.Update(cmd())
	want := []client.PlanLaunch{{Brief: "add a flag", Root: "/w/axlr", Model: "m1"}}
	if !reflect.DeepEqual(f.launch, want) {
		t.Errorf("launched %+v, want %+v", f.launch, want)
	}
	if !strings.Contains(m.View(), "started a plan") {
		t.Errorf("no word of the start:\n%s", m.View())
	}
}

func TestPanelActionErrorShows(t *testing.T) {
	f := &fakeClient{records: sample()}
	m := loaded(t, f)
	f.err = errors.New("plan rename-the-flags-9d0e1f waits for nothing now")
	m, cmd := tuitest.Press(m, "a")
	m, _ = m.Update(cmd())
	if !strings.Contains(m.View(), "waits for nothing now") {
		t.Errorf("error not shown:\n%s", m.View())
	}
}

// TestPanelRefreshes: a refresh keeps the selection and schedules no
// second timed refresh; an action's answer shows and reads again.
func TestPanelRefreshes(t *testing.T) {
	f := &fakeClient{records: sample()}
	m, _ := tuitest.Press(loaded(t, f), "down")
	recs := append(sample(), plans.Record{ID: "newer-000000", Status: plans.Running, Created: day.Add(4 * time.Hour)})
	m, cmd := m.Update(RecordsMsg{Records: recs})
	if r, _ := m.Selected(); r.ID != "add-a-retry-6a7b8c" {
		t.Errorf("selected %s after a refresh, want add-a-retry-6a7b8c", r.ID)
	}
	if cmd != nil {
		t.Fatal("a second answer scheduled a second timed refresh: they would stack")
	}
	f.calls = nil
	if m, cmd = m.Update(ActedMsg{Done: "recovered cache-the-index-3d4e5f"}); cmd == nil {
		t.Fatal("an action's answer asks for no refresh")
	}
	msg, ok := cmd().(RecordsMsg)
	if !ok || len(msg.Records) != 4 || len(f.calls) != 1 {
		t.Errorf("the refresh answered %#v, calls %q", msg, f.calls)
	}
	if !strings.Contains(m.View(), "recovered cache-the-index-3d4e5f") {
		t.Errorf("the action's answer is not on the status line:\n%s", m.View())
	}
}

func TestPanelView(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
	}{
		{"rows", nil},
		{"details", []string{"pgdown", "enter"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := tuitest.Press(loaded(t, &fakeClient{records: sample()}), tt.keys...)
			view := m.View()
			if n := strings.Count(view, "\n") + 1; n != 24 {
				t.Errorf("view has %d lines, want 24", n)
			}
			tuitest.Golden(t, view, *update)
		})
	}
}

func TestPanelDetailsCutToFit(t *testing.T) {
	rec := plans.Record{ID: "big-plan-000000", Status: plans.Running, Waves: 1, Created: day}
	for i := range 30 {
		rec.Tasks = append(rec.Tasks, plans.Task{ID: fmt.Sprintf("t%d", i), Wave: 1, Status: plans.TaskPending})
	}
	m, _ := tuitest.Press(loaded(t, &fakeClient{records: []plans.Record{rec}}), "enter")
	view := m.View()
	if n := strings.Count(view, "\n") + 1; n != 24 {
		t.Errorf("view has %d lines, want 24:\n%s", n, view)
	}
	// 32 detail lines (brief, root, 30 tasks) in the 19 left: 18 and the cut.
	if !strings.Contains(view, "> big-plan-000000") || !strings.Contains(view, "… 14 more") {
		t.Errorf("the details were not cut under the row:\n%s", view)
	}
}

// TestPanelDetailsBlockedTask: under a task that did not finish, the
// scope files put back as they were when its worker started, and the
// files it created, left in place.
func TestPanelDetailsBlockedTask(t *testing.T) {
	rec := plans.Record{ID: "add-max-000000", Status: plans.Partial, Brief: "add max", Root: "/w", Waves: 1, Tasks: []plans.Task{
		{ID: "add-max", Wave: 1, Status: plans.TaskBlocked, Session: "s1", Reason: "green round 3 of 3", Changed: []string{"max.go"},
			Restored: []string{"calc.go"}, Created: []string{"max.go"}},
	}}
	want := []string{"brief: add max", "root: /w", "task add-max  wave 1  blocked  session s1  green round 3 of 3",
		"  restored as at its start: calc.go", "  created, left in place: max.go"}
	if got := details(rec); !reflect.DeepEqual(got, want) {
		t.Fatalf("details\n%q\nwant\n%q", got, want)
	}
}
