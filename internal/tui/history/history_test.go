package history

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
	"github.com/underpass-ai/axlr/internal/tui/jobs"
	"github.com/underpass-ai/axlr/internal/tui/list"
	"github.com/underpass-ai/axlr/internal/tui/sessions"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
)

var update = flag.Bool("update", false, "rewrite the golden views")

const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"

// fakeClient answers History from what the test sets and records what it
// was asked; the issue asks for a fake client in the components' model
// tests.
type fakeClient struct {
	trajectory *client.Trajectory
	err        error
	asked      []string
}

func (f *fakeClient) History(_ context.Context, id string) (*client.Trajectory, error) {
	f.asked = append(f.asked, id)
	return f.trajectory, f.err
}

var _ Client = (*client.Client)(nil)

func ms(n int) *client.Duration {
	d := client.Duration(time.Duration(n) * time.Millisecond)
	return &d
}

var start = time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)

// trajectory is a session that continued as new once.
func trajectory() *client.Trajectory {
	return &client.Trajectory{
		WorkflowID: "axlr-session-" + sid,
		Runs:       []string{"run-1", "run-2"},
		Steps: []client.Step{
			{Time: start, RunID: "run-1", Kind: "workflow", Name: "started", Detail: "first run", Outcome: "axlr-host-h"},
			{Time: start.Add(10 * time.Millisecond), RunID: "run-1", Kind: "update", Name: "execute", Detail: `"create notes.md"` + "\n" + `approve none`, Outcome: "accepted"},
			{Time: start.Add(15 * time.Millisecond), RunID: "run-1", Kind: "local_activity", Name: "BeginTurn", Detail: "model m", Duration: ms(5), Outcome: "revision 3"},
			{Time: start.Add(20 * time.Millisecond), RunID: "run-1", Kind: "activity", Name: "ModelRequest", Detail: "m at revision 3", Attempt: 2, Duration: ms(1250),
				Outcome: "failed", Error: "provider: 500\nretrying"},
			{Time: start.Add(2 * time.Minute), RunID: "run-1", Kind: "workflow", Name: "continued as new", Outcome: "run-2"},
			{Time: start.Add(3*time.Minute + 1500*time.Millisecond), RunID: "run-2", Kind: "update", Name: "decide", Detail: "approve the pending call exec-1", Outcome: "accepted"},
			{Time: start.Add(2*time.Hour + 4*time.Second), RunID: "run-2", Kind: "activity", Name: "ToolCall", Detail: "local_exec call exec-1 · approve", Attempt: 1, Duration: ms(40),
				Outcome: "completed: exit code 0"},
		},
	}
}

// loaded is the view of sid at the height after its refresh answered.
func loaded(t *testing.T, f *fakeClient, height int) Model {
	t.Helper()
	m := New(context.Background(), f, common.New(80, height, false))
	m.SetSession(sid)
	cmd := m.Refresh()
	if cmd == nil {
		t.Fatal("no refresh for a session")
	}
	msg, ok := cmd().(TrajectoryMsg)
	if !ok {
		t.Fatalf("Refresh answered %T, want a TrajectoryMsg", msg)
	}
	if m, cmd = m.Update(msg); cmd != nil {
		t.Fatal("the trajectory's answer asked for more")
	}
	return m
}

func TestViewScrolls(t *testing.T) {
	tests := []struct {
		name   string
		height int
		keys   []string
		want   string // the selected step's name
	}{
		{name: "the newest first", height: 23, want: "ToolCall"},
		{name: "up", height: 23, keys: []string{"up", "k"}, want: "continued as new"},
		{name: "down stops at the end", height: 23, keys: []string{"up", "down", "j", "down"}, want: "ToolCall"},
		{name: "home", height: 23, keys: []string{"home"}, want: "started"},
		{name: "end after home", height: 23, keys: []string{"home", "end"}, want: "ToolCall"},
		// Seven lines leave three rows: a page is three.
		{name: "pgup", height: 7, keys: []string{"pgup"}, want: "ModelRequest"},
		{name: "pgdown", height: 7, keys: []string{"home", "down", "pgdown"}, want: "continued as new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{trajectory: trajectory()}
			m, cmd := tuitest.Press(loaded(t, f, tt.height), tt.keys...)
			if cmd != nil {
				t.Fatalf("scrolling made a command: %v", cmd())
			}
			if s, _ := m.Selected(); s.Name != tt.want {
				t.Errorf("selected %q, want %q", s.Name, tt.want)
			}
			if !strings.Contains(m.View(), "> ") || len(f.asked) != 1 {
				t.Errorf("the selected row is off screen, or %d reads:\n%s", len(f.asked), m.View())
			}
		})
	}
}

func TestViewDetail(t *testing.T) {
	m, _ := tuitest.Press(loaded(t, &fakeClient{trajectory: trajectory()}, 23), "home", "down")
	if got := statusLine(m); got != `"create notes.md" approve none · run run-1` {
		t.Errorf("detail %q", got)
	}
}

