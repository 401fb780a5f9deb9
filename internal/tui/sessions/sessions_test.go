package sessions

import (
	"context"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/history"
	"github.com/underpass-ai/axlr/internal/tui/jobs"
	"github.com/underpass-ai/axlr/internal/tui/list"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
	"github.com/underpass-ai/axlr/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden views")

// fakeClient answers Sessions from what the test sets and counts the
// calls; the issue asks for a fake client in the components' model tests.
type fakeClient struct {
	rows  []client.SessionSummary
	err   error
	calls int
}

func (f *fakeClient) Sessions(context.Context) ([]client.SessionSummary, error) {
	f.calls++
	return f.rows, f.err
}

var _ Client = (*client.Client)(nil)

var (
	day = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	// at is when the test's list was read: times print in UTC.
	at = day.Add(6 * time.Hour)
)

func summary(id string, started, updated time.Duration, status string) client.SessionSummary {
	return client.SessionSummary{SessionID: id, WorkflowID: workflows.SessionWorkflowID(id),
		Started: day.Add(started), Updated: day.Add(updated), Status: status}
}

// sample is four sessions, not in order, so the picker has to sort them.
func sample() []client.SessionSummary {
	return []client.SessionSummary{
		summary("6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10", 0, 3*time.Hour, "running"),
		summary("3d2c3b4a-0000-4000-8000-000000000003", 2*time.Hour, 2*time.Hour+time.Minute, "terminated"),
		summary("1d2c3b4a-0000-4000-8000-000000000001", 4*time.Hour, 5*time.Hour+30*time.Minute, "running"),
		summary("2d2c3b4a-0000-4000-8000-000000000002", time.Hour, 90*time.Minute, "running"),
	}
}

// loaded is the picker at 80×23 (a 24-line terminal above the footer)
// after its refresh answered.
func loaded(t *testing.T, f *fakeClient, height int) Model {
	t.Helper()
	m := New(context.Background(), f, common.New(80, height, false))
	msg, ok := m.Refresh()().(ListMsg)
	if !ok {
		t.Fatalf("Refresh answered %T, want a ListMsg", msg)
	}
	msg.At = at
	m, cmd := m.Update(msg)
	if cmd != nil {
		t.Fatal("the list's answer asked for more")
	}
	return m
}

func press(m Model, keys ...tea.KeyPressMsg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	for _, k := range keys {
		m, cmd = m.Update(k)
	}
	return m, cmd
}

func keys(names ...string) []tea.KeyPressMsg {
	var out []tea.KeyPressMsg
	for _, n := range names {
		out = append(out, tuitest.Key(n))
	}
	return out
}

func TestPickerSortsNewestFirst(t *testing.T) {
	f := &fakeClient{rows: sample()}
	m := loaded(t, f, 23)
	var ids []string
	for _, s := range m.Sessions() {
		ids = append(ids, short(s.SessionID))
	}
	if want := []string{"1d2c3b4a", "3d2c3b4a", "2d2c3b4a", "6c1f0a52"}; !reflect.DeepEqual(ids, want) || f.calls != 1 {
		t.Errorf("rows %v after %d call(s), want %v after one", ids, f.calls, want)
	}
}

func TestPickerKeys(t *testing.T) {
	tests := []struct {
		name   string
		height int
		keys   []string
		// picked is the session Enter emits; none: no command.
		picked string
		status string
	}{
		{name: "enter resumes the newest", height: 23, keys: []string{"enter"}, picked: "1d2c3b4a-0000-4000-8000-000000000001"},
		{name: "down and enter", height: 23, keys: []string{"down", "down", "enter"}, picked: "2d2c3b4a-0000-4000-8000-000000000002"},
		{name: "end is the oldest", height: 23, keys: []string{"end", "enter"}, picked: "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"},
		{name: "home after end", height: 23, keys: []string{"end", "home", "enter"}, picked: "1d2c3b4a-0000-4000-8000-000000000001"},
		{name: "up stops at the top", height: 23, keys: []string{"up", "k", "enter"}, picked: "1d2c3b4a-0000-4000-8000-000000000001"},
		// Six lines leave two rows: a page is two.
		{name: "pgdown moves a page", height: 6, keys: []string{"pgdown", "enter"}, picked: "2d2c3b4a-0000-4000-8000-000000000002"},
		{name: "pgup moves back a page", height: 6, keys: []string{"end", "pgup", "enter"},
			status: "session 3d2c3b4a is terminated: it takes no more prompts"},
		{name: "a closed session is refused", height: 23, keys: []string{"j", "enter"},
			status: "session 3d2c3b4a is terminated: it takes no more prompts"},
		{name: "esc is the parent's", height: 23, keys: []string{"esc"}, status: "session 1d2c3b4a-0000-4000-8000-000000000001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{rows: sample()}
			m, cmd := press(loaded(t, f, tt.height), keys(tt.keys...)...)
			if tt.picked == "" {
				if cmd != nil {
					t.Fatalf("a command: %v", cmd())
				}
			} else {
				if cmd == nil {
					t.Fatal("no command")
				}
				if got := cmd(); got != (PickedMsg{SessionID: tt.picked}) {
					t.Fatalf("the command answered %#v, want PickedMsg %s", got, tt.picked)
				}
			}
			if tt.status != "" {
				if got := statusLine(m); got != tt.status {
					t.Errorf("status %q, want %q", got, tt.status)
				}
			}
			if f.calls != 1 {
				t.Errorf("%d calls to Sessions, want the refresh's one", f.calls)
			}
		})
	}
}

func TestPickerEmptyAndErrors(t *testing.T) {
	boom := errors.New(`axlrd not reachable at 127.0.0.1:7233: start it with "axlrd"`)
	t.Run("asking", func(t *testing.T) {
		m := New(context.Background(), &fakeClient{}, common.New(80, 23, false))
		if got := line(m, 2); got != "  asking axlrd…" {
			t.Errorf("first row %q before the answer", got)
		}
		if m, cmd := press(m, keys("enter", "down")...); cmd != nil || len(m.Sessions()) != 0 {
			t.Error("keys acted on no rows")
		}
	})
	t.Run("empty", func(t *testing.T) {
		m := loaded(t, &fakeClient{rows: []client.SessionSummary{}}, 23)
		if got := line(m, 2); got != "  no sessions on this host yet: a prompt starts one" {
			t.Errorf("first row %q for no sessions", got)
		}
		if got := line(m, 0); got != "Sessions · 0 on this host" {
			t.Errorf("title %q", got)
		}
		if _, cmd := press(m, keys("enter")...); cmd != nil {
			t.Error("enter on no rows picked something")
		}
	})
	t.Run("first answer fails", func(t *testing.T) {
		m := loaded(t, &fakeClient{err: boom}, 23)
		if got := statusLine(m); got != "sessions: "+boom.Error() {
			t.Errorf("status %q", got)
		}
		if got := line(m, 2); got != "" {
			t.Errorf("first row %q after a failure, want none", got)
		}
	})
	t.Run("a later failure keeps the rows", func(t *testing.T) {
		m := loaded(t, &fakeClient{rows: sample()}, 23)
		m, _ = press(m, keys("down")...)
		m, _ = m.Update(ListMsg{Err: boom, At: at})
		m, _ = press(m, keys("down")...)
		if got := statusLine(m); got != "sessions: "+boom.Error() || len(m.Sessions()) != 4 {
			t.Errorf("status %q with %d rows", got, len(m.Sessions()))
		}
		m, _ = m.Update(ListMsg{Sessions: sample(), At: at})
		if got := statusLine(m); got != "session 2d2c3b4a-0000-4000-8000-000000000002" {
			t.Errorf("status %q after the next answer", got)
		}
	})
}

func TestPickerRefreshKeepsSelection(t *testing.T) {
	m, _ := press(loaded(t, &fakeClient{rows: sample()}, 23), keys("down", "down")...)
	rows := append(sample(), summary("0d2c3b4a-0000-4000-8000-000000000000", 5*time.Hour, 5*time.Hour, "running"))
	m, _ = m.Update(ListMsg{Sessions: rows, At: at})
	if s, _ := m.Selected(); s.SessionID != "2d2c3b4a-0000-4000-8000-000000000002" {
		t.Errorf("selected %s after a refresh, want 2d2c3b4a-…", s.SessionID)
	}
}

// TestPickerOthersMessages: the app hands every message to every
// component; the picker takes its ListMsg only, not the history's answer
// nor a panel's list's.
func TestPickerOthersMessages(t *testing.T) {
	m := loaded(t, &fakeClient{rows: sample()}, 23)
	want := m.View()
	boom := errors.New("not the picker's")
	for _, msg := range []tea.Msg{
		history.TrajectoryMsg{SessionID: "1d2c3b4a-0000-4000-8000-000000000001", Err: boom},
		list.Records[client.Step]{Records: []client.Step{{Name: "started"}}, Err: boom},
		jobs.RecordsMsg{Err: boom},
		jobs.ActedMsg{Err: boom},
	} {
		if got, cmd := m.Update(msg); cmd != nil || got.View() != want {
			t.Errorf("%T changed the picker (command %v):\n%s", msg, cmd != nil, got.View())
		}
	}
}

func TestPickerView(t *testing.T) {
	m, _ := press(loaded(t, &fakeClient{rows: sample()}, 23), keys("down")...)
	view := m.View()
	if n := strings.Count(view, "\n") + 1; n != 23 {
		t.Errorf("view has %d lines, want 23", n)
	}
	tuitest.Golden(t, view, *update)
}

// line is the view's n-th line (from 0), unpadded.
func line(m Model, n int) string { return tuitest.Line(m.View(), n) }

// statusLine is the view's status line, unpadded.
func statusLine(m Model) string { return tuitest.Line(m.View(), -2) }