func TestViewReloads(t *testing.T) {
	f := &fakeClient{trajectory: trajectory()}
	m, _ := tuitest.Press(loaded(t, f, 23), "home", "down")
	longer := trajectory()
	longer.Steps = append(longer.Steps, client.Step{Time: start.Add(3 * time.Hour), RunID: "run-2", Kind: "update", Name: "execute", Outcome: "accepted"})
	f.trajectory = longer
	m, cmd := tuitest.Press(m, "r")
	if cmd == nil {
		t.Fatal("r made no command")
	}
	m, _ = m.Update(cmd())
	if s, _ := m.Selected(); s.Name != "execute" || s.Time != start.Add(10*time.Millisecond) {
		t.Errorf("selected %s at %v after a reload, want the same step", s.Name, s.Time)
	}
	if !reflect.DeepEqual(f.asked, []string{sid, sid}) {
		t.Errorf("asked %q", f.asked)
	}
	// At the newest step, a reload follows the newer one.
	m, _ = tuitest.Press(m, "end")
	longer.Steps = append(longer.Steps, client.Step{Time: start.Add(4 * time.Hour), RunID: "run-2", Kind: "update", Name: "decide", Outcome: "accepted"})
	m, _ = m.Update(TrajectoryMsg{SessionID: sid, Trajectory: longer})
	if s, _ := m.Selected(); s.Time != start.Add(4*time.Hour) {
		t.Errorf("selected the step at %v, want the newest", s.Time)
	}
}

func TestViewSessions(t *testing.T) {
	boom := &client.NotFoundError{SessionID: sid}
	t.Run("no session", func(t *testing.T) {
		m := New(context.Background(), &fakeClient{}, common.New(80, 23, false))
		if m.Refresh() != nil {
			t.Error("a refresh without a session")
		}
		if _, cmd := tuitest.Press(m, "r"); cmd != nil {
			t.Error("r read a history without a session")
		}
		if got := line(m, 0) + "|" + line(m, 2); got != "History|  no session yet: a prompt starts one, /sessions picks one" {
			t.Errorf("view %q", got)
		}
	})
	t.Run("reading", func(t *testing.T) {
		m := New(context.Background(), &fakeClient{}, common.New(80, 23, false))
		m.SetSession(sid)
		if got := line(m, 2); got != "  reading the session's history…" {
			t.Errorf("first row %q", got)
		}
	})
	t.Run("fails", func(t *testing.T) {
		m := loaded(t, &fakeClient{err: boom}, 23)
		if got := statusLine(m); got != "history: no session "+sid+" in axlrd" {
			t.Errorf("status %q", got)
		}
		if got := line(m, 2); got != "" {
			t.Errorf("first row %q after a failure", got)
		}
	})
	t.Run("no steps yet", func(t *testing.T) {
		m := loaded(t, &fakeClient{trajectory: &client.Trajectory{Runs: []string{"run-1"}}}, 23)
		if got := line(m, 0) + "|" + line(m, 2); got != "History · "+sid+" · 0 steps · 1 run(s)|  no steps yet" {
			t.Errorf("view %q", got)
		}
	})
	t.Run("another session's late answer", func(t *testing.T) {
		f := &fakeClient{trajectory: trajectory()}
		m := loaded(t, f, 23)
		const other = "0b9e4d0c-6a2f-4f57-8f0e-2f5c3b7d9a11"
		m.SetSession(other)
		m, _ = m.Update(TrajectoryMsg{SessionID: sid, Trajectory: trajectory()})
		if len(m.Steps()) != 0 || m.Session() != other {
			t.Errorf("%d steps of %s shown for %s", len(m.Steps()), sid, m.Session())
		}
		m.SetSession(other)
		m, _ = m.Update(TrajectoryMsg{SessionID: other, Trajectory: trajectory()})
		if len(m.Steps()) != 7 {
			t.Errorf("%d steps, want 7", len(m.Steps()))
		}
	})
}

// TestViewOthersMessages: the app hands every message to every
// component; the view takes its session's TrajectoryMsg only, not the
// picker's answer nor a panel's list's.
func TestViewOthersMessages(t *testing.T) {
	m := loaded(t, &fakeClient{trajectory: trajectory()}, 23)
	want := m.View()
	boom := errors.New("not the view's")
	for _, msg := range []tea.Msg{
		sessions.ListMsg{Err: boom},
		list.Records[client.SessionSummary]{Records: []client.SessionSummary{{SessionID: sid}}, Err: boom},
		jobs.RecordsMsg{Err: boom},
		jobs.ActedMsg{Err: boom},
	} {
		if got, cmd := m.Update(msg); cmd != nil || got.View() != want {
			t.Errorf("%T changed the view (command %v):\n%s", msg, cmd != nil, got.View())
		}
	}
}

func TestOffset(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "+00:00.000"},
		{15 * time.Millisecond, "+00:00.015"},
		{3*time.Minute + 1500*time.Millisecond, "+03:01.500"},
		{59*time.Minute + 59*time.Second + 999*time.Millisecond, "+59:59.999"},
		{2*time.Hour + 4*time.Second, "+2:00:04"},
		{50*time.Hour + 3*time.Minute, "+50:03:00"},
	} {
		if got := offset(tt.d); got != tt.want {
			t.Errorf("offset(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestViewView(t *testing.T) {
	m, _ := tuitest.Press(loaded(t, &fakeClient{trajectory: trajectory()}, 23), "up", "up", "up")
	view := m.View()
	if n := strings.Count(view, "\n") + 1; n != 23 {
		t.Errorf("view has %d lines, want 23", n)
	}
	tuitest.Golden(t, view, *update)
}

// line is the view's n-th line (from 0), unpadded.
func line(m Model, n int) string { return tuitest.Line(m.View(), n) }

// statusLine is the view's line under the steps, unpadded.
func statusLine(m Model) string { return tuitest.Line(m.View(), -2) }
